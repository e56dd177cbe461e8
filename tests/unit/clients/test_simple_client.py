"""SimpleClient against a fake cluster of real broker reactors (see fake_cluster.py)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from odradek.clients.cluster_metadata import ClusterMetadata
from odradek.clients.errors import NoBrokersAvailableError
from odradek.clients.simple_client import ProduceResult, SimpleClient, SyncSimpleClient, parse_bootstrap_servers
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import MessageTooLargeError, UnknownTopicOrPartitionError

from .fake_cluster import fake_cluster, fake_cluster_in_thread
from .helpers import LOOP_IDS, LOOPS, run


def client_for(cluster, **kwargs) -> SimpleClient:
    kwargs.setdefault("retry_backoff", 0.01)
    return SimpleClient(cluster.bootstrap, **kwargs)


def free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_parse_bootstrap_servers():
    assert parse_bootstrap_servers("a:1, b:2,,c") == [("a", 1), ("b", 2), ("c", 9092)]
    assert parse_bootstrap_servers(["[::1]:9093", ("h", 7)]) == [("::1", 9093), ("h", 7)]
    with pytest.raises(ValueError):
        parse_bootstrap_servers(" , ")


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_metadata_describes_the_cluster(factory):
    async def main():
        async with fake_cluster(3) as cluster:
            cluster.add_topic("t", [2, 0, -1])
            async with client_for(cluster) as client:
                md = await client.metadata()
                assert isinstance(md, ClusterMetadata)
                assert md.brokers == {b: ("127.0.0.1", cluster.port(b), None) for b in range(3)}
                assert (md.controller_id, md.cluster_id) == (0, "fake-cluster")
                assert md.partitions_for("t") == [0, 1, 2]
                assert [md.leader_for("t", p) for p in range(4)] == [2, 0, None, None]
                assert md.topics["t"].partitions[2].error_code == 5
                assert md.leader_for("missing", 0) is None
                only = await client.metadata(["missing"])
                assert only.topics["missing"].error_code == UnknownTopicOrPartitionError.code
                assert set(client.cluster.topics) == {"t", "missing"}  # merged into the client's picture

    run(main(), factory)


def test_wait_for_brokers_polls_until_they_register():
    async def main():
        async with fake_cluster(3) as cluster:
            cluster.registered = {0}
            cluster.controller_id = -1
            async with client_for(cluster) as client:
                async def register_later():
                    await asyncio.sleep(0.2)
                    cluster.registered = {0, 1, 2}
                    await asyncio.sleep(0.1)
                    cluster.controller_id = 1

                helper = asyncio.ensure_future(register_later())
                md = await client.wait_for_brokers(3, timeout=10)
                assert sorted(md.brokers) == [0, 1, 2] and md.controller_id == 1
                await helper
                with pytest.raises(TimeoutError):
                    await client.wait_for_brokers(4, timeout=0.3)

    run(main())


def test_wait_for_leaders():
    async def main():
        async with fake_cluster(2) as cluster:
            async with client_for(cluster) as client:
                async def create_later():
                    await asyncio.sleep(0.1)
                    cluster.add_topic("t", [0, -1])
                    await asyncio.sleep(0.1)
                    cluster.topics["t"][1] = 1

                helper = asyncio.ensure_future(create_later())
                md = await client.wait_for_leaders("t", timeout=10)
                assert [md.leader_for("t", p) for p in (0, 1)] == [0, 1]
                await helper

    run(main())


def test_create_and_delete_topics_follow_the_controller():
    async def main():
        async with fake_cluster(3) as cluster:
            cluster.controller_id = 1
            async with client_for(cluster) as client:
                assert await client.create_topics({"a": (3, 1), "b": 2}) == {"a": 0, "b": 0}
                assert cluster.calls[(1, ApiKey.CREATE_TOPICS)] == 1
                assert sorted(cluster.topics) == ["a", "b"] and len(cluster.topics["a"]) == 3
                # The controller moves; the client's picture still says 1: NOT_CONTROLLER, refresh, retry at 2.
                cluster.controller_id = 2
                assert await client.create_topics(["c", "a"], configs={"cleanup.policy": "compact"}) == {
                    "c": 0, "a": 36}
                assert cluster.calls[(1, ApiKey.CREATE_TOPICS)] == 2
                assert cluster.calls[(2, ApiKey.CREATE_TOPICS)] == 1
                assert await client.delete_topics(["a", "zzz"]) == {"a": 0, "zzz": UnknownTopicOrPartitionError.code}
                assert cluster.calls[(2, ApiKey.DELETE_TOPICS)] == 1
                assert "a" not in cluster.topics

    run(main())


def test_create_topics_gives_up_with_not_controller():
    async def main():
        async with fake_cluster(2) as cluster:
            cluster.controller_id = 1
            async with client_for(cluster, retries=2) as client:
                await client.metadata([])
                cluster.controller_id = 5  # a controller that is not among the brokers
                assert await client.create_topics({"x": (1, 1)}) == {"x": 41}
                assert "x" not in cluster.topics

    run(main())


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_produce_fetch_round_trip(factory):
    async def main():
        async with fake_cluster(2) as cluster:
            cluster.add_topic("t", [1])
            async with client_for(cluster) as client:
                first = await client.produce("t", 0, [(b"k0", b"v0"), ("k1", "v1", [("h", b"x")])], compression="gzip")
                assert first == ProduceResult(0, 0, -1, -1)
                second = await client.produce("t", 0, [(None, b"v2", [], 1234)])
                assert second.base_offset == 2
                assert cluster.calls[(1, ApiKey.PRODUCE)] == 2 and cluster.calls[(0, ApiKey.PRODUCE)] == 0
                result = await client.fetch("t", 0, 1)
                assert (result.error_code, result.high_watermark) == (0, 3)
                assert [(r.offset, r.key, r.value, r.headers) for r in result.records] == [
                    (1, b"k1", b"v1", [("h", b"x")]), (2, None, b"v2", [])]
                assert result.records[1].timestamp == 1234
                assert await client.list_offsets("t", 0, -2) == (0, -1)
                assert await client.list_offsets("t", 0, -1) == (3, -1)

    run(main(), factory)


def test_acks_0_produce_returns_at_once_and_lands():
    async def main():
        async with fake_cluster(1) as cluster:
            cluster.add_topic("t", [0])
            async with client_for(cluster) as client:
                assert await client.produce("t", 0, [(b"k", b"v")], acks=0) == ProduceResult(0, -1, -1, -1)
                result = await client.fetch("t", 0, 0)  # same connection: the produce was handled first
                assert [r.value for r in result.records] == [b"v"]

    run(main())


def test_raw_batch_bytes_are_sent_as_given():
    from odradek.clients.simple_client import build_batch

    async def main():
        async with fake_cluster(1) as cluster:
            cluster.add_topic("t", [0])
            async with client_for(cluster) as client:
                batch = build_batch([(b"a", b"1"), (b"b", b"2")], producer_id=7, producer_epoch=0, base_sequence=0)
                assert (await client.produce("t", 0, batch)).base_offset == 0
                _, _, stored = cluster.logs[("t", 0)].batches[0]
                assert stored[12:] == batch[12:]  # only the base offset is the broker's to change

    run(main())


def test_produce_and_fetch_follow_a_moved_leader():
    async def main():
        async with fake_cluster(2) as cluster:
            cluster.add_topic("t", [0])
            async with client_for(cluster) as client:
                assert (await client.produce("t", 0, [(b"k", b"a")])).base_offset == 0
                cluster.topics["t"][0] = 1  # leadership moves; the client still thinks 0 leads
                cluster.logs[("t", 0)].next_offset = 10
                assert (await client.produce("t", 0, [(b"k", b"b")])).base_offset == 10
                assert cluster.calls[(0, ApiKey.PRODUCE)] == 2  # one NOT_LEADER_OR_FOLLOWER
                assert cluster.calls[(1, ApiKey.PRODUCE)] == 1
                assert client.cluster.leader_for("t", 0) == 1
                cluster.topics["t"][0] = 0
                assert [r.value for r in (await client.fetch("t", 0, 10)).records] == [b"b"]
                assert cluster.calls[(1, ApiKey.FETCH)] == 1 and cluster.calls[(0, ApiKey.FETCH)] == 1

    run(main())


def test_retriable_errors_are_retried_and_others_returned():
    async def main():
        async with fake_cluster(1) as cluster:
            cluster.add_topic("t", [0])
            async with client_for(cluster, retries=3) as client:
                cluster.inject[ApiKey.PRODUCE] = [7, 19]  # REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS: retriable
                assert (await client.produce("t", 0, [(b"k", b"v")])).error_code == 0
                assert cluster.calls[(0, ApiKey.PRODUCE)] == 3
                cluster.inject[ApiKey.PRODUCE] = [MessageTooLargeError.code]
                assert (await client.produce("t", 0, [(b"k", b"v")])).error_code == MessageTooLargeError.code
                assert cluster.calls[(0, ApiKey.PRODUCE)] == 4  # not retried
                cluster.inject[ApiKey.FETCH] = [1]  # OFFSET_OUT_OF_RANGE
                assert (await client.fetch("t", 0, 99)).error_code == 1

    run(main())


def test_unknown_topic_gives_up_after_the_retries():
    async def main():
        async with fake_cluster(1) as cluster:
            async with client_for(cluster, retries=2) as client:
                result = await client.produce("nope", 0, [(b"k", b"v")])
                assert result.error_code == UnknownTopicOrPartitionError.code
                assert cluster.calls[(0, ApiKey.METADATA)] >= 3  # looked up again before each attempt
                with pytest.raises(UnknownTopicOrPartitionError):
                    await client.list_offsets("nope", 0, -1)

    run(main())


def test_init_producer_id_retries_coordinator_loading():
    async def main():
        async with fake_cluster(1) as cluster:
            async with client_for(cluster) as client:
                cluster.inject[ApiKey.INIT_PRODUCER_ID] = [14]  # COORDINATOR_LOAD_IN_PROGRESS
                assert await client.init_producer_id() == (1001, 0)
                assert cluster.calls[(0, ApiKey.INIT_PRODUCER_ID)] == 2

    run(main())


def test_dead_bootstrap_servers_are_skipped():
    async def main():
        async with fake_cluster(1) as cluster:
            async with SimpleClient([f"127.0.0.1:{free_port()}", cluster.bootstrap]) as client:
                assert sorted((await client.metadata()).brokers) == [0]
        async with SimpleClient(f"127.0.0.1:{free_port()}", retries=1, retry_backoff=0.01) as client:
            with pytest.raises(NoBrokersAvailableError):
                await client.metadata()

    run(main())


def test_broker_connection_loss_is_retried_on_a_new_connection():
    async def main():
        async with fake_cluster(2) as cluster:
            cluster.add_topic("t", [1])
            async with client_for(cluster) as client:
                await client.produce("t", 0, [(b"k", b"a")])
                old = await client.connection(1)
                await old.close()  # e.g. the broker closed it
                assert (await client.produce("t", 0, [(b"k", b"b")])).base_offset == 1
                assert (await client.connection(1)) is not old

    run(main())


def test_sync_client_for_synchronous_callers():
    with fake_cluster_in_thread(2) as cluster:
        cluster.add_topic("t", [0, 1])
        with SyncSimpleClient(cluster.bootstrap, retry_backoff=0.01) as client:
            md = client.wait_for_brokers(2, timeout=10)
            assert sorted(md.brokers) == [0, 1]
            assert client.produce("t", 1, [(b"k", b"v")]).base_offset == 0
            assert [r.value for r in client.fetch("t", 1, 0).records] == [b"v"]
            assert client.cluster.leader_for("t", 1) == 1  # plain attributes pass through


def test_dead_leader_is_replaced_after_a_metadata_refresh():
    async def main():
        async with fake_cluster(2) as cluster:
            cluster.add_topic("t", [1])
            async with client_for(cluster) as client:
                await client.produce("t", 0, [(b"k", b"a")])
                await cluster.servers[1].stop(timeout=0)  # the leader dies; the controller moves leadership
                cluster.registered = {0}
                cluster.topics["t"][0] = 0
                assert (await client.produce("t", 0, [(b"k", b"b")])).base_offset == 1
                assert cluster.calls[(0, ApiKey.PRODUCE)] == 1
                assert client.cluster.leader_for("t", 0) == 0

    run(main())


def test_brokers_that_failed_lately_are_tried_last():
    async def main():
        async with fake_cluster(3) as cluster:
            async with client_for(cluster) as client:
                await client.metadata([])
                client.note_failure("127.0.0.1", cluster.port(0))
                client.note_failure("127.0.0.1", cluster.port(2))  # the latest failure: tried last of all
                for _ in range(5):  # the order among brokers that never failed is random; these are not
                    for conn in list(client._connections.values()):
                        await conn.close()
                    assert (await client._any_connection()).port == cluster.port(1)
                await cluster.servers[1].stop(timeout=0)
                for conn in list(client._connections.values()):
                    await conn.close()
                assert (await client._any_connection()).port == cluster.port(0)  # 1 refused, then noted

    run(main())

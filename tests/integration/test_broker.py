"""One real broker process with a real ZooKeeper, driven through our minimal client."""

from __future__ import annotations

import asyncio
import os
import re
import time

import pytest

from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SimpleClient, build_batch
from odradek.protocol import errors
from odradek.protocol.messages import MetadataRequest

pytestmark = pytest.mark.timeout(120)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def first_address(cluster) -> tuple[str, int]:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def test_metadata_lists_the_broker_the_controller_and_a_stable_cluster_id(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            first = await client.metadata([])
            second = await client.metadata([])
        assert list(first.brokers) == [0]
        assert first.controller_id == 0
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", first.cluster_id)
        assert first.cluster_id == second.cluster_id
    run(main())


def test_create_produce_fetch_and_list_offsets(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            assert await client.create_topics({"orders": (3, 1)}) == {"orders": 0}
            md = await client.wait_for_leaders("orders")
            assert sorted(md.topics["orders"].partitions) == [0, 1, 2]
            records = [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")], 1_700_000_000_000 + i)
                       for i in range(10)]
            first = await client.produce("orders", 1, records[:5])
            second = await client.produce("orders", 1, records[5:], compression="lz4")
            assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 5)
            fetched = await client.fetch("orders", 1, 0)
            assert fetched.high_watermark == 10
            assert [(r.offset, r.key, r.value) for r in fetched.records] == \
                [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(10)]
            assert [(h[0], h[1]) for h in fetched.records[3].headers] == [("h", b"x")]
            assert (await client.fetch("orders", 1, 7)).records[0].offset == 7
            assert (await client.list_offsets("orders", 1, -2))[0] == 0
            assert (await client.list_offsets("orders", 1, -1))[0] == 10
            assert (await client.list_offsets("orders", 1, 1_700_000_000_006))[0] == 6
            assert (await client.list_offsets("orders", 1, 1_800_000_000_000))[0] == -1
    run(main())


def test_a_long_poll_fetch_is_woken_by_a_produce(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await client.create_topics({"poll": (1, 1)})
            await client.wait_for_leaders("poll")
            waiting = asyncio.ensure_future(client.fetch("poll", 0, 0, max_wait_ms=30000))
            await asyncio.sleep(0.2)
            assert not waiting.done()
            async with SimpleClient(single_broker_cluster.bootstrap_servers) as producer:
                await producer.produce("poll", 0, [(None, b"wake up")])
            result = await asyncio.wait_for(waiting, 10)  # far below max_wait: woken, not expired
            assert [r.value for r in result.records] == [b"wake up"]
    run(main())


def test_auto_creation_answers_leader_not_available_then_the_topic(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            conn = await client.connection(0)
            request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="auto-created")],
                                      allow_auto_topic_creation=True)
            first = await conn.send(request)
            assert first.topics[0].error_code == errors.LeaderNotAvailableError.code
            md = await client.wait_for_leaders("auto-created")
            assert len(md.topics["auto-created"].partitions) == 1  # num.partitions default
            no_create = await conn.send(MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="never-created")], allow_auto_topic_creation=False))
            assert no_create.topics[0].error_code == errors.UnknownTopicOrPartitionError.code
    run(main())


def test_delete_topic_removes_it_from_metadata_and_disk(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await client.create_topics({"doomed": (2, 1)})
            await client.wait_for_leaders("doomed")
            await client.produce("doomed", 0, [(None, b"x")])
            assert await client.delete_topics(["doomed"]) == {"doomed": 0}
            md = await client.metadata(["doomed"])
            assert md.topics["doomed"].error_code == errors.UnknownTopicOrPartitionError.code
            assert await client.delete_topics(["doomed"]) == {"doomed": errors.UnknownTopicOrPartitionError.code}
    run(main())
    log_dir = single_broker_cluster.brokers[0].log_dirs
    # The answer comes once the metadata drops the topic; StopReplica (delete) reaches the replicas after
    # that, as in Kafka, so the directories go a moment later.
    deadline = time.monotonic() + 30
    while [name for name in os.listdir(log_dir) if re.fullmatch(r"doomed-\d+", name)]:
        assert time.monotonic() < deadline, os.listdir(log_dir)
        time.sleep(0.1)


def test_idempotent_produce_answers_duplicates_with_the_original_offset(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await client.create_topics({"idem": (1, 1)})
            await client.wait_for_leaders("idem")
            pid, epoch = await client.init_producer_id()
            assert pid >= 0 and epoch == 0
            batch0 = build_batch([(b"k", b"0")], producer_id=pid, producer_epoch=epoch, base_sequence=0)
            batch1 = build_batch([(b"k", b"1")], producer_id=pid, producer_epoch=epoch, base_sequence=1)
            assert (await client.produce("idem", 0, batch0)).base_offset == 0
            assert (await client.produce("idem", 0, batch1)).base_offset == 1
            retried = await client.produce("idem", 0, batch0)  # a retry of the first batch
            assert (retried.error_code, retried.base_offset) == (0, 0)
            gap = build_batch([(b"k", b"9")], producer_id=pid, producer_epoch=epoch, base_sequence=9)
            assert (await client.produce("idem", 0, gap)).error_code == errors.OutOfOrderSequenceNumberError.code
            assert [r.value for r in (await client.fetch("idem", 0, 0)).records] == [b"0", b"1"]
            other_pid, _ = await client.init_producer_id()
            assert other_pid != pid
    run(main())


def test_acks_zero_is_not_answered_but_appended(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await client.create_topics({"fire-and-forget": (1, 1)})
            await client.wait_for_leaders("fire-and-forget")
            for i in range(3):
                assert (await client.produce("fire-and-forget", 0, [(None, b"%d" % i)], acks=0)).base_offset == -1
            # The connection is still in step: a normal request after acks=0 ones gets its own answer.
            assert (await client.produce("fire-and-forget", 0, [(None, b"3")], acks=-1)).base_offset == 3
    run(main())


def test_api_versions_advertises_the_served_apis_with_kafka_2_8_ranges(single_broker_cluster):
    async def main():
        host, port = first_address(single_broker_cluster)
        conn = await BrokerConnection.connect(host, port)
        try:
            ranges = conn.api_versions
        finally:
            await conn.close()
        assert ranges[0] == (0, 9) and ranges[1] == (0, 12) and ranges[3] == (0, 11) and ranges[18] == (0, 3)
        assert {2, 4, 5, 6, 10, 19, 20, 22, 23} <= set(ranges)
        assert ranges[11] == (0, 7) and ranges[14] == (0, 5) and ranges[8] == (0, 8)  # the group coordinator
    run(main())

"""The minimal client against real broker processes and a real ZooKeeper (fixtures in conftest.py)."""

from __future__ import annotations

import asyncio
import signal

import pytest

from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SimpleClient, SyncSimpleClient
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.messages import MetadataRequest

pytestmark = pytest.mark.timeout(180)


def run(coro, timeout: float = 150):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def first_address(cluster) -> tuple[str, int]:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def test_negotiation_finds_kafka_2_8_ranges(single_broker_cluster):
    async def main():
        conn = await BrokerConnection.connect(*first_address(single_broker_cluster))
        try:
            assert conn.api_versions, "the broker advertised nothing"
            for key, advertised in conn.api_versions.items():
                assert advertised == KAFKA_2_8_VERSIONS[key]
            assert conn.version_for(ApiKey.METADATA) == 11
            assert conn.version_for(ApiKey.PRODUCE) == 9
            assert conn.version_for(ApiKey.FETCH) == 12
        finally:
            await conn.close()
    run(main())


def test_pipelined_requests_and_acks_0_on_one_connection(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            assert (await client.create_topics({"pipelined": (1, 1)}))["pipelined"] in (0, 36)
            await client.wait_for_leaders("pipelined")
            conn = await client.connection(0)
            names = [f"absent-{i}" for i in range(200)]
            responses = await asyncio.gather(*(
                conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                          allow_auto_topic_creation=False)) for name in names))
            assert [r.topics[0].name for r in responses] == names
            start = (await client.list_offsets("pipelined", 0, -1))[0]
            results = await asyncio.gather(*(client.produce("pipelined", 0, [(None, b"%d" % i)], acks=0)
                                             for i in range(20)))
            assert all(r.base_offset == -1 for r in results)
            fetched = await client.fetch("pipelined", 0, start)  # same connection: after every acks=0 write
            assert [r.value for r in fetched.records] == [b"%d" % i for i in range(20)]
    run(main())


def test_three_brokers_partitions_go_to_their_leaders(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3)

    async def main():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            md = await client.wait_for_brokers(3)
            assert sorted(md.brokers) == [0, 1, 2] and md.controller_id in md.brokers
            assert await client.create_topics({"spread": (6, 1)}) == {"spread": 0}
            md = await client.wait_for_leaders("spread")
            assert {md.leader_for("spread", p) for p in range(6)} == {0, 1, 2}
            for partition in range(6):
                result = await client.produce("spread", partition, [(b"p", b"%d" % partition)], acks=-1)
                assert (result.error_code, result.base_offset) == (0, 0)
            for partition in range(6):
                fetched = await client.fetch("spread", partition, 0)
                assert [r.value for r in fetched.records] == [b"%d" % partition]
            assert {node for node in client._connections if isinstance(node, int)} == {0, 1, 2}
            assert await client.delete_topics(["spread"]) == {"spread": 0}
    run(main())


def test_create_topics_follows_a_new_controller(odradek_cluster_factory):
    cluster = odradek_cluster_factory(2)

    async def main():
        # Enough retries to outlast the dead controller's ZooKeeper session (6 s in the test fixtures).
        async with SimpleClient(cluster.bootstrap_servers, retries=30) as client:
            old = (await client.wait_for_brokers(2)).controller_id
            await asyncio.to_thread(cluster.kill_broker, old, signal.SIGKILL)
            assert await client.create_topics({"after-failover": (2, 1)}) == {"after-failover": 0}
            assert client.cluster.controller_id == 1 - old
            md = await client.wait_for_leaders("after-failover")
            assert {md.leader_for("after-failover", p) for p in range(2)} == {1 - old}
    run(main())


def test_sync_client_waits_for_brokers(odradek_cluster_factory):
    cluster = odradek_cluster_factory(2)
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        md = client.wait_for_brokers(2, timeout=60)
        assert sorted(md.brokers) == [0, 1]
        assert client.create_topics({"sync": (1, 1)}) == {"sync": 0}
        assert client.wait_for_leaders("sync").leader_for("sync", 0) in (0, 1)
        assert client.produce("sync", 0, [(b"k", b"v")]).base_offset == 0

"""ISR replication between real broker processes on one real ZooKeeper.

A topic with replication factor 3 and min.insync.replicas 2: acks=-1 writes reach every replica's
log files byte for byte; a SIGKILLed follower leaves the ISR in ZooKeeper (replica.lag.time.max.ms)
and writes go on; restarted, it catches up and rejoins; a SIGKILLed leader is replaced by a follower
that has every acknowledged record; with two of three brokers down acks=-1 is refused.
"""

from __future__ import annotations

import asyncio
from pathlib import Path


from odradek.clients.simple_client import SimpleClient
from odradek.controller.zk_client import KafkaZkClient
from tests.integration.helpers import wait_until

TOPIC = "replicated"
LAG_MS = 2000
OVERRIDES = {"replica.lag.time.max.ms": str(LAG_MS), "min.insync.replicas": "2",
             "replica.fetch.backoff.ms": "200"}
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
REQUEST_TIMED_OUT = 7


def log_bytes(cluster, broker_id: int, topic: str = TOPIC, partition: int = 0) -> bytes:
    """The concatenated segment files of one replica, in offset order."""
    files = sorted(Path(cluster.brokers[broker_id].log_dirs, f"{topic}-{partition}").glob("*.log"))
    return b"".join(f.read_bytes() for f in files)


def partition_state(zk: KafkaZkClient, partition: int = 0):
    return zk.get_partition_states([(TOPIC, partition)])[(TOPIC, partition)][0]


async def _produce(cluster, values: list[bytes], timeout_ms: int = 10000, retries: int = 8) -> list[tuple[int, int]]:
    """acks=-1 writes, one batch per value; (error code, base offset) each."""
    async with SimpleClient(cluster._live_bootstrap(), retries=retries, retry_backoff=0.3) as client:
        results = []
        for value in values:
            r = await client.produce(TOPIC, 0, [(None, value)], acks=-1, timeout_ms=timeout_ms)
            results.append((r.error_code, r.base_offset))
        return results


async def _read_all(cluster) -> list[bytes]:
    async with SimpleClient(cluster._live_bootstrap(), retries=8, retry_backoff=0.3) as client:
        values, offset = [], 0
        while True:
            result = await client.fetch(TOPIC, 0, offset, max_wait_ms=200)
            assert result.error_code == 0
            if not result.records:
                return values
            values += [r.value for r in result.records]
            offset = result.records[-1].offset + 1


def produce(cluster, values, **kw):
    return asyncio.run(_produce(cluster, values, **kw))


def test_rf3_replicas_stay_identical_through_follower_and_leader_failures(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=3, overrides=OVERRIDES)
    zk = zk_client_factory(cluster.zookeeper_connect)

    async def create():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            assert await client.create_topics({TOPIC: (1, 3)}) == {TOPIC: 0}
            await client.wait_for_leaders(TOPIC)
    asyncio.run(create())

    acked: list[bytes] = []
    first = [b"first-%03d" % i for i in range(100)]
    assert all(code == 0 for code, _ in produce(cluster, first))
    acked += first
    # acks=-1 answered only once every ISR member had the records: all three logs hold the same bytes.
    state = partition_state(zk)
    assert sorted(state.isr) == [0, 1, 2]
    leader = state.leader
    logs = {b: log_bytes(cluster, b) for b in range(3)}
    assert len(logs[leader]) > 0 and logs[0] == logs[1] == logs[2]

    # A follower dies: the leader drops it from the ISR in ZooKeeper; writes go on with two replicas.
    follower = next(b for b in range(3) if b != leader)
    cluster.kill_broker(follower)
    wait_until(lambda: follower not in partition_state(zk).isr, LAG_MS / 1000 * 10, "the ISR to shrink")
    assert partition_state(zk).leader == leader
    second = [b"second-%03d" % i for i in range(50)]
    assert all(code == 0 for code, _ in produce(cluster, second))
    acked += second

    # Restarted, it truncates/catches up from the leader and rejoins the ISR.
    cluster.start_broker(follower)
    wait_until(lambda: follower in partition_state(zk).isr, 60, "the restarted follower to rejoin the ISR")
    wait_until(lambda: log_bytes(cluster, follower) == log_bytes(cluster, leader), 30,
               "the restarted follower's log to equal the leader's")
    third = [b"third-%03d" % i for i in range(20)]
    assert all(code == 0 for code, _ in produce(cluster, third))
    acked += third
    assert log_bytes(cluster, 0) == log_bytes(cluster, 1) == log_bytes(cluster, 2)

    # The leader dies: the controller elects a follower from the ISR; every acknowledged record is there.
    cluster.kill_broker(leader)
    (new_leader,) = wait_until(lambda: _new_leader(zk, leader), 60, "a new leader")
    fourth = [b"fourth-%03d" % i for i in range(20)]
    assert all(code == 0 for code, _ in produce(cluster, fourth))
    acked += fourth
    assert asyncio.run(_read_all(cluster)) == acked

    # Two of three down: acks=-1 is refused once the ISR is the leader alone; nothing is acknowledged.
    other = next(b for b in range(3) if b not in (leader, new_leader))
    cluster.kill_broker(other)
    wait_until(lambda: partition_state(zk).isr == [new_leader], 60, "the ISR to shrink to the leader alone")
    refused = produce(cluster, [b"refused"], timeout_ms=2000, retries=1)
    assert refused[0][0] == NOT_ENOUGH_REPLICAS
    assert asyncio.run(_read_all(cluster)) == acked


def _new_leader(zk: KafkaZkClient, old: int) -> tuple[int] | None:
    leader = partition_state(zk).leader
    return (leader,) if leader not in (-1, old) else None

"""Idempotent producers with 5 requests in flight while partition leaders are SIGKILLed.

A new leader must judge sequences by the same producer state the old one had (the last 5 batches per
producer, built while it followed and kept when it leads), so a retried or pipelined batch that continues
the log is never answered OUT_OF_ORDER_SEQUENCE_NUMBER. Brokers log every such answer (Kafka 2.8 logs it
at ERROR too) with the leader epoch and log end offset; afterwards each one is checked against the final
log: the producer's batches that the answering leader already held (below that log end offset, written
in that leader epoch or before) must not go past the sequence the answer called the last appended one.
The producer (confluent-kafka, max.in.flight 5) must meet no fatal error and store every acknowledged
record once, in order."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.records import iter_batches

from ..integration.helpers import IdempotentProducerLoad, read_all, run, wait_until
from .replicas import partition_batches

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOPIC, PARTITIONS, ROUNDS = "idempotent-chaos", 3, 4
OVERRIDES = {"min.insync.replicas": "2", "default.replication.factor": "3", "replica.lag.time.max.ms": "4000",
             "unclean.leader.election.enable": "false"}
OUT_OF_ORDER = re.compile(
    r"Error processing append operation on partition (?P<topic>\S+)-(?P<partition>\d+) \(leader epoch "
    r"(?P<epoch>\d+), log end offset (?P<leo>\d+)\): .*out of order sequence for producer (?P<pid>\d+) epoch "
    r"(?P<pepoch>\d+): (?P<incoming>\d+)-\d+ \(incoming\), (?P<last>-?\d+) \(last appended\)")


def _leaders_and_isrs(bootstrap: str) -> dict[int, tuple[int, list[int]]]:
    async def ask():
        async with SimpleClient(bootstrap) as client:
            md = await client.metadata([TOPIC])
            return {p: (s.leader, list(s.isr)) for p, s in md.topics[TOPIC].partitions.items()}
    return run(ask(), 30)


def _stale_answers(cluster, answers: list[re.Match]) -> list[str]:
    """OUT_OF_ORDER answers whose "last appended" sequence lagged behind what that leader's log held."""
    @lru_cache(maxsize=None)
    def batches(partition: int) -> list:
        longest = max((partition_batches(b.log_dirs, TOPIC, partition) for b in cluster.brokers), key=len)
        return [b for raw in longest for b in iter_batches(raw)]

    stale = []
    for a in answers:
        partition, epoch, leo = int(a["partition"]), int(a["epoch"]), int(a["leo"])
        pid, pepoch, last = int(a["pid"]), int(a["pepoch"]), int(a["last"])
        held = [b.last_sequence for b in batches(partition)
                if b.producer_id == pid and b.producer_epoch == pepoch and b.last_offset < leo
                and b.partition_leader_epoch <= epoch]
        if held and max(held) > last:
            stale.append(f"{a.group(0)} while the log held sequence {max(held)}")
    return stale


def test_new_leaders_keep_idempotent_producers_in_sequence(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=3, overrides=OVERRIDES)
    bootstrap = cluster.bootstrap_servers

    async def create():
        async with SimpleClient(bootstrap) as client:
            assert await client.create_topics({TOPIC: (PARTITIONS, 3)}) == {TOPIC: 0}
            await client.wait_for_leaders(TOPIC)
    run(create())
    kills = []
    # 5 requests in flight, small batches so that many are
    with IdempotentProducerLoad(bootstrap, TOPIC, PARTITIONS, config={"max.in.flight.requests.per.connection": 5,
                                "linger.ms": 2, "batch.num.messages": 20, "retry.backoff.ms": 100}) as producer:
        for round_ in range(ROUNDS):
            wait_until(lambda: all(len(isr) == 3 for _, isr in _leaders_and_isrs(bootstrap).values()), 90,
                       "every replica back in the ISR")
            acked_before = len(producer.acked)
            victim = _leaders_and_isrs(bootstrap)[round_ % PARTITIONS][0]
            cluster.kill_broker(victim)
            kills.append(victim)
            wait_until(lambda: len(producer.acked) > acked_before + 500, 90, "the producer to go on past the kill")
            cluster.start_broker(victim)
    assert producer.fatal == [] and producer.failed == [], (producer.fatal, producer.failed[:5])
    stored = run(read_all(bootstrap, TOPIC, PARTITIONS), 120)
    for partition, records in stored.items():
        values = [r.value for r in records]
        assert values == sorted(set(values)), f"partition {partition}: duplicates or disorder"
        acked = sorted(v for v in producer.acked if int(v.split(b"-")[1]) % PARTITIONS == partition)
        assert values == acked, f"partition {partition}: {len(values)} stored, {len(acked)} acknowledged"
    answers = [m for b in cluster.brokers for m in OUT_OF_ORDER.finditer(b.log_path.read_text(errors="replace"))]
    print(f"{len(producer.acked)} records acknowledged, leaders killed: {kills}, "
          f"OUT_OF_ORDER_SEQUENCE answers: {len(answers)}")
    assert _stale_answers(cluster, answers) == []

"""Transactions on the partition leaders, with the test playing the transaction coordinator.

Three brokers, a topic of 3 partitions with replication factor 3. Two producers (ids from
InitProducerId without a transactional id, transactional bit set on their batches) write interleaved
across the partitions; WriteTxnMarkers then commits one and aborts the other. kafka-python,
confluent-kafka and aiokafka read_committed consumers see exactly the committed records,
read_uncommitted ones everything but the markers. An open transaction holds the last stable offset
(Fetch and ListOffsets), a read_committed consumer stops there until the marker lands, and after
the leader is SIGKILLed the new leader has the same LSO and aborted list; the restarted broker's
recovered transaction index matches the others'.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest

from odradek.broker.log.txn_index import TransactionIndex
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.messages import FetchRequest, WriteTxnMarkersRequest
from tests.integration.helpers import wait_until

TOPIC = "txn-events"
PARTITIONS = 3
OVERRIDES = {"min.insync.replicas": "2", "replica.fetch.backoff.ms": "100"}
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
UNKNOWN_TOPIC_OR_PARTITION = 3
TRANSACTION_COORDINATOR_FENCED = 52
COORDINATOR_EPOCH = 3

_Marker = WriteTxnMarkersRequest.WritableTxnMarker
_MarkerTopic = _Marker.WritableTxnMarkerTopic


def run(coro):
    return asyncio.run(coro)


class RawProducer:
    """A producer id with per-partition sequences; ``transactional`` sets the batch attribute bit."""

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id, self.epoch = producer_id, epoch
        self.sequences: dict[int, int] = defaultdict(int)

    async def send(self, client: SimpleClient, partition: int, values: list[bytes], transactional: bool = True):
        result = await client.produce(TOPIC, partition, [(None, v) for v in values], acks=-1,
                                      producer_id=self.producer_id, producer_epoch=self.epoch,
                                      base_sequence=self.sequences[partition],
                                      transactional_id="played-by-the-test" if transactional else None)
        assert result.error_code == 0, (self.producer_id, partition, result)
        self.sequences[partition] += len(values)
        return result.base_offset


async def write_markers(client: SimpleClient, markers: list[tuple[int, int, bool, list[int], int]],
                        topic: str = TOPIC) -> dict[tuple[int, int], int]:
    """(producer id, epoch, commit?, partitions, coordinator epoch) each, sent to each partition's leader
    as the coordinator does; the error code per (producer id, partition)."""
    md = await client.metadata([topic])
    per_leader: dict[int, list] = defaultdict(list)
    for producer_id, epoch, commit, partitions, coordinator_epoch in markers:
        by_leader: dict[int, list[int]] = defaultdict(list)
        for p in partitions:
            by_leader[md.leader_for(topic, p) if p < PARTITIONS else next(iter(md.brokers))].append(p)
        for leader, owned in by_leader.items():
            per_leader[leader].append(_Marker(producer_id=producer_id, producer_epoch=epoch, transaction_result=commit,
                                              topics=[_MarkerTopic(name=topic, partition_indexes=owned)],
                                              coordinator_epoch=coordinator_epoch))
    codes = {}
    for leader, leader_markers in per_leader.items():
        response = await client.send(leader, WriteTxnMarkersRequest(markers=leader_markers), timeout=40)
        for m in response.markers:
            for t in m.topics:
                for p in t.partitions:
                    codes[(m.producer_id, p.partition_index)] = p.error_code
    return codes


async def raw_fetch(client: SimpleClient, partition: int, offset: int, isolation: int):
    """The leader's FetchResponse partition (LSO, aborted transactions), without waiting."""
    md = await client.metadata([TOPIC])
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                               FetchRequest.FetchTopic.FetchPartition(partition=partition, fetch_offset=offset,
                                                                      partition_max_bytes=1 << 20)])])
    response = await client.send(md.leader_for(TOPIC, partition), request)
    answer = response.responses[0].partitions[0]
    assert answer.error_code == 0, answer
    return answer


async def latest(client: SimpleClient, partition: int, isolation: int) -> int:
    return (await client.list_offsets(TOPIC, partition, -1, isolation_level=isolation))[0]


# -- the three real clients ----------------------------------------------------------------------------

def consume_kafka_python(bootstrap: str, isolation: str, until: set[bytes]) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             group_id=None, fetch_max_wait_ms=200)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        values: list[bytes] = []

        def done():
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
            return until <= set(values)
        wait_until(done, 60, f"kafka-python ({isolation}) to read {sorted(until)}")
        return values
    finally:
        consumer.close()


def consume_confluent(bootstrap: str, isolation: str, until: set[bytes]) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-test-{isolation}",
                         "isolation.level": isolation, "enable.auto.commit": False, "fetch.wait.max.ms": 200})
    try:
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        values: list[bytes] = []

        def done():
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            return until <= set(values)
        wait_until(done, 60, f"confluent-kafka ({isolation}) to read {sorted(until)}")
        return values
    finally:
        consumer.close()


def consume_aiokafka(bootstrap: str, isolation: str, until: set[bytes]) -> list[bytes]:
    async def main():
        from aiokafka import AIOKafkaConsumer, TopicPartition
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                                    enable_auto_commit=False, fetch_max_wait_ms=200)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            values: list[bytes] = []
            deadline = time.monotonic() + 60
            while not until <= set(values):
                if time.monotonic() > deadline:
                    pytest.fail(f"timed out waiting for aiokafka ({isolation}) to read {sorted(until)}")
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    values.extend(r.value for r in records)
            return values
        finally:
            await consumer.stop()
    return run(main())


CONSUMERS = {"kafka-python": consume_kafka_python, "confluent-kafka": consume_confluent, "aiokafka": consume_aiokafka}


def txn_index_entries(cluster, broker_id: int, partition: int) -> list:
    directory = Path(cluster.brokers[broker_id].log_dirs, f"{TOPIC}-{partition}")
    entries = []
    for path in sorted(directory.glob("*.txnindex")):
        entries.extend(TransactionIndex(str(path), int(path.name.split(".")[0])).entries)
    return entries


def log_bytes(cluster, broker_id: int, partition: int) -> bytes:
    files = sorted(Path(cluster.brokers[broker_id].log_dirs, f"{TOPIC}-{partition}").glob("*.log"))
    return b"".join(f.read_bytes() for f in files)


def test_committed_and_aborted_transactions_across_partitions_and_a_leader_crash(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3, OVERRIDES)
    bootstrap = cluster.bootstrap_servers

    async def write_two_transactions():
        async with SimpleClient(bootstrap) as client:
            await client.create_topics({TOPIC: (PARTITIONS, 3)})
            await client.wait_for_leaders(TOPIC)
            committer = RawProducer(*await client.init_producer_id())
            aborter = RawProducer(*await client.init_producer_id())
            plain = RawProducer(*await client.init_producer_id())
            for p in range(PARTITIONS):
                await plain.send(client, p, [b"plain-%d" % p], transactional=False)
            for round_ in range(2):  # interleaved batches of both transactions on every partition
                for p in range(PARTITIONS):
                    await committer.send(client, p, [b"commit-%d-%d-%d" % (p, round_, i) for i in range(2)])
                    await aborter.send(client, p, [b"abort-%d-%d-%d" % (p, round_, i) for i in range(2)])
            # Both open: read_committed stops at the first transactional offset (1), uncommitted reads on.
            for p in range(PARTITIONS):
                assert await latest(client, p, READ_COMMITTED) == 1
                assert await latest(client, p, READ_UNCOMMITTED) == 9
                answer = await raw_fetch(client, p, 0, READ_COMMITTED)
                assert (answer.last_stable_offset, answer.high_watermark) == (1, 9)
            codes = await write_markers(client, [
                (committer.producer_id, committer.epoch, True, [0, 1, 2], COORDINATOR_EPOCH),
                (aborter.producer_id, aborter.epoch, False, [2, 1, 0], COORDINATOR_EPOCH)])
            assert set(codes.values()) == {0}, codes
            # A zombie coordinator (older epoch) is fenced; a partition that does not exist is unknown.
            fenced = await write_markers(client, [
                (aborter.producer_id, aborter.epoch, False, [0, 7], COORDINATOR_EPOCH - 1)])
            assert fenced == {(aborter.producer_id, 0): TRANSACTION_COORDINATOR_FENCED,
                              (aborter.producer_id, 7): UNKNOWN_TOPIC_OR_PARTITION}
            for p in range(PARTITIONS):
                await plain.send(client, p, [b"sentinel-%d" % p], transactional=False)
                assert await latest(client, p, READ_COMMITTED) == await latest(client, p, READ_UNCOMMITTED) == 12
                answer = await raw_fetch(client, p, 0, READ_COMMITTED)
                assert answer.last_stable_offset == 12
                assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == \
                    [(aborter.producer_id, 3)]
                assert (await raw_fetch(client, p, 0, READ_UNCOMMITTED)).aborted_transactions is None
            return plain

    plain = run(write_two_transactions())
    base = {b"plain-%d" % p for p in range(PARTITIONS)} | {b"sentinel-%d" % p for p in range(PARTITIONS)}
    committed = base | {b"commit-%d-%d-%d" % (p, r, i) for p in range(PARTITIONS) for r in range(2) for i in range(2)}
    aborted = {b"abort-%d-%d-%d" % (p, r, i) for p in range(PARTITIONS) for r in range(2) for i in range(2)}
    sentinels = {b"sentinel-%d" % p for p in range(PARTITIONS)}
    for name, consume in CONSUMERS.items():
        got = consume(bootstrap, "read_committed", sentinels)
        assert sorted(got) == sorted(committed), name  # no aborted record, no control record, no duplicate
        got = consume(bootstrap, "read_uncommitted", sentinels)
        assert sorted(got) == sorted(committed | aborted), name

    # An open transaction on partition 0, with plain records after it, then the leader crashes.
    async def open_transaction():
        async with SimpleClient(bootstrap) as client:
            opener = RawProducer(*await client.init_producer_id())
            first = await opener.send(client, 0, [b"late-commit-0"])
            await plain.send(client, 0, [b"after-open-0"], transactional=False)
            assert await latest(client, 0, READ_COMMITTED) == first == 12
            assert await latest(client, 0, READ_UNCOMMITTED) == 14
            answer = await raw_fetch(client, 0, 0, READ_COMMITTED)
            md = await client.metadata([TOPIC])
            return opener, first, answer.last_stable_offset, list(answer.aborted_transactions), \
                md.leader_for(TOPIC, 0)

    opener, first, lso_before, aborted_before, old_leader = run(open_transaction())
    assert lso_before == first

    # A read_committed consumer reaches the LSO and no further until the marker.
    from kafka import KafkaConsumer, TopicPartition
    tp0 = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, group_id=None, fetch_max_wait_ms=200)
    try:
        consumer.assign([tp0])
        consumer.seek(tp0, 11)  # sentinel-0
        seen: list[bytes] = []

        def reached_lso():
            for records in consumer.poll(timeout_ms=300).values():
                seen.extend(r.value for r in records)
            return consumer.position(tp0) >= first
        wait_until(reached_lso, 60, "the read_committed consumer to reach the LSO")
        assert seen == [b"sentinel-0"] and consumer.position(tp0) == first

        cluster.kill_broker(old_leader, signal.SIGKILL)

        async def after_crash():
            async with SimpleClient(bootstrap, retries=20, retry_backoff=0.3) as client:
                async def new_leader():
                    md = await client.metadata([TOPIC])
                    leader = md.leader_for(TOPIC, 0)
                    return leader if leader not in (None, -1, old_leader) else None
                deadline = time.monotonic() + 60
                while (leader := await new_leader()) is None:
                    assert time.monotonic() < deadline, "no new leader for partition 0"
                    await asyncio.sleep(0.3)
                # The new leader's HW may need a follower fetch to catch up; its LSO is the open txn's offset.
                deadline = time.monotonic() + 60
                while (answer := await raw_fetch(client, 0, 0, READ_COMMITTED)).last_stable_offset != lso_before:
                    assert time.monotonic() < deadline, f"LSO {answer.last_stable_offset} on the new leader"
                    await asyncio.sleep(0.3)
                assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == \
                    [(a.producer_id, a.first_offset) for a in aborted_before]
                assert await latest(client, 0, READ_COMMITTED) == lso_before
                codes = await write_markers(client, [(opener.producer_id, opener.epoch, True, [0], COORDINATOR_EPOCH)])
                assert codes == {(opener.producer_id, 0): 0}
                assert await latest(client, 0, READ_COMMITTED) == 15  # 12 txn, 13 plain, 14 marker
                return leader
        run(after_crash())

        def got_the_rest():
            for records in consumer.poll(timeout_ms=300).values():
                seen.extend(r.value for r in records)
            return b"after-open-0" in seen
        wait_until(got_the_rest, 60, "the read_committed consumer to read past the committed transaction")
        assert seen == [b"sentinel-0", b"late-commit-0", b"after-open-0"]
    finally:
        consumer.close()

    # The crashed broker recovers its transaction index and catches up to the same entries.
    cluster.start_broker(old_leader)
    survivors = [b for b in range(3) if b != old_leader]
    wait_until(lambda: log_bytes(cluster, old_leader, 0) == log_bytes(cluster, survivors[0], 0), 60,
               "the restarted broker to catch up on partition 0")
    expected = txn_index_entries(cluster, survivors[0], 0)
    assert [e.producer_id for e in expected] == [aborted_before[0].producer_id]
    for broker in range(3):
        assert txn_index_entries(cluster, broker, 0) == expected, broker

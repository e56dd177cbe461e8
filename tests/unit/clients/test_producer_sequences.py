"""AIOProducer's idempotent sequences after a batch fails for good (the producer-id bump), against a fake
leader that deduplicates as Kafka's does (see fake_cluster.py for the reactor behind it).

Pinned here (found while writing tests/chaos/test_our_producer_failover.py, which forces bumps with
oversized records while leaders move):
- the producer re-sequenced every queued batch after a bump, so a batch another partition was retrying,
  which the old leader had written before answering NOT_LEADER_OR_FOLLOWER, was stored a second time;
- a batch refused for a sequence gap failed instead of being re-sent in the next epoch (Kafka 2.8 retries);
- the bump re-sequenced every queued batch of the partition whose batch failed, also an earlier one being
  retried that the old leader had written: stored twice (found by the chaos test);
- a batch sent, refused and unsealed for the bump took new records when it was the last of its queue, so
  those were stored before the records of later batches then in flight (found by the chaos test);
- the bump took a fresh producer id where Kafka bumps the epoch of the same id (a leader insists on
  sequence 0 for a new epoch only of an id it knows; an unknown id is accepted at any sequence).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from odradek.clients.producer.producer import AIOProducer, _Batch
from odradek.clients.producer.batch import Columns
from odradek.clients.types import TopicPartition
from odradek.protocol.records import Compression
from odradek.protocol.errors import MessageTooLargeError
from odradek.protocol.records import RecordBatchView, iter_batches

from .fake_cluster import FakeCluster, ProducePartition, ProduceResponse, ProduceTopic
from .helpers import run

NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, OUT_OF_ORDER_SEQUENCE = 6, 10, 45


class DedupLeader(FakeCluster):
    """One broker leading every partition, deduplicating (producer id, epoch, base sequence) as Kafka's
    producer state does. ``script[partition]`` lists answers for the next batches (``by_value[first byte of the
    batch's first value]`` first, when it has one): ("written", code) appends
    (or finds the duplicate) and answers ``code``; ("refused", code) appends nothing; ``delay`` s before
    answering; ``default`` when neither has one. ``sent`` records (partition, (producer id, epoch), base
    sequence, first value) of every batch received; ``answered`` counts the responses sent."""

    def __init__(self) -> None:
        super().__init__(1)
        self.script: dict[int, list[tuple[str, int, float]]] = defaultdict(list)
        self.by_value: dict[bytes, list[tuple[str, int, float]]] = defaultdict(list)
        self.default: tuple[str, int, float] = ("written", 0, 0.0)
        self.written: dict[tuple[int, int, int, int], int] = {}
        self.sent: list[tuple[int, tuple[int, int], int, bytes]] = []
        self.answered = 0

    def _produce(self, broker_id: int, request: Any) -> Any:
        answers, delay = [], 0.0
        for topic in request.body.topic_data:
            for part in topic.partition_data:
                batch = RecordBatchView(bytearray(part.records))
                first = bytes(next(iter(batch.records())).value)
                self.sent.append((part.index, (batch.producer_id, batch.producer_epoch), batch.base_sequence, first))
                script = self.by_value[first[:1]] or self.script[part.index]
                action, code, wait = script.pop(0) if script else self.default
                delay = max(delay, wait)
                base = -1
                if action == "written":
                    key = (part.index, batch.producer_id, batch.producer_epoch, batch.base_sequence)
                    if key not in self.written:
                        self.written[key] = self.logs[(topic.name, part.index)].append(part.records)
                    base = self.written[key] if code == 0 else -1
                answers.append(ProducePartition(index=part.index, error_code=code, base_offset=base))
        response = ProduceResponse(responses=[ProduceTopic(name="t", partition_responses=answers)])
        if not delay:
            self.answered += 1
            return response

        async def later() -> Any:
            await asyncio.sleep(delay)
            self.answered += 1
            return response
        return later()

    def values(self, partition: int) -> list[bytes]:
        data = self.logs[("t", partition)].read(0)
        return [bytes(r.value) for batch in iter_batches(data) for r in batch.records()]


def identity(producer: AIOProducer) -> tuple[int, int]:
    return producer._producer_id, producer._producer_epoch


def producer_for(cluster: DedupLeader) -> AIOProducer:
    return AIOProducer(bootstrap_servers=cluster.bootstrap, linger_ms=60000, retry_backoff_ms=10)


async def queue_and_flush(producer: AIOProducer, records: dict[int, bytes]) -> list[asyncio.Future]:
    """One record per partition, drained together (one Produce request), then flushed."""
    futures = [await producer.send("t", value, partition=p) for p, value in records.items()]
    await asyncio.gather(producer.flush(), return_exceptions=True)
    return futures


def run_against_leader(leaders: list[int], body: Any) -> None:
    """Run ``body(cluster)`` against a started DedupLeader holding topic "t" (one partition per entry)."""
    async def main() -> None:
        cluster = DedupLeader()
        await cluster.start()
        try:
            cluster.add_topic("t", leaders)
            await body(cluster)
        finally:
            await cluster.stop()

    run(main())


def test_a_retried_batch_keeps_its_epoch_when_another_partition_forces_a_bump():
    async def body(cluster: DedupLeader) -> None:
        # Partition 0: written, then answered NOT_LEADER_OR_FOLLOWER (a leader that lost its leadership
        # while the produce waited). Partition 1: MESSAGE_TOO_LARGE, so that batch fails for good and
        # the producer takes a new id.
        cluster.script[0] = [("written", NOT_LEADER_OR_FOLLOWER, 0)]
        cluster.script[1] = [("refused", MESSAGE_TOO_LARGE, 0)]
        async with producer_for(cluster) as producer:
            first = identity(producer)
            kept, failed = await queue_and_flush(producer, {0: b"a", 1: b"b"})
            assert kept.result().offset == 0
            assert isinstance(failed.exception(), MessageTooLargeError)
            # The retry went out under the id and sequence it was written with, so the leader found it.
            assert cluster.sent[:3] == [(0, first, 0, b"a"), (1, first, 0, b"b"), (0, first, 0, b"a")]
            assert cluster.values(0) == [b"a"]
            # Later batches use the next epoch of the same id (Kafka's idempotent bump), from sequence 0.
            later = await queue_and_flush(producer, {0: b"c", 1: b"d"})
            assert [f.result().offset for f in later] == [1, 0]
            bumped = identity(producer)
            assert bumped == (first[0], first[1] + 1)
            assert sorted(cluster.sent[3:]) == [(0, bumped, 0, b"c"), (1, bumped, 0, b"d")]
            assert (cluster.values(0), cluster.values(1)) == ([b"a", b"c"], [b"d"])

    run_against_leader([0, 0], body)


def test_a_new_epochs_first_batch_waits_for_the_old_epochs_batch_of_its_partition():
    async def body(cluster: DedupLeader) -> None:
        # Partition 0's batch is refused (NOT_LEADER_OR_FOLLOWER) while partition 1's fails for good; its
        # retry under the old id is refused once more, slowly: a new batch of partition 0 queued meanwhile
        # must not be written before it under the new id.
        cluster.script[0] = [("refused", NOT_LEADER_OR_FOLLOWER, 0), ("refused", NOT_LEADER_OR_FOLLOWER, 0.3)]
        cluster.script[1] = [("refused", MESSAGE_TOO_LARGE, 0)]
        async with producer_for(cluster) as producer:
            first = [await producer.send("t", v, partition=p) for p, v in ((0, b"a"), (1, b"b"))]
            flushing = asyncio.ensure_future(producer.flush())
            while len(cluster.sent) < 3:  # the old batch's second attempt is being answered (slowly)
                await asyncio.sleep(0.01)
            behind = await producer.send("t", b"c", partition=0)
            await producer.flush()
            await asyncio.gather(flushing, return_exceptions=True)
            assert first[0].result().offset == 0 and behind.result().offset == 1
            assert isinstance(first[1].exception(), MessageTooLargeError)
            assert cluster.values(0) == [b"a", b"c"]  # once each, in send order

    run_against_leader([0, 0], body)


def test_a_sequence_gap_is_resent_in_the_next_epoch_not_failed():
    async def body(cluster: DedupLeader) -> None:
        # OUT_OF_ORDER_SEQUENCE with nothing earlier of ours pending: a real gap. Kafka 2.8's idempotent
        # producer bumps the epoch and retries (TransactionManager.canRetry); the record must not fail.
        cluster.script[0] = [("refused", OUT_OF_ORDER_SEQUENCE, 0)]
        async with producer_for(cluster) as producer:
            first = identity(producer)
            (future,) = await queue_and_flush(producer, {0: b"a"})
            assert future.result().offset == 0
            assert cluster.sent == [(0, first, 0, b"a"), (0, (first[0], first[1] + 1), 0, b"a")]
            assert cluster.values(0) == [b"a"]

    run_against_leader([0], body)


def test_batches_behind_one_that_failed_for_good_are_resent_in_the_next_epoch():
    async def body(cluster: DedupLeader) -> None:
        # Two batches of one partition in flight (each record fills a batch): the first is refused for
        # good, the second for the gap it leaves; the second goes again as sequence 0 of a new id.
        cluster.script[0] = [("refused", MESSAGE_TOO_LARGE, 0), ("refused", OUT_OF_ORDER_SEQUENCE, 0)]
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, linger_ms=60000, retry_backoff_ms=10,
                               batch_size=100) as producer:
            first = identity(producer)
            futures = [await producer.send("t", value * 90, partition=0) for value in (b"a", b"b")]
            await asyncio.gather(producer.flush(), return_exceptions=True)
            assert isinstance(futures[0].exception(), MessageTooLargeError)
            assert futures[1].result().offset == 0
            bumped = identity(producer)
            assert [(pid, seq, value[:1]) for _, pid, seq, value in cluster.sent] == [
                (first, 0, b"a"), (first, 1, b"b"), (bumped, 0, b"b")]
            assert cluster.values(0) == [b"b" * 90]

    run_against_leader([0], body)


def test_an_exhausted_epoch_takes_a_new_producer_id():
    async def body(cluster: DedupLeader) -> None:
        cluster.script[0] = [("refused", OUT_OF_ORDER_SEQUENCE, 0)]
        async with producer_for(cluster) as producer:
            producer._producer_epoch = 32767  # Short.MAX_VALUE: Java resets the id rather than wrap
            first = identity(producer)
            (future,) = await queue_and_flush(producer, {0: b"a"})
            assert future.result().offset == 0
            assert identity(producer)[0] != first[0] and cluster.sent[-1] == (0, identity(producer), 0, b"a")

    run_against_leader([0], body)


def test_a_batch_unsealed_for_a_bump_takes_no_new_records():
    async def main():
        columns = Columns(0, None, [b"a"], None)
        batch = _Batch(TopicPartition("t", 0), 0, Compression.NONE, 0.0)
        assert batch.append(columns, 0, 1, 16384) == 1
        batch.seal(7, 0, 0)
        batch.unseal()
        # Records sent after it may be in a later batch already: appending here would store them before those.
        assert batch.append(columns, 0, 1, 16384) == 0
        assert batch.record_count == 1

    run(main())


def test_a_batch_before_the_failed_one_keeps_its_epoch_and_sequence():
    async def body(cluster: DedupLeader) -> None:
        # Three batches of one partition in flight: the first written then answered NOT_LEADER_OR_FOLLOWER,
        # the second refused for good, the third refused for the gap. The first goes again under its old
        # epoch and sequence (the leader finds it: stored once), the third as sequence 0 of the next epoch.
        cluster.by_value.update({b"a": [("written", NOT_LEADER_OR_FOLLOWER, 0)],
                                 b"b": [("refused", MESSAGE_TOO_LARGE, 0)],
                                 b"c": [("refused", OUT_OF_ORDER_SEQUENCE, 0)]})
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, linger_ms=60000, retry_backoff_ms=10,
                               batch_size=100) as producer:
            first = identity(producer)
            futures = [await producer.send("t", value * 90, partition=0) for value in (b"a", b"b", b"c")]
            await asyncio.gather(producer.flush(), return_exceptions=True)
            assert futures[0].result().offset == 0 and futures[2].result().offset == 1
            assert isinstance(futures[1].exception(), MessageTooLargeError)
            sends_of_a = [(pid, seq) for _, pid, seq, value in cluster.sent if value[:1] == b"a"]
            assert sends_of_a == [(first, 0), (first, 0)]
            assert identity(producer) > first
            assert cluster.values(0) == [b"a" * 90, b"c" * 90]

    run_against_leader([0], body)

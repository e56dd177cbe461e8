"""delivery_timeout_ms bounds every record of AIOProducer and the blocking Producer, against the fake leader of
test_producer_sequences.py (issue 22).

Pinned here:
- batches queued behind a retried batch of their partition, and any batch waiting while its partition had
  a batch in flight, never expired (only a partition's first queued batch was looked at, and the sender
  slept with no deadline when nothing could be sent): flush() never returned;
- flush(timeout) cancelled the batches' futures when it timed out, so their records were never answered;
- a batch whose request got no answer was not expired until the request failed;
- after a sent batch expired, the idempotent producer went on under the same epoch whether or not the broker
  had written it; now its partition waits for the outstanding answers and bumps the epoch unless they show
  the batch was written (Java's unresolved sequences);
- each record handed to the blocking Producer for an unknown topic waited max_block_ms of its own.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from odradek.clients.producer.producer import AIOProducer
from odradek.clients.producer.sync_producer import Producer
from odradek.clients.types import KafkaConfigurationError, TopicPartition
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import NotEnoughReplicasError, RequestTimedOutError
from tests.fakes.polling import until

from .fake_cluster import fake_cluster_in_thread
from .helpers import run
from .test_producer_sequences import DedupLeader, identity, run_against_leader

NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT = NotEnoughReplicasError.code, RequestTimedOutError.code
# The shortest times the configuration allows: delivery >= linger + request timeout (Kafka's rule).


FAST = {"linger_ms": 0, "request_timeout_ms": 300, "delivery_timeout_ms": 300, "retry_backoff_ms": 20}


@pytest.mark.parametrize("acks", ["all", 1])
def test_records_refused_until_the_delivery_timeout_fail_naming_the_brokers_error(acks):
    async def body(cluster: DedupLeader) -> None:
        cluster.default = ("refused", NOT_ENOUGH_REPLICAS, 0.0)
        # 40 batches of one partition (one record each): the first is retried, the others wait behind it.
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, acks=acks, batch_size=100, **FAST) as producer:
            futures = [await producer.send("t", b"%02d" % n + b"x" * 90, partition=0) for n in range(40)]
            await asyncio.wait_for(producer.flush(), 10)
            errors = [future.exception() for future in futures]
            assert all("NOT_ENOUGH_REPLICAS" in str(e) for e in errors), errors
            expired = [e for e in errors if isinstance(e, RequestTimedOutError)]
            assert expired and all(str(e).startswith("[Error 7 REQUEST_TIMED_OUT] Expiring 1 record(s) for t-0:")
                                   and " ms has passed since batch creation (" in str(e)
                                   and "last error: NOT_ENOUGH_REPLICAS: producing to t-0)" in str(e)
                                   for e in expired), expired[:2]
            assert isinstance(expired[0].__cause__, NotEnoughReplicasError)
            assert cluster.values(0) == []

    run_against_leader([0], body)


def test_a_batch_without_a_leader_expires():
    async def body(cluster: DedupLeader) -> None:
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, **FAST) as producer:
            cluster.topics["t"][0] = -1  # the partition loses its leader (LEADER_NOT_AVAILABLE)
            await producer._client.metadata(["t"])
            future = await producer.send("t", b"a", partition=0)
            await asyncio.wait_for(producer.flush(), 10)
            assert isinstance(future.exception(), RequestTimedOutError)
            assert "Expiring 1 record(s) for t-0:" in str(future.exception())

    run_against_leader([0], body)


def test_flush_with_a_timeout_raises_and_leaves_the_records_to_their_fate():
    async def body(cluster: DedupLeader) -> None:
        cluster.default = ("refused", NOT_ENOUGH_REPLICAS, 0.0)
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, **{**FAST, "delivery_timeout_ms": 1000}) as producer:
            future = await producer.send("t", b"a", partition=0)
            with pytest.raises(RequestTimedOutError, match="flush did not finish within 0.05 s"):
                await producer.flush(0.05)
            assert not future.done()  # still being retried, not cancelled
            await asyncio.wait_for(producer.flush(), 10)
            assert "NOT_ENOUGH_REPLICAS" in str(future.exception())

    run_against_leader([0], body)


def test_a_batch_expired_in_flight_fails_on_time_and_its_late_success_resolves_its_sequence():
    async def body(cluster: DedupLeader) -> None:
        # "a" is written but answered only after delivery_timeout_ms (the request timeout is 2 x 300 ms).
        cluster.by_value[b"a"] = [("written", 0, 0.45)]
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, **FAST) as producer:
            first = identity(producer)
            late = await producer.send("t", b"a", partition=0)
            await asyncio.wait_for(producer.flush(), 10)
            assert cluster.answered == 0  # flush returned when the record expired, not when the answer came
            assert "Expiring 1 record(s) for t-0:" in str(late.exception())
            assert "attempt 1 still unanswered" in str(late.exception())
            # The next batch waits for that answer: it shows "a" was written, so the epoch stays.
            later = await producer.send("t", b"b", partition=0)
            assert (await asyncio.wait_for(later, 10)).offset == 1
            assert cluster.sent == [(0, first, 0, b"a"), (0, first, 1, b"b")]
            assert cluster.values(0) == [b"a", b"b"]

    run_against_leader([0], body)


def test_an_expired_batch_whose_fate_stays_unknown_forces_an_epoch_bump():
    async def body(cluster: DedupLeader) -> None:
        # "a" is answered after delivery_timeout_ms with an error (not written). Its partition's sequence 0 is
        # unresolved, so "b" may not go as sequence 1 of the epoch (the leader would refuse it for the gap,
        # or, had "a" been written after all, it would be fine: the producer cannot tell): a new epoch.
        cluster.by_value[b"a"] = [("refused", REQUEST_TIMED_OUT, 0.45)]
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, **FAST) as producer:
            first = identity(producer)
            lost = await producer.send("t", b"a", partition=0)
            await asyncio.wait_for(producer.flush(), 10)
            assert isinstance(lost.exception(), RequestTimedOutError)
            later = await producer.send("t", b"b", partition=0)
            assert (await asyncio.wait_for(later, 10)).offset == 0
            bumped = identity(producer)
            assert bumped == (first[0], first[1] + 1)
            assert cluster.sent == [(0, first, 0, b"a"), (0, bumped, 0, b"b")]
            assert cluster.values(0) == [b"b"]

    run_against_leader([0], body)


def test_expired_batches_are_resolved_by_the_late_success_of_the_last_one():
    async def body(cluster: DedupLeader) -> None:
        # Three batches of one partition in flight, answered after they expired (the leader answers a
        # connection's requests in order, so all three late): the first with NOT_ENOUGH_REPLICAS_AFTER_APPEND
        # (written, but an error), the other two acknowledged. The partition's last sequence was acknowledged,
        # so its sequences are in order: the next batch goes on under the same epoch, nothing is re-sent.
        cluster.by_value[b"a"] = [("written", 20, 0.45)]
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, batch_size=100, **FAST) as producer:
            first = identity(producer)
            futures = []
            for n, value in enumerate((b"a", b"b", b"c")):
                futures.append(await producer.send("t", value * 90, partition=0))
                await until(lambda: len(producer._sender.in_flight.get(TopicPartition("t", 0), ())) == n + 1)
            await asyncio.wait_for(producer.flush(), 10)
            assert all(isinstance(f.exception(), RequestTimedOutError) for f in futures)
            later = await producer.send("t", b"d", partition=0)
            assert (await asyncio.wait_for(later, 10)).offset == 3
            assert identity(producer) == first
            assert [(pid, seq) for _, pid, seq, _ in cluster.sent] == [(first, 0), (first, 1), (first, 2), (first, 3)]
            assert [v[:1] for v in cluster.values(0)] == [b"a", b"b", b"c", b"d"]

    run_against_leader([0], body)


def test_the_blocking_producer_flushes_records_that_keep_failing():
    with fake_cluster_in_thread(1) as cluster:
        cluster.add_topic("t", [0])
        cluster.inject[ApiKey.PRODUCE] = [NOT_ENOUGH_REPLICAS] * 1000
        with Producer(bootstrap_servers=cluster.bootstrap, batch_size=200, **FAST) as producer:
            futures = [producer.send("t", b"%03d" % n + b"x" * 100, partition=0) for n in range(50)]
            producer.flush(10)
            assert all(f.failed() and "NOT_ENOUGH_REPLICAS" in str(f.exception()) for f in futures)


def test_records_for_a_topic_that_never_appears_wait_max_block_ms_together_not_each():
    with fake_cluster_in_thread(1) as cluster:
        with Producer(bootstrap_servers=cluster.bootstrap, max_block_ms=300, retry_backoff_ms=50) as producer:
            started = time.monotonic()
            futures = [producer.send("missing", b"%d" % n) for n in range(50)]
            producer.flush(30)
            assert all(isinstance(f.exception(), RequestTimedOutError) for f in futures)
            assert "Topic missing not present in metadata after 300 ms." in str(futures[-1].exception())
            # One wait for the burst: a few Metadata requests, not a few per record.
            assert cluster.calls[(0, int(ApiKey.METADATA))] < 20
            print(f"50 records failed after {time.monotonic() - started:.2f} s")


def test_a_delivery_timeout_below_linger_plus_request_timeout_is_refused():
    with pytest.raises(KafkaConfigurationError, match="delivery_timeout_ms should be equal to or larger than "
                                                      r"linger_ms \+ request_timeout_ms \(1500\), not 1000"):
        AIOProducer(linger_ms=500, request_timeout_ms=1000, delivery_timeout_ms=1000)
    # Left unset, it is raised to that sum (Kafka warns and does the same).
    assert AIOProducer(linger_ms=500, request_timeout_ms=200000).config["delivery_timeout_ms"] == 200500

"""ReplicaManager with a real LogManager on disk and real purgatories, driven like LeaderAndIsr does."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.purgatory.completion import Completion
from odradek.broker.replica_manager import FetchParams
from odradek.protocol import errors
from odradek.protocol.records import iter_batches
from tests.fakes.replica_manager import partition_state

from .log.helpers import value_batch as batch
from .network.helpers import run as run_loop

BROKER = 1


def state(partition: int, leader: int = BROKER, epoch: int = 0, replicas=(BROKER,), isr=None):
    return partition_state(partition, leader=leader, leader_epoch=epoch, replicas=replicas, isr=isr)


def consumer(max_wait_ms: int = 0, min_bytes: int = 1) -> FetchParams:
    return FetchParams(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20)


@pytest.fixture
def rm(replica_managers):
    return replica_managers.make(BROKER)


def run(coro):
    return run_loop(coro, timeout=10)


def test_leader_appends_and_consumers_read_below_the_high_watermark(rm):
    async def main():
        rm.start()
        assert rm.become_leader_or_follower(1, [("t", state(0))], {}) == {("t", 0): 0}
        first = rm.append_records(1, 1000, {("t", 0): batch(b"a", b"b")})
        second = rm.append_records(1, 1000, {("t", 0): batch(b"c")})
        assert (first[("t", 0)].error_code, first[("t", 0)].base_offset) == (0, 0)
        assert second[("t", 0)].base_offset == 2
        result = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 1, 1 << 20)])[("t", 0)]
        assert result.error_code == 0 and result.high_watermark == 3
        # The whole batch holding offset 1 comes back, then the next one (Kafka returns whole batches).
        assert [b.base_offset for b in iter_batches(result.records)] == [0, 2]
    run(main())


def test_a_parked_fetch_wakes_on_produce_and_an_idle_one_expires_empty(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0))], {})
        waiting = rm.fetch_messages(consumer(max_wait_ms=5000), [FetchSpec("t", 0, 0, 1 << 20)])
        assert isinstance(waiting, Completion) and not waiting.done()
        rm.append_records(1, 1000, {("t", 0): batch(b"x")})
        result = (await waiting)[("t", 0)]
        assert result.error_code == 0 and len(list(iter_batches(result.records))) == 1
        idle = rm.fetch_messages(consumer(max_wait_ms=50), [FetchSpec("t", 0, 1, 1 << 20)])
        result = (await idle)[("t", 0)]
        assert (result.error_code, result.records, result.high_watermark) == (0, b"", 1)
    run(main())


def test_min_bytes_waits_for_enough_data(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0))], {})
        small = batch(b"x")
        waiting = rm.fetch_messages(consumer(max_wait_ms=5000, min_bytes=3 * len(small)),
                                    [FetchSpec("t", 0, 0, 1 << 20)])
        rm.append_records(1, 1000, {("t", 0): batch(b"x")})
        await asyncio.sleep(0.01)
        assert not waiting.done()
        for _ in range(2):
            rm.append_records(1, 1000, {("t", 0): batch(b"y")})
        result = (await waiting)[("t", 0)]
        assert len(list(iter_batches(result.records))) == 3
    run(main())


def test_errors_per_partition(rm):
    async def main():
        rm.start()
        rm.metadata_cache.partitions = {"elsewhere": {0: SimpleNamespace(leader=2)}}
        rm.become_leader_or_follower(1, [("t", state(0)), ("f", state(0, leader=2, replicas=(2, BROKER)))], {})
        results = rm.append_records(1, 1000, {("unknown", 0): batch(b"a"), ("elsewhere", 0): batch(b"a"),
                                              ("f", 0): batch(b"a"), ("t", 0): batch(b"a")})
        assert {k: r.error_code for k, r in results.items()} == {
            ("unknown", 0): errors.UnknownTopicOrPartitionError.code,
            ("elsewhere", 0): errors.NotLeaderOrFollowerError.code,
            ("f", 0): errors.NotLeaderOrFollowerError.code, ("t", 0): 0}
        assert rm.append_records(2, 1000, {("t", 0): batch(b"a")})[("t", 0)].error_code == \
            errors.InvalidRequiredAcksError.code
        fetched = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 5, 1 << 20), FetchSpec("t", 0, 0, 100, 7)])
        assert [r.error_code for r in fetched.values()] == [errors.UnknownLeaderEpochError.code]
        out_of_range = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 5, 1 << 20)])
        assert out_of_range[("t", 0)].error_code == errors.OffsetOutOfRangeError.code
    run(main())


def test_stale_controller_and_leader_epochs_are_refused(rm):
    rm.become_leader_or_follower(5, [("t", state(0, epoch=3))], {})
    with pytest.raises(errors.StaleControllerEpochError):
        rm.become_leader_or_follower(4, [("t", state(0, epoch=4))], {})
    # Same or older leader epoch: Kafka 2.8 answers STALE_CONTROLLER_EPOCH for the partition.
    assert rm.become_leader_or_follower(5, [("t", state(0, epoch=3))], {}) == {
        ("t", 0): errors.StaleControllerEpochError.code}
    assert rm.become_leader_or_follower(5, [("u", state(0, replicas=(7,)))], {}) == {
        ("u", 0): errors.UnknownTopicOrPartitionError.code}


def test_acks_all_waits_for_the_isr_and_times_out_or_completes(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, replicas=(BROKER, 2)))], {})
        pending = rm.append_records(-1, 5000, {("t", 0): batch(b"a", b"b")})
        assert isinstance(pending, Completion)
        # The follower fetches from offset 2: it has both records, the HW moves, the produce completes.
        follower = FetchParams(replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
        rm.fetch_messages(follower, [FetchSpec("t", 0, 2, 1 << 20)])
        assert (await pending)[("t", 0)].error_code == 0
        timed_out = rm.append_records(-1, 50, {("t", 0): batch(b"c")})
        assert (await timed_out)[("t", 0)].error_code == errors.RequestTimedOutError.code
    run(main())


def test_a_follower_parked_without_a_partition_it_has_not_fetched_is_answered_at_its_first_append(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, replicas=(BROKER, 2))), ("t", state(1, replicas=(BROKER, 2)))],
                                     {})
        follower = FetchParams(replica_id=2, max_wait_ms=30000, min_bytes=1, max_bytes=1 << 20)
        # Its fetch holds t-1 only (it took t-0 after sending it): an append to t-0 answers it now, so its
        # next fetch names t-0, instead of after max_wait_ms while an acks=-1 produce to t-0 waits.
        parked = rm.fetch_messages(follower, [FetchSpec("t", 1, 0, 1 << 20)])
        assert isinstance(parked, Completion)
        produce = rm.append_records(-1, 30000, {("t", 0): batch(b"x")})
        assert parked.done() and (await parked)[("t", 1)].records == b""
        # Once per follower and leadership: a fetch still without t-0 waits for t-1 as usual.
        parked = rm.fetch_messages(follower, [FetchSpec("t", 1, 0, 1 << 20)])
        rm.append_records(1, 1000, {("t", 0): batch(b"y")})
        assert not parked.done()
        rm.fetch_messages(follower, [FetchSpec("t", 0, 2, 1 << 20)])  # the follower's next fetch names t-0
        assert (await produce)[("t", 0)].error_code == 0
        rm.append_records(1, 1000, {("t", 1): batch(b"z")})
        assert len(list(iter_batches((await parked)[("t", 1)].records))) == 1
    run(main())


def test_acks_all_under_min_insync_replicas_is_refused(replica_managers):
    rm = replica_managers.make(BROKER, {"min.insync.replicas": "2"})
    rm.become_leader_or_follower(1, [("t", state(0, replicas=(BROKER, 2), isr=(BROKER,)))], {})
    assert rm.append_records(-1, 100, {("t", 0): batch(b"a")})[("t", 0)].error_code == \
        errors.NotEnoughReplicasError.code
    assert rm.append_records(1, 100, {("t", 0): batch(b"a")})[("t", 0)].error_code == 0


def test_stop_replica_with_delete_removes_the_log_and_answers_parked_fetches(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0))], {})
        log_dir = rm.online_partition("t", 0).log.dir
        waiting = rm.fetch_messages(consumer(max_wait_ms=5000), [FetchSpec("t", 0, 0, 1 << 20)])
        assert rm.stop_replicas(1, [("t", 0, -2, True)]) == {("t", 0): 0}
        result = (await waiting)[("t", 0)]
        assert result.error_code == errors.UnknownTopicOrPartitionError.code
        assert not os.path.exists(log_dir)
    run(main())


def test_a_parked_fetch_with_a_negative_partition_max_bytes_never_breaks_appends(rm):
    """Issue 13 finding 1: the wake-up check read the log with a negative size (os.pread raised inside
    check_and_complete), so every later append failed until the fetch expired."""
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0)), ("t", state(1))], {})
        rm.append_records(1, 1000, {("t", 0): batch(b"a")})
        parked = rm.fetch_messages(consumer(max_wait_ms=60_000, min_bytes=100),
                                   [FetchSpec("t", 0, 1, -5), FetchSpec("t", 1, 0, 1 << 20)])
        assert isinstance(parked, Completion)
        for value in (b"b", b"c"):
            result = rm.append_records(1, 1000, {("t", 0): batch(value)})[("t", 0)]
            assert result.error_code == 0 and result.base_offset >= 1
        assert not parked.done()  # a negative size counts against min_bytes, as Kafka's DelayedFetch
        rm.append_records(1, 1000, {("t", 1): batch(b"x" * 200)})  # enough on the other partition
        answer = await asyncio.wait_for(parked, 5)
        assert answer[("t", 0)].error_code == errors.UnknownServerError.code  # Kafka's answer to the size
        assert answer[("t", 1)].error_code == 0 and answer[("t", 1)].records
    run(main())


def test_a_negative_partition_max_bytes_fails_only_its_partition_and_only_when_there_is_data(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0)), ("t", state(1))], {})
        rm.append_records(1, 1000, {("t", 0): batch(b"a"), ("t", 1): batch(b"b")})
        results = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 0, -1), FetchSpec("t", 1, 0, 1 << 20),
                                                 FetchSpec("t", 0, 1, -1)])
        assert results[("t", 1)].error_code == 0 and results[("t", 1)].records
        # Kafka's LogSegment.read refuses the size (UNKNOWN_SERVER_ERROR); at the log end nothing is read.
        assert results[("t", 0)].error_code == 0 and results[("t", 0)].records == b""
        failed = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 0, -1)])[("t", 0)]
        assert failed.error_code == errors.UnknownServerError.code
    run(main())


def test_an_unexpected_failure_while_reading_fails_that_partition_alone(rm, monkeypatch):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0)), ("t", state(1))], {})
        rm.append_records(1, 1000, {("t", 0): batch(b"a"), ("t", 1): batch(b"b")})
        broken = rm.partitions[("t", 0)].log

        def read(*args, **kwargs):
            raise OSError(5, "Input/output error")
        parked = rm.fetch_messages(consumer(max_wait_ms=60_000, min_bytes=10_000),
                                   [FetchSpec("t", 0, 1, 1 << 20), FetchSpec("t", 1, 1, 1 << 20)])
        assert isinstance(parked, Completion)
        monkeypatch.setattr(broken, "read", read)
        assert rm.append_records(1, 1000, {("t", 0): batch(b"c")})[("t", 0)].error_code == 0
        answer = await asyncio.wait_for(parked, 5)  # the failing check completed it at once
        assert answer[("t", 0)].error_code == errors.UnknownServerError.code
        assert answer[("t", 1)].error_code == 0
    run(main())


def test_a_failed_log_dir_stops_its_partitions_with_kafka_storage_error(rm):
    """KIP-112: the partitions of an offline dir answer KAFKA_STORAGE_ERROR to produce, fetch and LeaderAndIsr,
    and a parked acks=-1 produce waiting on one is answered with it."""
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, replicas=(BROKER, 2), isr=[BROKER, 2]))], {})
        waiting = rm.append_records(-1, 5000, {("t", 0): batch(b"a")})
        assert isinstance(waiting, Completion)
        log_dir = os.path.dirname(rm.partitions[("t", 0)].log.dir)
        rm.log_manager.failure_channel.mark_offline(log_dir, "test")
        assert rm.handle_log_dir_failure(log_dir) == [("t", 0)]
        assert (await waiting)[("t", 0)].error_code == errors.KafkaStorageError.code
        produced = rm.append_records(1, 1000, {("t", 0): batch(b"b")})
        assert produced[("t", 0)].error_code == errors.KafkaStorageError.code
        fetched = rm.fetch_messages(consumer(), [FetchSpec("t", 0, 0, 1 << 20)])
        assert fetched[("t", 0)].error_code == errors.KafkaStorageError.code
        assert rm.become_leader_or_follower(1, [("t", state(0, epoch=1))], {}) == {
            ("t", 0): errors.KafkaStorageError.code}
        assert rm.log_manager.get_log("t", 0) is None
    run(main())

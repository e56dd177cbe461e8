"""Moving a replica between two log dirs of one broker (AlterReplicaLogDirs, KIP-113): a real ReplicaManager on a
real LogManager with two dirs, driven as LeaderAndIsr and the request handler drive them."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from odradek.broker.apis.alter_replica_log_dirs import AlterReplicaLogDirsApi
from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.describe_log_dirs import DescribeLogDirsApi
from odradek.broker.log import LogManager
from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.log_types import FUTURE_DIR_SUFFIX
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.metrics.replica_metrics import ReplicaManagerCollector
from odradek.broker import replica_log_dir_mover as mover_module
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication_quota import UNTHROTTLED
from odradek.protocol import errors
from odradek.protocol.messages import AlterReplicaLogDirsRequest, DescribeLogDirsRequest
from odradek.protocol.records import iter_batches
from tests.fakes.clock import ManualClock
from tests.fakes.replica_manager import partition_state
from tests.fakes.polling import until

from .log.helpers import make_producer_batch
from .network.helpers import run as run_loop

BROKER = 1
TP = ("t", 0)


class Broker:
    """A ReplicaManager over a LogManager with dirs a and b; ``restart`` shuts both down and opens them again."""

    def __init__(self, root) -> None:
        self.dirs = [str(root / "a"), str(root / "b")]
        self.rm: ReplicaManager | None = None
        self.open()

    def open(self) -> None:
        self.lm = LogManager(self.dirs, broker_id=BROKER, cluster_id="c")
        self.rm = ReplicaManager(BROKER, self.lm, MetadataCache(BROKER))

    def close(self) -> None:
        self.rm.shutdown()
        self.lm.shutdown()

    def restart(self) -> None:
        self.close()
        self.open()

    def lead(self, partition: int = 0, epoch: int = 0) -> dict:
        state = partition_state(partition, leader=BROKER, leader_epoch=epoch, replicas=(BROKER,), is_new=False)
        return self.rm.become_leader_or_follower(1, [("t", state)], {})

    def produce(self, count: int, first_sequence: int = 0, per_batch: int = 5) -> None:
        for seq in range(first_sequence, first_sequence + count * per_batch, per_batch):
            result = self.rm.append_records(1, 1000, {TP: make_producer_batch(7, 0, seq, per_batch)})
            assert result[TP].error_code == 0

    def values(self) -> list[bytes]:
        log_ = self.rm.partitions[TP].log
        data = log_.read(log_.log_start_offset, 1 << 30).records
        return [r.value for b in iter_batches(data) for r in b.records()]

    def dir_of(self) -> str:
        return os.path.dirname(self.rm.partitions[TP].log.dir)

    def start_move(self, batches: int, step_bytes: int | None = None) -> tuple[str, str]:
        """Lead t-0, write ``batches`` batches of 5, ask for the move to the other dir; (source, target)."""
        self.lead()
        source = self.dir_of()
        target = next(d for d in self.dirs if d != source)
        self.produce(batches)
        if step_bytes is not None:
            self.rm.log_dir_mover.step_bytes = step_bytes
        assert self.rm.log_dir_mover.alter_replica_log_dirs({TP: target}) == {TP: 0}
        return source, target


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.close()


def run(coro):
    return run_loop(coro, timeout=20)


def test_a_replica_moves_while_its_producer_appends_and_ends_in_the_new_dir(broker):
    async def main():
        broker.rm.start()
        broker.lead()
        source = broker.dir_of()
        target = next(d for d in broker.dirs if d != source)
        broker.rm.log_dir_mover.step_bytes = 4096  # many steps, appends between them
        broker.produce(200)
        assert broker.rm.log_dir_mover.alter_replica_log_dirs({TP: target}) == {TP: 0}
        future = broker.lm.future_log(*TP)
        assert future is not None and os.path.dirname(future.dir) == target and future.dir.endswith(FUTURE_DIR_SUFFIX)
        sequence = 1000
        while broker.lm.future_log(*TP) is not None:
            broker.produce(1, sequence)
            sequence += 5
            await asyncio.sleep(0)
        assert broker.dir_of() == target and broker.lm.dir_of(*TP) == target
        expected = [b"seq-%d" % i for i in list(range(1000)) + list(range(1000, sequence))]
        assert broker.values() == expected
        # the old dir holds the partition no more (renamed -delete, removed later)
        assert not os.path.exists(os.path.join(source, "t-0"))
        # the producer state came along: a retried batch is a duplicate, the next one is in sequence
        retry = broker.rm.append_records(1, 1000, {TP: make_producer_batch(7, 0, sequence - 5, 5)})[TP]
        assert retry.error_code == 0 and retry.base_offset == len(expected) - 5
        broker.produce(1, sequence)
        assert len(broker.values()) == len(expected) + 5
    run(main())


def test_the_move_quota_holds_the_copy_until_it_is_raised(broker, monkeypatch):
    monkeypatch.setattr(mover_module, "THROTTLED_RECHECK_MS", 5)
    quota = broker.rm.replication_quotas.alter_log_dirs
    assert broker.rm.log_dir_mover.quota is quota
    clock = ManualClock(1_000_000.0)  # stands still: only what the test records leaves the rate
    quota.clock = clock

    async def main():
        quota.update_quota(1000)  # B/s, as replica.alter.log.dirs.io.max.bytes.per.second=1000
        source, target = broker.start_move(200, step_bytes=4096)
        future = broker.lm.future_log(*TP)
        await until(lambda: broker.rm.log_dir_mover.throttled_waits >= 3, "the copy waiting for its quota")
        held = future.log_end_offset
        assert 0 < held < broker.rm.partitions[TP].log.log_end_offset  # one step of 4 KiB, then nothing
        assert quota.throttled_bytes == future.size
        await until(lambda: broker.rm.log_dir_mover.throttled_waits >= 6, "more waits")
        assert future.log_end_offset == held
        # the held move's lag, as ReplicaAlterLogDirsManager's MaxLag reports it
        lag = broker.rm.partitions[TP].log.high_watermark - held
        assert lag > 0 and broker.rm.log_dir_mover.lags() == {TP: lag}
        families = {f.name: f for f in ReplicaManagerCollector(SimpleNamespace(replica_manager=broker.rm)).collect()}
        assert [(s.labels, s.value) for s in families["kafka_server_replicaalterlogdirsmanager_maxlag"].samples] == [
            ({"clientId": "ReplicaAlterLogDirs"}, lag)]
        quota.update_quota(UNTHROTTLED)  # the operator raises it (or --verify removes it)
        await until(lambda: broker.lm.future_log(*TP) is None, "the move to finish")
        assert broker.dir_of() == target
        assert quota.throttled_bytes == broker.rm.partitions[TP].log.size  # every byte copied was counted
    run(main())


def test_the_cleaner_leaves_a_moving_partition_alone_until_the_swap_or_a_redirect(broker):
    broker.lm.start_cleaner(CleanerConfig(backoff_ms=10, isolation="thread"))
    paused = lambda: broker.lm.cleaner.manager.is_paused(TP)  # noqa: E731
    source, target = broker.start_move(20, step_bytes=4096)  # no loop: stepped by hand below
    assert paused()
    assert broker.rm.log_dir_mover.alter_replica_log_dirs({TP: source}) == {TP: 0}  # back: the move is dropped
    assert not paused() and broker.lm.future_log(*TP) is None
    assert broker.rm.log_dir_mover.alter_replica_log_dirs({TP: target}) == {TP: 0}
    assert paused()
    mover, partition = broker.rm.log_dir_mover, broker.rm.partitions[TP]
    while not mover.step(partition, broker.lm.future_log(*TP)):
        assert paused()
    assert broker.dir_of() == target and not paused()


def test_the_errors_kafka_answers(broker):
    async def main():
        broker.rm.start()
        broker.lead()
        source = broker.dir_of()
        target = next(d for d in broker.dirs if d != source)
        mover = broker.rm.log_dir_mover
        assert mover.alter_replica_log_dirs({TP: "/nowhere"}) == {TP: errors.LogDirNotFoundError.code}
        assert mover.alter_replica_log_dirs({TP: target + "/"}) == {TP: errors.LogDirNotFoundError.code}
        assert mover.alter_replica_log_dirs({("unknown", 0): target}) == {
            ("unknown", 0): errors.UnknownTopicOrPartitionError.code}
        assert mover.alter_replica_log_dirs({TP: source}) == {TP: 0}  # already there: nothing to do
        assert broker.lm.future_log(*TP) is None
        broker.lm.failure_channel.mark_offline(target, "test", OSError("boom"))
        assert mover.alter_replica_log_dirs({TP: target}) == {TP: errors.KafkaStorageError.code}
    run(main())


def test_a_move_asked_for_before_the_replica_exists_places_it_there(broker):
    target = broker.dirs[1]  # the fewest-logs rule would pick dirs[0]
    assert broker.rm.log_dir_mover.alter_replica_log_dirs({TP: target}) == {TP: errors.UnknownTopicOrPartitionError.code}
    broker.lead()
    assert broker.dir_of() == target and broker.lm.future_log(*TP) is None


def test_a_second_request_to_another_dir_or_back_cancels_the_move(broker):
    source, target = broker.start_move(10)  # no event loop: the copy runs only when step() is called
    mover = broker.rm.log_dir_mover
    future_dir = broker.lm.future_log(*TP).dir
    assert mover.alter_replica_log_dirs({TP: source}) == {TP: 0}
    assert broker.lm.future_log(*TP) is None and not os.path.exists(future_dir)
    assert broker.dir_of() == source


def test_a_truncation_of_the_current_log_truncates_the_copy(broker):
    source, target = broker.start_move(10, step_bytes=1)
    mover = broker.rm.log_dir_mover
    partition, future = broker.rm.partitions[TP], broker.lm.future_log(*TP)
    for _ in range(6):
        assert not mover.step(partition, future)
    assert future.log_end_offset == 30
    partition.truncate_to(20)  # as a follower truncating to its leader's epoch end
    assert future.log_end_offset == 20
    partition.truncate_fully_and_start_at(40)
    assert (future.log_start_offset, future.log_end_offset) == (40, 40)
    assert mover.step(partition, future) and broker.dir_of() == target


def test_a_restart_in_the_middle_resumes_the_move(broker):
    source, target = broker.start_move(20, step_bytes=1)
    mover = broker.rm.log_dir_mover
    for _ in range(5):
        mover.step(broker.rm.partitions[TP], broker.lm.future_log(*TP))
    broker.restart()
    future = broker.lm.future_log(*TP)
    assert future is not None and future.log_end_offset == 25 and broker.lm.dir_of(*TP) == source

    async def main():
        broker.rm.start()
        broker.lead(epoch=1)  # the replica is back: the copy goes on
        await until(lambda: broker.lm.future_log(*TP) is None, "the move to end", timeout=10.0)
        assert broker.dir_of() == target
        assert broker.values() == [b"seq-%d" % i for i in range(100)]
    run(main())


def test_stop_replica_with_delete_removes_the_future_log_too(broker):
    source, target = broker.start_move(3)
    assert broker.rm.stop_replicas(1, [("t", 0, -1, True)]) == {TP: 0}
    assert broker.lm.future_log(*TP) is None
    assert not [n for n in os.listdir(target) if n.startswith("t-0") and not n.endswith("-delete")]


# -- the two APIs ---------------------------------------------------------------------------------------------------

class DenyAll:
    enabled = True

    def authorize(self, *args, **kwargs) -> bool:
        return False


def alter_request(**dirs: list[int]):
    """AlterReplicaLogDirs asking for partitions of t, by dir: alter_request(**{"/x": [0]})."""
    body = AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDirsRequest.AlterReplicaLogDir(path=path, topics=[
        AlterReplicaLogDirsRequest.AlterReplicaLogDir.AlterReplicaLogDirTopic(name="t", partitions=partitions)])
        for path, partitions in dirs.items()])
    return SimpleNamespace(body=body, api_version=1, api_key=34, principal="User:alice", connection=None)


def answers(response) -> dict[tuple[str, int], int]:
    return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}


def test_the_request_moves_and_describe_log_dirs_shows_the_future_replica_with_its_lag(broker):
    broker.lead()
    source = broker.dir_of()
    target = next(d for d in broker.dirs if d != source)
    broker.produce(4)
    services = SimpleNamespace(replica_manager=broker.rm, auth=AuthHelper())

    async def ask_and_describe():
        response = await AlterReplicaLogDirsApi(services).handle(alter_request(**{target: [0], "/elsewhere": [1]}))
        # at once, before the copy task had a turn
        described = DescribeLogDirsApi(services).handle(SimpleNamespace(body=DescribeLogDirsRequest(topics=None)))
        broker.rm.log_dir_mover.shutdown()  # the copy stops there
        return response, described
    response, described = run(ask_and_describe())
    assert answers(response) == {TP: 0, ("t", 1): errors.LogDirNotFoundError.code}
    found = {(r.log_dir, p.partition_index): (p.is_future_key, p.offset_lag, p.partition_size > 0)
             for r in described.results for t in r.topics for p in t.partitions}
    assert found == {(source, 0): (False, 0, True), (target, 0): (True, 20, False)}
    denied = SimpleNamespace(replica_manager=broker.rm, auth=AuthHelper(DenyAll()))
    response = run(AlterReplicaLogDirsApi(denied).handle(alter_request(**{source: [0]})))
    assert answers(response) == {TP: errors.ClusterAuthorizationFailedError.code}
    assert broker.lm.future_log(*TP) is not None  # the denied request changed nothing


def test_a_log_start_offset_inside_a_batch_is_copied_as_a_follower_would(broker):
    broker.lead()
    broker.produce(10)
    assert broker.rm.partitions[TP].log.maybe_increment_log_start_offset(7)  # DeleteRecords, inside batch 5-9
    source = broker.dir_of()
    target = next(d for d in broker.dirs if d != source)
    mover = broker.rm.log_dir_mover
    assert mover.alter_replica_log_dirs({TP: target}) == {TP: 0}
    partition = broker.rm.partitions[TP]
    while not mover.step(partition, broker.lm.future_log(*TP)):
        pass
    moved = broker.rm.partitions[TP].log
    assert os.path.dirname(moved.dir) == target
    assert (moved.log_start_offset, moved.log_end_offset, moved.high_watermark) == (7, 50, 50)


def test_a_topic_config_changed_during_a_move_applies_to_the_future_log(broker):
    broker.start_move(2)
    broker.lm.update_topic_config("t", {"retention.ms": "12345"})
    assert broker.lm.future_log(*TP).config.retention_ms == 12345

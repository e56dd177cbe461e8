import os
import threading
import time

import pytest

from odradek.broker.log import InconsistentBrokerMetadataError, LogDirLockedError, LogManager
from odradek.broker.log import log_manager
from odradek.broker.log.log_manager import read_properties

from odradek.protocol.records import RecordBatchBuilder

from .helpers import make_batch


def test_meta_properties_written_and_checked(tmp_path):
    d = str(tmp_path / "d1")
    manager = LogManager([d], broker_id=1, cluster_id="abc")
    assert read_properties(os.path.join(d, "meta.properties")) == {
        "version": "0", "broker.id": "1", "cluster.id": "abc"}
    manager.shutdown()
    with pytest.raises(InconsistentBrokerMetadataError, match="broker.id"):
        LogManager([d], broker_id=2)
    with pytest.raises(InconsistentBrokerMetadataError, match="cluster"):
        LogManager([d], broker_id=1, cluster_id="other")
    LogManager([d], broker_id=1, cluster_id="abc").shutdown()  # the lock was released by the failures


def test_log_dirs_disagreeing_on_cluster_id(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    LogManager([a], broker_id=1, cluster_id="x").shutdown()
    LogManager([b], broker_id=1, cluster_id="y").shutdown()
    with pytest.raises(InconsistentBrokerMetadataError):
        LogManager([a, b], broker_id=1)


def test_a_locked_dir_is_refused(tmp_path):
    d = str(tmp_path / "d")
    first = LogManager([d], broker_id=1)
    with pytest.raises(LogDirLockedError):
        LogManager([d], broker_id=1)
    first.shutdown()


def test_new_logs_go_to_the_least_loaded_dir(tmp_path):
    dirs = [str(tmp_path / n) for n in ("a", "b", "c")]
    manager = LogManager(dirs, broker_id=0)
    for p in range(6):
        manager.get_or_create_log("t", p)
    counts = [len([n for n in os.listdir(d) if n.startswith("t-")]) for d in dirs]
    assert counts == [2, 2, 2]
    assert manager.get_or_create_log("t", 0) is manager.get_log("t", 0)
    manager.shutdown()


def test_clean_shutdown_checkpoints_and_reload(tmp_path):
    d = str(tmp_path / "d")
    manager = LogManager([d], {"segment.bytes": "1000"}, broker_id=0)
    log = manager.get_or_create_log("orders", 0)
    for _ in range(20):
        log.append_as_leader(make_batch(3), 0)
    log.update_high_watermark(60)
    log.maybe_increment_log_start_offset(9)
    manager.shutdown()
    assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    assert open(os.path.join(d, "recovery-point-offset-checkpoint")).read() == "0\n1\norders 0 60\n"
    assert open(os.path.join(d, "log-start-offset-checkpoint")).read() == "0\n1\norders 0 9\n"
    assert open(os.path.join(d, "replication-offset-checkpoint")).read() == "0\n1\norders 0 60\n"

    again = LogManager([d], {"segment.bytes": "1000"}, broker_id=0)
    assert again.had_clean_shutdown[d]
    assert not os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))  # a crash from now on is unclean
    reloaded = again.get_log("orders", 0)
    assert (reloaded.log_start_offset, reloaded.log_end_offset, reloaded.high_watermark) == (9, 60, 60)
    again.shutdown()


def test_unclean_start_recovers_past_the_recovery_point(tmp_path):
    d = str(tmp_path / "d")
    manager = LogManager([d], {"segment.bytes": "1000"}, broker_id=0)
    log = manager.get_or_create_log("orders", 0)
    for _ in range(20):
        log.append_as_leader(make_batch(3), 0)
    manager.checkpoint_recovery_points()
    rp = log.recovery_point
    assert 0 < rp < 60
    active = log.active_segment
    with open(active.log_path, "ab") as f:
        f.write(b"\x00" * 12 + b"junk")
    manager._release_locks()  # simulated crash: no shutdown(), no marker
    again = LogManager([d], {"segment.bytes": "1000"}, broker_id=0)
    assert not again.had_clean_shutdown[d]
    reloaded = again.get_log("orders", 0)
    assert reloaded.recovered_bytes_truncated == 16
    assert reloaded.log_end_offset == 60
    again.shutdown()


def test_recovery_threads_load_and_recover_every_log_and_close_them(tmp_path):
    """num.recovery.threads.per.data.dir: logs of two dirs load (recovering a crash) and flush and close on
    threads, with the same outcome as one at a time."""
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, {"segment.bytes": "1000"}, broker_id=0, recovery_threads=3)
    for p in range(24):
        log = manager.get_or_create_log("t", p)
        for _ in range(p % 5 + 1):
            log.append_as_leader(make_batch(3), 0)
        if p % 4 == 0:
            with open(log.active_segment.log_path, "ab") as f:
                f.write(b"junk")  # torn tails, cut by recovery
    ends = {p: manager.get_log("t", p).log_end_offset for p in range(24)}
    manager._release_locks()  # crash: no shutdown, no marker
    recovered = LogManager(dirs, {"segment.bytes": "1000"}, broker_id=0, recovery_threads=3)
    assert {p: recovered.get_log("t", p).log_end_offset for p in range(24)} == ends
    assert sum(recovered.get_log("t", p).recovered_bytes_truncated for p in range(24)) == 4 * 6
    recovered.shutdown()
    assert all(os.path.exists(os.path.join(d, ".kafka_cleanshutdown")) for d in dirs)
    again = LogManager(dirs, {"segment.bytes": "1000"}, broker_id=0, recovery_threads=2)
    assert {p: again.get_log("t", p).log_end_offset for p in range(24)} == ends
    again.shutdown()


def test_delete_log_and_retention_pass(tmp_path):
    d = str(tmp_path / "d")
    manager = LogManager([d], {"segment.bytes": "500", "retention.ms": "1000"}, broker_id=0,
                         clock=lambda: 10_000_000)
    log = manager.get_or_create_log("old", 0, {"retention.ms": "1"})
    for _ in range(10):
        log.append_as_leader(make_batch(2, timestamp=5), 0)
    log.update_high_watermark(log.log_end_offset)
    assert log.config.retention_ms == 1
    assert manager.cleanup_logs() > 0
    assert "old 0 20" in open(os.path.join(d, "log-start-offset-checkpoint")).read()
    assert manager.delete_log("old", 0)
    assert not manager.delete_log("old", 0)
    assert [n for n in os.listdir(d) if n.startswith("old")] == []
    manager.shutdown()
    assert "old" not in open(os.path.join(d, "recovery-point-offset-checkpoint")).read()


def test_compacted_logs_get_retention_only_from_the_cleaner_and_leave_its_checkpoint_when_deleted(tmp_path):
    from odradek.broker.log.cleaner import CleanerConfig
    d = str(tmp_path / "d")
    manager = LogManager([d], {"segment.bytes": "500", "retention.ms": "1"}, broker_id=0, clock=lambda: 10_000_000)
    log = manager.get_or_create_log("both", 0, {"cleanup.policy": "compact,delete"})
    for i in range(10):
        log.append_as_leader(keyed_batch(b"k%d" % i), 0)
    log.update_high_watermark(log.log_end_offset)
    assert manager.cleanup_logs() == 0  # Kafka's retention thread leaves compacted logs to the cleaner
    manager.start_cleaner(CleanerConfig(enable_cleaner=False))
    assert manager.cleaner is None
    manager.start_cleaner(CleanerConfig(backoff_ms=10, isolation="thread"))
    assert manager.cleaner is not None
    wait = time.monotonic() + 30
    while log.log_start_offset == 0 and time.monotonic() < wait:  # retention on the cleaner thread
        time.sleep(0.02)
    assert log.log_start_offset > 0
    manager.cleaner.manager.update_checkpoints(d, update=(("both", 0), 5))
    assert manager.delete_log("both", 0)
    assert "both" not in open(os.path.join(d, "cleaner-offset-checkpoint")).read()
    manager.shutdown()
    assert manager.cleaner.threads == []


def keyed_batch(key: bytes) -> bytearray:
    builder = RecordBatchBuilder()
    builder.append(5, key, b"x" * 100)
    return bytearray(builder.build())


def test_broker_config_feeds_log_config_through_topic_defaults():
    from odradek.broker.config import load_config
    from odradek.broker.log.log_config import LogConfig

    config, _ = load_config(None, ["zookeeper.connect=127.0.0.1:2181", "log.retention.minutes=5",
                                   "log.roll.hours=2", "log.segment.bytes=2048"], {})
    log_config = LogConfig.from_props(config.topic_defaults(), {"segment.bytes": "4096"})
    assert log_config.retention_ms == 5 * 60_000
    assert log_config.segment_ms == 2 * 3_600_000
    assert log_config.segment_bytes == 4096  # the topic override wins over log.segment.bytes


def test_a_deleted_log_gets_no_producer_snapshot_on_its_way_out(tmp_path):
    """Kafka 2.8's asyncDelete renames the open log and deletes it later: nothing is written into it meanwhile."""
    manager = LogManager([str(tmp_path / "d")], {}, broker_id=0)
    log = manager.get_or_create_log("gone", 0)
    builder = RecordBatchBuilder(producer_id=7, producer_epoch=0, base_sequence=0)
    builder.append(1_000, None, b"v")
    log.append_as_leader(bytearray(builder.build()), 0)
    snapshots = []
    log.producer_state.take_snapshot = lambda *a, **k: snapshots.append(a)
    assert manager.delete_log("gone", 0)
    assert snapshots == []
    manager.shutdown()


def test_a_partition_is_created_while_a_checkpoint_is_being_written(tmp_path, monkeypatch):
    """The fsync of a checkpoint at 10,000 partitions takes up to 100 ms: the manager's lock is not held
    through it, so the event loop's log creation does not wait for it."""
    manager = LogManager([str(tmp_path / "d")], broker_id=0)
    manager.get_or_create_log("t", 0)
    writing, release = threading.Event(), threading.Event()
    real_write = log_manager.OffsetCheckpointFile.write

    def slow_write(self, offsets):
        writing.set()
        assert release.wait(10)
        real_write(self, offsets)

    monkeypatch.setattr(log_manager.OffsetCheckpointFile, "write", slow_write)
    checkpoint = threading.Thread(target=manager.checkpoint_high_watermarks)
    checkpoint.start()
    assert writing.wait(10)
    created = threading.Thread(target=manager.get_or_create_log, args=("t", 1))
    created.start()
    created.join(5)
    still_creating = created.is_alive()
    release.set()
    checkpoint.join(10)
    created.join(10)
    assert not still_creating
    assert manager.get_log("t", 1) is not None
    manager.shutdown()

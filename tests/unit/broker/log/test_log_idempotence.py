"""Idempotent produce through Log: duplicates, gaps, fencing, and producer state across restarts."""

import os
import shutil
import textwrap

import pytest

from odradek.broker.log import Log, LogConfig, LogManager
from odradek.broker.log.producer_snapshot import (
    SnapshotEntry, list_snapshot_offsets, read_snapshot, snapshot_path, write_snapshot,
)
from odradek.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from odradek.protocol.records import iter_batches
from tests.fakes.clock import ManualClock

from .helpers import make_batch, make_producer_batch, run_until_killed


def open_log(directory, **kwargs):
    config = kwargs.pop("config", LogConfig())
    return Log(str(directory), config, clock=kwargs.pop("clock", ManualClock()), **kwargs)


def produce(log, seq, count=2, *, pid=1000, epoch=0):
    return log.append_as_leader(make_producer_batch(pid, epoch, seq, count), leader_epoch=3)


def filled_log(directory, records, segment_bytes=400, **kwargs):
    """A log of producer 1000's 2-record batches up to ``records`` records, small segments."""
    config = LogConfig(segment_bytes=segment_bytes, **kwargs.pop("config_extra", {}))
    log = open_log(directory, config=config, **kwargs)
    for seq in range(0, records, 2):
        produce(log, seq)
    return log, config


def stored_batches(log):
    data = b"".join(log.read(s.base_offset, 1 << 30).records for s in log.segments if s.size)
    return list(iter_batches(data, allow_partial=False))


def test_duplicate_returns_the_original_offsets_and_does_not_grow_the_log(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(3), 3)
    first = produce(log, 0)
    second = produce(log, 2)
    leo, size = log.log_end_offset, log.size
    retry = produce(log, 0)
    assert retry.duplicate and not first.duplicate
    # Kafka 2.8 answers a duplicate with the original batch's max timestamp as the append time, even under
    # CreateTime (the differential tests against Kafka 2.8.2 show it)
    assert (retry.first_offset, retry.last_offset, retry.log_append_time) == (3, 4, first.max_timestamp)
    assert (produce(log, 2).first_offset, produce(log, 2).last_offset) == (second.first_offset, second.last_offset)
    assert (log.log_end_offset, log.size) == (leo, size)
    assert [b.base_offset for b in stored_batches(log)] == [0, 3, 5]


def test_gap_and_old_epoch_are_rejected_before_anything_is_written(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, 0, epoch=2)
    leo, size = log.log_end_offset, log.size
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(log, 5, epoch=2)
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 2, epoch=1)
    with pytest.raises(OutOfOrderSequenceNumberError):  # a later batch of the request is out of order
        log.append_as_leader(make_batch(1) + make_producer_batch(1000, 2, 9), 3)
    assert (log.log_end_offset, log.size) == (leo, size)
    assert produce(log, 2, epoch=2).first_offset == leo


def test_duplicate_under_log_append_time_reports_the_original_append_time(tmp_path):
    clock = ManualClock(5_000)
    log = open_log(tmp_path / "t-0", clock=clock, config=LogConfig(message_timestamp_type="LogAppendTime"))
    assert produce(log, 0).log_append_time == 5_000
    clock.now = 9_000
    retry = produce(log, 0)
    assert retry.duplicate and retry.log_append_time == 5_000


def test_clean_restart_keeps_state_from_the_snapshot_at_the_log_end(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(0, 10, 2):
        produce(log, seq)
    log.close()
    assert list_snapshot_offsets(str(directory)) == [10]
    again = open_log(directory, had_clean_shutdown=True, recovery_point=10)
    retry = produce(again, 8)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (8, 9)
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(again, 11)
    assert produce(again, 10).first_offset == 10


def test_unclean_restart_rebuilds_state_from_the_log(tmp_path):
    directory, copy = tmp_path / "t-0", tmp_path / "copy" / "t-0"
    log = open_log(directory)
    offsets = [produce(log, seq).first_offset for seq in range(0, 10, 2)]
    shutil.copytree(directory, copy)  # as a SIGKILL leaves it: nothing closed, no snapshot
    assert list_snapshot_offsets(str(copy)) == []
    again = open_log(copy)
    for i, seq in enumerate(range(0, 10, 2)):  # replaying the log restores all of the last 5 batches
        retry = produce(again, seq)
        assert retry.duplicate and retry.first_offset == offsets[i]
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(again, 12)
    assert produce(again, 10).first_offset == 10
    assert list_snapshot_offsets(str(copy)) == [10]  # taken at the end of the rebuild


def test_roll_snapshots_at_the_new_base_and_unclean_restart_replays_only_after_it(tmp_path):
    directory, copy = tmp_path / "t-0", tmp_path / "copy" / "t-0"
    config = LogConfig(segment_bytes=600)
    log = open_log(directory, config=config)
    for seq in range(0, 40, 2):
        produce(log, seq, pid=1)
        produce(log, seq, pid=2)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    assert list_snapshot_offsets(str(directory)) == bases[1:]
    shutil.copytree(directory, copy)  # unclean: the active segment is replayed after its snapshot
    again = open_log(copy, config=config, recovery_point=log.recovery_point)
    for pid in (1, 2):
        retry = produce(again, 38, pid=pid)
        assert retry.duplicate
        with pytest.raises(OutOfOrderSequenceNumberError):
            produce(again, 41, pid=pid)
    assert again.log_end_offset == log.log_end_offset


def test_rebuild_starts_from_the_latest_snapshot(tmp_path):
    directory = tmp_path / "t-0"
    log, config = filled_log(directory, 20)
    last_snapshot = list_snapshot_offsets(str(directory))[-1]
    assert 0 < last_snapshot < log.log_end_offset
    # A snapshot that claims producer 77 exists proves that loading reads it rather than the log.
    path = snapshot_path(str(directory), last_snapshot)
    write_snapshot(path, read_snapshot(path) + [SnapshotEntry(77, 4, 9, 0, 0, 1_000_000, -1, -1)])
    again = open_log(directory, config=config)
    assert again.producer_state.last_entry(77).last_seq == 9
    assert again.producer_state.last_entry(1000).last_seq == 19


def test_corrupt_snapshot_is_ignored_and_the_state_rebuilt_from_the_log(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(0, 6, 2):
        produce(log, seq)
    log.close()
    path = snapshot_path(str(directory), 6)
    with open(path, "r+b") as f:
        f.write(b"\x00\x07")  # unknown version
    again = open_log(directory, had_clean_shutdown=True, recovery_point=6)
    assert "ignoring producer snapshot" in caplog.text
    assert produce(again, 2).duplicate and produce(again, 4).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(again, 7)


def test_truncation_rebuilds_the_state_and_drops_later_snapshots(tmp_path):
    directory = tmp_path / "t-0"
    log, _ = filled_log(directory, 30)
    assert log.truncate_to(16)
    assert log.log_end_offset == 16
    assert all(o <= 16 for o in list_snapshot_offsets(str(directory)))
    assert log.producer_state.last_entry(1000).last_seq == 15
    retry = produce(log, 14)
    assert retry.duplicate and retry.first_offset == 14
    appended = produce(log, 16)  # was removed by the truncation: new data now
    assert not appended.duplicate and appended.first_offset == 16
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.is_empty and list_snapshot_offsets(str(directory)) == []
    assert produce(log, 500).first_offset == 100  # unknown producer again: any sequence


def test_follower_append_updates_state_without_checks(tmp_path):
    log = open_log(tmp_path / "t-0")
    batch = make_producer_batch(5, 1, 40, 2)
    batch[0:8] = (0).to_bytes(8, "big")
    log.append_as_follower(batch)  # a sequence the leader accepted: no check here
    retry = produce(log, 40, pid=5, epoch=1)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (0, 1)


def test_retention_removes_old_snapshots_but_keeps_the_producers(tmp_path):
    clock = ManualClock()
    directory = tmp_path / "t-0"
    log, _ = filled_log(directory, 30, clock=clock, config_extra={"retention_bytes": 500})
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    assert all(o >= log.log_start_offset for o in list_snapshot_offsets(str(directory)))
    assert produce(log, 28).duplicate


def test_log_manager_expires_idle_producers_and_passes_the_setting(tmp_path):
    clock = ManualClock(1_000_000)
    manager = LogManager([str(tmp_path / "d")], broker_id=1, clock=clock, max_producer_id_expiration_ms=60_000)
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(make_producer_batch(1, 0, 0, timestamp=1_000_000), 0)
    log.append_as_leader(make_producer_batch(2, 0, 0, timestamp=1_030_000), 0)
    clock.now = 1_060_000
    assert manager.remove_expired_producers() == 1
    assert sorted(log.producer_state.producers) == [2]
    manager.shutdown()
    reopened = LogManager([str(tmp_path / "d")], broker_id=1, clock=clock, max_producer_id_expiration_ms=60_000)
    assert sorted(reopened.get_log("t", 0).producer_state.producers) == [2]
    clock.now = 1_090_000  # expired entries are also dropped when a snapshot is loaded
    reopened.shutdown()
    again = LogManager([str(tmp_path / "d")], broker_id=1, clock=clock, max_producer_id_expiration_ms=60_000)
    assert again.get_log("t", 0).producer_state.is_empty
    again.shutdown()


def test_snapshot_files_live_with_the_segments(tmp_path):
    directory = tmp_path / "t-0"
    filled_log(directory, 20)
    names = os.listdir(directory)
    snapshots = sorted(n for n in names if n.endswith(".snapshot"))
    assert snapshots and all(len(n) == len("00000000000000000000.snapshot") for n in snapshots)
    assert {n[:20] for n in snapshots} <= {n[:20] for n in names if n.endswith(".log")}


def test_recovery_that_cuts_below_a_snapshot_drops_it_and_forgets_the_lost_batches(tmp_path):
    directory = tmp_path / "t-0"
    log, config = filled_log(directory, 40)
    second = log.segments[1]
    with open(second.log_path, "r+b") as f:  # damage a batch in an older segment
        f.seek(second.size // 2)
        f.write(b"\xde\xad\xbe\xef")
    shutil.copytree(directory, tmp_path / "copy" / "t-0")
    again = open_log(tmp_path / "copy" / "t-0", config=config)
    leo = again.log_end_offset
    assert leo < log.log_end_offset
    assert all(o <= leo for o in list_snapshot_offsets(str(tmp_path / "copy" / "t-0")))
    assert again.producer_state.last_entry(1000).last_seq == leo - 1
    retry = produce(again, leo)  # lost in the crash: appended again, not answered as a duplicate
    assert not retry.duplicate and retry.first_offset == leo


WRITER = textwrap.dedent("""
    import sys, time
    from odradek.broker.log import Log, LogConfig
    from odradek.protocol.records import RecordBatchBuilder
    log = Log(sys.argv[1], LogConfig(segment_bytes=32 * 1024))
    seq = 0
    while True:
        b = RecordBatchBuilder(producer_id=42, producer_epoch=1, base_sequence=seq)
        for j in range(3):
            # Now, not 1970: a producer last seen in 1970 is expired when loaded from a snapshot (as in
            # Kafka), so a kill just after a roll's snapshot would leave no state to check.
            b.append(int(time.time() * 1000), None, b"value-%d" % (seq + j))
        info = log.append_as_leader(bytearray(b.build()), 0)
        sys.stdout.write("%d %d\\n" % (seq, info.first_offset))
        sys.stdout.flush()
        seq += 3
""")


def test_sigkill_during_idempotent_appends_keeps_duplicates_detectable(tmp_path):
    directory = str(tmp_path / "killed-0")
    acked = [tuple(map(int, line.split())) for line in run_until_killed(WRITER, directory, lines=800)]
    snapshots = list_snapshot_offsets(directory)  # the writer's, taken at its rolls
    log = Log(directory, LogConfig(segment_bytes=32 * 1024))  # unclean: recovery, then snapshot + replay
    assert log.num_segments > 2 and len(snapshots) > 1
    batches = [(b.base_sequence, b.base_offset) for b in stored_batches(log)]
    stored = dict(batches)
    assert all(stored[seq] == first for seq, first in acked)  # nothing acknowledged was lost
    next_seq = max(stored) + 3
    assert log.producer_state.last_entry(42).last_seq == next_seq - 1
    # What Kafka 2.8 retains: a snapshot holds a producer's last batch only, and the batches after the latest
    # snapshot are replayed; the last 5 of those. A kill just after a roll leaves the roll's snapshot at the log
    # end, so only the last batch is there to match a retry.
    snapshot = max(o for o in snapshots if o <= log.log_end_offset)
    before = [seq for seq, offset in batches if offset < snapshot][-1:]
    retained = (before + [seq for seq, offset in batches if offset >= snapshot])[-5:]
    assert [b.first_seq for b in log.producer_state.last_entry(42).batches] == retained
    for seq in retained:
        retry = log.append_as_leader(make_producer_batch(42, 1, seq, 3), 0)
        assert retry.duplicate and retry.first_offset == stored[seq]
    if retained[0] > 0:  # an older retry is out of order, as in Kafka
        with pytest.raises(OutOfOrderSequenceNumberError):
            log.append_as_leader(make_producer_batch(42, 1, retained[0] - 3, 3), 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(make_producer_batch(42, 1, next_seq + 3, 3), 0)
    assert log.append_as_leader(make_producer_batch(42, 1, next_seq, 3), 0).first_offset == log.log_end_offset - 3


def test_a_stop_just_after_a_roll_keeps_only_the_snapshots_last_batch_for_retries(tmp_path):
    """Kafka 2.8's snapshot holds one batch per producer: when the roll's snapshot is at the log end, a retry
    of the last batch is still a duplicate and an older one is out of order (the case the SIGKILL test above
    meets when the kill comes right after a roll)."""
    now = ManualClock()
    log = open_log(tmp_path / "t-0", clock=now)
    for seq in range(0, 30, 3):
        log.append_as_leader(make_producer_batch(42, 1, seq, 3, timestamp=now.now), 0)
    log.roll()  # snapshot at the new, empty segment's base; no close: an unclean stop
    reopened = open_log(tmp_path / "t-0", clock=now)
    assert [b.first_seq for b in reopened.producer_state.last_entry(42).batches] == [27]
    retry = reopened.append_as_leader(make_producer_batch(42, 1, 27, 3, timestamp=now.now), 0)
    assert retry.duplicate and retry.first_offset == 27
    with pytest.raises(OutOfOrderSequenceNumberError):
        reopened.append_as_leader(make_producer_batch(42, 1, 24, 3, timestamp=now.now), 0)

import os

import pytest

from odradek.broker.log import Log, LogConfig, UnexpectedAppendOffsetError, parse_topic_partition
from odradek.protocol.errors import OffsetOutOfRangeError
from odradek.protocol.records import RecordBatchView, decode_batch, iter_batches
from tests.fakes.clock import ManualClock

from .helpers import make_batch


def new_log(tmp_path, clock=None, **config):
    return Log(str(tmp_path / "orders-3"), LogConfig(**config), clock=clock or ManualClock())


def test_dir_name_parsing():
    assert parse_topic_partition("/x/my-topic-12") == ("my-topic", 12)
    with pytest.raises(ValueError):
        parse_topic_partition("nodash")


def test_leader_append_assigns_offsets_in_place(tmp_path):
    log = new_log(tmp_path)
    first = make_batch(3)
    info = log.append_as_leader(first, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.num_messages) == (0, 2, 3)
    info = log.append_as_leader(make_batch(2), leader_epoch=7)
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    view = RecordBatchView(log.read(3, 1000).records)
    assert (view.base_offset, view.partition_leader_epoch) == (3, 7)
    assert view.verify_crc()  # neither rewritten field is under the CRC
    assert log.leader_epoch_cache.entries == [(7, 0)]


def test_log_append_time(tmp_path):
    clock = ManualClock(123_456)
    log = new_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(make_batch(2, timestamp=5), 1)
    assert info.log_append_time == 123_456
    records = decode_batch(RecordBatchView(log.read(0, 10**6).records))
    assert [r.timestamp for r in records] == [123_456, 123_456]


def test_read_bounds_and_out_of_range(tmp_path):
    log = new_log(tmp_path)
    for _ in range(5):
        log.append_as_leader(make_batch(10), 0)
    assert log.read(50, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(51, 100)
    bounded = log.read(0, 10**6, max_offset=20)
    assert [b.last_offset for b in iter_batches(bounded.records)] == [9, 19]
    assert log.read(25, 1).records[:8] == (20).to_bytes(8, "big")


def test_roll_by_size_and_read_across_segments(tmp_path):
    log = new_log(tmp_path, segment_bytes=1000)
    for _ in range(20):
        log.append_as_leader(make_batch(5, value_size=40), 0)
    assert log.num_segments > 3
    for segment in log.segments[:-1]:
        assert segment.size <= 1000
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and bases[0] == 0
    names = sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))
    assert names[1] == f"{bases[1]:020d}.log"
    everything = b"".join(log.read(s.base_offset, 10**6).records for s in log.segments)
    assert [b.base_offset for b in iter_batches(everything)] == list(range(0, 100, 5))
    assert log.recovery_point == log.active_segment.base_offset  # rolled segments are flushed


def test_roll_by_time_with_injected_clock(tmp_path):
    clock = ManualClock()
    log = new_log(tmp_path, clock, segment_ms=60_000)
    log.append_as_leader(make_batch(1, timestamp=clock.now), 0)
    log.append_as_leader(make_batch(1, timestamp=clock.now + 30_000), 0)
    assert log.num_segments == 1
    clock.now += 61_000
    info = log.append_as_leader(make_batch(1, timestamp=clock.now), 0)
    assert info.rolled and log.num_segments == 2
    assert log.active_segment.base_offset == 2


def test_roll_when_index_is_full(tmp_path):
    log = new_log(tmp_path, index_interval_bytes=1, max_index_size=16)
    for _ in range(6):
        log.append_as_leader(make_batch(1), 0)
    assert log.num_segments >= 2


def test_retention_by_time(tmp_path):
    clock = ManualClock(10_000_000)
    log = new_log(tmp_path, clock, segment_bytes=500, retention_ms=1000)
    for i in range(10):
        log.append_as_leader(make_batch(3, timestamp=clock.now - 5000 if i < 6 else clock.now), 0)
    log.update_high_watermark(log.log_end_offset)
    before = log.num_segments
    deleted = log.delete_old_segments()
    assert deleted > 0 and log.num_segments == before - deleted
    assert all(s.largest_timestamp >= clock.now - 1000 or s is log.active_segment for s in log.segments)
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert not any(n.endswith(".deleted") for n in os.listdir(log.dir))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_retention_never_passes_high_watermark(tmp_path):
    clock = ManualClock(10_000_000)
    log = new_log(tmp_path, clock, segment_bytes=500, retention_ms=1)
    for _ in range(10):
        log.append_as_leader(make_batch(3, timestamp=1), 0)
    assert log.delete_old_segments() == 0  # high watermark still 0
    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()
    assert log.num_segments == 1 and log.active_segment.size == 0  # all expired: rolled a fresh one
    assert log.log_start_offset == log.log_end_offset == 30


def test_retention_by_size(tmp_path):
    log = new_log(tmp_path, segment_bytes=600, retention_bytes=1500)
    for _ in range(20):
        log.append_as_leader(make_batch(3), 0)
    log.update_high_watermark(log.log_end_offset)
    before = log.size
    assert log.delete_old_segments() >= 1
    # Kafka's rule: delete whole oldest segments while the log stays at or above retention.bytes
    assert log.size < before and log.size - log.segments[0].size < 1500 <= log.size + 560


def test_log_start_offset_and_delete_records(tmp_path):
    log = new_log(tmp_path, segment_bytes=500)
    for _ in range(10):
        log.append_as_leader(make_batch(3), 0)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(10)  # above the high watermark
    log.update_high_watermark(30)
    assert log.maybe_increment_log_start_offset(13)
    assert not log.maybe_increment_log_start_offset(5)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(12, 100)
    assert RecordBatchView(log.read(13, 1).records).base_offset == 12  # batch containing 13
    log.delete_old_segments()
    assert log.segments[0].base_offset <= 13 < log.segments[0].next_offset or log.segments[0].base_offset == 13


def test_follower_append_keeps_offsets_and_epochs(tmp_path):
    log = new_log(tmp_path)
    data = make_batch(2, base_offset=0, epoch=1) + make_batch(3, base_offset=2, epoch=2)
    info = log.append_as_follower(data)
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert log.leader_epoch_cache.entries == [(1, 0), (2, 2)]
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=3, epoch=2))


def test_follower_truncation(tmp_path):
    log = new_log(tmp_path, segment_bytes=400)
    offset = 0
    for epoch in (1, 1, 2, 2, 3, 3, 3, 3):
        log.append_as_follower(make_batch(2, base_offset=offset, epoch=epoch))
        offset += 2
    assert log.num_segments > 1
    log.update_high_watermark(16)
    assert log.truncate_to(6)
    assert log.log_end_offset == 6
    assert log.high_watermark == 6
    assert log.leader_epoch_cache.entries == [(1, 0), (2, 4)]
    assert all(s.base_offset <= 6 for s in log.segments)
    assert not log.truncate_to(100)
    info = log.append_as_follower(make_batch(1, base_offset=6, epoch=4))
    assert info.first_offset == 6
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.num_segments) == (50, 50, 1)
    assert os.listdir(log.dir).count(f"{50:020d}.log") == 1
    assert log.leader_epoch_cache.entries == []


def test_truncation_at_the_log_end_drops_an_epoch_that_holds_nothing(tmp_path):
    # A broker made leader at epoch 3 that appended nothing before losing leadership: its cache ends in
    # (3, 4) with the log ending at 4. The new leader says epoch 2 ends at 4, so the follower truncates
    # to 4; no record goes, but epoch 3 must, or every later fetch (last fetched epoch 3) diverges again.
    log = new_log(tmp_path)
    log.append_as_follower(make_batch(2, base_offset=0, epoch=1) + make_batch(2, base_offset=2, epoch=2))
    log.leader_epoch_cache.assign(3, log.log_end_offset)
    assert log.latest_epoch == 3
    assert not log.truncate_to(4)
    assert log.log_end_offset == 4
    assert log.leader_epoch_cache.entries == [(1, 0), (2, 2)]
    assert log.latest_epoch == 2


def test_fetch_offset_by_timestamp(tmp_path):
    log = new_log(tmp_path, segment_bytes=400)
    for i in range(10):
        log.append_as_leader(make_batch(2, timestamp=1000 + 10 * i), 0)
    assert log.fetch_offset_by_timestamp(1041) == (1041, 9)
    assert log.fetch_offset_by_timestamp(1042) == (1050, 10)
    assert log.fetch_offset_by_timestamp(-2) == (-1, 0)
    assert log.fetch_offset_by_timestamp(-1) == (-1, 20)
    assert log.fetch_offset_by_timestamp(99_999) is None


def test_flush_messages_advances_recovery_point(tmp_path):
    log = new_log(tmp_path, flush_interval_messages=3)
    log.append_as_leader(make_batch(2), 0)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch(2), 0)
    assert log.recovery_point == 4


def test_reopen_after_clean_close(tmp_path):
    log = new_log(tmp_path, segment_bytes=500)
    for _ in range(10):
        log.append_as_leader(make_batch(3), 2)
    log.flush()
    log.close()
    again = Log(log.dir, LogConfig(segment_bytes=500), recovery_point=30, had_clean_shutdown=True)
    assert again.log_end_offset == 30 and again.num_segments == log.num_segments
    assert again.leader_epoch_cache.entries == [(2, 0)]
    assert again.append_as_leader(make_batch(1), 2).first_offset == 30

import os

from odradek.broker.log.segment import LogSegment, filename_prefix
from odradek.protocol.records import iter_batches

from .helpers import make_batch


def fill(segment, batches, count=10, value_size=50, ts=1000):
    offset = segment.base_offset
    for i in range(batches):
        batch = make_batch(count, ts + i * count, value_size, base_offset=offset)
        segment.append(batch, offset + count - 1, ts + i * count + count - 1, offset + count - 1)
        offset += count
    return offset


def test_file_names_are_twenty_digits(tmp_path):
    seg = LogSegment(str(tmp_path), 42)
    assert filename_prefix(42) == "00000000000000000042"
    files = ["00000000000000000042.index", "00000000000000000042.log", "00000000000000000042.timeindex"]
    assert sorted(os.listdir(tmp_path)) == files  # a new segment's indexes are made with it, as Kafka's
    seg.close()
    assert sorted(os.listdir(tmp_path)) == files


def test_sparse_index_one_entry_per_interval(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=1000)
    fill(seg, 40)  # each batch ~ 600 bytes
    batch_size = seg.size // 40
    assert 500 < batch_size < 1000
    # one entry each time more than 1000 bytes accumulated, i.e. every second batch
    assert seg.offset_index.entries == 19
    assert seg.time_index.entries == 19


def test_read_returns_the_batch_containing_a_mid_batch_offset(tmp_path):
    seg = LogSegment(str(tmp_path), 100, index_interval_bytes=100)
    fill(seg, 20)
    result = seg.read(155, 1)  # offset 155 is inside the batch 150..159
    batches = list(iter_batches(result.records, allow_partial=False))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(150, 159)]
    assert batches[0].verify_crc()


def test_read_min_one_batch_over_max_bytes(tmp_path):
    seg = LogSegment(str(tmp_path), 0)
    big = make_batch(1, value_size=50_000)
    seg.append(big, 0, 1000, 0)
    result = seg.read(0, max_bytes=100)
    assert len(result.records) == len(big)
    assert seg.read(0, max_bytes=100, min_one_batch=False).records == b""


def test_read_whole_batches_only_and_bounds(tmp_path):
    seg = LogSegment(str(tmp_path), 0)
    fill(seg, 10)
    size = seg.size // 10
    result = seg.read(0, max_bytes=int(size * 3.5))
    assert len(result.records) == 3 * size
    bounded = seg.read(0, max_bytes=10**6, max_offset=30)
    assert [b.last_offset for b in iter_batches(bounded.records)] == [9, 19, 29]
    assert seg.read(0, 10**6, max_position=2 * size).records.__len__() == 2 * size
    assert seg.read(100, 10**6) is None


def test_find_offset_by_timestamp(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    fill(seg, 10, ts=5000)
    assert seg.find_offset_by_timestamp(5037) == (5037, 37)
    assert seg.find_offset_by_timestamp(0) == (5000, 0)
    assert seg.find_offset_by_timestamp(10**9) is None


def test_recover_rebuilds_indexes_and_truncates_garbage(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    fill(seg, 10)
    good_size, entries = seg.size, seg.offset_index.entries
    seg.close()
    with open(seg.log_path, "ab") as f:
        f.write(b"\x00" * 7 + b"garbage" * 20)
    os.unlink(seg.offset_index.path)
    reopened = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    assert reopened.indexes_were_missing
    assert reopened.recover() == 7 + 7 * 20
    assert reopened.size == good_size == os.path.getsize(reopened.log_path)
    assert reopened.offset_index.entries == entries
    assert reopened.next_offset == 100


def test_recover_stops_at_crc_mismatch(tmp_path):
    seg = LogSegment(str(tmp_path), 0)
    fill(seg, 5)
    size = seg.size // 5
    seg.close()
    with open(seg.log_path, "r+b") as f:
        f.seek(3 * size + 70)  # inside the 4th batch's records
        f.write(b"\xff\xfe")
    reopened = LogSegment(str(tmp_path), 0)
    assert reopened.recover() == 2 * size
    assert reopened.next_offset == 30


def test_truncate_to_removes_batch_containing_offset(tmp_path):
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    fill(seg, 10)
    size = seg.size // 10
    removed = seg.truncate_to(45)
    assert removed == 6 * size and seg.size == 4 * size
    assert seg.next_offset == 40
    assert seg.offset_index.last_offset < 40


def test_roll_by_time_uses_first_batch_timestamp(tmp_path):
    now = [10_000]
    seg = LogSegment(str(tmp_path), 0, clock=lambda: now[0])
    assert not seg.should_roll(messages_size=10, max_timestamp=0, max_offset=0, now=now[0],
                               segment_bytes=10**9, segment_ms=1)  # empty segments never roll
    fill(seg, 1, ts=1000)
    args = dict(messages_size=10, max_offset=20, now=now[0], segment_bytes=10**9, segment_ms=500)
    assert not seg.should_roll(max_timestamp=1400, **args)
    assert seg.should_roll(max_timestamp=1600, **args)


def test_recently_appended_batches_are_found_as_a_scan_from_the_index_finds_them(tmp_path):
    """translate_offset answers tailing reads from the last batches appended; a segment reopened from
    disk (nothing cached) must give the same answer for every offset, before, inside and past them."""
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=300)
    offset = 0
    for i in range(150):
        count = 1 + i % 3
        seg.append(make_batch(count, base_offset=offset), offset + count - 1, 1_000 + i, offset + count - 1)
        offset += count
    seg.flush()
    reopened = LogSegment(str(tmp_path), 0, index_interval_bytes=300)
    for target in range(offset + 2):
        assert seg.translate_offset(target) == reopened.translate_offset(target), target
    seg.truncate_to(offset - 5)
    fresh = LogSegment(str(tmp_path), 0, index_interval_bytes=300)
    for target in range(offset - 40, offset):
        assert seg.translate_offset(target) == fresh.translate_offset(target), target


def test_a_new_segment_makes_its_index_files_reads_none_and_empties_stale_ones(tmp_path, monkeypatch):
    """A segment whose log did not exist makes its (empty) index files at once, as Kafka does, and knows they are
    empty (no read on the first appends); index files left by an earlier segment of that name whose log is
    gone are emptied, as Kafka's roll deletes them first."""
    seg = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    assert os.path.getsize(seg.offset_index.path) == 0 and os.path.getsize(seg.time_index.path) == 0
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: opened.append(path) or real_open(path, *a, **k))
    fill(seg, 5)
    assert opened == [] and seg.offset_index.entries == 4
    monkeypatch.undo()
    seg.close()
    assert os.path.getsize(seg.offset_index.path) > 0
    os.unlink(seg.log_path)  # the indexes stay
    again = LogSegment(str(tmp_path), 0, index_interval_bytes=100)
    assert again.offset_index.entries == 0 and again.time_index.entries == 0
    assert os.path.getsize(again.offset_index.path) == 0
    fill(again, 5)
    assert again.offset_index.entries == 4
    again.close()

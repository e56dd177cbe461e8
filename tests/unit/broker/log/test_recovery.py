import os
import textwrap

from odradek.broker.log import Log, LogConfig
from odradek.protocol.records import decode_batch, iter_batches

from .helpers import make_batch, run_until_killed


def read_all(log):
    data = b"".join(log.read(s.base_offset, 1 << 30).records for s in log.segments if s.size)
    return list(iter_batches(data, allow_partial=False))


def test_recovery_after_crash_keeps_valid_prefix_and_rebuilds_indexes(tmp_path):
    directory = str(tmp_path / "t-0")
    config = LogConfig(segment_bytes=4000, index_interval_bytes=200)
    log = Log(directory, config)
    for _ in range(30):
        log.append_as_leader(make_batch(4, value_size=30), 1)
    active = log.active_segment
    active_base, leo = active.base_offset, log.log_end_offset
    batch_size = active.size // ((leo - active_base) // 4)
    # crash: no close; the tail of the last batch is torn and garbage follows; indexes are lost
    with open(active.log_path, "r+b") as f:
        f.truncate(active.size - batch_size // 2)
        f.seek(0, 2)
        f.write(os.urandom(1000))
    for name in os.listdir(directory):
        if name.endswith((".index", ".timeindex")):
            os.unlink(os.path.join(directory, name))

    reopened = Log(directory, config, recovery_point=log.recovery_point)
    assert reopened.log_end_offset == leo - 4
    assert reopened.recovered_bytes_truncated == batch_size - batch_size // 2 + 1000
    batches = read_all(reopened)
    assert [b.base_offset for b in batches] == list(range(0, leo - 4, 4))
    assert all(b.verify_crc() for b in batches)
    for segment in reopened.segments:
        if segment.size > 400:
            assert segment.offset_index.entries > 0
    assert reopened.append_as_leader(make_batch(1), 1).first_offset == leo - 4
    reopened.close()  # the rebuilt indexes reach their files when written (flush, roll, close)
    for segment in reopened.segments:
        assert os.path.exists(segment.offset_index.path) and os.path.exists(segment.time_index.path)
        if segment.size > 400:
            assert os.path.getsize(segment.offset_index.path) == 8 * segment.offset_index.entries


def test_corrupt_index_is_rebuilt_on_clean_open(tmp_path):
    directory = str(tmp_path / "t-0")
    log = Log(directory, LogConfig(index_interval_bytes=100))
    for _ in range(20):
        log.append_as_leader(make_batch(2), 1)
    entries = log.active_segment.offset_index.entries
    log.close()
    with open(log.active_segment.offset_index.path, "ab") as f:
        f.write(b"\x00\x00\x00")  # not a whole entry
    again = Log(directory, LogConfig(index_interval_bytes=100), recovery_point=40, had_clean_shutdown=True)
    again.active_segment.sanity_check()
    assert again.active_segment.offset_index.entries == entries
    assert RecordBatchViewBase(again.read(21, 1).records) == 20


def RecordBatchViewBase(data):
    return next(iter_batches(data)).base_offset


def test_invalid_batch_in_older_segment_drops_later_segments(tmp_path):
    directory = str(tmp_path / "t-0")
    config = LogConfig(segment_bytes=1000)
    log = Log(directory, config)
    for _ in range(20):
        log.append_as_leader(make_batch(3), 1)
    assert log.num_segments >= 3
    second = log.segments[1]
    with open(second.log_path, "r+b") as f:
        f.seek(100)
        f.write(b"\xde\xad\xbe\xef")
    reopened = Log(directory, config, recovery_point=0)
    assert reopened.num_segments == 2
    assert reopened.log_end_offset < second.next_offset
    assert all(b.verify_crc() for b in read_all(reopened))


WRITER = textwrap.dedent("""
    import sys
    from odradek.broker.log import Log, LogConfig
    from odradek.protocol.records import RecordBatchBuilder
    log = Log(sys.argv[1], LogConfig(segment_bytes=64 * 1024))
    i = 0
    while True:
        b = RecordBatchBuilder()
        for j in range(5):
            b.append(1000 + i, None, b"seq-%d-%d" % (i, j) + b"p" * (i % 200))
        info = log.append_as_leader(bytearray(b.build()), 0)
        sys.stdout.write("%d %d\\n" % (i, info.first_offset))
        sys.stdout.flush()
        i += 1
""")


def test_sigkill_during_appends_loses_no_acknowledged_batch(tmp_path):
    directory = str(tmp_path / "killed-0")
    acked = [tuple(map(int, line.split())) for line in run_until_killed(WRITER, directory, lines=1500)]
    log = Log(directory, LogConfig(segment_bytes=64 * 1024))  # unclean: full recovery
    assert log.num_segments > 1
    records = {}
    for batch in read_all(log):
        assert batch.verify_crc()
        for record in decode_batch(batch):
            records[record.offset] = record.value
    for i, first in acked:
        for j in range(5):
            assert records[first + j] == b"seq-%d-%d" % (i, j) + b"p" * (i % 200)
    assert log.log_end_offset >= acked[-1][1] + 5

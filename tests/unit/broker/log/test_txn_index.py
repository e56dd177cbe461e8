"""The aborted-transaction index: file layout, lookups, truncation, and its life in the Log (segments,
retention, follower appends, recovery)."""

import os
import shutil
import struct
import time

import pytest

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.offset_index import CorruptIndexError
from odradek.broker.log.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex
from odradek.protocol.records import ControlRecordType, build_control_batch
from tests.fakes.clock import ManualClock

from .helpers import make_batch, make_producer_batch


def open_log(directory, segment_bytes=1 << 20, **kwargs):
    return Log(str(directory), LogConfig(segment_bytes=segment_bytes), clock=ManualClock(), **kwargs)


def marker(kind, pid, epoch=0, coordinator_epoch=0):
    return bytearray(build_control_batch(kind, producer_id=pid, producer_epoch=epoch,
                                         coordinator_epoch=coordinator_epoch))


NOW = int(time.time() * 1000)  # markers carry the wall clock: data too, or segment.ms would roll


def txn_batch(pid, seq, count=2, epoch=0):
    return make_producer_batch(pid, epoch, seq, count, transactional=True, timestamp=NOW)


def txn_files(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(".txnindex"))


# -- the index on its own ---------------------------------------------------------------------------

def test_entries_are_34_bytes_in_kafkas_layout_and_read_back(tmp_path):
    path = str(tmp_path / "00000000000000000000.txnindex")
    index = TransactionIndex(path, 0)
    assert not os.path.exists(path)  # created lazily, as Kafka
    index.append(AbortedTxn(7, 0, 5, 6))
    index.append(AbortedTxn(8, 3, 9, 10))
    index.close()
    data = open(path, "rb").read()
    assert ENTRY_SIZE == 34 and len(data) == 68
    assert struct.unpack(">hqqqq", data[:34]) == (0, 7, 0, 5, 6)
    assert TransactionIndex(path, 0).entries == [AbortedTxn(7, 0, 5, 6), AbortedTxn(8, 3, 9, 10)]


def test_append_refuses_an_entry_that_is_not_after_the_last(tmp_path):
    index = TransactionIndex(str(tmp_path / "0.txnindex"), 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 5, 6))
    assert not index.append_if_new(AbortedTxn(2, 1, 4, 6))
    assert index.entries == [AbortedTxn(1, 0, 5, 6)]


def test_collect_returns_overlapping_entries_and_stops_at_an_lso_past_the_upper_bound(tmp_path):
    index = TransactionIndex(str(tmp_path / "0.txnindex"), 0)
    for txn in (AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 2, 10, 11), AbortedTxn(3, 12, 20, 21)):
        index.append(txn)
    found, complete = index.collect_aborted(5, 11)
    assert found == [AbortedTxn(2, 2, 10, 11)] and complete  # ends before 5 / starts at 12: not needed
    found, complete = index.collect_aborted(0, 100)
    assert [t.producer_id for t in found] == [1, 2, 3] and not complete  # later segments may hold more


def test_truncate_drops_entries_whose_marker_is_at_or_after_the_offset(tmp_path):
    path = str(tmp_path / "0.txnindex")
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 4, 5))
    index.append(AbortedTxn(2, 5, 8, 9))
    index.truncate_to(8)
    assert index.entries == [AbortedTxn(1, 0, 4, 5)]
    assert TransactionIndex(path, 0).entries == [AbortedTxn(1, 0, 4, 5)]
    index.append(AbortedTxn(3, 6, 9, 10))  # appends continue after the rewrite
    index.truncate_to(0)
    assert index.entries == [] and not os.path.exists(path)


def test_a_torn_file_fails_the_sanity_check(tmp_path):
    path = str(tmp_path / "0.txnindex")
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 4, 5))
    index.close()
    with open(path, "ab") as f:
        f.write(b"\x00" * 10)
    torn = TransactionIndex(path, 0)
    assert torn.entries == [AbortedTxn(1, 0, 4, 5)]
    with pytest.raises(CorruptIndexError):
        torn.sanity_check()


# -- in the Log --------------------------------------------------------------------------------------

def test_an_abort_marker_indexes_the_transaction_in_the_markers_segment(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(10, 0), 1)            # 0-1, producer 10
    log.append_as_leader(make_batch(1, timestamp=NOW), 1)                # 2
    log.append_as_leader(txn_batch(11, 0), 1)             # 3-4, producer 11
    log.append_as_leader(marker(ControlRecordType.ABORT, 10), 1)   # 5
    log.append_as_leader(marker(ControlRecordType.COMMIT, 11), 1)  # 6: commits are not indexed
    entries = log.active_segment.txn_index.entries
    # The LSO at the abort: producer 11's transaction was still open at 3.
    assert entries == [AbortedTxn(10, 0, 5, 3)]
    assert log.collect_aborted_transactions(0, 7) == [AbortedTxn(10, 0, 5, 3)]
    assert log.collect_aborted_transactions(6, 7) == []


def test_lookup_spans_segments_and_the_index_goes_with_its_segment(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=300)
    log.append_as_leader(txn_batch(10, 0, count=3), 1)
    for _ in range(4):
        log.append_as_leader(make_batch(2, value_size=60, timestamp=NOW), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 10), 1)
    marker_offset = log.log_end_offset - 1
    assert log.num_segments > 2
    assert txn_files(log.dir) == [f"{log.active_segment.base_offset:020d}.txnindex"]
    # A fetch from the first segment sees the abort indexed in a later one.
    assert log.collect_aborted_transactions(0, 3) == [AbortedTxn(10, 0, marker_offset, marker_offset + 1)]
    log.update_high_watermark(log.log_end_offset)
    log.roll()
    log.append_as_leader(make_batch(1, timestamp=NOW), 1)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(log.log_end_offset - 1)
    log.delete_old_segments()
    assert txn_files(log.dir) == []
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []


def test_follower_appends_index_aborts_like_the_leader(tmp_path):
    leader = open_log(tmp_path / "a-0")
    leader.append_as_leader(txn_batch(10, 0), 1)
    leader.append_as_leader(txn_batch(11, 0), 1)
    leader.append_as_leader(marker(ControlRecordType.ABORT, 11), 1)
    follower = open_log(tmp_path / "b-0")
    follower.append_as_follower(bytearray(leader.read(0, 1 << 20).records))
    assert follower.active_segment.txn_index.entries == leader.active_segment.txn_index.entries \
        == [AbortedTxn(11, 2, 4, 0)]
    assert follower.producer_state.ongoing_txns == {0: 10}


def test_follower_truncation_drops_entries_above_the_truncation_point(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(10, 0), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 10), 1)
    log.append_as_leader(txn_batch(11, 0), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 11), 1)
    log.truncate_to(5)
    assert log.active_segment.txn_index.entries == [AbortedTxn(10, 0, 2, 3)]
    assert log.producer_state.ongoing_txns == {3: 11}  # its abort is gone: open again


@pytest.mark.parametrize("damage", ["deleted", "torn"])
def test_unclean_restart_rebuilds_a_lost_or_torn_index(tmp_path, damage):
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=300)
    log.append_as_leader(txn_batch(10, 0), 1)
    log.append_as_leader(txn_batch(11, 0), 1)
    for _ in range(3):
        log.append_as_leader(make_batch(2, value_size=60, timestamp=NOW), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 10), 1)
    log.append_as_leader(txn_batch(12, 0), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 12), 1)
    expected = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [t.producer_id for t in expected] == [10, 12]
    copy = tmp_path / "copy" / "t-0"
    shutil.copytree(directory, copy)  # as after SIGKILL: no close, no final snapshot
    for name in txn_files(copy):
        path = os.path.join(copy, name)
        if damage == "deleted":
            os.unlink(path)
        else:
            with open(path, "ab") as f:
                f.write(b"\x01\x02\x03")
    again = open_log(copy, segment_bytes=300, recovery_point=0)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == expected
    assert again.producer_state.ongoing_txns == {2: 11}
    again.update_high_watermark(again.log_end_offset)
    assert again.last_stable_offset == 2


def test_clean_restart_keeps_the_index_and_the_open_transactions(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append_as_leader(txn_batch(10, 0), 1)
    log.append_as_leader(txn_batch(11, 0), 1)
    log.append_as_leader(marker(ControlRecordType.ABORT, 10), 1)
    log.update_high_watermark(log.log_end_offset)
    log.close()
    again = open_log(directory, had_clean_shutdown=True, high_watermark=5)
    assert again.collect_aborted_transactions(0, 5) == [AbortedTxn(10, 0, 4, 2)]
    assert again.last_stable_offset == 2

"""ProducerStateManager on its own: sequence and epoch rules, duplicates, snapshots, truncation."""

import logging
import os
import struct

import pytest
from crc32c import crc32c

from odradek.broker.log.producer_snapshot import (
    CorruptSnapshotError, SnapshotEntry, decode_snapshot, encode_snapshot, list_snapshot_offsets, snapshot_path,
)
from odradek.broker.log.producer_state import BatchMetadata, ProducerStateManager, decrement_sequence
from odradek.broker.log.segment import walk_headers
from odradek.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

from .helpers import make_batch, make_producer_batch

INT32_MAX = 2**31 - 1


class Appender:
    """Drives the manager the way Log.append_as_leader does: check, then apply at the log end."""

    def __init__(self, manager):
        self.manager = manager
        self.next_offset = 0

    def append(self, *batches):
        records = bytearray(b"".join(batches))
        headers = list(walk_headers(records))
        pending, duplicate = self.manager.check_leader_append(records, headers)
        if duplicate is not None:
            return duplicate
        first = self.next_offset
        self.next_offset += sum(h.last_offset - h.base_offset + 1 for h in headers)
        if pending:
            self.manager.apply_leader_append(records, pending, first, -1)
        self.manager.map_end_offset = self.next_offset
        return first


@pytest.fixture
def manager(tmp_path):
    return ProducerStateManager(str(tmp_path))


@pytest.fixture
def log(manager):
    return Appender(manager)


def test_unknown_producer_accepts_any_first_sequence_then_requires_the_next(log, manager):
    assert log.append(make_producer_batch(7, 0, 42, 3)) == 0
    entry = manager.last_entry(7)
    assert (entry.epoch, entry.last_seq, list(entry.batches)) == (0, 44, [BatchMetadata(42, 44, 0, 2, 1002)])
    assert log.append(make_producer_batch(7, 0, 45, 2)) == 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(7, 0, 48))  # 47 is missing
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(7, 0, 45))  # overlaps without being a stored batch
    assert manager.last_entry(7).last_seq == 46  # rejected batches change nothing
    assert log.next_offset == 5


def test_batches_without_producer_id_are_not_tracked(log, manager):
    log.append(make_batch(3), make_batch(2))
    assert manager.is_empty and log.next_offset == 5


def test_older_epoch_is_fenced_and_a_new_epoch_must_start_at_zero(log, manager):
    log.append(make_producer_batch(1, 5, 0, 2))
    with pytest.raises(InvalidProducerEpochError) as excinfo:
        log.append(make_producer_batch(1, 4, 2))
    assert excinfo.value.code == 47
    with pytest.raises(OutOfOrderSequenceNumberError) as excinfo:
        log.append(make_producer_batch(1, 6, 2))
    assert excinfo.value.code == 45
    log.append(make_producer_batch(1, 6, 0))
    entry = manager.last_entry(1)
    assert entry.epoch == 6 and [b.first_seq for b in entry.batches] == [0]  # the old epoch's batches are gone


def test_sequence_wraps_from_int32_max_to_zero(log, manager):
    log.append(make_producer_batch(3, 0, INT32_MAX - 1, 2))
    assert manager.last_entry(3).last_seq == INT32_MAX
    log.append(make_producer_batch(3, 0, 0, 1))
    log.append(make_producer_batch(3, 0, 1, 3))
    log.append(make_producer_batch(4, 0, INT32_MAX - 1, 4))  # one batch across the wrap
    assert manager.last_entry(4).batches[-1][:2] == (INT32_MAX - 1, 1)
    log.append(make_producer_batch(4, 0, 2))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(4, 0, INT32_MAX))
    assert decrement_sequence(1, 3) == INT32_MAX - 1


def test_retry_of_any_of_the_last_five_batches_is_a_duplicate(log, manager):
    firsts = [log.append(make_producer_batch(9, 2, seq * 2, 2)) for seq in range(6)]
    assert len(manager.last_entry(9).batches) == 5
    for i in range(1, 6):
        duplicate = log.append(make_producer_batch(9, 2, i * 2, 2))
        assert isinstance(duplicate, BatchMetadata)
        assert (duplicate.first_offset, duplicate.last_offset) == (firsts[i], firsts[i] + 1)
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(9, 2, 0, 2))  # the oldest was evicted: no longer recognised
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(9, 2, 10, 1))  # same first sequence, different range
    assert log.next_offset == 12


def test_same_sequences_under_another_epoch_are_not_a_duplicate(log, manager):
    log.append(make_producer_batch(9, 2, 0, 2))
    with pytest.raises(InvalidProducerEpochError):
        log.append(make_producer_batch(9, 1, 0, 2))
    assert log.append(make_producer_batch(9, 3, 0, 2)) == 2  # a new epoch restarting at 0 is new data


def test_batches_of_one_request_are_checked_in_order_and_all_or_nothing(log, manager):
    assert log.append(make_producer_batch(1, 0, 0, 2), make_producer_batch(1, 0, 2, 3), make_batch(1)) == 0
    entry = manager.last_entry(1)
    assert [(b.first_offset, b.last_offset) for b in entry.batches] == [(0, 1), (2, 4)]
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append(make_producer_batch(1, 0, 5), make_producer_batch(1, 0, 7))
    assert manager.last_entry(1).last_seq == 4 and log.next_offset == 6
    with pytest.raises(InvalidProducerEpochError):  # an epoch bump inside the request fences later batches
        log.append(make_producer_batch(1, 1, 0), make_producer_batch(1, 0, 5))
    assert manager.last_entry(1).epoch == 0


def test_snapshot_round_trip_keeps_the_last_batch_of_each_producer(tmp_path, log, manager):
    log.append(make_producer_batch(1, 0, 0, 3))
    log.append(make_producer_batch(1, 0, 3, 2))
    log.append(make_producer_batch(2**40, 7, INT32_MAX, 2, transactional=True))
    assert manager.take_snapshot()
    assert not manager.take_snapshot()  # nothing new since
    assert list_snapshot_offsets(str(tmp_path)) == [log.next_offset]
    again = ProducerStateManager(str(tmp_path))
    again.truncate_and_reload(0, log.next_offset, now=0)
    assert again.map_end_offset == log.next_offset
    one, big = again.last_entry(1), again.last_entry(2**40)
    assert list(one.batches) == [manager.last_entry(1).batches[-1]] and one.epoch == 0
    assert list(big.batches) == [BatchMetadata(INT32_MAX, 0, 5, 6, 1001)] and big.current_txn_first_offset == 5
    retry = Appender(again)
    retry.next_offset = log.next_offset
    assert retry.append(make_producer_batch(1, 0, 3, 2)).first_offset == 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        retry.append(make_producer_batch(1, 0, 6))


def test_snapshot_file_layout_is_kafkas():
    data = encode_snapshot([SnapshotEntry(5, 1, 9, 100, 2, 1234, -1, -1)])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 5, 1, 9, 100, 2, 1234, -1, -1)
    assert data == struct.pack(">hI", 1, crc32c(body)) + body
    assert decode_snapshot(data) == [SnapshotEntry(5, 1, 9, 100, 2, 1234, -1, -1)]
    for bad in (data[:-1], data + b"\0", b"\0\2" + data[2:], data[:6] + b"\xff\xff\xff\xff"):
        with pytest.raises(CorruptSnapshotError):
            decode_snapshot(bad)


def test_corrupt_snapshot_is_warned_about_deleted_and_an_older_one_used(tmp_path, log, manager, caplog):
    log.append(make_producer_batch(1, 0, 0))
    manager.take_snapshot()  # at 1
    log.append(make_producer_batch(1, 0, 1))
    manager.take_snapshot()  # at 2
    path = snapshot_path(str(tmp_path), 2)
    with open(path, "r+b") as f:
        f.seek(20)
        f.write(b"\xff")
    again = ProducerStateManager(str(tmp_path))
    with caplog.at_level(logging.WARNING):
        again.truncate_and_reload(0, 2, now=0)
    assert "ignoring producer snapshot" in caplog.text and "CRC" in caplog.text
    assert not os.path.exists(path) and again.snapshot_offsets == [1]
    assert again.map_end_offset == 1 and again.last_entry(1).last_seq == 0  # the caller replays from 1


def test_truncate_and_reload_drops_snapshots_outside_the_log(tmp_path, log, manager):
    for seq in range(5):
        log.append(make_producer_batch(1, 0, seq))
        manager.take_snapshot()
    assert manager.snapshot_offsets == [1, 2, 3, 4, 5]
    manager.truncate_and_reload(log_start_offset=3, log_end_offset=4, now=0)
    assert manager.snapshot_offsets == [3, 4] and list_snapshot_offsets(str(tmp_path)) == [3, 4]
    assert manager.map_end_offset == 4 and manager.last_entry(1).last_seq == 3
    manager.on_log_start_offset_incremented(10)  # everything below: the latest snapshot stays
    assert manager.snapshot_offsets == [4] and manager.map_end_offset == 10
    assert manager.last_entry(1) is not None  # producers outlive their batches (Kafka 2.8)


def test_truncate_fully_forgets_everything(tmp_path, log, manager):
    log.append(make_producer_batch(1, 0, 0))
    manager.take_snapshot()
    manager.truncate_fully_and_start_at(50)
    assert manager.is_empty and manager.snapshot_offsets == [] and list_snapshot_offsets(str(tmp_path)) == []
    assert manager.map_end_offset == 50


def test_follower_replay_skips_sequence_checks(log, manager):
    records = make_producer_batch(4, 1, 10, 2) + make_producer_batch(4, 0, 99)
    headers = [h._replace(base_offset=h.base_offset + 5 * i, last_offset=h.last_offset + 5 * i)
               for i, h in enumerate(walk_headers(records))]
    manager.replay_records(records, headers)
    entry = manager.last_entry(4)
    assert entry.epoch == 0 and list(entry.batches) == [BatchMetadata(99, 99, 5, 5, 1000)]  # as Kafka: warn, keep


def test_idle_producers_expire_unless_in_a_transaction(tmp_path):
    manager = ProducerStateManager(str(tmp_path), max_producer_id_expiration_ms=1000)
    log = Appender(manager)
    log.append(make_producer_batch(1, 0, 0, timestamp=5_000))
    log.append(make_producer_batch(2, 0, 0, timestamp=5_500))
    log.append(make_producer_batch(3, 0, 0, timestamp=5_000, transactional=True))
    assert manager.remove_expired_producers(5_999) == 0
    assert manager.remove_expired_producers(6_000) == 1
    assert sorted(manager.producers) == [2, 3]
    assert manager.remove_expired_producers(10**9) == 1 and sorted(manager.producers) == [3]

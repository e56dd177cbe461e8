"""Transactions in producer state through the Log: the last stable offset with interleaved producers,
the leader's refusals (old epoch, non-transactional write inside a transaction, zombie coordinator),
the epoch a marker carries, and read_committed reads."""

import shutil
import time

import pytest

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.txn_index import AbortedTxn
from odradek.protocol.errors import (
    InvalidProducerEpochError, InvalidTxnStateError, TransactionCoordinatorFencedError,
)
from odradek.protocol.records import ControlRecordType, build_control_batch, iter_batches

from .helpers import make_batch, make_producer_batch

NOW = int(time.time() * 1000)
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def open_log(directory, **kwargs):
    return Log(str(directory), LogConfig(), clock=lambda: NOW, **kwargs)


def marker(kind, pid, epoch=0, coordinator_epoch=0):
    return bytearray(build_control_batch(kind, producer_id=pid, producer_epoch=epoch,
                                         coordinator_epoch=coordinator_epoch, timestamp=NOW))


def txn(log, pid, seq, count=2, epoch=0):
    return log.append_as_leader(make_producer_batch(pid, epoch, seq, count, transactional=True, timestamp=NOW), 1)


def committed(log):
    log.update_high_watermark(log.log_end_offset)
    return log.last_stable_offset


def test_lso_follows_the_earliest_open_transaction_of_interleaved_producers(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(2, timestamp=NOW), 1)       # 0-1 plain records
    assert committed(log) == 2 and log.producer_state.first_unstable_offset is None
    txn(log, 1, 0)                                              # 2-3 A opens
    txn(log, 2, 0)                                              # 4-5 B opens
    txn(log, 1, 2)                                              # 6-7 A continues
    assert committed(log) == 2
    log.append_as_leader(marker(COMMIT, 2), 1)                  # 8: B commits, A still holds the LSO
    assert committed(log) == 2
    log.append_as_leader(marker(ABORT, 1), 1)                   # 9: A aborts
    assert committed(log) == 10
    assert log.producer_state.ongoing_txns == {} and log.producer_state.unreplicated_txns == {}


def test_a_completed_transaction_holds_the_lso_until_its_marker_is_below_the_high_watermark(tmp_path):
    log = open_log(tmp_path / "t-0")
    txn(log, 1, 0)                                              # 0-1
    log.update_high_watermark(2)
    log.append_as_leader(marker(COMMIT, 1), 1)                  # 2, not replicated yet
    log.append_as_leader(make_batch(1, timestamp=NOW), 1)       # 3
    assert log.last_stable_offset == 0
    log.update_high_watermark(3)                                # the marker is committed
    assert log.last_stable_offset == 3
    assert committed(log) == 4


def test_lso_is_never_above_the_high_watermark(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(make_batch(5, timestamp=NOW), 1)
    txn(log, 1, 0)
    log.update_high_watermark(3)
    assert log.last_stable_offset == 3


def test_read_committed_reads_stop_at_the_lso_and_list_the_aborted_transactions(tmp_path):
    log = open_log(tmp_path / "t-0")
    txn(log, 1, 0)                                              # 0-1 A
    txn(log, 2, 0)                                              # 2-3 B
    log.append_as_leader(marker(ABORT, 1), 1)                   # 4
    txn(log, 3, 0)                                              # 5-6 C stays open
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 2                           # B still open
    data = log.read(0, 1 << 20, max_offset=log.last_stable_offset).records
    assert [b.base_offset for b in iter_batches(data)] == [0]
    assert log.aborted_transactions_in(0, data) == [AbortedTxn(1, 0, 4, 2)]
    log.append_as_leader(marker(COMMIT, 2), 1)                  # 7
    assert committed(log) == 5
    data = log.read(2, 1 << 20, max_offset=log.last_stable_offset).records
    assert [b.base_offset for b in iter_batches(data)] == [2, 4]
    assert log.aborted_transactions_in(2, data) == [AbortedTxn(1, 0, 4, 2)]
    assert log.aborted_transactions_in(5, log.read(5, 1 << 20).records) == []


def test_a_non_transactional_write_inside_a_transaction_is_invalid_txn_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    txn(log, 1, 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(make_producer_batch(1, 0, 2, 1, timestamp=NOW), 1)
    log.append_as_leader(marker(COMMIT, 1), 1)
    log.append_as_leader(make_producer_batch(1, 0, 2, 1, timestamp=NOW), 1)  # after the marker: fine


def test_markers_carry_the_epoch_and_fence_old_epochs_and_zombie_coordinators(tmp_path):
    log = open_log(tmp_path / "t-0")
    txn(log, 1, 0, epoch=0)
    # The coordinator aborts with a bumped epoch (Kafka's epoch bump on abort/timeout).
    log.append_as_leader(marker(ABORT, 1, epoch=1, coordinator_epoch=5), 1)
    assert log.producer_state.last_entry(1).epoch == 1
    assert log.producer_state.last_entry(1).coordinator_epoch == 5
    with pytest.raises(InvalidProducerEpochError):
        txn(log, 1, 2, epoch=0)                                 # the old producer is fenced
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_as_leader(marker(COMMIT, 1, epoch=1, coordinator_epoch=4), 1)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(marker(COMMIT, 1, epoch=0, coordinator_epoch=5), 1)
    txn(log, 1, 0, epoch=1)                                     # the new epoch starts at sequence 0
    log.append_as_leader(marker(COMMIT, 1, epoch=1, coordinator_epoch=6), 1)
    assert committed(log) == log.log_end_offset


def test_open_transactions_survive_clean_and_unclean_restarts(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append_as_leader(make_batch(1, timestamp=NOW), 1)       # 0
    txn(log, 1, 0)                                              # 1-2
    txn(log, 2, 0)                                              # 3-4
    log.append_as_leader(marker(COMMIT, 1), 1)                  # 5
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 3
    unclean = tmp_path / "copy" / "t-0"
    shutil.copytree(directory, unclean)
    log.close()
    for again in (open_log(directory, had_clean_shutdown=True, high_watermark=6),
                  open_log(unclean, recovery_point=0, high_watermark=6)):
        assert again.producer_state.ongoing_txns == {3: 2}
        assert again.last_stable_offset == 3
        again.append_as_leader(marker(ABORT, 2), 1)
        assert committed(again) == 7
        assert again.collect_aborted_transactions(0, 7) == [AbortedTxn(2, 3, 6, 7)]

"""__transaction_state record formats and TransactionMetadata's transitions (Kafka 2.8's rules)."""

from __future__ import annotations

import struct

import pytest

from odradek.broker.coordinator.transaction import records as fmt
from odradek.broker.coordinator.transaction.transaction_metadata import (
    COMPLETE_COMMIT, EMPTY, MAX_EPOCH, ONGOING, PREPARE_ABORT, PREPARE_COMMIT, PREPARE_EPOCH_FENCE, PRODUCER_FENCED,
    IllegalTransition, TransactionMetadata)


def test_key_is_version_0_and_the_transactional_id():
    assert fmt.txn_key("tx") == struct.pack(">hh", 0, 2) + b"tx"
    assert fmt.parse_key(fmt.txn_key("ü-id")) == "ü-id"


def test_value_layout_matches_kafka_and_round_trips():
    record = fmt.TxnRecord(7, 3, 60000, PREPARE_COMMIT, {("b", 1), ("a", 0), ("a", 2)}, 1000, 900)
    data = fmt.txn_value(record)
    expected = struct.pack(">hqhib", 0, 7, 3, 60000, PREPARE_COMMIT) + struct.pack(">i", 2) \
        + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2) \
        + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1) + struct.pack(">qq", 1000, 900)
    assert data == expected
    assert fmt.parse_value(data) == record


def test_an_empty_transaction_writes_null_partitions():
    data = fmt.txn_value(fmt.TxnRecord(1, 0, 1000, EMPTY, set(), 5, -1))
    assert data[2 + 8 + 2 + 4 + 1:][:4] == struct.pack(">i", -1)
    assert fmt.parse_value(data).partitions == set()
    with pytest.raises(ValueError):
        fmt.txn_value(fmt.TxnRecord(1, 0, 1000, EMPTY, {("t", 0)}, 5, -1))


def test_unknown_versions_and_garbage_are_bad_records():
    with pytest.raises(fmt.BadRecord):
        fmt.parse_key(struct.pack(">h", 1) + b"xx")
    with pytest.raises(fmt.BadRecord):
        fmt.parse_value(b"\x00")


def metadata(**kw) -> TransactionMetadata:
    return TransactionMetadata("tx", 10, **{"producer_epoch": 0, "timeout_ms": 1000, **kw})


def test_a_transition_is_pending_until_completed_and_illegal_moves_raise():
    m = metadata()
    transit = m.prepare_add_partitions({("t", 0)}, now_ms=50)
    assert m.pending_state == ONGOING and m.state == EMPTY
    with pytest.raises(IllegalTransition):
        m.prepare_abort_or_commit(PREPARE_COMMIT, 60)  # another transition is pending
    m.complete_transition(transit)
    assert (m.state, m.partitions, m.start_timestamp, m.pending_state) == (ONGOING, {("t", 0)}, 50, None)
    with pytest.raises(IllegalTransition):
        metadata().prepare_abort_or_commit(PREPARE_COMMIT, 1)  # Empty cannot prepare a commit


def test_epoch_bump_rules_of_init_producer_id():
    m = metadata(producer_epoch=4, last_producer_epoch=3)
    assert m.prepare_increment_producer_epoch(1000, None, 1).producer_epoch == 5  # a new producer
    m.pending_state = None
    recovered = m.prepare_increment_producer_epoch(1000, 4, 1)  # the current producer recovers
    assert (recovered.producer_epoch, recovered.last_producer_epoch) == (5, 4)
    m.pending_state = None
    retried = m.prepare_increment_producer_epoch(1000, 3, 1)  # a retry of a bump that worked
    assert (retried.producer_epoch, retried.last_producer_epoch) == (4, 3)
    m.pending_state = None
    assert m.prepare_increment_producer_epoch(1000, 1, 1) == PRODUCER_FENCED


def test_fencing_bumps_the_epoch_once_and_an_exhausted_epoch_rotates_the_id():
    m = metadata(state=ONGOING, partitions={("t", 0)}, producer_epoch=7)
    fence = m.prepare_fence_producer_epoch()
    assert (fence.state, fence.producer_epoch, m.pending_state) == (PREPARE_EPOCH_FENCE, 8, PREPARE_EPOCH_FENCE)
    m.pending_state, m.has_failed_epoch_fence = None, True
    assert m.prepare_fence_producer_epoch().producer_epoch == 7  # a failed fence does not bump again
    done = metadata(state=COMPLETE_COMMIT, producer_epoch=MAX_EPOCH - 1)
    assert done.is_producer_epoch_exhausted
    rotated = done.prepare_producer_id_rotation(11, 1000, 5, record_last_epoch=True)
    assert (rotated.producer_id, rotated.producer_epoch, rotated.last_producer_epoch, rotated.last_producer_id) == \
        (11, 0, MAX_EPOCH - 1, 10)


def test_complete_clears_partitions_and_abort_follows_an_epoch_fence():
    m = metadata(state=PREPARE_COMMIT, partitions={("t", 0)})
    complete = m.prepare_complete(99)
    assert (complete.state, complete.partitions) == (COMPLETE_COMMIT, set())
    ongoing = metadata(state=ONGOING, partitions={("t", 0)})
    ongoing.prepare_fence_producer_epoch()
    ongoing.pending_state = None  # what the coordinator does before preparing the abort
    assert ongoing.prepare_abort_or_commit(PREPARE_ABORT, 5).state == PREPARE_ABORT

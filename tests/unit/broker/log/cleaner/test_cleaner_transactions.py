"""KIP-98 cleaning rules (Kafka 2.8's CleanedTransactionMetadata and checkBatchRetention): aborted data goes
at once, markers stay while their transaction's data does (and delete.retention.ms after), each live
producer keeps its last batch (emptied if need be) so sequence checks survive cleaning and restarts,
and the cleaned segment's .txnindex keeps what read_committed readers need."""

import glob
import os

import pytest

from odradek.broker.log import Log
from odradek.clients.simple_client import records_from_fetch
from odradek.protocol.errors import OutOfOrderSequenceNumberError  # type: ignore[attr-defined]
from odradek.protocol.records import ControlRecordType, RecordBatchView

from .helpers import NOW, append, batches, clean, compacted_log, keyed, marker, records

ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT
DAY_MS = 24 * 3600 * 1000


def read_committed(log):
    """(offset, key, value) a read_committed consumer sees, reading the whole log in one fetch."""
    data = log.read(log.log_start_offset, 1 << 20, max_offset=log.last_stable_offset).records
    aborted = log.collect_aborted_transactions(log.log_start_offset, log.last_stable_offset)
    return [(r.offset, r.key, r.value) for r in records_from_fetch(data, log.log_start_offset, aborted)]


def latest(triples):
    out = {}
    for _, key, value in triples:
        out[key] = value
    return out


def transactional_log(tmp_path, **config):
    """Producer 1 aborts {a, b}; producer 2 commits {a}; plain writes of c; all in clean-able segments."""
    log = compacted_log(tmp_path, delete_retention_ms=DAY_MS, **config)
    append(log, keyed((b"a", b"aborted-a"), (b"b", b"aborted-b"), producer=(1, 0, 0), transactional=True))
    append(log, keyed((b"a", b"committed-a"), producer=(2, 0, 0), transactional=True))
    append(log, marker(ABORT, 1), marker(COMMIT, 2))
    append(log, keyed((b"c", b"plain")), roll=True)
    return log


def test_aborted_data_goes_and_its_marker_and_index_entry_stay_while_a_batch_of_it_does(tmp_path):
    log = transactional_log(tmp_path)
    before = read_committed(log)
    clean(log)
    assert read_committed(log) == before == [(2, b"a", b"committed-a"), (5, b"c", b"plain")]
    kept = batches(log)
    # Producer 1's batch is its last one: kept, emptied, with its sequence; the ABORT marker stays with it.
    assert [(b.base_offset, b.record_count, b.is_control, b.producer_id) for b in kept] == [
        (0, 0, False, 1), (2, 1, False, 2), (3, 1, True, 1), (4, 1, True, 2), (5, 1, False, -1)]
    assert kept[0].last_offset == 1 and kept[0].base_sequence == 0
    assert [t.producer_id for t in log.collect_aborted_transactions(0, log.log_end_offset)] == [1]
    index_files = glob.glob(os.path.join(log.dir, "*.txnindex"))
    assert len(index_files) == 1 and os.path.getsize(index_files[0]) == 34


def test_markers_go_once_their_transactions_data_is_gone_and_the_horizon_passed(tmp_path):
    log = transactional_log(tmp_path, segment_bytes=2048)
    clean(log)
    log.producer_state.remove_expired_producers(NOW + 8 * DAY_MS)  # both producers expire
    assert log.producer_state.producers == {}
    # Newer data in segments of their own: the delete horizon is delete.retention.ms before the newest
    # clean segment's modification time (Kafka 2.8), so the markers' segment must be older than that.
    append(log, keyed((b"a", b"plain-a"), (b"pad", b"p" * 1700)), roll=True)
    for _ in range(3):  # the emptied batch goes first, then the markers it kept
        os.utime(log.segments[0].log_path, ((NOW - 3 * DAY_MS) / 1000,) * 2)
        append(log, keyed((b"d", b"tick")), roll=True)
        clean(log)
    assert [b for b in batches(log) if b.is_control or b.producer_id >= 0] == []
    assert latest(read_committed(log)) == {b"a": b"plain-a", b"c": b"plain", b"d": b"tick", b"pad": b"p" * 1700}
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []


def test_an_idempotent_producer_keeps_its_sequence_across_cleaning_and_restarts(tmp_path):
    log = compacted_log(tmp_path)
    for seq in range(0, 10, 2):
        append(log, keyed((b"k%d" % seq, b"p"), (b"k%d" % (seq + 1), b"p"), producer=(7, 3, seq)))
    append(log, keyed(*[(b"k%d" % i, b"plain") for i in range(10)]), roll=True)  # supersedes all of it
    clean(log)
    kept = [b for b in batches(log) if b.producer_id == 7]
    assert [(b.base_sequence, b.last_offset, b.record_count) for b in kept] == [(8, 9, 0)]
    append(log, keyed((b"x", b"1"), producer=(7, 3, 10)))  # the next sequence is accepted
    append(log, keyed((b"x", b"2"), producer=(7, 3, 11)))
    directory = log.dir
    for segment in log.segments:
        segment.close_handlers()
    for snapshot in glob.glob(os.path.join(directory, "*.snapshot")):
        os.unlink(snapshot)  # rebuilt from the cleaned segments alone
    again = Log(directory, log.config, had_clean_shutdown=False, clock=lambda: NOW)
    again.append_as_leader(keyed((b"x", b"3"), producer=(7, 3, 12)), 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        again.append_as_leader(keyed((b"x", b"4"), producer=(7, 3, 20)), 0)


def test_a_control_batch_emptied_by_the_cleaner_is_skipped_when_producer_state_is_rebuilt(tmp_path):
    from odradek.broker.log.cleaner.record_filter import empty_batch
    log = compacted_log(tmp_path)
    append(log, keyed((b"a", b"1"), producer=(4, 0, 0), transactional=True))
    emptied = bytearray(empty_batch(RecordBatchView(marker(COMMIT, 4))))
    state = log.producer_state
    assert state.replay_records(emptied, [type("H", (), {"position": 0, "base_offset": 1, "last_offset": 1,
                                                          "max_timestamp": NOW})()]) == []
    assert state.last_entry(4).current_txn_first_offset == 0  # the transaction is not ended by it


def test_records_of_cleaned_logs_stay_in_offset_order(tmp_path):
    log = transactional_log(tmp_path)
    append(log, keyed((b"c", b"newer")), roll=True)
    clean(log)
    offsets = [o for o, _, _, _ in records(log)]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

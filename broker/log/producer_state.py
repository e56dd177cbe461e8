"""Idempotent-producer state of one partition: per producer id, its epoch and its last 5 batches.

Kafka 2.8's ProducerStateManager, in our own form. The leader checks every batch that carries a
producer id before appending (``check_leader_append``) and records it afterwards
(``apply_leader_append``); followers and log replays record batches without sequence checks
(``replay_batch``). A retry of one of the last 5 batches (same epoch, same first and last sequence)
is a duplicate: the leader answers with the original offsets and appends nothing.

The state is persisted in ``<offset>.snapshot`` files (``producer_snapshot``), taken when a segment
rolls (at the new base offset) and on close (at the log end offset); on load the latest snapshot at
or below the log end offset is read and the batches after it are replayed from the segments
(``read_producer_batches``). A snapshot keeps only the last batch of each producer, as Kafka's.

Transactions (KIP-98, as Kafka 2.8): a transactional batch opens a transaction at its first offset
(``ongoing_txns``); a control batch (COMMIT/ABORT marker) ends it and returns a ``CompletedTxn``, which
the Log indexes (aborts, ``txn_index.py``) and then hands back to ``complete_txn``. A completed
transaction stays *unreplicated* until the high watermark passes its marker, so the last stable
offset (``first_unstable_offset`` bounded by the high watermark) moves only once the marker is
committed. The leader refuses a non-transactional batch while its producer has a transaction open
(INVALID_TXN_STATE) and a marker of an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED).
Snapshots keep each producer's open transaction, so ongoing transactions survive restarts.
Not thread-safe: the owning Log serialises calls with its lock.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from typing import Iterable, Iterator, NamedTuple, Sequence

from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidProducerEpochError, InvalidTxnStateError, OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from ...protocol.records import (
    HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, ControlRecordType, RecordBatchError, RecordBatchView,
    read_control_batch,
)
from ...protocol.records.batch import CONTROL_MASK, HEADER, TRANSACTIONAL_MASK

from .producer_snapshot import (
    CorruptSnapshotError, SnapshotEntry, list_snapshot_offsets, read_snapshot, snapshot_path, write_snapshot,
)

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 7 * 24 * 3_600_000  # transactional.id.expiration.ms
_INT32_MAX = 0x7FFFFFFF
_SEQUENCE_SPAN = 1 << 31

# attributes, then (skipping lastOffsetDelta, baseTimestamp, maxTimestamp) producerId, producerEpoch,
# baseSequence: the producer fields of a batch header in one unpack from byte 21.
_PRODUCER_FIELDS = struct.Struct(">h20xqhi")
_PRODUCER_FIELDS_AT = 21
_RECORD_COUNT = struct.Struct(">i")
_RECORD_COUNT_AT = 57
_READ_CHUNK = 1024 * 1024
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__ (3x faster)


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from INT32_MAX to 0 (Kafka's DefaultRecordBatch.incrementSequence)."""
    value = sequence + increment
    return value - _SEQUENCE_SPAN if value > _INT32_MAX else value


def decrement_sequence(sequence: int, decrement: int) -> int:
    value = sequence - decrement
    return value + _SEQUENCE_SPAN if value < 0 else value


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == _INT32_MAX)


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # the batch's max timestamp (the log-append time under LogAppendTime)


class ProducerStateEntry:
    """What the partition remembers of one producer id."""

    __slots__ = ("producer_id", "epoch", "batches", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset")

    def __init__(self, producer_id: int, epoch: int = NO_PRODUCER_EPOCH, batches: Iterable[BatchMetadata] = (),
                 coordinator_epoch: int = -1, last_timestamp: int = NO_TIMESTAMP,
                 current_txn_first_offset: int | None = None) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        # Oldest first; appending a sixth drops the oldest.
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:  # a new epoch starts a new sequence: forget the old batches
            self.batches.clear()
            self.epoch = epoch

    def add_batch(self, epoch: int, batch: BatchMetadata, is_transactional: bool) -> None:
        self.maybe_update_epoch(epoch)
        self.batches.append(batch)
        self.last_timestamp = batch.timestamp
        if is_transactional and self.current_txn_first_offset is None:
            self.current_txn_first_offset = batch.first_offset

    def end_transaction(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """A COMMIT/ABORT marker: the ongoing transaction (if any) is over."""
        self.maybe_update_epoch(epoch)
        self.current_txn_first_offset = None
        if coordinator_epoch >= 0:
            self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = timestamp

    def to_snapshot_entry(self) -> SnapshotEntry:
        last = self.batches[-1] if self.batches else None
        return SnapshotEntry(
            self.producer_id, self.epoch, last.last_seq if last else NO_SEQUENCE, last.last_offset if last else -1,
            last.last_offset - last.first_offset if last else 0, self.last_timestamp, self.coordinator_epoch,
            -1 if self.current_txn_first_offset is None else self.current_txn_first_offset)

    @classmethod
    def from_snapshot_entry(cls, e: SnapshotEntry) -> "ProducerStateEntry":
        batches = []
        if e.last_offset >= 0:
            batches.append(BatchMetadata(decrement_sequence(e.last_sequence, e.offset_delta), e.last_sequence,
                                         e.last_offset - e.offset_delta, e.last_offset, e.timestamp))
        return cls(e.producer_id, e.epoch, batches, e.coordinator_epoch, e.timestamp,
                   None if e.current_txn_first_offset < 0 else e.current_txn_first_offset)

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(id={self.producer_id}, epoch={self.epoch}, batches={self.batches}, "
                f"coordinator_epoch={self.coordinator_epoch}, txn_first_offset={self.current_txn_first_offset})")


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker at ``last_offset`` (``first_offset`` = the marker's own when empty)."""
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class PendingBatch(NamedTuple):
    """A validated leader batch, recorded once its offsets are known (relative to the request's first).

    The hot path builds these as plain tuples in this field order.
    """
    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    relative_first: int
    relative_last: int
    max_timestamp: int
    attributes: int
    position: int  # of the batch in the request's buffer (a control batch's marker is read from there)


class ProducerBatch(NamedTuple):
    """The header fields of one stored batch that producer state needs (see read_producer_batches)."""
    position: int
    size: int
    base_offset: int
    last_offset: int
    attributes: int
    max_timestamp: int
    producer_id: int
    epoch: int
    base_sequence: int


class ProducerStateManager:
    def __init__(self, directory: str, max_producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 name: str = "") -> None:
        self.dir = directory
        self.max_producer_id_expiration_ms = max_producer_id_expiration_ms
        self.name = name or os.path.basename(directory)
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0  # every batch below this offset is reflected in ``producers``
        # Open transactions, first offset -> producer id; completed ones whose marker is not yet
        # below the high watermark, first offset -> CompletedTxn (Kafka's ongoingTxns/unreplicatedTxns).
        self.ongoing_txns: dict[int, int] = {}
        self.unreplicated_txns: dict[int, CompletedTxn] = {}
        self.last_snapshot_offset = 0
        self._snapshots: list[int] = list_snapshot_offsets(directory)

    # -- facts ------------------------------------------------------------------------------------

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    @property
    def is_empty(self) -> bool:
        return not self.producers

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    @property
    def oldest_snapshot_offset(self) -> int | None:
        return self._snapshots[0] if self._snapshots else None

    # -- the leader's path ------------------------------------------------------------------------

    def check_leader_append(self, records: bytes | bytearray | memoryview,
                            headers: Sequence) -> tuple[list[PendingBatch] | None, BatchMetadata | None]:
        """Validate every batch with a producer id; ``(pending, duplicate)``.

        ``pending`` (None when no batch has a producer id) goes to ``apply_leader_append`` after the
        append. ``duplicate`` is the stored batch a retried batch repeats: as Kafka, the whole request
        is then answered with it and nothing is appended. Raises InvalidProducerEpochError or
        OutOfOrderSequenceNumberError before anything is written.
        """
        unpack = _PRODUCER_FIELDS.unpack_from
        producers = self.producers
        pending: list | None = None
        seen: dict[int, tuple[int, int]] | None = None  # producer id -> (epoch, last seq) within this request
        relative = 0
        for h in headers:
            delta = h.last_offset - h.base_offset
            attributes, producer_id, epoch, first_seq = unpack(records, h.position + _PRODUCER_FIELDS_AT)
            if producer_id >= 0:
                last_seq = first_seq + delta
                if last_seq > _INT32_MAX:
                    last_seq -= _SEQUENCE_SPAN
                entry = producers.get(producer_id)
                # The common case in a few compares: the first batch of the request, same epoch, the
                # next sequence (it cannot repeat a stored batch then). Anything else: _check_slowly.
                batches = entry.batches if entry is not None else None
                if not (batches and pending is None and epoch == entry.epoch and  # type: ignore[union-attr]
                        first_seq == batches[-1][1] + 1 and not attributes & CONTROL_MASK and
                        (attributes & TRANSACTIONAL_MASK or entry.current_txn_first_offset is None)):
                    if pending is not None and seen is None:
                        seen = {p[0]: (p[1], p[3]) for p in pending}
                    duplicate = self._check_slowly(producer_id, entry, seen.get(producer_id) if seen else None,
                                                   epoch, first_seq, last_seq, attributes, records, h.position)
                    if duplicate is not None:
                        return None, duplicate
                    if seen is not None:
                        seen[producer_id] = (epoch, last_seq)
                batch = (producer_id, epoch, first_seq, last_seq, relative, relative + delta, h.max_timestamp,
                         attributes, h.position)  # a PendingBatch, as a plain tuple: this is the hot path
                if pending is None:
                    pending = [batch]
                else:
                    pending.append(batch)
            relative += delta + 1
        return pending, None

    def _check_slowly(self, producer_id: int, entry: ProducerStateEntry | None, previous: tuple[int, int] | None,
                      epoch: int, first_seq: int, last_seq: int, attributes: int, records=None,
                      position: int = 0) -> BatchMetadata | None:
        """Kafka 2.8's checks of a client batch: a duplicate of a stored batch, else epoch, then sequence,
        then the transaction state; a marker's coordinator epoch after its producer epoch."""
        is_control = attributes & CONTROL_MASK
        if entry is not None and not is_control:
            duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
            if duplicate is not None:
                return duplicate
        current_epoch = entry.epoch if entry is not None else NO_PRODUCER_EPOCH
        updated_epoch = previous[0] if previous is not None else current_epoch
        if epoch < updated_epoch:
            # Kafka >= 2.7 answers INVALID_PRODUCER_EPOCH here (PRODUCER_FENCED before), so the
            # client can abort and retry rather than treat it as fatal.
            raise InvalidProducerEpochError(
                f"{self.name}: epoch {epoch} of producer {producer_id} is older than the last seen epoch "
                f"{updated_epoch}")
        if is_control:  # markers carry no sequence; a zombie coordinator's marker is fenced
            self._check_coordinator_epoch(producer_id, entry, records, position)
            return None
        self._check_sequence(producer_id, entry, previous, epoch, first_seq, last_seq, current_epoch, updated_epoch)
        if entry is not None and entry.current_txn_first_offset is not None and \
                not attributes & TRANSACTIONAL_MASK:
            raise InvalidTxnStateError(
                f"{self.name}: expected a transactional write from producer {producer_id}, whose transaction "
                f"began at offset {entry.current_txn_first_offset}")
        return None

    def _check_coordinator_epoch(self, producer_id: int, entry: ProducerStateEntry | None, records,
                                 position: int) -> None:
        if entry is None or records is None:
            return
        try:
            _, coordinator_epoch = read_control_batch(RecordBatchView(records, position))
        except RecordBatchError:
            return  # the marker's own validation reports it
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"{self.name}: coordinator epoch {coordinator_epoch} of the marker for producer {producer_id} "
                f"is older than the last seen {entry.coordinator_epoch}")

    def _check_sequence(self, producer_id: int, entry: ProducerStateEntry | None, previous: tuple[int, int] | None,
                        epoch: int, first_seq: int, last_seq: int, current_epoch: int, updated_epoch: int) -> None:
        if epoch != updated_epoch:
            if first_seq != 0 and updated_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"{self.name}: producer {producer_id} starts epoch {epoch} at sequence {first_seq}, not 0 "
                    f"(current epoch {updated_epoch})")
            return
        if previous is not None:
            last = previous[1]
        elif entry is not None and epoch == current_epoch:
            last = entry.last_seq
        else:
            last = NO_SEQUENCE
        # No known epoch (a new producer id, or its batches were all removed): accept any sequence
        # (Kafka after KIP-360) rather than UNKNOWN_PRODUCER_ID.
        if current_epoch != NO_PRODUCER_EPOCH and not in_sequence(last, first_seq):
            raise OutOfOrderSequenceNumberError(
                f"{self.name}: out of order sequence for producer {producer_id} epoch {epoch}: {first_seq}-{last_seq} "
                f"(incoming), {last} (last appended)")

    def apply_leader_append(self, records: bytes | bytearray | memoryview, pending: list,
                            first_offset: int, log_append_time: int) -> list[tuple[CompletedTxn, int]] | None:
        """Record batches that ``check_leader_append`` passed, now written from ``first_offset``.

        Returns the transactions the append's markers completed, each with the last stable offset
        at its completion (for the transaction index), or None."""
        producers = self.producers
        completed = None
        for producer_id, epoch, first_seq, last_seq, rel_first, rel_last, max_ts, attributes, position in pending:
            entry = producers.get(producer_id)
            if entry is None:
                entry = producers[producer_id] = ProducerStateEntry(producer_id)
            timestamp = log_append_time if log_append_time >= 0 else max_ts
            if attributes & CONTROL_MASK:
                done = self._end_transaction(entry, records, first_offset + rel_first, epoch, timestamp, position)
                completed = [done] if completed is None else completed + [done]
                continue
            if epoch != entry.epoch:
                entry.maybe_update_epoch(epoch)
            entry.batches.append(_new_tuple(BatchMetadata, (first_seq, last_seq, first_offset + rel_first,
                                                            first_offset + rel_last, timestamp)))
            entry.last_timestamp = timestamp
            if attributes & TRANSACTIONAL_MASK and entry.current_txn_first_offset is None:
                entry.current_txn_first_offset = first_offset + rel_first
                self.ongoing_txns[first_offset + rel_first] = producer_id
        return completed

    def _end_transaction(self, entry: ProducerStateEntry, records, marker_offset: int, epoch: int,
                         timestamp: int, position: int | None = None) -> tuple[CompletedTxn, int]:
        """Kafka's appendEndTxnMarker + lastStableOffset(completedTxn) + completeTxn."""
        coordinator_epoch, aborted = -1, False
        if position is not None:
            try:
                marker, coordinator_epoch = read_control_batch(RecordBatchView(records, position))
                aborted = marker == ControlRecordType.ABORT
            except RecordBatchError as exc:  # keep the epoch; an unreadable marker still ends the txn
                log.warning("%s: unreadable control batch at offset %d: %s", self.name, marker_offset, exc)
        first = entry.current_txn_first_offset
        done = CompletedTxn(entry.producer_id, marker_offset if first is None else first, marker_offset, aborted)
        entry.end_transaction(epoch, coordinator_epoch, timestamp)
        lso = self.last_stable_offset_after(done)
        self.complete_txn(done)
        return done, lso

    # -- transactions -----------------------------------------------------------------------------

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` ends: the first offset of the earliest other open transaction,
        else the marker's offset + 1 (Kafka's ProducerStateManager.lastStableOffset)."""
        others = [first for first, pid in self.ongoing_txns.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        if self.ongoing_txns.get(completed.first_offset) == completed.producer_id:
            del self.ongoing_txns[completed.first_offset]
        self.unreplicated_txns[completed.first_offset] = completed

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below the high watermark no longer hold the LSO."""
        if self.unreplicated_txns:
            for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset < high_watermark]:
                del self.unreplicated_txns[first]

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open (or not yet replicated) transaction; None if none."""
        if not self.ongoing_txns and not self.unreplicated_txns:
            return None
        return min(min(self.ongoing_txns, default=1 << 63), min(self.unreplicated_txns, default=1 << 63))

    def _forget_transactions(self) -> None:
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()

    # -- followers and replays --------------------------------------------------------------------

    def replay_batch(self, producer_id: int, epoch: int, base_sequence: int, first_offset: int, last_offset: int,
                     timestamp: int, attributes: int, records=None, position: int | None = None
                     ) -> tuple[CompletedTxn, int] | None:
        """Record a batch without sequence checks (replication, or rebuilding from the log).

        For a control batch, ``records``/``position`` locate its bytes to read the marker; it returns
        the completed transaction and the LSO at its completion.
        """
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        if epoch < entry.epoch:  # Kafka only warns on the replication path
            log.warning("%s: producer %d epoch %d at offset %d is older than the last seen epoch %d",
                        self.name, producer_id, epoch, first_offset, entry.epoch)
        if attributes & CONTROL_MASK:
            if records is not None and position is not None and \
                    _RECORD_COUNT.unpack_from(records, position + _RECORD_COUNT_AT)[0] == 0:
                return None  # the cleaner emptied it: its transaction is gone from the log (Kafka skips it)
            return self._end_transaction(entry, records, first_offset, epoch, timestamp, position)
        last_seq = increment_sequence(base_sequence, last_offset - first_offset)
        had_txn = entry.current_txn_first_offset is not None
        entry.add_batch(epoch, BatchMetadata(base_sequence, last_seq, first_offset, last_offset, timestamp),
                        bool(attributes & TRANSACTIONAL_MASK))
        if not had_txn and entry.current_txn_first_offset is not None:
            self.ongoing_txns[entry.current_txn_first_offset] = producer_id
        return None

    def replay_records(self, records: bytes | bytearray | memoryview, headers: Sequence
                       ) -> list[tuple[CompletedTxn, int]]:
        """Follower append: record every batch with a producer id (offsets as stored); returns the
        transactions completed, with the LSO at completion."""
        unpack = _PRODUCER_FIELDS.unpack_from
        completed = []
        for h in headers:
            attributes, producer_id, epoch, base_sequence = unpack(records, h.position + _PRODUCER_FIELDS_AT)
            if producer_id >= 0:
                done = self.replay_batch(producer_id, epoch, base_sequence, h.base_offset, h.last_offset,
                                         h.max_timestamp, attributes, records, h.position)
                if done is not None:
                    completed.append(done)
        return completed

    def replay_segment(self, log_path: str, start_position: int, end_position: int, start_offset: int
                       ) -> list[tuple[CompletedTxn, int]]:
        """Rebuilding: replay the stored batches of one segment file whose last offset is >= ``start_offset``;
        returns the transactions its markers completed, with the LSO at completion."""
        completed = []
        for b in read_producer_batches(log_path, start_position, end_position):
            if b.producer_id < 0 or b.last_offset < start_offset:
                continue
            if b.attributes & CONTROL_MASK:  # rare: read the marker itself
                with open(log_path, "rb") as f:
                    f.seek(b.position)
                    data = f.read(b.size)
                done = self.replay_batch(b.producer_id, b.epoch, b.base_sequence, b.base_offset, b.last_offset,
                                         b.max_timestamp, b.attributes, data, 0)
                if done is not None:
                    completed.append(done)
            else:
                self.replay_batch(b.producer_id, b.epoch, b.base_sequence, b.base_offset, b.last_offset,
                                  b.max_timestamp, b.attributes)
        return completed

    # -- expiration -------------------------------------------------------------------------------

    def _is_expired(self, entry: ProducerStateEntry, now: int) -> bool:
        return entry.current_txn_first_offset is None and \
            now - entry.last_timestamp >= self.max_producer_id_expiration_ms

    def remove_expired_producers(self, now: int) -> int:
        """Forget producers idle for ``transactional.id.expiration.ms`` (by their last batch's timestamp)."""
        expired = [pid for pid, entry in self.producers.items() if self._is_expired(entry, now)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- snapshots --------------------------------------------------------------------------------

    def take_snapshot(self, sync: bool = True) -> str | None:
        """Write ``<map end offset>.snapshot`` unless the state has not moved since the last one; its path,
        or None. ``sync=False`` leaves its fsync to the caller (a roll's flush)."""
        if self.map_end_offset <= self.last_snapshot_offset:
            return None
        offset = self.map_end_offset
        path = snapshot_path(self.dir, offset)
        write_snapshot(path, [e.to_snapshot_entry() for e in self.producers.values()], sync)
        if offset not in self._snapshots:
            self._snapshots.append(offset)
            self._snapshots.sort()
        self.last_snapshot_offset = offset
        return path

    def _delete_snapshot(self, offset: int) -> None:
        self._snapshots.remove(offset)
        try:
            os.unlink(snapshot_path(self.dir, offset))
        except FileNotFoundError:
            pass

    def delete_snapshots_before(self, offset: int, keep_latest: bool = True) -> None:
        """Remove snapshots below ``offset``; the latest snapshot stays when ``keep_latest``."""
        doomed = [o for o in self._snapshots if o < offset]
        if keep_latest and doomed and doomed[-1] == self._snapshots[-1]:
            doomed.pop()
        for o in doomed:
            self._delete_snapshot(o)

    def _load_from_snapshot(self, log_start_offset: int, now: int) -> None:
        """State from the latest readable snapshot; a corrupt one is warned about, deleted, skipped."""
        while self._snapshots:
            offset = self._snapshots[-1]
            path = snapshot_path(self.dir, offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                log.warning("%s: ignoring producer snapshot %s: %s", self.name, path, exc)
                self._delete_snapshot(offset)
                continue
            for e in entries:
                entry = ProducerStateEntry.from_snapshot_entry(e)
                if not self._is_expired(entry, now):
                    self.producers[entry.producer_id] = entry
                    if entry.current_txn_first_offset is not None:
                        self.ongoing_txns[entry.current_txn_first_offset] = entry.producer_id
            self.last_snapshot_offset = self.map_end_offset = offset
            return
        self.last_snapshot_offset = self.map_end_offset = log_start_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now: int) -> None:
        """Drop snapshots above the log end (and below the log start, keeping the latest); if the
        state does not already end at ``log_end_offset``, reload it from the latest snapshot."""
        for offset in [o for o in self._snapshots if o > log_end_offset]:
            self._delete_snapshot(offset)
        self.delete_snapshots_before(log_start_offset)
        if log_end_offset != self.map_end_offset:
            self.producers.clear()
            self._forget_transactions()
            self._load_from_snapshot(log_start_offset, now)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self._forget_transactions()
        for o in list(self._snapshots):
            self._delete_snapshot(o)
        self.last_snapshot_offset = 0
        self.map_end_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords moved the log start: old snapshots go, producers stay
        (Kafka 2.8 keeps their state so that they do not hit UNKNOWN_PRODUCER_ID)."""
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset
        self.on_high_watermark_updated(log_start_offset)  # Kafka's removeUnreplicatedTransactions
        self.delete_snapshots_before(log_start_offset)
        latest = self.latest_snapshot_offset
        self.last_snapshot_offset = latest if latest is not None else log_start_offset


def read_producer_batches(path: str, start_position: int, end_position: int) -> Iterator[ProducerBatch]:
    """Headers of the batches stored in ``path`` between two file positions, read in chunks.

    Only the 61-byte headers are parsed; stops at a torn or malformed batch (recovery has already
    truncated those, so this only guards against a concurrent writer).
    """
    unpack = HEADER.unpack_from
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = start_position
        while end_position - pos >= HEADER_SIZE:
            chunk = os.pread(fd, min(_READ_CHUNK, end_position - pos), pos)
            at = 0
            while len(chunk) - at >= HEADER_SIZE:
                (base, length, _, _, _, attributes, delta, _, max_ts, producer_id, epoch, base_seq,
                 _) = unpack(chunk, at)
                size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or pos + at + size > end_position:
                    return
                yield ProducerBatch(pos + at, size, base, base + delta, attributes, max_ts, producer_id, epoch,
                                    base_seq)
                at += size
            if at == 0:
                return
            pos += at
    finally:
        os.close(fd)


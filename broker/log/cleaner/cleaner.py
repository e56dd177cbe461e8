"""Cleaning one log: Kafka 2.8's Cleaner (offset map, segment groups, cleanInto and its retention rules).

Runs in a cleaner worker (worker.py), on a ``CleanTask`` copied from the log, reading the segment files
itself. ``control`` is the worker's line to the broker: ``check_done()`` raises ``CleaningAborted`` when
the broker gave up the cleaning (truncation, deletion, shutdown), ``throttle(n)`` waits when the
cleaner's shared I/O rate is exceeded, ``swap(group)`` asks the broker to swap a cleaned group in.

1. The offset map: the keys of the dirty section [first dirty, first uncleanable) and their latest
   offsets, skipping aborted transactions. When the map is full, only the part mapped is cleaned this
   time (its end becomes the next first dirty offset): a large dirty section takes several passes.
2. The segments [0, end of the map) are grouped (total log bytes <= segment.bytes, index bytes <=
   segment.index.bytes, offsets within an int32 of the group's base) and each group is rewritten into
   one ``.cleaned`` segment, which the broker swaps in before the next group is read.
3. A record is kept when it is past the map, or it is the latest of its key and has a value or sits
   in a segment modified after the delete horizon (tombstones stay ``delete.retention.ms``). Batches of
   aborted transactions are dropped; markers go by CleanedTransactionMetadata; the last batch of each
   live producer is kept, emptied if nothing of it is kept, so sequence checks survive.

One addition to Kafka: when the last of several segments in a group keeps nothing, the cleaned segment ends
with an empty batch in place of that segment's last batch, so its offset range reaches into that segment. A load
that completes an interrupted swap finds the segments the swap replaces by that range (Kafka's rule);
without the empty batch a replaced segment could outlive the swap and bring back removed records.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from typing import Protocol

from ....protocol.records import LOG_OVERHEAD, MIN_BATCH_LENGTH, CorruptRecordBatchError, RecordBatchView

from ..segment import CLEANED_SUFFIX, LOG_SUFFIX, LogSegment, now_ms, segment_path
from ..txn_index import AbortedTxn, collect_aborted_across
from .offset_map import MAX_RAW_KEY as _MAX_RAW_KEY
from .offset_map import OffsetMap, key_proxy
from .record_filter import batch_records, empty_batch, retained_batch
from .task import CleanedGroup, CleanerSettings, CleanerStats, CleanTask, SegmentInfo
from .txn_metadata import CleanedTransactionMetadata

INT32_MAX = 0x7FFFFFFF
_LENGTH = struct.Struct(">i")


class CleaningAborted(Exception):
    """The broker gave up this cleaning (Kafka's LogCleaningAbortedException)."""


class Control(Protocol):
    def check_done(self) -> None: ...
    def throttle(self, nbytes: int) -> None: ...
    def swap(self, group: CleanedGroup) -> bool: ...


def group_segments_by_size(segments: list[SegmentInfo], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[SegmentInfo]]:
    """Kafka's groupSegmentsBySize: consecutive segments merged while the totals stay within bounds."""
    groups: list[list[SegmentInfo]] = []
    i, n = 0, len(segments)
    while i < n:
        first = segments[i]
        group = [first]
        log_size, index_size, time_index_size = first.size, first.offset_index_bytes, first.time_index_bytes
        i += 1
        while i < n:
            seg = segments[i]
            # the candidate's last offset, bounded by the next segment's base (Kafka's estimate)
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable_offset - 1
            if (log_size + seg.size > max_size or index_size + seg.offset_index_bytes > max_index_size
                    or time_index_size + seg.time_index_bytes > max_index_size
                    or last_offset - first.base_offset > INT32_MAX):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg.offset_index_bytes
            time_index_size += seg.time_index_bytes
            i += 1
        groups.append(group)
    return groups


def segments_from(segments: tuple[SegmentInfo, ...] | list[SegmentInfo], start: int, end: int) -> list[SegmentInfo]:
    """Kafka's logSegments(start, end) over the task's segments."""
    if end <= start:
        return []
    bases = [s.base_offset for s in segments]
    first = max(bisect_right(bases, start) - 1, 0)
    return [s for s in segments[first:] if s.base_offset < end]


class Cleaner:
    def __init__(self, settings: CleanerSettings, control: Control) -> None:
        self.settings = settings
        self.control = control
        self.offset_map = OffsetMap(settings.map_memory)  # LogCleaner checked it holds more than one entry

    # -- the whole cleaning -----------------------------------------------------------------------

    def clean(self, task: CleanTask) -> tuple[int, CleanerStats]:
        """Clean ``task``'s log; returns the first offset not cleaned (the next first dirty offset)."""
        stats = CleanerStats(start_ms=now_ms())
        self.build_offset_map(task, stats)
        end_offset = self.offset_map.latest_offset + 1
        stats.map_complete_ms = now_ms()
        txn = CleanedTransactionMetadata()
        groups = group_segments_by_size(segments_from(task.segments, 0, end_offset), task.segment_bytes,
                                        task.max_index_size, task.first_uncleanable_offset)
        for group in groups:
            self.clean_segments(task, group, txn, stats)
        stats.buffer_utilization = self.offset_map.utilization
        stats.end_ms = now_ms()
        return end_offset, stats

    def _collect_aborted(self, task: CleanTask, start: int, end: int) -> list[AbortedTxn]:
        bases = [base for base, _ in task.txn_entries]
        first = max(bisect_right(bases, start) - 1, 0)
        return collect_aborted_across((entries for _, entries in task.txn_entries[first:]), start, end)

    # -- reading segment files --------------------------------------------------------------------

    def _batches(self, fd: int, position: int, end: int):
        """(position, whole-batch bytes) chunks of a segment file from ``position``; each chunk is read
        after the control's checks, at most an I/O buffer at a time (more for one larger batch)."""
        buffer_size = self.settings.io_buffer_size
        while position < end:
            self.control.check_done()
            chunk = os.pread(fd, min(buffer_size, end - position), position)
            self.control.throttle(len(chunk))
            whole = _whole_batches_length(chunk)
            if whole == 0:  # a batch larger than the buffer: read exactly that batch (Kafka grows its buffers)
                if len(chunk) < LOG_OVERHEAD:
                    raise CorruptRecordBatchError(f"torn batch header at position {position}")
                size = _LENGTH.unpack_from(chunk, 8)[0] + LOG_OVERHEAD
                if size - LOG_OVERHEAD < MIN_BATCH_LENGTH or size > end - position:
                    raise CorruptRecordBatchError(f"log segment may be corrupt: batch size {size} at position "
                                                  f"{position}, {end - position} bytes left")
                chunk = os.pread(fd, size, position)
                whole = size
            yield position, memoryview(chunk)[:whole]
            position += whole

    # -- the offset map ---------------------------------------------------------------------------

    def build_offset_map(self, task: CleanTask, stats: CleanerStats) -> None:
        """Map the keys of [first dirty, first uncleanable) (Kafka's buildOffsetMap)."""
        start, end = task.first_dirty_offset, task.first_uncleanable_offset
        offset_map = self.offset_map
        offset_map.clear()
        dirty = segments_from(task.segments, start, end)
        txn = CleanedTransactionMetadata()
        txn.add_aborted_transactions(self._collect_aborted(task, start, end))
        for i, segment in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._map_segment(task, segment, start, next_start, txn, stats):
                break

    def _map_segment(self, task: CleanTask, segment: SegmentInfo, start: int, next_start: int,
                     txn: CleanedTransactionMetadata, stats: CleanerStats) -> bool:
        """Add one segment's keys; True when the map filled up inside it."""
        offset_map = self.offset_map
        table = offset_map.table
        max_entries = int(offset_map.slots * self.settings.load_factor)
        position = segment.dirty_position if segment.base_offset <= start else 0
        fd = os.open(segment_path(task.directory, segment.base_offset, LOG_SUFFIX), os.O_RDONLY)
        try:
            for _, chunk in self._batches(fd, position, segment.size):
                pos, size = 0, len(chunk)
                while pos < size:
                    batch = RecordBatchView(chunk, pos)
                    pos += batch.size_in_bytes
                    if batch.is_control:
                        txn.on_control_batch_read(batch)
                        stats.map_messages_read += 1
                    elif txn.on_batch_read(batch):
                        stats.map_messages_read += batch.record_count  # aborted: not mapped
                    else:
                        base = batch.base_offset
                        for record in batch_records(batch)[1]:
                            key = record[4]
                            if key is not None and base + record[3] >= start:
                                if len(table) >= max_entries:
                                    stats.map_bytes_read += pos - batch.size_in_bytes
                                    return True
                                table[key if len(key) <= _MAX_RAW_KEY else key_proxy(key)] = base + record[3]
                                offset_map.latest_offset = base + record[3]
                            stats.map_messages_read += 1
                    if batch.last_offset >= start:
                        offset_map.latest_offset = batch.last_offset
                stats.map_bytes_read += size
        finally:
            os.close(fd)
        # offsets may have gaps: the map covers everything up to the next segment
        offset_map.update_latest_offset(next_start - 1)
        return False

    # -- rewriting the segments -------------------------------------------------------------------

    def clean_segments(self, task: CleanTask, group: list[SegmentInfo], txn: CleanedTransactionMetadata,
                       stats: CleanerStats) -> None:
        """Clean a group of segments into one ``.cleaned`` segment and have the broker swap it in."""
        base = group[0].base_offset
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            _unlink(segment_path(task.directory, base, suffix + CLEANED_SUFFIX))
        cleaned = LogSegment(task.directory, base, index_interval_bytes=task.index_interval_bytes,
                             max_index_size=task.max_index_size, file_suffix=CLEANED_SUFFIX)
        txn.cleaned_index = cleaned.txn_index
        try:
            last_batch = None
            for i, segment in enumerate(group):
                upper = group[i + 1].base_offset if i + 1 < len(group) else segment.next_offset
                txn.add_aborted_transactions(self._collect_aborted(task, segment.base_offset, upper))
                retain_deletes = segment.last_modified_ms > task.delete_horizon_ms
                last_batch = self.clean_into(task, segment, cleaned, retain_deletes, txn, stats)
            if len(group) > 1 and last_batch is not None and cleaned.next_offset <= group[-1].base_offset:
                filler = empty_batch(RecordBatchView(last_batch), keep_producer=False)
                cleaned.append(filler, RecordBatchView(last_batch).last_offset)
            cleaned.on_become_inactive()
            cleaned.flush()
            modified_ns = group[-1].last_modified_ms * 1_000_000
            for path in (cleaned.log_path, cleaned.offset_index.path, cleaned.time_index.path):
                if os.path.exists(path):
                    os.utime(path, ns=(modified_ns, modified_ns))
            cleaned.close_handlers()
        except BaseException:
            cleaned.delete()
            raise
        # The files are the broker's from the request to its answer (it may be renaming them): removed here only
        # when it refused them (Kafka deletes a cleaned segment when an abort stops the copy, never once
        # replaceSegments may have begun). Left by a broker gone meanwhile, the next load removes them.
        replaced = tuple((s.base_offset, s.size) for s in group)
        if not self.control.swap(CleanedGroup(base, replaced, cleaned.size)):
            cleaned.delete()
            raise CleaningAborted(f"{task.name}: the log changed while it was cleaned")

    def clean_into(self, task: CleanTask, segment: SegmentInfo, dest: LogSegment, retain_deletes: bool,
                   txn: CleanedTransactionMetadata, stats: CleanerStats) -> bytes | None:
        """Kafka's cleanInto: copy what is kept of one segment into ``dest``; returns the segment's last
        batch (its bytes), None when it has none."""
        offset_map = self.offset_map
        table = offset_map.table
        latest = offset_map.latest_offset
        last_records = task.last_records
        last_batch: memoryview | None = None
        fd = os.open(segment_path(task.directory, segment.base_offset, LOG_SUFFIX), os.O_RDONLY)
        try:
            for _, chunk in self._batches(fd, 0, segment.size):
                out: list[bytes | memoryview] = []
                largest = -1
                pos, size = 0, len(chunk)
                while pos < size:
                    batch = RecordBatchView(chunk, pos)
                    pos += batch.size_in_bytes
                    last_batch = batch.buffer
                    stats.bytes_read += batch.size_in_bytes
                    # Kafka's checkBatchRetention
                    if batch.is_control:
                        discard = txn.on_control_batch_read(batch) and not retain_deletes
                    else:
                        discard = txn.on_batch_read(batch)
                    producer_last = last_records.get(batch.producer_id) if batch.producer_id >= 0 else None
                    if producer_last is not None:
                        last_data_offset, epoch = producer_last
                        if last_data_offset is not None:
                            retain_empty = batch.last_offset == last_data_offset
                        else:  # the producer's last entry is a marker: it carries the epoch that fences
                            retain_empty = batch.is_control and batch.producer_epoch == epoch
                    else:
                        retain_empty = False
                    if discard and not retain_empty:
                        continue  # Kafka's BatchRetention.DELETE
                    kept_batch = self._filter_batch(batch, discard, latest, table, retain_deletes, stats)
                    if kept_batch is None and retain_empty:
                        kept_batch = empty_batch(batch)
                    if kept_batch is not None:
                        out.append(kept_batch)
                        stats.bytes_written += len(kept_batch)
                        largest = batch.last_offset
                if out:
                    data = b"".join(out)
                    dest.append(data, largest)
                    self.control.throttle(len(data))
        finally:
            os.close(fd)
        return bytes(last_batch) if last_batch is not None else None

    def _filter_batch(self, batch: RecordBatchView, discard: bool, latest: int, table: dict,
                      retain_deletes: bool, stats: CleanerStats) -> bytes | memoryview | None:
        """What is kept of a batch's records (Kafka's shouldRetainRecord): the batch itself when all of
        it, a rewritten batch when part of it, None when nothing."""
        count = batch.record_count
        stats.messages_read += count
        if discard or count == 0:
            return None
        if batch.base_offset > latest:  # past the map: everything stays, nothing to decode
            stats.messages_written += count
            return batch.buffer
        data, records = batch_records(batch)
        base = batch.base_offset
        kept = []
        for record in records:
            offset = base + record[3]
            if offset > latest:
                kept.append(record)
                continue
            key = record[4]
            if key is None:
                stats.invalid_messages_read += 1
                continue
            if offset >= table.get(key if len(key) <= _MAX_RAW_KEY else key_proxy(key), -1) and \
                    (record[5] or retain_deletes):
                kept.append(record)
        stats.messages_written += len(kept)
        if not kept:
            return None
        if len(kept) == count:
            return batch.buffer
        return retained_batch(batch, data, kept)


def _whole_batches_length(chunk: bytes) -> int:
    """How many leading bytes of ``chunk`` are whole batches."""
    pos, end = 0, len(chunk)
    unpack = _LENGTH.unpack_from
    while end - pos >= LOG_OVERHEAD:
        size = unpack(chunk, pos + 8)[0] + LOG_OVERHEAD
        if size - LOG_OVERHEAD < MIN_BATCH_LENGTH:
            raise CorruptRecordBatchError(f"batch length {size - LOG_OVERHEAD} at byte {pos} is below the minimum")
        if size > end - pos:
            break
        pos += size
    return pos


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

"""LogSegment: one ``.log`` file of whole record batches plus its ``.index`` and ``.timeindex``.

Files are named by the segment's base offset, zero-padded to 20 digits
(``00000000000000000000.log``). Batches are written and read as bytes: only their headers are
parsed here (base offset, length, last offset delta, max timestamp), except by ``recover()``, which
also checks each batch's CRC, and ``find_offset_by_timestamp()``, which decodes one batch.
All I/O is synchronous (``os.pread`` / ``os.write``); callers serialise writes per log. The ``.log``
descriptor comes from ``file_handles.HANDLES`` for each use (opened on demand, within the process's
descriptor budget); the index files hold no descriptor (offset_index.py).
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections import deque
from typing import Callable, Iterator, NamedTuple

from ...protocol.records import (
    LOG_OVERHEAD, MIN_BATCH_LENGTH, RecordBatchError, RecordBatchView, decode_batch,
)

from .file_handles import HANDLES
from .log_dir_failure import append_whole
from .offset_index import DEFAULT_MAX_INDEX_SIZE, CorruptIndexError, OffsetIndex
from .time_index import NO_TIMESTAMP, TimeIndex
from .txn_index import AbortedTxn, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"  # aborted transactions (txn_index.py), only when the segment has any
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"  # reserved for the log cleaner
SWAP_SUFFIX = ".swap"  # reserved for the log cleaner

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp: the first 43 bytes of a v2 batch header.
_HEAD = struct.Struct(">qiibIhiqq")
_HEAD_SIZE = _HEAD.size
_INT32 = struct.Struct(">i")
_READ_CHUNK = 64 * 1024
_RECENT_BATCHES = 64
_RECOVER_CHUNK = 8 * 1024 * 1024
_INT32_MAX = 0x7FFFFFFF

log = logging.getLogger(__name__)

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def filename_prefix(offset: int) -> str:
    return f"{offset:020d}"


def segment_path(directory: str, base_offset: int, suffix: str) -> str:
    return os.path.join(directory, filename_prefix(base_offset) + suffix)


def parse_base_offset(filename: str) -> int:
    """``00000000000000000042.log`` -> 42."""
    return int(filename.split(".", 1)[0])


class BatchHeader(NamedTuple):
    position: int
    base_offset: int
    size: int
    last_offset: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class SegmentRead(NamedTuple):
    """Whole batches read from a segment: ``records`` starts at ``position`` in the file."""
    first_batch_base_offset: int
    position: int
    records: bytes | memoryview  # a view when the read was cut at a batch boundary


def walk_headers(buf: bytes | bytearray | memoryview, start: int = 0, origin: int = 0) -> Iterator[BatchHeader]:
    """Headers of the complete batches in ``buf`` from ``start``; their positions are relative to ``buf``
    plus ``origin`` (the file position of ``buf``, for a chunk read from a file)."""
    pos, end = start, len(buf)
    unpack = _HEAD.unpack_from
    while end - pos >= _HEAD_SIZE:
        base, length, _, _, _, _, delta, _, max_ts = unpack(buf, pos)
        size = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH or size > end - pos:
            return
        yield BatchHeader(origin + pos, base, size, base + delta, max_ts)
        pos += size


class LogSegment:
    def __init__(self, directory: str, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_size: int = DEFAULT_MAX_INDEX_SIZE, clock: Clock = now_ms,
                 file_suffix: str = "") -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self._clock = clock
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX + file_suffix)
        self._closed = False
        new = False
        try:  # a segment found on disk is opened when first read or written (file_handles)
            self._size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            with HANDLES.use(self) as fd:  # a new one: the file exists from now on, as Kafka makes it
                self._size = os.fstat(fd).st_size
            new = True
        HANDLES.add_owner()
        index_path = segment_path(directory, base_offset, INDEX_SUFFIX + file_suffix)
        time_index_path = segment_path(directory, base_offset, TIME_INDEX_SUFFIX + file_suffix)
        self.indexes_were_missing = not new and not (os.path.exists(index_path) and os.path.exists(time_index_path))
        self.offset_index = OffsetIndex(index_path, base_offset, max_index_size)
        self.time_index = TimeIndex(time_index_path, base_offset, max_index_size)
        if new:
            # Kafka makes a new segment's index files with it. Left to the close, a broker stopping with ten
            # thousand untouched partitions would create twenty thousand files on its way out (~1 ms each).
            self.offset_index.create()
            self.time_index.create()
        self.txn_index = TransactionIndex(segment_path(directory, base_offset, TXN_INDEX_SUFFIX + file_suffix),
                                          base_offset)
        self.created_ms = clock()
        self._rolling_based_timestamp: int | None = None
        self._bytes_since_last_index_entry = 0
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = base_offset
        self._next_offset = base_offset
        self.roll_jitter_ms = 0  # subtracted from segment.ms for this segment (segment.jitter.ms)
        # The last batches appended, newest last: a consumer tailing the log asks for these, and
        # finding them here saves the index lookup and the scan from the indexed position.
        self._recent: deque[BatchHeader] = deque(maxlen=_RECENT_BATCHES)
        self.txn_index_needs_rebuild = False  # set by recover() when markers or index entries were seen
        # Where the last batch ends and the largest timestamp: read from the indexes and the log's tail when
        # first needed (a segment loaded at start-up that nobody reads costs no index read, as Kafka 2.8).
        self._tail_pending = bool(self._size)

    # -- facts ------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    @property
    def next_offset(self) -> int:
        """Offset after the last batch in this segment (the base offset when empty)."""
        if self._tail_pending:
            self._load_tail()
        return self._next_offset

    @property
    def max_timestamp_so_far(self) -> int:
        if self._tail_pending:
            self._load_tail()
        return self._max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """The largest batch max timestamp, else the file's modification time (as Kafka)."""
        if self._tail_pending:
            self._load_tail()
        if self._max_timestamp >= 0:
            return self._max_timestamp
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    @property
    def indexes_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def rolling_based_timestamp(self) -> int | None:
        if self._rolling_based_timestamp is None and self._size:
            first = next(self.iter_headers(0), None)
            if first is not None:
                self._rolling_based_timestamp = first.max_timestamp
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """How long this segment has been open, by the first batch's timestamp when it has one."""
        first = self.rolling_based_timestamp()
        if first is not None and first >= 0:
            return message_timestamp - first
        return now - self.created_ms

    def should_roll(self, *, messages_size: int, max_timestamp: int, max_offset: int, now: int,
                    segment_bytes: int, segment_ms: int) -> bool:
        """Kafka's roll rule: size, age (segment.ms), a full index, or an offset overflow."""
        if self._size == 0:
            return False
        return (self._size > segment_bytes - messages_size
                or self.time_waited_for_roll(now, max_timestamp) > segment_ms - self.roll_jitter_ms
                or self.indexes_full
                or not self.can_convert_to_relative_offset(max_offset))

    # -- appending --------------------------------------------------------------------------------

    def append(self, records: bytes | bytearray | memoryview, largest_offset: int,
               max_timestamp: int = NO_TIMESTAMP, offset_of_max_timestamp: int | None = None) -> None:
        """Write whole batches; index one batch every ``index.interval.bytes``."""
        if not self.can_convert_to_relative_offset(largest_offset):
            raise ValueError(f"offset {largest_offset} overflows segment {self.base_offset}")
        if self._tail_pending:
            self._load_tail()
        position = self._size
        before = (self._bytes_since_last_index_entry, self._max_timestamp, self._offset_of_max_timestamp,
                  self._next_offset, len(self._recent), self._rolling_based_timestamp)
        try:
            with HANDLES.use(self) as fd:
                # all or nothing: torn bytes left in the file would put the next write (O_APPEND) after them
                # while our positions stay before them
                append_whole(fd, records, self.log_path, position)
            if position == 0 and self._rolling_based_timestamp is None:
                first = next(walk_headers(records), None)
                if first is not None:
                    self._rolling_based_timestamp = first.max_timestamp
            for header in walk_headers(records):
                self._track(header, position + header.position)
        except BaseException:
            self._undo_append(position, records, before)
            raise
        self._size = position + len(records)
        self._next_offset = max(self._next_offset, largest_offset + 1)

    def _undo_append(self, position: int, records: bytes | bytearray | memoryview, before: tuple) -> None:
        """A write that failed part-way: cut the file back to the last whole batch and forget what was
        tracked of it, so the segment's end and its in-memory position agree again. Should the cut fail too,
        the log directory is going offline (log_dir_failure.py) and nothing here is read again."""
        (self._bytes_since_last_index_entry, self._max_timestamp, self._offset_of_max_timestamp,
         self._next_offset, recent, self._rolling_based_timestamp) = before
        while len(self._recent) > recent:
            self._recent.pop()
        first = next(walk_headers(records), None)
        try:
            if first is not None:
                self.offset_index.truncate_to(first.base_offset)
                self.time_index.truncate_to(first.base_offset)
            with HANDLES.use(self) as fd:
                os.ftruncate(fd, position)
        except OSError:
            log.exception("Cannot cut %s back to %d bytes after a failed write", self.log_path, position)

    def _track(self, header: BatchHeader, file_position: int) -> None:
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, file_position)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size
        self._next_offset = header.next_offset
        # a new tuple built directly: NamedTuple._replace (a dict and _make) cost ~7 % of a broker's time when
        # produce requests carry one small batch for each of thousands of partitions
        self._recent.append(BatchHeader(file_position, header.base_offset, header.size, header.last_offset,
                                        header.max_timestamp))

    def update_txn_index(self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int,
                         rebuilding: bool = False) -> None:
        """An ABORT marker at ``last_offset`` was appended to this segment (Kafka's updateTxnIndex)."""
        txn = AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset)
        if rebuilding:
            self.txn_index.append_if_new(txn)
        else:
            self.txn_index.append(txn)

    # -- reading ----------------------------------------------------------------------------------

    def iter_headers(self, start_position: int, end_position: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the batches from ``start_position`` (file positions), read in chunks."""
        end = self._size if end_position is None else min(end_position, self._size)
        pos = start_position
        while end - pos >= _HEAD_SIZE:
            chunk = self._pread(min(_READ_CHUNK, end - pos), pos)
            consumed = 0
            for header in walk_headers(chunk, 0, pos):
                yield header
                consumed = header.position - pos + header.size
            if consumed == 0:  # a batch larger than the chunk, or a torn tail
                head = self._pread(_HEAD_SIZE, pos)
                if len(head) < _HEAD_SIZE:
                    return
                base, length, _, _, _, _, delta, _, max_ts = _HEAD.unpack(head)
                size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or pos + size > end:
                    return
                yield BatchHeader(pos, base, size, base + delta, max_ts)
                consumed = size
            pos += consumed

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The header of the first batch whose last offset is >= ``offset``, or None."""
        recent = self._recent
        if recent and recent[0].base_offset <= offset and recent[0].position >= start_position:
            if offset > recent[-1].last_offset:
                return None  # past everything appended to this segment
            found = recent[-1]
            for header in reversed(recent):
                if header.last_offset < offset:
                    break
                found = header
            return found
        position = max(self.offset_index.lookup(offset).position, start_position)
        for header in self.iter_headers(position):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, start_offset: int, max_bytes: int, max_position: int | None = None,
             min_one_batch: bool = True, max_offset: int | None = None) -> SegmentRead | None:
        """Whole batches from the one containing ``start_offset``, up to ``max_bytes``.

        Never past ``max_position`` (a file position) nor a batch whose last offset reaches
        ``max_offset`` (an exclusive bound such as the high watermark). With ``min_one_batch`` the
        first batch is returned whole even when larger than ``max_bytes`` (KIP-74). None when the
        segment holds nothing at or after ``start_offset``; empty records when a bound stops it.
        """
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        limit = self._size if max_position is None else min(max_position, self._size)
        start = first.position
        if start >= limit or (max_offset is not None and first.last_offset >= max_offset):
            return SegmentRead(first.base_offset, start, b"")
        data = self._pread(min(max_bytes, limit - start), start)
        end = 0
        for header in walk_headers(data):
            if max_offset is not None and header.last_offset >= max_offset:
                break
            end = header.position + header.size
        if end == 0:
            if not min_one_batch or start + first.size > limit:
                return SegmentRead(first.base_offset, start, b"")
            data = self._pread(first.size, start)
            end = len(data)
        elif end < len(data):
            # a view, not a copy: a consumer's read of max bytes almost always ends in a partial batch
            data = memoryview(data)[:end]
        return SegmentRead(first.base_offset, start, data)

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int = 0) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``start_offset`` with ts >= target."""
        indexed = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed.offset, start_offset)).position
        for header in self.iter_headers(position):
            if header.max_timestamp < timestamp or header.last_offset < start_offset:
                continue
            batch = RecordBatchView(self._pread(header.size, header.position))
            for record in decode_batch(batch):
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    return record.timestamp, record.offset
        return None

    # -- recovery and truncation ------------------------------------------------------------------

    def sanity_check(self) -> None:
        if self._tail_pending:
            self._load_tail()
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()
        if self.offset_index.entries and self.offset_index.last_entry.position > self._size:
            raise CorruptIndexError(f"{self.offset_index.path}: points past the end of {self.log_path}")
        if self.time_index.entries and self.time_index.last_entry.offset >= max(self._next_offset, self.base_offset + 1):
            raise CorruptIndexError(f"{self.time_index.path}: points past the end of {self.log_path}")

    def recover(self, max_batch_size: int | None = None) -> int:
        """Rebuild both indexes from the log, verifying every batch; truncate at the first bad one.

        Returns the number of bytes truncated. The transaction index is emptied here and rebuilt by
        the Log's producer-state replay, which knows where each aborted transaction began.
        """
        self._tail_pending = False
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index_needs_rebuild = bool(self.txn_index.entries)
        self.txn_index.reset()
        self._recent.clear()
        self._bytes_since_last_index_entry = 0
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = self.base_offset
        self._next_offset = self.base_offset
        self._rolling_based_timestamp = None
        valid, size, expected, want = 0, self._size, self.base_offset, _RECOVER_CHUNK
        while valid < size:
            chunk = self._pread(min(want, size - valid), valid)
            at_eof = valid + len(chunk) >= size
            pos, bad, want = 0, False, _RECOVER_CHUNK
            while pos < len(chunk):
                if len(chunk) - pos < LOG_OVERHEAD:
                    bad = at_eof  # a torn header at the end of the file
                    break
                length = _INT32.unpack_from(chunk, pos + 8)[0]
                batch_size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or valid + pos + batch_size > size:
                    bad = True
                    break
                if pos + batch_size > len(chunk):  # continue with the next read
                    want = max(batch_size, _RECOVER_CHUNK)
                    break
                try:
                    batch = RecordBatchView(chunk, pos)
                except RecordBatchError:
                    bad = True
                    break
                if not self._batch_is_valid(batch, expected, max_batch_size):
                    bad = True
                    break
                if self._rolling_based_timestamp is None:
                    self._rolling_based_timestamp = batch.max_timestamp
                if batch.is_control:
                    self.txn_index_needs_rebuild = True
                self._track(BatchHeader(valid + pos, batch.base_offset, batch_size, batch.last_offset,
                                        batch.max_timestamp), valid + pos)
                expected = batch.next_offset
                pos += batch_size
            valid += pos
            if bad:
                break
        truncated = size - valid
        if truncated:
            with HANDLES.use(self) as fd:
                os.ftruncate(fd, valid)
            self._size = valid
        self.indexes_were_missing = False
        return truncated

    def _batch_is_valid(self, batch: RecordBatchView, expected: int, max_batch_size: int | None) -> bool:
        try:
            batch.validate()
        except RecordBatchError:
            return False
        if batch.base_offset < expected or batch.last_offset < batch.base_offset:
            return False
        if not self.can_convert_to_relative_offset(batch.last_offset):
            return False
        return max_batch_size is None or batch.size_in_bytes <= max_batch_size

    def _load_tail(self) -> None:
        """Restore in-memory state of a segment opened from disk, scanning from the last index entry."""
        self._tail_pending = False
        last = self.offset_index.last_entry
        position = last.position if last.position <= self._size else 0
        ts_entry = self.time_index.last_entry
        self._max_timestamp, self._offset_of_max_timestamp = ts_entry.timestamp, ts_entry.offset
        self._next_offset = self.base_offset
        for header in self.iter_headers(position):
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp, self._offset_of_max_timestamp = header.max_timestamp, header.last_offset
            self._next_offset = header.next_offset
            self._bytes_since_last_index_entry += header.size

    def truncate_to(self, offset: int) -> int:
        """Remove every batch from the one containing ``offset``; returns the bytes removed."""
        header = self.translate_offset(offset)
        if header is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self._size - header.position
        self._recent.clear()
        with HANDLES.use(self) as fd:
            os.ftruncate(fd, header.position)
        self._size = header.position
        self._bytes_since_last_index_entry = 0
        if self._size == 0:
            self._rolling_based_timestamp = None
            self.created_ms = self._clock()
        self._load_tail()
        return removed

    # -- lifecycle --------------------------------------------------------------------------------

    def on_become_inactive(self) -> None:
        """On roll: record the final max timestamp in the time index (as Kafka does)."""
        if self._tail_pending:
            return  # never read since loaded: its time index already ends with it
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True)

    def flush(self) -> None:
        with HANDLES.use(self) as fd:
            os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def duplicate_descriptors(self) -> list[int]:
        """Copies of the open files' descriptors, for an fsync outside the log's lock: they stay valid
        when the segment is closed, deleted or truncated meanwhile (the caller closes them)."""
        fds = []
        if not self._closed:
            with HANDLES.use(self) as fd:
                fds.append(os.dup(fd))  # the budget may close its own copy meanwhile
        for index in (self.offset_index, self.time_index, self.txn_index):
            fd = index.descriptor_to_sync()
            if fd >= 0:
                fds.append(fd)
        return fds

    def close(self) -> None:
        if not self._closed:
            self.on_become_inactive()
            self._closed = True
            HANDLES.close(self, for_good=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def close_handlers(self) -> None:
        """Close the files without writing anything (for a directory being deleted)."""
        if not self._closed:
            self._closed = True
            HANDLES.close(self, for_good=True)
        self.offset_index.discard()
        self.time_index.discard()
        self.txn_index.close()

    # -- the log file's descriptor (file_handles) -------------------------------------------------

    def open_file(self) -> int:
        return os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)

    def _pread(self, size: int, position: int) -> bytes:
        with HANDLES.use(self) as fd:
            return os.pread(fd, size, position)

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename the segment's files, e.g. ("", ".deleted") before removing them."""
        def renamed(path: str) -> str:
            return (path[: len(path) - len(old)] if old else path) + new
        new_log_path = renamed(self.log_path)
        os.rename(self.log_path, new_log_path)
        self.log_path = new_log_path
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.rename(renamed(index.path))  # also an index whose entries are not written yet

    def delete(self) -> None:
        """Close and remove the segment's files."""
        self.close_handlers()
        for path in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self._size}, next_offset={self.next_offset})"

"""Log: one partition's directory of segments — append, read, roll, retention, truncation, recovery.

Directory ``<topic>-<partition>`` holds the segments (``<20-digit base offset>.log|.index|.timeindex``)
and ``leader-epoch-checkpoint``. Batches stay bytes: the leader path rewrites baseOffset and
partitionLeaderEpoch in place (neither is under the CRC) and never decodes records.

Durability follows Kafka's defaults: no fsync per append (the page cache survives a process
crash; replication covers machine loss). Segments are fsynced when they roll, when
``flush.messages`` / ``flush.ms`` say so, and on close; ``recovery_point`` is the offset below which
everything is known to be on disk, and recovery after an unclean stop scans from there.
As Kafka does, a roll only asks the scheduler (``scheduler.py``) to flush the segments it leaves, with
the producer snapshot it wrote: the fsyncs run on a background thread, never on the thread appending
(the broker's event loop), and the recovery point moves only once they are done. A flush holds the
log's lock only to pick its files (duplicated descriptors) and to move the recovery point, so appends
go on during the fsyncs. Deleted segments are renamed to ``.deleted`` at once and removed
``file.delete.delay.ms`` later by the scheduler (Kafka's asynchronous delete).

Idempotent producers: ``producer_state`` (see producer_state.py) checks every batch with a producer
id before a leader append and answers a retried batch with its original offsets; its
``<offset>.snapshot`` files are written on roll and close and replayed from on load.

Compaction (broker/log/cleaner/): ``replace_segments`` swaps cleaned segments in for the ones they were
made from, crash-safely (segment_swap.py); loading completes or discards a swap a crash interrupted.
``on_truncated`` tells the cleaner about truncations.

Transactions (Kafka 2.8): an ABORT marker appended (as leader or follower) adds an entry to its
segment's ``.txnindex``; the last stable offset is min(first unstable offset, high watermark);
read_committed reads stop at it and ``collect_aborted_transactions`` lists the aborted transactions
a fetched range overlaps. Recovery empties the transaction index of every segment it scans and the
producer-state replay (from a snapshot at or below the first such segment) writes it again.
"""

from __future__ import annotations

import os
import random
import shutil
import threading
from bisect import bisect_left, bisect_right
from typing import Callable

from ...protocol.errors import (  # type: ignore[attr-defined]
    MessageTooLargeError, OffsetOutOfRangeError, RecordListTooLargeError,
)
from ...protocol.records import (
    LOG_APPEND_TIME, NO_PARTITION_LEADER_EPOCH, RecordBatchView, set_base_offset,
    set_partition_leader_epoch,
)

from .checkpoints import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile, fsync_dir, fsync_file
from .leader_epoch_cache import LeaderEpochFileCache
from .log_config import LogConfig
from .log_dir_failure import LogDirFailureChannel, guarded_io
from .log_types import (
    FetchDataInfo, InvalidReadSizeError, LogAppendInfo, UnexpectedAppendOffsetError, log_dir_name,
    parse_topic_partition,
)
from .offset_index import CorruptIndexError
from .producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS, BatchMetadata, CompletedTxn, ProducerStateEntry, ProducerStateManager,
)
from .scheduler import INLINE, InlineScheduler, Scheduler
from .segment import (
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    LogSegment, now_ms, parse_base_offset, walk_headers,
)
from .segment_swap import remove_temp_files_and_collect_swaps
from .time_index import NO_TIMESTAMP
from .txn_index import AbortedTxn, collect_aborted_across
from .validator import validate_for_leader

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


Clock = Callable[[], int]


class Log:
    def __init__(self, directory: str, config: LogConfig | None = None, *, recovery_point: int = 0,
                 log_start_offset: int = 0, high_watermark: int = 0, had_clean_shutdown: bool = False,
                 clock: Clock = now_ms,
                 max_producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 scheduler: Scheduler | InlineScheduler = INLINE) -> None:
        self.dir = directory
        self.config = config or LogConfig()
        self._clock = clock
        self._scheduler = scheduler  # background flushes and delayed file deletion (scheduler.py)
        self._unsynced_files: list[str] = []  # producer snapshots written by rolls, fsynced by their flush
        self._truncations = 0  # a flush that saw another count does not move the recovery point
        self._lock = threading.RLock()
        try:
            os.mkdir(directory)
            fresh = True  # a new partition: nothing on disk to look at (thousands are created at once)
        except FileExistsError:
            fresh = False
        except FileNotFoundError:
            os.makedirs(directory)
            fresh = True
        self.topic, self.partition = parse_topic_partition(directory)
        self.leader_epoch_cache = LeaderEpochFileCache(
            LeaderEpochCheckpointFile(os.path.join(directory, LEADER_EPOCH_CHECKPOINT)))
        self._segments: dict[int, LogSegment] = {}
        self._bases: list[int] = []
        self.recovery_point = recovery_point
        self.recovered_bytes_truncated = 0
        self._recovered_bases: set[int] = set()  # segments recovered on load: their txn index is rebuilt
        self.on_truncated: Callable[["Log"], None] | None = None  # the log cleaner's (set by the LogManager)
        self._failure_channel: LogDirFailureChannel | None = None
        if fresh:
            self._add_segment(self._new_segment(log_start_offset))
        else:
            self._load_segments(had_clean_shutdown, log_start_offset)
        leo = self.log_end_offset
        self.recovery_point = min(self.recovery_point, leo)
        self.log_start_offset = max(log_start_offset, self._bases[0])
        if self.log_start_offset > leo:  # a checkpoint newer than the data (should not happen)
            self.log_start_offset = leo
        self.high_watermark = min(max(high_watermark, self.log_start_offset), leo)
        self.leader_epoch_cache.truncate_from_end(leo)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        self.producer_state = ProducerStateManager(directory, max_producer_id_expiration_ms, self.name)
        if self._recovered_bases:
            # Kafka's recoverSegment rebuilds producer state at the segment's base: snapshots above the
            # first recovered segment go, so the replay passes over (and re-indexes) every recovered one.
            self.producer_state.truncate_and_reload(self.log_start_offset, min(self._recovered_bases), clock())
        self._rebuild_producer_state(reload_from_clean_shutdown=had_clean_shutdown and not self._recovered_bases)
        self._recovered_bases.clear()

    # -- loading and recovery ---------------------------------------------------------------------

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(self.dir, base_offset, index_interval_bytes=self.config.index_interval_bytes,
                             max_index_size=self.config.max_index_size, clock=self._clock)
        jitter = min(self.config.segment_jitter_ms, self.config.segment_ms)
        if jitter > 0:  # Kafka's randomSegmentJitter: each segment rolls at its own time
            segment.roll_jitter_ms = random.randrange(jitter)
        return segment

    def _add_segment(self, segment: LogSegment) -> None:
        if segment.base_offset not in self._segments:
            self._bases.insert(bisect_right(self._bases, segment.base_offset), segment.base_offset)
        self._segments[segment.base_offset] = segment

    def _load_segments(self, had_clean_shutdown: bool, log_start_offset: int) -> None:
        # Leftovers of deletion, cleaning or checkpoint writes; swaps the cleaner left half done.
        swaps = remove_temp_files_and_collect_swaps(self.dir)
        names = os.listdir(self.dir)
        log_bases = {parse_base_offset(n) for n in names if n.endswith(LOG_SUFFIX)}
        for name in names:  # indexes without a log file
            if name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)) and \
                    parse_base_offset(name) not in log_bases:
                os.unlink(os.path.join(self.dir, name))
        recovered: set[int] = set()
        last = max(log_bases, default=None)
        for base in sorted(log_bases):
            segment = self._new_segment(base)
            try:
                if segment.indexes_were_missing:
                    raise CorruptIndexError("missing index files")
                # Kafka 2.8 checks no index at load (they are read on first use; an unclean shutdown recovers
                # what follows the recovery point anyway); we still check the active segment's, and every
                # segment's after an unclean shutdown.
                if base == last or not had_clean_shutdown:
                    segment.sanity_check()
            except CorruptIndexError:
                self.recovered_bytes_truncated += segment.recover()
                recovered.add(base)
            self._add_segment(segment)
        for base in swaps:
            self._complete_swap(base)
            recovered.add(base)
        if not self._segments:
            self._add_segment(self._new_segment(log_start_offset))
            return
        if not had_clean_shutdown:
            self._recover_from(self.recovery_point, recovered)
        # Only segments holding markers need their transaction index (and so producer state) rebuilt.
        self._recovered_bases = {b for b in recovered if b in self._segments and
                                 self._segments[b].txn_index_needs_rebuild}

    def _complete_swap(self, base: int) -> None:
        """Kafka's completeSwapOperations: the recovered ``.swap`` segment replaces what it overlaps."""
        swap = LogSegment(self.dir, base, index_interval_bytes=self.config.index_interval_bytes,
                          max_index_size=self.config.max_index_size, clock=self._clock, file_suffix=SWAP_SUFFIX)
        self.recovered_bytes_truncated += swap.recover()
        # Kafka's rule: the segments the swap's offsets overlap (and the one it is named after, even if
        # the swap came out empty).
        replaced = [s for s in self.segments_in(base, max(swap.next_offset, base + 1))
                    if s.next_offset > base or s.base_offset == base]
        self.replace_segments([swap], replaced, from_swap_files=True)

    def _recover_from(self, recovery_point: int, already: set[int]) -> None:
        """Scan every segment holding offsets >= recovery point; cut at the first invalid batch."""
        bases = list(self._bases)
        for i, base in enumerate(bases):
            segment = self._segments[base]
            upper = bases[i + 1] if i + 1 < len(bases) else None
            if upper is not None and upper <= recovery_point:
                continue
            truncated = 0 if base in already else segment.recover()
            already.add(base)
            self.recovered_bytes_truncated += truncated
            if truncated:
                for later in bases[i + 1:]:
                    self._remove_segment(later)
                break
        if not self._segments:
            self._add_segment(self._new_segment(recovery_point))

    # -- facts ------------------------------------------------------------------------------------

    @property
    def failure_channel(self) -> LogDirFailureChannel | None:
        """Where an I/O error takes this log's directory offline (set by the LogManager; None: errors raise)."""
        return self._failure_channel

    @failure_channel.setter
    def failure_channel(self, channel: LogDirFailureChannel | None) -> None:
        self._failure_channel = channel
        self.leader_epoch_cache.failure_channel = channel  # its batched checkpoint writes run elsewhere

    @property
    def name(self) -> str:
        return log_dir_name(self.topic, self.partition)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    @property
    def segments(self) -> list[LogSegment]:
        return [self._segments[b] for b in self._bases]

    @property
    def num_segments(self) -> int:
        return len(self._bases)

    @property
    def log_end_offset(self) -> int:
        # active_segment inlined: asked several times per partition of every produce and fetch
        return self._segments[self._bases[-1]].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments.values())

    @property
    def latest_epoch(self) -> int:
        return self.leader_epoch_cache.latest_epoch

    @property
    def lock(self) -> threading.RLock:
        """Held by every call that reads or changes the segments (the cleaner takes it to look at them)."""
        return self._lock

    def segments_in(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """Kafka's logSegments(from, to): the segment holding ``from_offset`` and those after it that
        begin below ``to_offset``."""
        with self._lock:
            if to_offset <= from_offset:
                return []
            bases = self._bases
            start = max(bisect_right(bases, from_offset) - 1, 0)
            return [self._segments[b] for b in bases[start:bisect_left(bases, to_offset)]]

    def _floor_segment(self, offset: int) -> LogSegment | None:
        i = bisect_right(self._bases, offset)
        return self._segments[self._bases[i - 1]] if i else None

    # -- appending --------------------------------------------------------------------------------

    @guarded_io
    def append_as_leader(self, records: bytearray | memoryview, leader_epoch: int) -> LogAppendInfo:
        """Assign offsets to already-validated batches (rewritten in place) and append them.

        Batches with a producer id are checked first (epoch, sequence); a retry of one of the
        producer's last 5 batches appends nothing and returns the original's offsets with
        ``duplicate=True``.
        """
        with self._lock:
            records = validate_for_leader(records, self.config, self._clock())  # may rebuild the batch
            headers = self._check_batches(records)
            pending, duplicate = self.producer_state.check_leader_append(records, headers)
            if duplicate is not None:
                return self._duplicate_info(duplicate, len(records))
            log_append = self.config.message_timestamp_type == "LogAppendTime"
            now = self._clock() if log_append else NO_TIMESTAMP
            first = offset = self.log_end_offset
            max_ts, offset_of_max_ts = NO_TIMESTAMP, first
            for h in headers:
                set_base_offset(records, offset, h.position)
                set_partition_leader_epoch(records, leader_epoch, h.position)
                last = offset + (h.last_offset - h.base_offset)
                batch_max_ts = h.max_timestamp
                if log_append:
                    view = RecordBatchView(records, h.position)
                    if view.timestamp_type != LOG_APPEND_TIME or view.max_timestamp != now:
                        view.set_log_append_time(now)
                    batch_max_ts = now
                if batch_max_ts > max_ts:
                    max_ts, offset_of_max_ts = batch_max_ts, last
                offset = last + 1
            info = LogAppendInfo(first, offset - 1, max_ts, offset_of_max_ts, now, self.log_start_offset,
                                 offset - first, len(records))
            if leader_epoch != NO_PARTITION_LEADER_EPOCH:
                self.leader_epoch_cache.assign(leader_epoch, first)
            info.rolled = self._append(records, info)
            if pending is not None:
                completed = self.producer_state.apply_leader_append(records, pending, first, now)
                if completed:
                    self._index_completed_txns(completed)
            self.producer_state.map_end_offset = offset
            return info

    def _duplicate_info(self, duplicate: BatchMetadata, size: int) -> LogAppendInfo:
        """A retried batch: the original's offsets, and its max timestamp as the append time (Kafka 2.8 does so
        under CreateTime too)."""
        append_time = duplicate.timestamp  # Kafka 2.8's analyzeAndValidateProducerState, whatever the timestamp type
        return LogAppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp,
                             duplicate.last_offset, append_time, self.log_start_offset,
                             duplicate.last_offset - duplicate.first_offset + 1, size, duplicate=True)

    @guarded_io
    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches replicated from the leader, keeping their offsets and epochs."""
        with self._lock:
            headers = self._check_batches(records)
            first = headers[0].base_offset
            if first < self.log_end_offset:
                raise UnexpectedAppendOffsetError(
                    f"{self.name}: first offset {first} is below the log end offset {self.log_end_offset}")
            max_ts, offset_of_max_ts, previous = NO_TIMESTAMP, first, first - 1
            for h in headers:
                if h.base_offset <= previous:
                    raise UnexpectedAppendOffsetError(f"{self.name}: offsets go backwards at {h.base_offset}")
                previous = h.last_offset
                if h.max_timestamp > max_ts:
                    max_ts, offset_of_max_ts = h.max_timestamp, h.last_offset
                epoch = RecordBatchView(records, h.position).partition_leader_epoch
                if epoch >= 0:
                    self.leader_epoch_cache.assign(epoch, h.base_offset)
            info = LogAppendInfo(first, headers[-1].last_offset, max_ts, offset_of_max_ts, NO_TIMESTAMP,
                                 self.log_start_offset, headers[-1].last_offset - first + 1, len(records))
            info.rolled = self._append(records, info)
            # No sequence checks: the leader did them. Markers index aborts as on the leader.
            completed = self.producer_state.replay_records(records, headers)
            if completed:
                self._index_completed_txns(completed)
            self.producer_state.map_end_offset = headers[-1].last_offset + 1
            return info

    def _index_completed_txns(self, completed: list[tuple[CompletedTxn, int]], rebuilding: bool = False) -> None:
        """Kafka's segment.updateTxnIndex: an aborted transaction goes to its marker's segment."""
        for txn, last_stable_offset in completed:
            if txn.is_aborted:
                segment = self._floor_segment(txn.last_offset)
                if segment is not None:
                    segment.update_txn_index(txn.producer_id, txn.first_offset, txn.last_offset,
                                             last_stable_offset, rebuilding=rebuilding)

    def _check_batches(self, records: bytes | bytearray | memoryview) -> list:
        headers = list(walk_headers(records))
        if not headers:
            raise ValueError("no complete record batch to append")
        end = headers[-1].position + headers[-1].size
        if end != len(records):
            raise ValueError(f"{len(records) - end} trailing bytes after the last batch")
        for h in headers:
            if h.size > self.config.max_message_bytes:
                raise MessageTooLargeError(
                    f"batch of {h.size} bytes exceeds max.message.bytes {self.config.max_message_bytes}")
        if len(records) > self.config.segment_bytes:
            raise RecordListTooLargeError(
                f"{len(records)} bytes exceed segment.bytes {self.config.segment_bytes}")
        return headers

    def _append(self, records, info: LogAppendInfo) -> bool:
        rolled = self._maybe_roll(len(records), info)
        self.active_segment.append(records, info.last_offset, info.max_timestamp, info.offset_of_max_timestamp)
        self._unflushed_messages += info.num_messages
        if self._unflushed_messages >= self.config.flush_interval_messages:
            self.flush()
        return rolled

    def _maybe_roll(self, size: int, info: LogAppendInfo) -> bool:
        segment = self.active_segment
        if segment.should_roll(messages_size=size, max_timestamp=info.max_timestamp, max_offset=info.last_offset,
                               now=self._clock(), segment_bytes=self.config.segment_bytes,
                               segment_ms=self.config.segment_ms):
            self.roll(info.first_offset)
            return True
        return False

    @guarded_io
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset; flush the old ones."""
        with self._lock:
            new_base = max(self.log_end_offset, expected_next_offset or 0)
            active = self.active_segment
            if active.base_offset == new_base and active.size == 0:
                return active  # nothing to roll away from
            # A snapshot at the new base offset: recovery of the new segment starts from it. Its fsync
            # waits for the flush below, like the segment's.
            self.producer_state.map_end_offset = new_base
            snapshot = self.producer_state.take_snapshot(sync=False)
            if snapshot is not None:
                self._unsynced_files.append(snapshot)
            active.on_become_inactive()
            if new_base in self._segments:
                self._remove_segment(new_base)
            segment = self._new_segment(new_base)
            self._add_segment(segment)
            self._scheduler.submit("flush-log", lambda: self.flush(new_base))  # Kafka's asynchronous flush
            return segment

    # -- flushing ---------------------------------------------------------------------------------

    @guarded_io
    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, offset) and the snapshots rolls wrote,
        then advance the recovery point. The lock is held only to pick the files and to move the
        recovery point: the fsyncs run on duplicated descriptors while appends go on."""
        with self._lock:
            leo = self.log_end_offset
            offset = leo if offset is None else min(offset, leo)
            files, self._unsynced_files = self._unsynced_files, []
            if offset <= self.recovery_point and not files:
                return
            fds: list[int] = []
            for i, base in enumerate(self._bases):
                upper = self._bases[i + 1] if i + 1 < len(self._bases) else None
                if base < offset and (upper is None or upper > self.recovery_point):
                    fds += self._segments[base].duplicate_descriptors()
            truncations = self._truncations
            unflushed = self._unflushed_messages if offset == leo else 0
            directory = self.dir
        try:
            for fd in fds:
                os.fsync(fd)
            for path in files:
                try:
                    fsync_file(path)
                except FileNotFoundError:
                    pass  # deleted since (retention, truncation)
            if files:
                try:
                    fsync_dir(directory)
                except FileNotFoundError:
                    if self.dir == directory:
                        raise
                    fsync_dir(self.dir)  # renamed meanwhile (moved to another log dir, or deleted)
        finally:
            for fd in fds:
                os.close(fd)
        with self._lock:
            # A truncation meanwhile may have put new, unflushed records below ``offset``.
            if truncations == self._truncations and offset > self.recovery_point:
                self.recovery_point = offset
            self._last_flush_ms = self._clock()
            self._unflushed_messages = max(0, self._unflushed_messages - unflushed)

    def flush_if_due(self) -> bool:
        """Flush when ``flush.ms`` has passed since the last flush (the log flusher's job)."""
        if self.recovery_point < self.log_end_offset and \
                self._clock() - self._last_flush_ms >= self.config.flush_interval_ms:
            self.flush()
            return True
        return False

    # -- reading ----------------------------------------------------------------------------------

    @guarded_io
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchDataInfo:
        """Whole batches from the one containing ``offset``; ``max_offset`` bounds them (exclusive)."""
        with self._lock:
            leo = self.log_end_offset
            if offset < self.log_start_offset or offset > leo:
                raise OffsetOutOfRangeError(
                    f"{self.name}: offset {offset} is outside [{self.log_start_offset}, {leo}]")
            empty = FetchDataInfo(offset, b"", self.active_segment.base_offset, self.active_segment.size)
            if offset == leo or (max_offset is not None and offset >= max_offset):
                return empty
            if max_bytes < 0:  # checked where Kafka checks it: only a read that reaches a segment fails
                raise InvalidReadSizeError(f"Invalid max size {max_bytes} for log read from {self.name}")
            i = max(bisect_right(self._bases, offset) - 1, 0)
            for base in self._bases[i:]:
                result = self._segments[base].read(offset, max_bytes, min_one_batch=min_one_batch,
                                                   max_offset=max_offset)
                if result is not None:
                    return FetchDataInfo(offset, result.records, base, result.position)
            return empty

    @guarded_io
    def fetch_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (timestamp, offset) of the first record with ts >= target; -1 latest, -2 earliest."""
        with self._lock:
            if timestamp == LATEST_TIMESTAMP:
                return NO_TIMESTAMP, self.log_end_offset
            if timestamp == EARLIEST_TIMESTAMP:
                return NO_TIMESTAMP, self.log_start_offset
            for segment in self.segments:
                if segment.size and segment.max_timestamp_so_far >= timestamp and \
                        segment.next_offset > self.log_start_offset:
                    found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
                    if found is not None:
                        return found
            return None

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), from the segment holding
        ``fetch_offset`` on, until an entry's LSO shows no later one can (Kafka's collectAbortedTransactions)."""
        with self._lock:
            start = max(bisect_right(self._bases, fetch_offset) - 1, 0)
            return collect_aborted_across((self._segments[base].txn_index.entries for base in self._bases[start:]),
                                          fetch_offset, upper_bound)

    def active_producers(self) -> list[ProducerStateEntry]:
        """The producers this partition remembers (DescribeProducers; Kafka's Log.activeProducers)."""
        with self._lock:
            return list(self.producer_state.producers.values())

    def aborted_transactions_in(self, fetch_offset: int, records: bytes | bytearray | memoryview) -> list[AbortedTxn]:
        """The aborted transactions a read_committed consumer needs to filter ``records`` (read from
        ``fetch_offset``): those overlapping [fetch_offset, last fetched offset + 1)."""
        last = None
        for last in walk_headers(records):
            pass
        if last is None:
            return []
        return self.collect_aborted_transactions(fetch_offset, last.last_offset + 1)

    # -- high watermark, last stable offset and log start offset ----------------------------------

    def update_high_watermark(self, offset: int) -> int:
        with self._lock:
            self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return self.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """min(first offset of the earliest unstable transaction, high watermark) (Kafka 2.8's Log)."""
        first_unstable = self.producer_state.first_unstable_offset
        hw = self.high_watermark
        return first_unstable if first_unstable is not None and first_unstable < hw else hw

    def maybe_increment_log_start_offset(self, new_start: int) -> bool:
        """DeleteRecords: move the log start offset forward (never past the high watermark)."""
        with self._lock:
            if new_start > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"{self.name}: log start offset {new_start} is above the high watermark {self.high_watermark}")
            if new_start <= self.log_start_offset:
                return False
            self.log_start_offset = new_start
            self.leader_epoch_cache.truncate_from_start(new_start)
            self.producer_state.on_log_start_offset_incremented(new_start)
            return True

    # -- retention --------------------------------------------------------------------------------

    @guarded_io
    def delete_old_segments(self) -> int:
        """One retention pass: log-start-offset breach, then retention.ms and retention.bytes."""
        with self._lock:
            deleted = self.delete_segments_below_log_start()
            if not self.config.delete_enabled:
                return deleted
            if self.config.retention_ms >= 0:
                now = self._clock()
                deleted += self._delete_segments_while(
                    lambda seg, nxt: now - seg.largest_timestamp > self.config.retention_ms)
            if self.config.retention_bytes >= 0:
                excess = [self.size - self.config.retention_bytes]

                def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False
                deleted += self._delete_segments_while(over_size)
            return deleted

    def delete_segments_below_log_start(self) -> int:
        """Remove the segments wholly below the log start offset (after DeleteRecords moved it)."""
        with self._lock:
            return self._delete_segments_while(lambda seg, nxt: nxt is not None and
                                               nxt.base_offset <= self.log_start_offset)

    def _delete_segments_while(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        doomed: list[LogSegment] = []
        segments = self.segments
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if upper > self.high_watermark or (nxt is None and segment.size == 0):
                break
            if not predicate(segment, nxt):
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(segments):  # always keep one segment: roll a new empty one
            self.roll()
        for segment in doomed:
            self._remove_segment(segment.base_offset)
        new_start = max(self.log_start_offset, self._bases[0])
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.leader_epoch_cache.truncate_from_start(new_start)
            self.producer_state.on_log_start_offset_incremented(new_start)
        return len(doomed)

    @guarded_io
    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment],
                         from_swap_files: bool = False) -> None:
        """Swap cleaned segments in for the segments they were made from, crash-safely (Kafka's
        replaceSegments; the file protocol is described in segment_swap.py). The new segments' files end
        in ``.cleaned`` (``.swap`` when a load completes an interrupted swap). Readers hold the lock, so
        they see either the old segments or the new ones."""
        with self._lock:
            new_sorted = sorted(new_segments, key=lambda seg: seg.base_offset)
            old_sorted = sorted((seg for seg in old_segments if self._segments.get(seg.base_offset) is seg),
                                key=lambda seg: seg.base_offset)
            if not from_swap_files:
                for seg in reversed(new_sorted):
                    seg.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
                fsync_dir(self.dir)
            segments = dict(self._segments)
            for seg in new_sorted:
                segments[seg.base_offset] = seg
            new_bases = {seg.base_offset for seg in new_sorted}
            for seg in old_sorted:
                if seg.base_offset not in new_bases:
                    del segments[seg.base_offset]
                seg.close_handlers()
                seg.change_file_suffixes("", DELETED_SUFFIX)  # removed later, as Kafka's asyncDeleteSegment
                self._scheduler.schedule("delete-file", seg.delete, self.config.file_delete_delay_ms)
            # New objects rather than changes in place: readers that do not take the lock (metrics)
            # never see a half-changed dict.
            self._segments, self._bases = segments, sorted(segments)
            for seg in new_sorted:
                seg.change_file_suffixes(SWAP_SUFFIX, "")
            fsync_dir(self.dir)

    def _remove_segment(self, base: int) -> None:
        """Kafka's asynchronous delete: renamed ``.deleted`` now, removed ``file.delete.delay.ms`` later."""
        segment = self._segments.pop(base)
        self._bases.remove(base)
        segment.close_handlers()
        segment.change_file_suffixes("", DELETED_SUFFIX)
        self._scheduler.schedule("delete-file", segment.delete, self.config.file_delete_delay_ms)

    # -- truncation (followers) -------------------------------------------------------------------

    @guarded_io
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything from ``target_offset`` on; True if anything was removed."""
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {target_offset}")
        with self._lock:
            if target_offset >= self.log_end_offset:
                # Nothing to remove, but the epoch cache may still end in an epoch this broker assigned
                # as leader without appending to it; left there, a follower fetching with it as its last
                # epoch is told it diverged again and again (Kafka's Log.truncateTo does the same).
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return False
            if target_offset < self._bases[0]:
                self.truncate_fully_and_start_at(target_offset)
                return True
            self._truncations += 1
            for base in [b for b in self._bases if b > target_offset]:
                self._remove_segment(base)
            self.active_segment.truncate_to(target_offset)
            self._after_truncation(target_offset)
            self.log_start_offset = min(self.log_start_offset, target_offset)
            self._rebuild_producer_state(reload_from_clean_shutdown=False)
            self._truncated()
            return True

    @guarded_io
    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log empty at ``new_offset``."""
        with self._lock:
            self._truncations += 1
            for base in list(self._bases):
                self._remove_segment(base)
            self._add_segment(self._new_segment(new_offset))
            self.leader_epoch_cache.clear_and_flush()
            self.log_start_offset = new_offset
            self.recovery_point = new_offset
            self.high_watermark = new_offset
            self._unflushed_messages = 0
            self.producer_state.truncate_fully_and_start_at(new_offset)
            self._truncated()

    def _truncated(self) -> None:
        """Data was removed from the end: the log cleaner drops what it knew past it (Kafka's LogManager
        calls maybeTruncateCheckpoint around truncateTo)."""
        listener = self.on_truncated
        if listener is not None:
            listener(self)

    def _after_truncation(self, target_offset: int) -> None:
        leo = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(leo)
        self.recovery_point = min(self.recovery_point, leo)
        self.high_watermark = min(self.high_watermark, leo)

    # -- producer state ---------------------------------------------------------------------------

    def _rebuild_producer_state(self, reload_from_clean_shutdown: bool) -> None:
        """Producer state up to the log end offset: the latest snapshot at or below it, then the
        batches after it replayed from the segments (Kafka 2.8's Log.rebuildProducerState)."""
        state, leo = self.producer_state, self.log_end_offset
        bases = self._bases
        worth_snapshotting = {leo, bases[-1]} | ({bases[-2]} if len(bases) > 1 else set())
        if state.latest_snapshot_offset is None and reload_from_clean_shutdown:
            # Kafka's upgrade shortcut: a clean shutdown always leaves a snapshot when there was
            # producer state, so none means nothing to rebuild; empty snapshots spare the next scan.
            for offset in sorted(worth_snapshotting):
                state.map_end_offset = offset
                state.take_snapshot()
            return
        was_empty = state.is_empty and state.map_end_offset >= leo
        state.truncate_and_reload(self.log_start_offset, leo, self._clock())
        if leo > state.map_end_offset and not was_empty:
            for i, base in enumerate(bases):
                upper = bases[i + 1] if i + 1 < len(bases) else leo
                if upper <= state.map_end_offset:
                    continue
                start = max(base, state.map_end_offset, self.log_start_offset)
                state.map_end_offset = start
                if base in worth_snapshotting:
                    state.take_snapshot()
                segment = self._segments[base]
                header = segment.translate_offset(start)
                if header is not None:
                    completed = state.replay_segment(segment.log_path, header.position, segment.size, start)
                    if completed:  # indexes kept across the replay already hold most of these
                        self._index_completed_txns(completed, rebuilding=True)
        state.map_end_offset = leo
        state.take_snapshot()
        state.on_high_watermark_updated(self.high_watermark)

    def remove_expired_producers(self, now: int | None = None) -> int:
        """Forget producer ids idle for longer than ``transactional.id.expiration.ms``."""
        with self._lock:
            return self.producer_state.remove_expired_producers(self._clock() if now is None else now)

    # -- lifecycle --------------------------------------------------------------------------------

    @guarded_io
    def close(self) -> None:
        with self._lock:
            # At the log end offset: a clean restart then reads the state without scanning the log.
            self.producer_state.take_snapshot()
            for segment in self._segments.values():
                segment.close()

    def delete(self) -> None:
        """Close every file and remove the directory."""
        with self._lock:
            for segment in self._segments.values():
                segment.close_handlers()
            self._segments.clear()
            self._bases.clear()
            shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, new_dir: str) -> None:
        with self._lock:
            os.rename(self.dir, new_dir)
            self.dir = new_dir
            for segment in self._segments.values():
                segment.dir = new_dir
                segment.log_path = os.path.join(new_dir, os.path.basename(segment.log_path))
                for index in (segment.offset_index, segment.time_index, segment.txn_index):
                    index.path = os.path.join(new_dir, os.path.basename(index.path))
            self.producer_state.dir = new_dir
            self.leader_epoch_cache.checkpoint.path = os.path.join(new_dir, LEADER_EPOCH_CHECKPOINT)
            self.leader_epoch_cache.checkpoint._file.path = self.leader_epoch_cache.checkpoint.path

    def __repr__(self) -> str:
        return (f"Log({self.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self._bases)})")


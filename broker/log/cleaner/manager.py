"""Which log to clean next, and what has been cleaned: Kafka 2.8's LogCleanerManager.

Per log dir, ``cleaner-offset-checkpoint`` (Kafka's offset checkpoint format) holds each compacted log's
first dirty offset: everything below it has been cleaned. A log is dirty from there to its first
uncleanable offset, the lowest of: its last stable offset, its active segment, and the first segment
younger than ``min.compaction.lag.ms``, rounded down to a segment boundary. Its dirty ratio is
cleanable bytes / (clean + cleanable bytes); the cleaner takes the log with the highest ratio above
``min.cleanable.dirty.ratio``, or any log with cleanable bytes whose oldest dirty record is older than
``max.compaction.lag.ms``.

One state per partition while a cleaner thread works on it: in progress, or aborted (its truncation or
deletion makes the running cleaning void: the swap is refused and nothing is checkpointed). Locks are
taken in one order: a log's, then the manager's. Kafka's
abortAndPauseCleaning waits for the cleaner thread to stop; here nothing waits, the swap refuses.
A partition may also be paused (Kafka's LogCleaningPaused, counted): a move of its replica to another log dir
pauses it from the future log's creation to the swap, so the cleaner does not rewrite what is being copied;
no cleaning or compacted retention starts on it until each pause is resumed.
Partitions whose cleaning failed unexpectedly are uncleanable until restart, as Kafka's.

Kafka 2.8 stops the dirty section at the first unstable offset, which may lie above the high watermark;
later versions (and we) stop at the last stable offset, so nothing a follower may still truncate is cleaned.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..checkpoints import CheckpointError, OffsetCheckpointFile
from ..log import Log
from ..log_dir_failure import LogDirFailureChannel
from ..segment import now_ms

log = logging.getLogger("kafka.log.LogCleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LONG_MAX = (1 << 63) - 1
IN_PROGRESS, ABORTED = "in-progress", "aborted"

TopicPartition = tuple[str, int]


@dataclass
class PreCleanStats:
    max_compaction_delay_ms: int = 0
    delayed_partitions: int = 0
    cleanable_partitions: int = 0

    def update_max_compaction_delay(self, delay_ms: int) -> None:
        self.max_compaction_delay_ms = max(self.max_compaction_delay_ms, delay_ms)
        if delay_ms > 0:
            self.delayed_partitions += 1


@dataclass
class LogToClean:
    topic_partition: TopicPartition
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int  # rounded down to the base of the segment holding it
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False
    dir: str = field(default="")

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def parent_dir(log_: Log) -> str:
    return os.path.dirname(os.path.abspath(log_.dir))


def cleanable_offsets(log_: Log, last_clean_offset: int | None, now: int) -> tuple[int, int, bool]:
    """Kafka's cleanableOffsets: (first dirty offset, first uncleanable offset, checkpoint must be reset)."""
    start = log_.log_start_offset
    checkpointed = start if last_clean_offset is None else last_clean_offset
    if checkpointed < start:
        first_dirty, reset = start, True
        if not (log_.config.compact_enabled and log_.config.delete_enabled):
            log.warning("Resetting first dirty offset of %s to log start offset %d since the checkpointed offset "
                        "%d is invalid.", log_.name, start, checkpointed)
    elif checkpointed > log_.log_end_offset:
        log.warning("The last checkpoint dirty offset for partition %s is %d, which is larger than the log end "
                    "offset %d. Resetting to the log start offset %d.", log_.name, checkpointed,
                    log_.log_end_offset, start)
        first_dirty, reset = start, True
    else:
        first_dirty, reset = checkpointed, False
    active_base = log_.active_segment.base_offset
    uncleanable = [log_.last_stable_offset, active_base]
    min_lag = max(log_.config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for segment in log_.segments_in(first_dirty, active_base):
            if segment.largest_timestamp > now - min_lag:
                uncleanable.append(segment.base_offset)
                break
    return first_dirty, max(first_dirty, min(uncleanable)), reset


def max_compaction_delay(log_: Log, first_dirty: int, now: int) -> int:
    """Kafka's maxCompactionDelay: how long past ``max.compaction.lag.ms`` the oldest dirty record is."""
    timestamps = [t for t in (s.rolling_based_timestamp() for s in
                              log_.segments_in(first_dirty, log_.active_segment.base_offset))
                  if t is not None and t > 0]
    earliest = min(timestamps) if timestamps else LONG_MAX
    clean_until = now - max(log_.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def calculate_cleanable_bytes(log_: Log, first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """Kafka's calculateCleanableBytes: (base of the first uncleanable segment, cleanable bytes)."""
    active = log_.active_segment
    holding = log_.segments_in(uncleanable, active.base_offset)
    first_uncleanable = (holding[0] if holding else active).base_offset
    cleanable = sum(s.size for s in log_.segments_in(min(first_dirty, first_uncleanable), first_uncleanable))
    return first_uncleanable, cleanable


class LogCleanerManager:
    def __init__(self, log_dirs: Iterable[str], logs: Callable[[], dict[TopicPartition, Log]],
                 failure_channel: LogDirFailureChannel | None = None) -> None:
        self.logs = logs
        self.failure_channel = failure_channel  # a checkpoint that cannot be written takes its dir offline
        self._lock = threading.RLock()
        self._checkpoint_files = {os.path.abspath(d): OffsetCheckpointFile(os.path.join(d, CLEANER_OFFSET_CHECKPOINT))
                                  for d in log_dirs}
        self._in_progress: dict[TopicPartition, str] = {}
        self._paused: dict[TopicPartition, int] = {}  # partition -> pauses not yet resumed
        self._uncleanable: dict[str, set[TopicPartition]] = {}
        self.dirtiest_ratio = 0.0  # max-dirty-percent
        self.time_of_last_run_ms = now_ms()  # time-since-last-run-ms counts from start-up, as Kafka's
        self.on_abort: Callable[[TopicPartition], None] | None = None  # tells the cleaner threads

    # -- checkpoints ------------------------------------------------------------------------------

    def _read(self, directory: str) -> dict[TopicPartition, int]:
        try:
            return self._checkpoint_files[directory].read()
        except (CheckpointError, OSError) as exc:
            log.error("Failed to access checkpoint file %s in dir %s: %s", CLEANER_OFFSET_CHECKPOINT, directory, exc)
            return {}

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        with self._lock:
            result: dict[TopicPartition, int] = {}
            for directory in self._checkpoint_files:
                result.update(self._read(directory))
            return result

    def update_checkpoints(self, directory: str, update: tuple[TopicPartition, int] | None = None,
                           remove: TopicPartition | None = None) -> None:
        """Kafka's updateCheckpoints: entries of logs that no longer exist are dropped on the way."""
        with self._lock:
            file = self._checkpoint_files.get(os.path.abspath(directory))
            if file is None:
                return
            live = self.logs()
            offsets = {tp: o for tp, o in self._read(os.path.abspath(directory)).items() if tp in live}
            if remove is not None:
                offsets.pop(remove, None)
            if update is not None:
                offsets[update[0]] = update[1]
            try:
                file.write(offsets)
            except OSError as exc:
                if self.failure_channel is None:
                    log.error("Failed to write %s in dir %s: %s", CLEANER_OFFSET_CHECKPOINT, directory, exc)
                else:
                    self.failure_channel.mark_offline(
                        directory, f"Disk error while writing {CLEANER_OFFSET_CHECKPOINT} in dir {directory}", exc)

    def forget_log_dir(self, directory: str) -> None:
        """Kafka's handleLogDirFailure: an offline directory's checkpoint is no longer read nor written."""
        with self._lock:
            self._checkpoint_files.pop(os.path.abspath(directory), None)
            self._uncleanable.pop(os.path.abspath(directory), None)

    def maybe_truncate_checkpoint(self, log_: Log) -> None:
        """After a truncation: nothing at or past the active segment may count as cleaned (Kafka's
        maybeTruncateCheckpoint with the active segment's base offset)."""
        tp = (log_.topic, log_.partition)
        with self._lock:
            if not log_.config.compact_enabled:
                return
            directory = parent_dir(log_)
            offset = log_.active_segment.base_offset
            if directory in self._checkpoint_files and self._read(directory).get(tp, 0) > offset:
                self.update_checkpoints(directory, update=(tp, offset))

    # -- choosing a log ---------------------------------------------------------------------------

    def grab_filthiest_compacted_log(self, now: int, pre_clean: PreCleanStats | None = None) -> LogToClean | None:
        """Kafka's grabFilthiestCompactedLog: the dirtiest cleanable log, now marked in progress.

        Lock order: a log's lock, then this manager's (a truncation calls in holding its log's lock), so
        the logs are measured without holding the manager's lock."""
        pre_clean = pre_clean if pre_clean is not None else PreCleanStats()
        self.time_of_last_run_ms = now
        last_clean = self.all_cleaner_checkpoints()
        with self._lock:
            busy = set(self._in_progress) | set(self._paused)
        dirty: list[LogToClean] = []
        for tp, log_ in self.logs().items():
            if not log_.config.compact_enabled or tp in busy or self.is_uncleanable(log_, tp):
                continue
            candidate = self._log_to_clean(tp, log_, last_clean.get(tp), now, pre_clean)
            if candidate.total_bytes > 0:
                dirty.append(candidate)
        self.dirtiest_ratio = max((c.cleanable_ratio for c in dirty), default=0.0)
        cleanable = [c for c in dirty if (c.need_compaction_now and c.cleanable_bytes > 0)
                     or c.cleanable_ratio > c.log.config.min_cleanable_ratio]
        pre_clean.cleanable_partitions = len(cleanable)
        with self._lock:
            cleanable = [c for c in cleanable
                         if c.topic_partition not in self._in_progress and c.topic_partition not in self._paused]
            if not cleanable:
                return None
            filthiest = max(cleanable, key=lambda c: c.cleanable_ratio)
            self._in_progress[filthiest.topic_partition] = IN_PROGRESS
            return filthiest

    def _log_to_clean(self, tp: TopicPartition, log_: Log, last_clean: int | None, now: int,
                      pre_clean: PreCleanStats) -> LogToClean:
        with log_.lock:
            first_dirty, uncleanable, reset = cleanable_offsets(log_, last_clean, now)
            directory = parent_dir(log_)
            if reset:
                self.update_checkpoints(directory, update=(tp, first_dirty))
            delay = max_compaction_delay(log_, first_dirty, now)
            pre_clean.update_max_compaction_delay(delay)
            first_uncleanable, cleanable = calculate_cleanable_bytes(log_, first_dirty, uncleanable)
            clean = sum(s.size for s in log_.segments_in(-1, first_dirty))
            return LogToClean(tp, log_, first_dirty, first_uncleanable, clean, cleanable, delay > 0, directory)

    def deletable_logs(self) -> list[tuple[TopicPartition, Log]]:
        """Compacted logs for the cleaner thread's retention pass (Kafka runs retention of compacted logs
        on the cleaner threads, so it never races a cleaning); marked in progress until done_deleting."""
        with self._lock:
            chosen = [(tp, log_) for tp, log_ in self.logs().items()
                      if tp not in self._in_progress and tp not in self._paused and log_.config.compact_enabled
                      and not self.is_uncleanable(log_, tp)]
            for tp, _ in chosen:
                self._in_progress[tp] = IN_PROGRESS
            return chosen

    def done_deleting(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self._in_progress.pop(tp, None)

    def is_managed(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._in_progress

    # -- the end of a cleaning --------------------------------------------------------------------

    def is_aborted(self, tp: TopicPartition) -> bool:
        with self._lock:
            return self._in_progress.get(tp) == ABORTED

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """The log was truncated or is being deleted: a cleaning under way is void."""
        with self._lock:
            if self._in_progress.get(tp) != IN_PROGRESS:
                return
            self._in_progress[tp] = ABORTED
        if self.on_abort is not None:
            self.on_abort(tp)

    def abort_and_pause(self, tp: TopicPartition) -> None:
        """Kafka's abortAndPauseCleaning, without the wait: a cleaning under way is void (its swap refused), and
        none starts until ``resume_cleaning`` was called as often as this."""
        with self._lock:
            self._paused[tp] = self._paused.get(tp, 0) + 1
        self.abort_cleaning(tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        """Kafka's resumeCleaning: one pause less; the partition is cleanable again after the last."""
        with self._lock:
            left = self._paused.get(tp, 0) - 1
            if left > 0:
                self._paused[tp] = left
            else:
                self._paused.pop(tp, None)

    def is_paused(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._paused

    def done_cleaning(self, tp: TopicPartition, directory: str, end_offset: int) -> None:
        """Kafka's doneCleaning: checkpoint the new first dirty offset unless the cleaning was aborted."""
        with self._lock:
            state = self._in_progress.pop(tp, None)
            if state == IN_PROGRESS:
                self.update_checkpoints(directory, update=(tp, end_offset))

    # -- uncleanable partitions -------------------------------------------------------------------

    def mark_uncleanable(self, directory: str, tp: TopicPartition) -> None:
        with self._lock:
            self._uncleanable.setdefault(os.path.abspath(directory), set()).add(tp)

    def is_uncleanable(self, log_: Log, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._uncleanable.get(parent_dir(log_), ())

    def uncleanable_partitions(self, directory: str) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable.get(os.path.abspath(directory), ()))

    def uncleanable_bytes(self, directory: str, now: int) -> int:
        """Kafka's uncleanable-bytes gauge: the cleanable bytes the uncleanable partitions hold."""
        total = 0
        checkpoints = self.all_cleaner_checkpoints()
        logs = self.logs()
        for tp in self.uncleanable_partitions(directory):
            log_ = logs.get(tp)
            if log_ is None:
                continue
            with log_.lock:
                first_dirty, uncleanable, _ = cleanable_offsets(log_, checkpoints.get(tp), now)
                total += calculate_cleanable_bytes(log_, first_dirty, uncleanable)[1]
        return total

    @property
    def log_dirs(self) -> list[str]:
        return list(self._checkpoint_files)

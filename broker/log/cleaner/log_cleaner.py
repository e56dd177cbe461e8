"""The log cleaner: Kafka 2.8's LogCleaner and its CleanerThreads, on the broker's side.

``log.cleaner.threads`` cleaner threads each loop: take the dirtiest compacted log (manager.py), copy what
the cleaning needs of it into a CleanTask, have their worker (worker_client.py) clean it, and swap each
cleaned group in as the worker finishes it; then run retention on the compacted logs (Kafka runs it on
the cleaner threads); sleep ``log.cleaner.backoff.ms`` when there was nothing to clean. The swap happens
here, under the log's lock, after checking that the segments the worker read are still the log's: a
truncation, a deletion or a retention pass since the task was made makes the broker refuse it.

Lines go to the ``kafka.log.LogCleaner`` logger, which cleaner_log.py sends to ``log-cleaner.log`` as
Kafka's log4j configuration does.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from typing import Callable

from ....protocol.errors import KafkaStorageError  # type: ignore[attr-defined]
from ..log import Log
from ..log_dir_failure import LogDirFailureChannel
from ..segment import CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment, now_ms, segment_path
from .config import CleanerConfig, validate_reconfiguration
from .manager import LogCleanerManager, LogToClean, PreCleanStats, TopicPartition
from .task import CleanedGroup, CleanerStats, CleanTask, SegmentInfo
from .throttler import Throttler
from .worker_client import WorkerClient

log = logging.getLogger("kafka.log.LogCleaner")

_task_ids = itertools.count(1)


def make_task(cleanable: LogToClean) -> tuple[CleanTask, dict[int, LogSegment]]:
    """What a worker needs of the log, copied under its lock, and the segments it will read (by base)."""
    log_ = cleanable.log
    with log_.lock:
        first_dirty, end = cleanable.first_dirty_offset, cleanable.first_uncleanable_offset
        segments = log_.segments_in(0, end)
        clean_part = log_.segments_in(0, first_dirty)
        config = log_.config
        infos = []
        for seg in segments:
            holds_first_dirty = seg.base_offset <= first_dirty < seg.next_offset
            infos.append(SegmentInfo(
                seg.base_offset, seg.size, seg.next_offset, seg.offset_index.size_in_bytes,
                seg.time_index.size_in_bytes, seg.last_modified_ms,
                seg.offset_index.lookup(first_dirty).position if holds_first_dirty else 0))
        task = CleanTask(
            task_id=next(_task_ids), topic=log_.topic, partition=log_.partition, directory=log_.dir,
            first_dirty_offset=first_dirty, first_uncleanable_offset=end, segments=tuple(infos),
            txn_entries=tuple((s.base_offset, tuple(s.txn_index.entries)) for s in log_.segments),
            last_records={pid: (e.last_data_offset if e.last_data_offset >= 0 else None, e.epoch)
                          for pid, e in log_.producer_state.producers.items()},
            delete_horizon_ms=(clean_part[-1].last_modified_ms - config.delete_retention_ms) if clean_part else 0,
            segment_bytes=config.segment_bytes, max_index_size=config.max_index_size,
            index_interval_bytes=config.index_interval_bytes)
        return task, {seg.base_offset: seg for seg in segments}


def cleaned_files_problem(directory: str, group: CleanedGroup) -> str | None:
    """What is wrong with the files of a cleaned group on disk, if anything: the broker swaps in only the
    .log the worker finished (its size) and its two indexes; opened otherwise, the segment would be an empty
    one of the broker's making (LogSegment creates a missing .log) and the log's records would go with the swap."""
    try:
        size = os.stat(segment_path(directory, group.base_offset, LOG_SUFFIX + CLEANED_SUFFIX)).st_size
    except FileNotFoundError:
        return "its .log file is missing"
    if size != group.size:
        return f"its .log file holds {size} bytes, not the {group.size} written"
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        if not os.path.exists(segment_path(directory, group.base_offset, suffix + CLEANED_SUFFIX)):
            return f"its {suffix} file is missing"
    return None


def swap_in(manager: LogCleanerManager, cleanable: LogToClean, segments: dict[int, LogSegment],
            group: CleanedGroup, stopping: Callable[[], bool] = lambda: False) -> bool:
    """Swap a cleaned group in, if the segments it was made from are still the log's (Kafka's cleanSegments
    ends with log.replaceSegments); False when the log changed, the cleaning was aborted, the cleaner is
    shutting down or the cleaned files are not whole."""
    log_: Log = cleanable.log
    tp = cleanable.topic_partition
    if manager.is_aborted(tp) or stopping():
        return False
    problem = cleaned_files_problem(log_.dir, group)
    if problem is not None:
        log.warning("Not swapping in the cleaned segment %d of %s: %s", group.base_offset, log_.name, problem)
        return False
    config = log_.config
    cleaned = LogSegment(log_.dir, group.base_offset, index_interval_bytes=config.index_interval_bytes,
                         max_index_size=config.max_index_size, file_suffix=CLEANED_SUFFIX)
    with log_.lock:
        current = {seg.base_offset: seg for seg in log_.segments}
        old = [segments.get(base) for base, _ in group.replaced]
        intact = all(seg is not None and current.get(seg.base_offset) is seg and seg.size == size
                     and seg is not log_.active_segment for seg, (_, size) in zip(old, group.replaced))
        if not intact or manager.is_aborted(tp) or stopping():
            cleaned.close_handlers()
            log.info("Not swapping in the cleaned segment %d of %s: the log changed meanwhile",
                     group.base_offset, log_.name)
            return False
        log.info("Swapping in cleaned segment %s for segment(s) %s in log %s", cleaned,
                 [seg.base_offset for seg in old], log_)
        log_.replace_segments([cleaned], old)  # type: ignore[arg-type]
    return True


class CleanerThread(threading.Thread):
    def __init__(self, cleaner: "LogCleaner", thread_id: int) -> None:
        super().__init__(name=f"kafka-log-cleaner-thread-{thread_id}", daemon=True)
        self.cleaner = cleaner
        self.thread_id = thread_id
        self.worker = WorkerClient(self.name, cleaner.config.isolation)
        self._stop_event = threading.Event()
        self.last_stats = CleanerStats()
        self.last_pre_clean_stats = PreCleanStats()
        self.failed = False
        self._task: CleanTask | None = None
        self.cleanings = 0  # completed cleanings (tests and metrics)

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                if not self.try_clean_filthiest_log():
                    self._stop_event.wait(self.cleaner.config.backoff_ms / 1000.0)
        except Exception:
            self.failed = True
            log.exception("%s failed", self.name)
        finally:
            self.worker.stop()

    def shutdown(self) -> None:
        self._stop_event.set()
        task = self._task
        if task is not None:
            self.worker.abort(task.task_id)
        self.join()

    def abort(self, tp: TopicPartition) -> None:
        task = self._task
        if task is not None and (task.topic, task.partition) == tp:
            self.worker.abort(task.task_id)

    # -- one round --------------------------------------------------------------------------------

    def try_clean_filthiest_log(self) -> bool:
        manager = self.cleaner.manager
        pre_clean = PreCleanStats()
        cleanable = manager.grab_filthiest_compacted_log(now_ms(), pre_clean)
        cleaned = False
        if cleanable is not None:
            self.last_pre_clean_stats = pre_clean
            try:
                self.clean_log(cleanable)
                cleaned = True
            except (OSError, KafkaStorageError) as exc:  # Kafka's cleaner: the log's directory goes offline
                if self.cleaner.failure_channel is None:
                    raise
                self.cleaner.failure_channel.mark_offline(
                    cleanable.dir, f"Failed to clean up log for {cleanable.log.name} in dir {cleanable.dir}", exc)
            except Exception as exc:
                log.warning("Unexpected exception thrown when cleaning log %s. Marking its partition (%s-%d) as "
                            "uncleanable: %s", cleanable.log.name, *cleanable.topic_partition, exc)
                manager.mark_uncleanable(cleanable.dir, cleanable.topic_partition)
        deletable = manager.deletable_logs()
        try:
            for tp, log_ in deletable:
                try:
                    log_.delete_old_segments()
                except KafkaStorageError:
                    pass  # its directory is offline (logged where it failed)
                except Exception as exc:
                    log.warning("Retention of %s failed; marking it uncleanable: %s", log_.name, exc)
                    manager.mark_uncleanable(os.path.dirname(log_.dir), tp)
        finally:
            manager.done_deleting(tp for tp, _ in deletable)
        return cleaned

    def clean_log(self, cleanable: LogToClean) -> None:
        manager = self.cleaner.manager
        start = end = cleanable.first_dirty_offset
        try:
            task, segments = make_task(cleanable)
            self._task = task  # from here shutdown() and abort() send the worker an abort for it
            stopping = self._stop_event.is_set
            if manager.is_aborted(cleanable.topic_partition) or stopping():
                return
            log.info("Beginning cleaning of log %s.", cleanable.log.name)
            # Kafka's checkDone also stops a cleaning when its thread shuts down: no swap once it began
            result = self.worker.run(task, self.cleaner.config.worker_settings(), self.cleaner.throttle,
                                     lambda group: swap_in(manager, cleanable, segments, group, stopping))
            if result is not None:
                end, stats = result
                self.cleanings += 1
                self.record_stats(cleanable.log.name, start, end, stats)
        except Exception as exc:
            if not manager.is_aborted(cleanable.topic_partition):
                raise
            # e.g. the log's directory went with its deletion before the worker saw the abort
            log.info("Cleaning of log %s aborted: %s", cleanable.log.name, str(exc).splitlines()[0])
        finally:
            self._task = None
            manager.done_cleaning(cleanable.topic_partition, cleanable.dir, end)

    def record_stats(self, name: str, start: int, end: int, stats: CleanerStats) -> None:
        """Kafka's recordStats: the cleaning's figures, one multi-line message."""
        self.last_stats = stats
        mb = 1024 * 1024
        elapsed = max(stats.elapsed_secs, 1e-3)
        index_secs = max(stats.elapsed_index_secs, 1e-3)
        copy_secs = max(elapsed - stats.elapsed_index_secs, 1e-3)
        read_mb, written_mb = stats.bytes_read / mb, stats.bytes_written / mb
        log.info(
            "\n\tLog cleaner thread %d cleaned log %s (dirty section = [%d, %d])\n"
            "\t%.1f MB of log processed in %.1f seconds (%.1f MB/sec).\n"
            "\tIndexed %.1f MB in %.1f seconds (%.1f Mb/sec, %.1f%% of total time)\n"
            "\tBuffer utilization: %.1f%%\n"
            "\tCleaned %.1f MB in %.1f seconds (%.1f Mb/sec, %.1f%% of total time)\n"
            "\tStart size: %.1f MB (%d messages)\n"
            "\tEnd size: %.1f MB (%d messages)\n"
            "\t%.1f%% size reduction (%.1f%% fewer messages)\n",
            self.thread_id, name, start, end, read_mb, elapsed, read_mb / elapsed,
            stats.map_bytes_read / mb, stats.elapsed_index_secs, stats.map_bytes_read / mb / index_secs,
            100 * stats.elapsed_index_secs / elapsed, 100 * stats.buffer_utilization,
            read_mb, elapsed - stats.elapsed_index_secs, read_mb / copy_secs,
            100 * (elapsed - stats.elapsed_index_secs) / elapsed,
            read_mb, stats.messages_read, written_mb, stats.messages_written,
            100.0 * (1.0 - stats.bytes_written / max(stats.bytes_read, 1)),
            100.0 * (1.0 - stats.messages_written / max(stats.messages_read, 1)))
        pre = self.last_pre_clean_stats
        if pre.delayed_partitions > 0:
            log.info("\tCleanable partitions: %d, Delayed partitions: %d, max delay: %d", pre.cleanable_partitions,
                     pre.delayed_partitions, pre.max_compaction_delay_ms)
        if stats.invalid_messages_read > 0:
            log.warning("\tFound %d invalid messages during compaction.", stats.invalid_messages_read)


class LogCleaner:
    def __init__(self, config: CleanerConfig, log_dirs: list[str],
                 logs: Callable[[], dict[TopicPartition, Log]],
                 failure_channel: LogDirFailureChannel | None = None) -> None:
        problem = config.offset_map_problem()
        if problem is not None:
            raise ValueError(problem)  # Kafka's broker does not start either
        self.config = config
        self.manager = LogCleanerManager(log_dirs, logs, failure_channel)
        self.failure_channel = failure_channel
        self.manager.on_abort = self._abort_threads
        self._stopping = threading.Event()  # wakes a throttled thread at shutdown
        self._throttler = Throttler(config.max_io_bytes_per_second, sleep=self._stopping.wait)
        self.threads: list[CleanerThread] = []
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------------

    def startup(self) -> None:
        log.info("Starting the log cleaner")
        self._stopping.clear()
        with self._lock:
            for i in range(self.config.num_threads):
                thread = CleanerThread(self, i)
                self.threads.append(thread)
                thread.start()

    def shutdown(self) -> None:
        log.info("Shutting down the log cleaner.")
        self._stopping.set()
        with self._lock:
            threads, self.threads = self.threads, []
        for thread in threads:
            thread._stop_event.set()
        for thread in threads:
            thread.shutdown()

    def validate_reconfiguration(self, new: CleanerConfig) -> str | None:
        return validate_reconfiguration(self.config.num_threads, new.num_threads) or new.offset_map_problem()

    def reconfigure(self, new: CleanerConfig) -> None:
        """Kafka's reconfigure: new config, new threads (which also replaces any that failed)."""
        if new == self.config:
            return
        error = self.validate_reconfiguration(new)
        if error is not None:
            log.error("Not reconfiguring the log cleaner to %s: %s", new, error)
            return
        log.info("Reconfiguring the log cleaner: %s", new)
        self.config = new
        self._throttler.rate_per_sec = new.max_io_bytes_per_second
        self.shutdown()
        self.startup()

    # -- what the rest of the broker calls --------------------------------------------------------

    def throttle(self, nbytes: int) -> None:
        self._throttler.maybe_throttle(nbytes)

    def abort_cleaning(self, tp: TopicPartition) -> None:
        self.manager.abort_cleaning(tp)

    def abort_and_pause(self, tp: TopicPartition) -> None:
        self.manager.abort_and_pause(tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        self.manager.resume_cleaning(tp)

    def _abort_threads(self, tp: TopicPartition) -> None:
        for thread in list(self.threads):
            thread.abort(tp)

    def on_log_truncated(self, log_: Log) -> None:
        tp = (log_.topic, log_.partition)
        self.manager.abort_cleaning(tp)
        self.manager.maybe_truncate_checkpoint(log_)

    def on_log_deleted(self, tp: TopicPartition, directory: str) -> None:
        self.manager.abort_cleaning(tp)
        self.manager.update_checkpoints(directory, remove=tp)

    def on_log_moved(self, tp: TopicPartition, source_dir: str, dest_dir: str) -> None:
        """Kafka's alterCheckpointDir: the partition's first dirty offset moves to its new dir's checkpoint; a
        cleaning of the old log under way is void."""
        self.manager.abort_cleaning(tp)
        offset = self.manager.all_cleaner_checkpoints().get(tp)
        self.manager.update_checkpoints(source_dir, remove=tp)
        if offset is not None:
            self.manager.update_checkpoints(dest_dir, update=(tp, offset))

    def manages_retention_of(self, log_: Log) -> bool:
        """Compacted logs get their retention on the cleaner threads, not the broker's retention job."""
        return log_.config.compact_enabled

    def await_cleaned(self, tp: TopicPartition, offset: int, timeout_s: float = 60.0) -> bool:
        """Kafka's awaitCleaned (tests): wait until the checkpoint of ``tp`` reaches ``offset``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.manager.all_cleaner_checkpoints().get(tp, -1) >= offset:
                return True
            time.sleep(0.05)
        return False

    # -- metrics (Kafka's LogCleaner and LogCleanerManager gauges) --------------------------------

    def _max_over_threads(self, value: Callable[[CleanerThread], float]) -> int:
        return int(max((value(t) for t in self.threads), default=0.0))

    @property
    def max_buffer_utilization_percent(self) -> int:
        return self._max_over_threads(lambda t: t.last_stats.buffer_utilization * 100)

    @property
    def cleaner_recopy_percent(self) -> int:
        stats = [t.last_stats for t in self.threads]
        written = sum(s.bytes_written for s in stats)
        read = sum(s.bytes_read for s in stats)
        return int(100 * written / max(read, 1))

    @property
    def max_clean_time_secs(self) -> int:
        return self._max_over_threads(lambda t: t.last_stats.elapsed_secs)

    @property
    def max_compaction_delay_secs(self) -> int:
        return self._max_over_threads(lambda t: t.last_pre_clean_stats.max_compaction_delay_ms) // 1000

    @property
    def dead_thread_count(self) -> int:
        return sum(1 for t in self.threads if t.failed or not t.is_alive())

    @property
    def max_dirty_percent(self) -> int:
        return int(100 * self.manager.dirtiest_ratio)

    @property
    def time_since_last_run_ms(self) -> int:
        return now_ms() - self.manager.time_of_last_run_ms

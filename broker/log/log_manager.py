"""LogManager: the broker's log directories and every partition log in them.

Per log dir: ``meta.properties`` (version=0, broker.id, cluster.id — refused on mismatch),
``.lock`` (an exclusive flock so two brokers never share a dir), the three offset checkpoints
(``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``) and ``.kafka_cleanshutdown``, written by ``shutdown()`` and removed
once the logs are loaded, so its absence on start means an unclean stop: every log is then
recovered from its checkpointed recovery point. Deleted partitions are renamed
``<topic>-<partition>.<uuid>-delete`` and removed ``file.delete.delay.ms`` later by the scheduler
(Kafka's asynchronous delete); leftovers are removed on start.

A replica being moved to another log dir (AlterReplicaLogDirs, KIP-113) has a second, "future" log there,
``<topic>-<partition>.<uuid>-future``, filled by broker/replica_log_dir_mover.py; it is loaded as a future log
on start (the move resumes), and ``replace_current_with_future`` swaps it in (Kafka's order: the future is
renamed to the partition's name, then the current one to ``-delete``). A move asked for before the replica
exists here is remembered as its preferred dir, where the log is then created (Kafka's preferredLogDirs).

Logs are loaded (and recovered) at start-up, and flushed and closed at shutdown, by
``num.recovery.threads.per.data.dir`` threads per log dir, as Kafka: recovery is mostly CPU here (one
GIL), flushing is fsyncs, which threads overlap.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping, TypeVar

from .checkpoints import (
    LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, CheckpointError,
    CheckpointSequencer, OffsetCheckpointFile, write_atomically,
)
from .cleaner import CleanerConfig, LogCleaner
from ...protocol.errors import KafkaStorageError, LogDirNotFoundError  # type: ignore[attr-defined]
from .log import Log, log_dir_name, parse_topic_partition
from .log_types import DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, delete_dir_name, future_dir_name
from .log_dir_failure import LogDirFailureChannel
from .log_config import LogConfig, warn_not_implemented
from .producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from .scheduler import INLINE, InlineScheduler, Scheduler
from .segment import now_ms

META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
__all__ = ["DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX", "LogManager", "delete_dir_name"]
# How often the broker should call remove_expired_producers() (Kafka's internal
# producer.id.expiration.check.interval.ms).
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000

TopicPartition = tuple[str, int]
T = TypeVar("T")

log = logging.getLogger(__name__)


def _close_handlers(log_: Log) -> None:
    """Close a log's files without writing anything (Kafka's closeHandlers): it is deleted or its dir failed."""
    for segment in log_.segments:
        segment.close_handlers()


class InconsistentBrokerMetadataError(Exception):
    """meta.properties disagrees with the configuration or with another log dir."""


class LogDirLockedError(Exception):
    """Another process holds the log dir's ``.lock``."""


def read_properties(path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            key, sep, value = line.partition("=")
            if sep:
                props[key.strip()] = value.strip()
    return props


def write_meta_properties(log_dir: str, broker_id: int, cluster_id: str | None) -> None:
    lines = ["#", "#Written by odradek", "version=0", f"broker.id={broker_id}"]
    if cluster_id is not None:
        lines.append(f"cluster.id={cluster_id}")
    write_atomically(os.path.join(log_dir, META_PROPERTIES), ("\n".join(lines) + "\n").encode())


class LogManager:
    def __init__(self, log_dirs: list[str], topic_defaults: Mapping[str, Any] | None = None, *,
                 broker_id: int | None = None, cluster_id: str | None = None,
                 topic_configs: Mapping[str, Mapping[str, Any]] | None = None,
                 clock: Callable[[], int] = now_ms,
                 max_producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                 scheduler: Scheduler | InlineScheduler = INLINE, recovery_threads: int = 1,
                 failure_channel: LogDirFailureChannel | None = None) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise ValueError(f"duplicate log dirs in {log_dirs}")
        self.topic_defaults = dict(topic_defaults or {})
        self.topic_configs: dict[str, dict[str, Any]] = {t: dict(c) for t, c in (topic_configs or {}).items()}
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._clock = clock
        # background.threads: the logs' flushes after a roll and delayed deletes (and, in the broker, the
        # periodic jobs); shut down with the logs
        self.scheduler = scheduler
        # transactional.id.expiration.ms: producer ids idle this long are forgotten by every log
        self.max_producer_id_expiration_ms = max_producer_id_expiration_ms
        self.recovery_threads = max(1, recovery_threads)  # per log dir (num.recovery.threads.per.data.dir)
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        self.cleaner: LogCleaner | None = None  # started by start_cleaner (log.cleaner.enable)
        self._dir_of: dict[TopicPartition, str] = {}
        # replicas being moved between log dirs: the future log of each, in its target dir (KIP-113)
        self._future_logs: dict[TopicPartition, Log] = {}
        # AlterReplicaLogDirs for a replica not here yet, or to start a move: where its log goes next
        self._preferred_dirs: dict[TopicPartition, str] = {}
        self._lock_fds: list[int] = []
        self._sequencer = CheckpointSequencer()
        self.had_clean_shutdown: dict[str, bool] = {}
        # I/O errors take a directory offline (KIP-112): its logs are dropped, the others go on
        self.failure_channel = failure_channel if failure_channel is not None else LogDirFailureChannel()
        for d in self.log_dirs:
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as e:  # Kafka's createAndValidateLogDirs: that dir is offline, the others go on
                self.failure_channel.mark_offline(d, f"Failed to create or validate data directory {d}", e)
                continue
            self._lock_dir(d)
        self._check_meta_properties()
        self._load_all_logs()
        if not self.live_log_dirs:
            self._release_locks()
            raise KafkaStorageError(f"none of the log dirs {self.log_dirs} could be loaded")

    # -- start ------------------------------------------------------------------------------------

    def _lock_dir(self, d: str) -> None:
        try:
            fd = os.open(os.path.join(d, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            self.failure_channel.mark_offline(d, f"Failed to create the lock file of {d}", e)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self._release_locks()
            raise LogDirLockedError(f"log dir {d} is in use by another process") from None
        self._lock_fds.append(fd)

    def _release_locks(self) -> None:
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds.clear()

    def _check_meta_properties(self) -> None:
        seen_cluster: tuple[str, str] | None = None
        for d in self.live_log_dirs:
            path = os.path.join(d, META_PROPERTIES)
            if not os.path.exists(path):
                continue
            try:
                props = read_properties(path)
            except OSError as e:
                self.failure_channel.mark_offline(d, f"Error while reading {path}", e)
                continue
            if props.get("version") != "0":
                self._fail(f"{path}: unsupported version {props.get('version')!r} (expected 0)")
            stored_id = props.get("broker.id")
            if self.broker_id is not None and stored_id is not None and int(stored_id) != self.broker_id:
                self._fail(f"stored broker.id {stored_id} in {path} doesn't match the configured "
                           f"broker.id {self.broker_id}")
            stored_cluster = props.get("cluster.id")
            if stored_cluster is not None:
                if self.cluster_id is not None and stored_cluster != self.cluster_id:
                    self._fail(f"the cluster id {self.cluster_id} doesn't match the stored cluster.id "
                               f"{stored_cluster} in {path}")
                if seen_cluster is not None and seen_cluster[0] != stored_cluster:
                    self._fail(f"log dirs disagree on cluster.id: {seen_cluster[0]} in {seen_cluster[1]}, "
                               f"{stored_cluster} in {path}")
                seen_cluster = (stored_cluster, path)
            if self.broker_id is None and stored_id is not None:
                self.broker_id = int(stored_id)
        if self.cluster_id is None and seen_cluster is not None:
            self.cluster_id = seen_cluster[0]
        if self.broker_id is not None:
            for d in self.live_log_dirs:
                props = {}
                path = os.path.join(d, META_PROPERTIES)
                if os.path.exists(path):
                    props = read_properties(path)  # read just above
                if props.get("broker.id") != str(self.broker_id) or (
                        self.cluster_id is not None and props.get("cluster.id") != self.cluster_id):
                    try:
                        write_meta_properties(d, self.broker_id, self.cluster_id)
                    except OSError as e:
                        self.failure_channel.mark_offline(d, f"Error while writing {path}", e)

    def _fail(self, message: str) -> None:
        self._release_locks()
        raise InconsistentBrokerMetadataError(message)

    @staticmethod
    def _read_checkpoint(path: str) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except (CheckpointError, OSError):
            return {}  # unreadable: recover everything from 0, as Kafka does

    def _in_parallel(self, jobs: Iterable[Callable[[], T]]) -> list[T]:
        """Run the jobs on recovery_threads x log dirs threads (here when that is one); the first error raises."""
        jobs = list(jobs)
        threads = min(self.recovery_threads * len(self.log_dirs), len(jobs))
        if threads <= 1:
            return [job() for job in jobs]
        with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
            return [future.result() for future in [pool.submit(job) for job in jobs]]

    def _load_all_logs(self) -> None:
        jobs: list[Callable[[], tuple[TopicPartition, Log, str]]] = []
        markers = []
        for d in self.live_log_dirs:
            try:
                jobs += self._load_jobs(d)
            except OSError as e:
                self.failure_channel.mark_offline(d, f"Error while loading log dir {d}", e)
                continue
            marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
            if self.had_clean_shutdown[d]:
                markers.append(marker)
        for loaded in self._in_parallel(jobs):
            if loaded is None or self.failure_channel.is_offline(loaded[2]):
                continue  # its directory went offline (recovery hit an I/O error)
            tp, log_, d = loaded
            log_.failure_channel = self.failure_channel
            if log_.dir.endswith(FUTURE_DIR_SUFFIX):  # a move under way: it resumes once the replica is here
                if tp in self._future_logs:
                    raise InconsistentBrokerMetadataError(
                        f"duplicate future log directories for {log_.name}: {self._future_logs[tp].dir} and "
                        f"{log_.dir}")
                self._future_logs[tp] = log_
                continue
            if tp in self._logs:
                # Kafka's loadLog: a dir failing while a move swapped its logs can leave both; the operator picks
                raise InconsistentBrokerMetadataError(
                    f"duplicate log directories for {log_.name} are found in both {self._dir_of[tp]} and {d}; "
                    f"it is likely because a log directory failed while the broker was replacing the current "
                    f"replica with a future one: delete one of the two (the one on the dir that failed recently)")
            log_.on_truncated = self._on_truncated
            self._logs[tp] = log_
            self._dir_of[tp] = d
        for marker in markers:
            d = os.path.dirname(marker)
            if not self.failure_channel.is_offline(d):
                try:
                    os.unlink(marker)
                except OSError as e:
                    self.failure_channel.mark_offline(d, f"Error while removing {marker}", e)

    def _load_jobs(self, d: str) -> list[Callable[[], tuple[TopicPartition, Log, str] | None]]:
        marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        self.had_clean_shutdown[d] = clean
        recovery_points = self._read_checkpoint(os.path.join(d, RECOVERY_POINT_CHECKPOINT))
        start_offsets = self._read_checkpoint(os.path.join(d, LOG_START_OFFSET_CHECKPOINT))
        high_watermarks = self._read_checkpoint(os.path.join(d, REPLICATION_OFFSET_CHECKPOINT))
        jobs = []
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                tp = parse_topic_partition(name)
            except ValueError:
                continue

            def load(path: str = path, tp: TopicPartition = tp) -> tuple[TopicPartition, Log, str] | None:
                try:
                    return self._load_log(path, tp, d, recovery_points, start_offsets, high_watermarks, clean)
                except OSError as e:  # Kafka's loadLogs: the directory goes offline, the broker goes on
                    self.failure_channel.mark_offline(d, f"Error while loading log {path}", e)
                    return None
            jobs.append(load)
        return jobs

    def _load_log(self, path: str, tp: TopicPartition, d: str, recovery_points: Mapping[TopicPartition, int],
                  start_offsets: Mapping[TopicPartition, int], high_watermarks: Mapping[TopicPartition, int],
                  clean: bool) -> tuple[TopicPartition, Log, str]:
                return tp, Log(path, self._config_for(tp[0]), recovery_point=recovery_points.get(tp, 0),
                               log_start_offset=start_offsets.get(tp, 0), high_watermark=high_watermarks.get(tp, 0),
                               had_clean_shutdown=clean, clock=self._clock,
                               max_producer_id_expiration_ms=self.max_producer_id_expiration_ms,
                               scheduler=self.scheduler), d

    def _config_for(self, topic: str, overrides: Mapping[str, Any] | None = None) -> LogConfig:
        topic_overrides = dict(self.topic_configs.get(topic, {}))
        topic_overrides.update(overrides or {})
        warn_not_implemented(topic, topic_overrides)
        return LogConfig.from_props(self.topic_defaults, topic_overrides)

    # -- logs -------------------------------------------------------------------------------------

    @property
    def live_log_dirs(self) -> list[str]:
        offline = self.failure_channel.offline_dirs
        return [d for d in self.log_dirs if d not in offline]

    @property
    def offline_log_dirs(self) -> list[str]:
        offline = self.failure_channel.offline_dirs
        return [d for d in self.log_dirs if d in offline]

    def dir_of(self, topic: str, partition: int) -> str | None:
        return self._dir_of.get((topic, partition))

    def is_log_dir_online(self, log_dir: str) -> bool:
        """Kafka's isLogDirOnline: the path must be one of log.dirs, absolute, as configured."""
        if log_dir not in self.log_dirs:
            raise LogDirNotFoundError(f"Failed to find the log directory for {log_dir}")
        return not self.failure_channel.is_offline(log_dir)

    def handle_log_dir_failure(self, log_dir: str) -> list[TopicPartition]:
        """Kafka's LogManager.handleLogDirFailure: forget the directory's logs (their files are closed, nothing
        more is written to them: no checkpoint, no clean-shutdown marker, so a restart recovers them) and stop
        cleaning them. Returns their partitions."""
        with self._lock:
            gone = [tp for tp, d in self._dir_of.items() if d == log_dir]
            for tp in gone:
                log_ = self._logs.pop(tp)
                del self._dir_of[tp]
                if self.cleaner is not None:
                    self.cleaner.abort_cleaning(tp)
                _close_handlers(log_)
            for tp, future in list(self._future_logs.items()):
                if os.path.dirname(future.dir) == log_dir:
                    del self._future_logs[tp]
                    _close_handlers(future)
            if self.cleaner is not None:
                self.cleaner.manager.forget_log_dir(log_dir)
        log.warning("Logs for partitions %s are offline and logs for future partitions are offline due to failure "
                    "on log directory %s", [f"{t}-{p}" for t, p in gone][:50], log_dir)
        return gone

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def logs_by_partition(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    # -- the log cleaner ----------------------------------------------------------------------------

    def start_cleaner(self, config: CleanerConfig) -> None:
        """Kafka's LogManager.startup: the cleaner runs when log.cleaner.enable is true."""
        if config.enable_cleaner and self.cleaner is None:
            self.cleaner = LogCleaner(config, self.live_log_dirs, self.logs_by_partition, self.failure_channel)
            self.cleaner.startup()

    def pause_cleaning(self, topic: str, partition: int) -> None:
        """Kafka's abortAndPauseCleaning (a replica being moved to another dir); nothing without a cleaner."""
        if self.cleaner is not None:
            self.cleaner.abort_and_pause((topic, partition))

    def resume_cleaning(self, topic: str, partition: int) -> None:
        if self.cleaner is not None:
            self.cleaner.resume_cleaning((topic, partition))

    def reconfigure_cleaner(self, config: CleanerConfig) -> None:
        if self.cleaner is not None:
            self.cleaner.reconfigure(config)

    def _on_truncated(self, log: Log) -> None:
        if self.cleaner is not None:
            self.cleaner.on_log_truncated(log)
        future = self._future_logs.get((log.topic, log.partition))
        if future is not None:  # a replica being moved: its copy loses what the current log lost
            try:
                if log.log_end_offset == log.log_start_offset:
                    future.truncate_fully_and_start_at(log.log_start_offset)
                elif future.log_end_offset > log.log_end_offset:
                    future.truncate_to(log.log_end_offset)
            except KafkaStorageError:
                pass  # the future log's dir went offline (the failure handler ends the move), not the current's

    def _next_log_dir(self, tp: TopicPartition) -> str:
        preferred = self._preferred_dirs.pop(tp, None)
        if preferred is not None:  # Kafka's getOrCreateLog: the preferred dir or nothing (offline: storage error)
            if self.failure_channel.is_offline(preferred):
                raise KafkaStorageError(f"the preferred log dir {preferred} of {tp[0]}-{tp[1]} is offline")
            return preferred
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError(f"every log dir of {self.log_dirs} is offline")
        if len(live) == 1:  # the count below is O(logs): thousands of creations would be quadratic
            return live[0]
        counts = {d: 0 for d in live}
        for d in self._dir_of.values():
            if d in counts:
                counts[d] += 1
        return min(live, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def get_or_create_log(self, topic: str, partition: int,
                          topic_config: Mapping[str, Any] | None = None, is_new: bool = True) -> Log:
        """The partition's log, created in its preferred dir (AlterReplicaLogDirs sent before it existed) or else
        the live dir with the fewest logs. A replica the controller does not
        call new (LeaderAndIsr's is_new) is not created while a dir is offline: its log may be there (Kafka's
        getOrCreateLog answers KAFKA_STORAGE_ERROR then)."""
        if not topic or "/" in topic or topic in (".", "..") or partition < 0:
            raise ValueError(f"invalid topic partition {topic!r}-{partition}")
        with self._lock:
            tp = (topic, partition)
            log = self._logs.get(tp)
            if log is not None:
                return log
            offline = self.offline_log_dirs
            if offline and not is_new:
                raise KafkaStorageError(f"cannot create the log of {topic}-{partition}: log dirs {offline} are offline")
            if topic_config is not None:  # the topic's overrides as read now: a recreated topic drops old ones
                self.topic_configs[topic] = dict(topic_config)
            d = self._next_log_dir(tp)
            try:
                log_ = Log(os.path.join(d, log_dir_name(topic, partition)), self._config_for(topic),
                           had_clean_shutdown=True, clock=self._clock,
                           max_producer_id_expiration_ms=self.max_producer_id_expiration_ms, scheduler=self.scheduler)
            except OSError as e:
                self.failure_channel.mark_offline(d, f"Error while creating log for {topic}-{partition} in dir {d}", e)
                raise KafkaStorageError(f"cannot create the log of {topic}-{partition} in {d}: {e}") from e
            log_.on_truncated = self._on_truncated
            log_.failure_channel = self.failure_channel
            self._logs[tp] = log_
            self._dir_of[tp] = d
            return log_

    def update_topic_config(self, topic: str, overrides: Mapping[str, Any]) -> None:
        with self._lock:
            self.topic_configs[topic] = dict(overrides)
            for (t, _), log in [*self._logs.items(), *self._future_logs.items()]:
                if t == topic:
                    log.config = self._config_for(topic)

    def update_topic_defaults(self, topic_defaults: Mapping[str, Any]) -> None:
        """Dynamic broker configs changed the defaults: every log takes them under its topic's overrides."""
        with self._lock:
            self.topic_defaults = dict(topic_defaults)
            for (t, _), log in [*self._logs.items(), *self._future_logs.items()]:
                log.config = self._config_for(t)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Rename the partition dir (and its future log's, if it is being moved) to ``…-delete`` and remove it;
        False if there was no such log."""
        with self._lock:
            tp = (topic, partition)
            self._preferred_dirs.pop(tp, None)
            self.remove_future_log(topic, partition)
            log = self._logs.pop(tp, None)
            if log is None:
                return False
            d = self._dir_of.pop(tp)
            if self.cleaner is not None:
                self.cleaner.on_log_deleted(tp, d)
            # no close (it would write a producer snapshot into a log about to go): Kafka 2.8's asyncDelete
            # renames the open log, and its delete closes the files
            self._delete_async(log)
            return True

    def _delete_async(self, log_: Log) -> None:
        """Kafka's asynchronous delete: renamed ``…-delete`` now, removed ``file.delete.delay.ms`` later."""
        log_.rename_dir(os.path.join(os.path.dirname(log_.dir), delete_dir_name(log_.topic, log_.partition)))
        self.scheduler.schedule("delete-log", log_.delete, log_.config.file_delete_delay_ms)

    # -- moving a replica between log dirs (KIP-113) ------------------------------------------------

    def maybe_update_preferred_log_dir(self, topic: str, partition: int, log_dir: str) -> None:
        """Kafka's maybeUpdatePreferredLogDir: remembered unless the current or future log is already there."""
        tp = (topic, partition)
        with self._lock:
            current, future = self._logs.get(tp), self._future_logs.get(tp)
            if (current is None or self._dir_of[tp] != log_dir) and \
                    (future is None or os.path.dirname(future.dir) != log_dir):
                self._preferred_dirs[tp] = log_dir

    def future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    def future_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._future_logs)

    def create_future_log(self, topic: str, partition: int) -> Log:
        """Kafka's getOrCreateLog(isFuture=true): the future log in the preferred dir, starting where the
        current log starts. Never while a dir is offline (the partition's logs might be there)."""
        tp = (topic, partition)
        with self._lock:
            current = self._logs.get(tp)
            target = self._preferred_dirs.pop(tp, None)
            if current is None or target is None or target == self._dir_of[tp]:
                raise ValueError(f"no move to another log dir is asked for {topic}-{partition}")
            offline = self.offline_log_dirs
            if offline:
                raise KafkaStorageError(f"cannot create the future log of {topic}-{partition}: log dirs {offline} "
                                        f"are offline")
            try:
                future = Log(os.path.join(target, future_dir_name(topic, partition)), self._config_for(topic),
                             log_start_offset=current.log_start_offset, had_clean_shutdown=True, clock=self._clock,
                             max_producer_id_expiration_ms=self.max_producer_id_expiration_ms,
                             scheduler=self.scheduler)
            except OSError as e:
                self.failure_channel.mark_offline(target, f"Error while creating the future log of {topic}-"
                                                          f"{partition} in dir {target}", e)
                raise KafkaStorageError(f"cannot create the future log of {topic}-{partition}: {e}") from e
            future.failure_channel = self.failure_channel
            self._future_logs[tp] = future
            log.info("Created the future log of %s-%d in %s", topic, partition, target)
            return future

    def remove_future_log(self, topic: str, partition: int, delete: bool = True) -> Log | None:
        """Stop a move: the future log is forgotten, and deleted (Kafka's removeFutureLocalReplica)."""
        with self._lock:
            future = self._future_logs.pop((topic, partition), None)
            if future is not None and delete:
                _close_handlers(future)
                self._delete_async(future)
            return future

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """Kafka's replaceCurrentWithFutureLog, the caller holding both logs' locks with their ends equal: the
        future log takes the partition's name in its dir and the current one is renamed ``-delete`` and removed
        later. Returns the new current log."""
        tp = (topic, partition)
        with self._lock:
            source, dest = self._logs.get(tp), self._future_logs.get(tp)
            if source is None:
                raise KafkaStorageError(f"The current replica for {topic}-{partition} is offline")
            if dest is None:
                raise KafkaStorageError(f"The future replica for {topic}-{partition} is offline")
            source_dir, dest_dir = self._dir_of[tp], os.path.dirname(dest.dir)
            try:
                dest.rename_dir(os.path.join(dest_dir, log_dir_name(topic, partition)))
            except OSError as e:  # Kafka's renameDir: an I/O error takes the dir offline
                self.failure_channel.mark_offline(dest_dir, f"Error while renaming the future log of {topic}-"
                                                            f"{partition} in dir {dest_dir}", e)
                raise KafkaStorageError(f"cannot rename the future log of {topic}-{partition}: {e}") from e
            # Until the old one is renamed too, a crash leaves the partition in both dirs and the restart stops
            # (as Kafka's): nothing else happens in between, the cleaner's checkpoint writes come after.
            _close_handlers(source)  # the future log holds it all now: nothing of the old one is written or synced
            rename_error = None
            try:
                self._delete_async(source)
            except OSError as e:
                rename_error = e
            dest.update_high_watermark(source.high_watermark)
            del self._future_logs[tp]
            dest.on_truncated = self._on_truncated
            self._logs[tp] = dest
            self._dir_of[tp] = dest_dir
            if self.cleaner is not None:  # what it had cleaned of the partition is now recorded in the new dir
                self.cleaner.on_log_moved(tp, source_dir, dest_dir)
            if rename_error is not None:  # the partition is safe in its new dir; the old one goes offline
                self.failure_channel.mark_offline(source_dir, f"Error while renaming the replaced log of {topic}-"
                                                              f"{partition} in dir {source_dir} for deletion",
                                                  rename_error)
            # the source dir's checkpoints no longer name the partition
            self._checkpoint_dir(source_dir, RECOVERY_POINT_CHECKPOINT, lambda log_: log_.recovery_point)
            self._checkpoint_dir(source_dir, LOG_START_OFFSET_CHECKPOINT, lambda log_: log_.log_start_offset)
            log.info("The current replica of %s-%d is replaced with the future one: moved from %s to %s", topic,
                     partition, source_dir, dest_dir)
            return dest

    # -- checkpoints ------------------------------------------------------------------------------

    def _checkpoint(self, filename: str, value: Callable[[Log], int]) -> None:
        for d in self.live_log_dirs:
            self._checkpoint_dir(d, filename, value)

    def _checkpoint_dir(self, d: str, filename: str, value: Callable[[Log], int]) -> None:
        """One dir's checkpoint: its current logs and the future logs moving into it (Kafka's logsByDir).

        The offsets are read under the manager's lock (the event loop changes the maps); the file is written
        after it is released, as Kafka's checkpoints are written without its log creation lock: at 10,000
        partitions a write and its fsync take up to 100 ms, which a partition created meanwhile (on the
        event loop) would otherwise wait out. ``_sequencer`` keeps an older snapshot from landing after a
        newer one (a periodic write that lost the race to a log dir move would name the moved partition)."""
        path = os.path.join(d, filename)
        with self._lock:
            offsets = {tp: value(log_) for tp, log_ in self._logs.items() if self._dir_of[tp] == d}
            offsets.update((tp, value(log_)) for tp, log_ in self._future_logs.items()
                           if os.path.dirname(log_.dir) == d)
            ticket = self._sequencer.take(path)
        try:
            self._sequencer.write_if_newest(path, ticket, lambda: OffsetCheckpointFile(path).write(offsets))
        except OSError as e:
            self.failure_channel.mark_offline(d, f"Error while writing {filename} in dir {d}", e)

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint(RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._checkpoint(REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)

    # -- periodic work ----------------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """Retention pass over every log not compacted; returns the number of segments deleted. Compacted
        logs (also compact,delete) get theirs on the cleaner threads, or none without a cleaner (Kafka 2.8)."""
        deleted = 0
        for log_ in self.all_logs():
            if not log_.config.compact_enabled:
                deleted += self._unless_offline(log_.delete_old_segments, 0)
        if deleted:
            self.checkpoint_log_start_offsets()
        return deleted

    def flush_dirty_logs(self) -> int:
        return sum(1 for log_ in self.all_logs() if self._unless_offline(log_.flush_if_due, False))

    @staticmethod
    def _unless_offline(job: Callable[[], T], otherwise: T) -> T:
        """A periodic job on one log: its directory going offline (already logged) does not stop the others."""
        try:
            return job()
        except KafkaStorageError:
            return otherwise

    def remove_expired_producers(self) -> int:
        """Forget idle producer ids in every log (call every PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS)."""
        now = self._clock()
        return sum(log.remove_expired_producers(now) for log in self.all_logs())

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints and the clean-shutdown marker."""
        log.info("Shutting down.")  # Kafka's LogManager lines: a shutdown's log close is timed between them
        began = time.monotonic()
        if self.cleaner is not None:
            self.cleaner.shutdown()  # first, as Kafka: no swap while the logs close
        if self.scheduler is not INLINE:
            self.scheduler.shutdown()  # flushes already asked for complete first; delayed deletes wait for restart
        with self._lock:
            logs = self.all_logs() + list(self._future_logs.values())
            stopped = time.monotonic()
            # A dir failing now is offline like any other: its logs are left for the next start to recover.
            self._in_parallel(lambda log_=log_: self._unless_offline(log_.flush, None) for log_ in logs)
            flushed = time.monotonic()
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()
            self.checkpoint_high_watermarks()
            checkpointed = time.monotonic()
            self._in_parallel(lambda log_=log_: self._unless_offline(log_.close, None) for log_ in logs)
            closed = time.monotonic()
            for d in self.live_log_dirs:
                try:
                    write_atomically(os.path.join(d, CLEAN_SHUTDOWN_FILE), b"")
                except OSError as e:
                    self.failure_channel.mark_offline(d, f"Error while writing the clean-shutdown marker of {d}", e)
            self._release_locks()
        log.info("Shutdown complete: %d logs in %.0f ms (cleaner and scheduler %.0f ms, flush %.0f ms, checkpoints "
                 "%.0f ms, close %.0f ms)", len(logs), (time.monotonic() - began) * 1000, (stopped - began) * 1000,
                 (flushed - stopped) * 1000, (checkpointed - flushed) * 1000,
                 (closed - checkpointed) * 1000)

"""Moving a replica between the log dirs of this broker while it serves (AlterReplicaLogDirs, Kafka's KIP-113).

Kafka 2.8's ReplicaManager.alterReplicaLogDirs and ReplicaAlterLogDirsManager/Thread: the request creates a
"future" log ``<topic>-<partition>.<uuid>-future`` in the target dir (LogManager.create_future_log) and a copy
task fills it from the partition's current log, to the log end (not the high watermark: Kafka's FetchLogEnd),
batches kept as they are (Log.append_as_follower, which also rebuilds the producer state and the leader epoch
cache). Once the future log's end reaches the current one, the swap happens in the same step: the future log
takes the partition's name, the Partition reads and appends through it from then on, and the old log is renamed
``-delete`` and removed ``file.delete.delay.ms`` later.

Deliberate difference: Kafka's thread fetches from the local replica through the replica manager on its own
thread; here the copy runs on the event loop in steps of 256 KiB, yielding between them.
Every append to and truncation of the current log happens on that loop too, so a step sees a log that nothing
else changes, and the swap needs no retry. The future log catches up with an appending leader because a step copies
at least twice what was appended since the previous one. A truncation of the current log (a follower's) truncates the future
log at once (LogManager._on_truncated), as Kafka's thread truncates its future replica.

The copy is throttled by ``replica.alter.log.dirs.io.max.bytes.per.second`` (the ``alter_log_dirs`` quota of
broker/replication_quota.py): each step's bytes are recorded, and while the measured rate is above the bound no
step runs, so no swap either (Kafka's thread builds no fetch then). A bound below the partition's append rate
keeps the move from ever catching up, as in Kafka: the operator raises it or removes it.

The log cleaner leaves the partition alone from the future log's creation to the swap (Kafka's
abortAndPauseCleaning / resumeCleaning); a move stopped or redirected resumes it.

A restart resumes a move (the future log is loaded as such and the copy starts when the replica is created
again); StopReplica with delete removes the future log with the current one, without delete it stays and
resumes; a log dir going offline ends the moves into it and out of it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from ..protocol.errors import (  # type: ignore[attr-defined]
    InvalidTopicError,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    ReplicaNotAvailableError,
)
from .log.log_types import UnexpectedAppendOffsetError

if TYPE_CHECKING:
    from .log import Log
    from .partition import Partition
    from .replication_quota import ReplicationQuotaManager

log = logging.getLogger(__name__)

Key = tuple[str, int]
# Kafka's thread fetches replica.fetch.max.bytes (1 MiB) at a time; a step here holds the event loop, so it is a
# quarter of that: each step costs the requests waiting for the loop ~4 times less (bench_log_dir_move.py), for the
# same CPU per byte.
DEFAULT_STEP_BYTES = 256 << 10
# While throttled, a move looks at its quota again after at most this long (Kafka's fetcher backs off
# replica.fetch.backoff.ms, 1 s by default, when its quota leaves it nothing to fetch)
THROTTLED_RECHECK_MS = 1000
# A name longer than this cannot be a directory name (Kafka refuses the move: KAFKA-4893)
_MAX_NAME = 255
_UUID_AND_SUFFIX = 32 + len("-future")


class HostedReplicas(Protocol):
    """What the mover needs of the replica manager that owns it (named here, so the mover does not import it)."""
    log_manager: Any
    partitions: Mapping[Key, "Partition"]

    def is_offline(self, key: Key) -> bool: ...

    def partition_or_error(self, topic: str, partition: int) -> "Partition": ...

    def note_change(self, key: Key) -> None: ...


class ReplicaLogDirMover:
    def __init__(self, replica_manager: HostedReplicas, step_bytes: int = DEFAULT_STEP_BYTES,
                 quota: "ReplicationQuotaManager | None" = None) -> None:
        self.replica_manager = replica_manager
        self.log_manager = replica_manager.log_manager
        self.step_bytes = max(step_bytes, 1)
        self.quota = quota  # None: unthrottled
        self.throttled_waits = 0  # times a step waited for the quota (tests, and the operator's debugging)
        self._tasks: dict[Key, asyncio.Task] = {}
        self._sizes: dict[Key, int] = {}  # the current log's size at each move's previous step
        self._cleaning_paused: set[Key] = set()  # moves holding a pause of the log cleaner (one each)

    # -- AlterReplicaLogDirs --------------------------------------------------------------------------

    def alter_replica_log_dirs(self, partition_dirs: Mapping[Key, str]) -> dict[Key, int]:
        """Kafka's ReplicaManager.alterReplicaLogDirs: the error code per partition."""
        return {key: self._alter_one(key, target) for key, target in partition_dirs.items()}

    def _alter_one(self, key: Key, target: str) -> int:
        topic, index = key
        lm = self.log_manager
        try:
            if len(f"{topic}-{index}.") + _UUID_AND_SUFFIX > _MAX_NAME:
                raise InvalidTopicError("The topic name is too long.")
            if not lm.is_log_dir_online(target):  # LOG_DIR_NOT_FOUND for a dir that is not one of log.dirs
                raise KafkaStorageError(f"Log directory {target} is offline")
            partition = self.replica_manager.partitions.get(key)
            if partition is not None:
                future = lm.future_log(topic, index)
                if future is not None and os.path.dirname(future.dir) != target:
                    # another destination: the move under way stops (Kafka's futureReplicaDirChanged)
                    self.stop(key)
                    lm.remove_future_log(topic, index)
            elif self.replica_manager.is_offline(key):
                raise KafkaStorageError(f"Partition {topic}-{index} is offline")
            # A replica not here yet is created in the target dir when the controller asks for it.
            lm.maybe_update_preferred_log_dir(topic, index, target)
            partition = self.replica_manager.partition_or_error(topic, index)
            if lm.dir_of(topic, index) == target:
                log.info("Current log directory of %s-%d is the requested %s; no future replica created", topic,
                         index, target)
                return 0
            if lm.future_log(topic, index) is None:
                lm.create_future_log(topic, index)
                log.info("Moving %s-%d from %s to %s", topic, index, lm.dir_of(topic, index), target)
                self._start(partition)
            return 0
        except NotLeaderOrFollowerError as exc:
            # Kafka keeps REPLICA_NOT_AVAILABLE here for compatibility
            log.warning("Unable to alter log dirs for %s-%d: %s", topic, index, exc)
            return ReplicaNotAvailableError.code
        except KafkaError as exc:
            log.warning("Unable to alter log dirs for %s-%d: %s", topic, index, exc)
            return exc.code

    # -- the copy tasks ---------------------------------------------------------------------------------

    def resume(self, key: Key) -> None:
        """The replica is hosted here (again): a future log loaded at start-up or left by StopReplica is filled."""
        future = self.log_manager.future_log(*key)  # first: nearly always None (called per LeaderAndIsr partition)
        partition = self.replica_manager.partitions.get(key) if future is not None else None
        if partition is not None and key not in self._tasks:
            log.info("Resuming the move of %s-%d to %s", *key, os.path.dirname(future.dir))
            self._start(partition)

    def _start(self, partition: "Partition") -> None:
        # Kafka pauses the partition's cleaning from the future log's creation to the swap
        # (ReplicaManager.alterReplicaLogDirs, LogManager.replaceCurrentWithFutureLog)
        if partition.key not in self._cleaning_paused:
            self._cleaning_paused.add(partition.key)
            self.log_manager.pause_cleaning(*partition.key)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a unit test driving the replica manager): step() by hand
            return
        task = loop.create_task(self._run(partition.key), name=f"move-{partition.topic}-{partition.partition}")
        self._tasks[partition.key] = task
        task.add_done_callback(lambda t, key=partition.key: self._tasks.pop(key, None) if self._tasks.get(key) is t
                               else None)

    def stop(self, key: Key) -> None:
        """The replica stopped here (StopReplica, its dir offline) or the move was redirected: no more copying."""
        task = self._tasks.pop(key, None)
        self._sizes.pop(key, None)
        self._resume_cleaning(key)
        if task is not None:
            task.cancel()

    def _resume_cleaning(self, key: Key) -> None:
        if key in self._cleaning_paused:
            self._cleaning_paused.discard(key)
            self.log_manager.resume_cleaning(*key)

    def lags(self) -> dict[Key, int]:
        """Each running move's lag, in records: the current log's high watermark minus the future log's end
        (Kafka's ReplicaAlterLogDirsThread lag, reported as the manager's MaxLag)."""
        lags = {}
        for key in list(self._tasks):
            partition = self.replica_manager.partitions.get(key)
            future = self.log_manager.future_log(*key)
            if partition is not None and future is not None:
                lags[key] = max(0, partition.log.high_watermark - future.log_end_offset)
        return lags

    def shutdown(self) -> None:
        for key in list(self._tasks):
            self.stop(key)

    async def _run(self, key: Key) -> None:
        try:
            while True:
                wait_ms = self.quota.wait_ms(THROTTLED_RECHECK_MS) if self.quota is not None else 0
                if wait_ms:
                    self.throttled_waits += 1
                    await asyncio.sleep(wait_ms / 1000)
                    continue
                partition = self.replica_manager.partitions.get(key)
                future = self.log_manager.future_log(*key)
                if partition is None or future is None or self.step(partition, future):
                    return
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except KafkaStorageError as exc:  # a dir went offline: the failure handler stops the partition or move
            log.warning("The move of %s-%d stopped: %s", *key, exc)
        except Exception:
            log.exception("The move of %s-%d failed; it resumes with the next LeaderAndIsr or restart", *key)

    def step(self, partition: "Partition", future: "Log") -> bool:
        """Copy up to ``step_bytes`` from the current log to the future one; swap them once the ends meet.
        True once the future log is the partition's log."""
        current = partition.log
        start = current.log_start_offset
        if future.log_end_offset < start:  # retention or DeleteRecords passed the copy: start over there
            future.truncate_fully_and_start_at(start)
        size = current.size
        grew = max(0, size - self._sizes.get(partition.key, size))
        self._sizes[partition.key] = size
        if future.log_end_offset < current.log_end_offset:
            copied = self._copy(current, future, max(self.step_bytes, 2 * grew))
            if self.quota is not None:
                self.quota.record(copied)
        future.update_high_watermark(current.high_watermark)
        if start > future.log_start_offset and start <= future.high_watermark:
            future.maybe_increment_log_start_offset(start)
        if future.log_end_offset != current.log_end_offset:
            return False
        self._swap(partition, current, future)
        self._sizes.pop(partition.key, None)
        return True

    def _copy(self, current: "Log", future: "Log", max_bytes: int) -> int:
        """Up to ``max_bytes`` (at least one batch), across segments if need be; the bytes copied."""
        copied = 0
        while copied < max_bytes and future.log_end_offset < current.log_end_offset:
            try:
                data = current.read(future.log_end_offset, max_bytes - copied, min_one_batch=copied == 0)
            except OffsetOutOfRangeError:
                future.truncate_fully_and_start_at(current.log_start_offset)
                return copied
            records = memoryview(data.records)
            if not records:
                return copied
            self._append(future, records)
            copied += len(records)
        return copied

    @staticmethod
    def _append(future: "Log", records: memoryview) -> None:
        try:
            future.append_as_follower(records)
        except UnexpectedAppendOffsetError:
            # the first batch starts below the copy's end: an empty copy starting inside a batch (the log start
            # offset moved there, e.g. DeleteRecords), as Kafka's appendRecordsToFollowerOrFutureReplica recovers
            if future.log_end_offset != future.log_start_offset:
                raise
            future.truncate_fully_and_start_at(int.from_bytes(records[:8], "big"))
            future.append_as_follower(records)

    def _swap(self, partition: "Partition", current: "Log", future: "Log") -> None:
        """Kafka's maybeReplaceCurrentWithFutureReplica, with nothing appended in between (one loop step)."""
        topic, index = partition.key
        with current.lock, future.lock:
            for entry in current.leader_epoch_cache.entries:  # an epoch begun at the end, with no batch yet
                if entry.epoch > future.latest_epoch:
                    future.leader_epoch_cache.assign(entry.epoch, entry.start_offset)
            partition.log = self.log_manager.replace_current_with_future(topic, index)
        self._resume_cleaning(partition.key)
        self.replica_manager.note_change(partition.key)

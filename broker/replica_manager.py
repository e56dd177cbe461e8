"""ReplicaManager: the partitions this broker hosts, and the produce and fetch paths through them.

Kafka's server/ReplicaManager. The controller tells it which partitions to lead or follow
(LeaderAndIsr) and which to stop (StopReplica); followers fetch from their leaders through the
replica fetcher manager. Produce appends to leaders and, for acks=-1, parks in the produce purgatory
until the ISR has the records; Fetch reads whole batches and parks in the fetch purgatory until
``min_bytes`` arrive or ``max_wait_ms`` passes. A follower's fetch (``replica_id >= 0``) reads to
the log end, records the follower's position (moving the high watermark) and may add it to the
ISR; the periodic lag check removes followers from it. Everything runs on the broker's event
loop; the logs do their own locking for the executor threads of retention.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Mapping, Protocol

from ..protocol.errors import (  # type: ignore[attr-defined]
    FencedLeaderEpochError,
    InvalidRequiredAcksError,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceNumberError,
    StaleControllerEpochError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from .delayed_ops import DelayedFetch, DelayedProduce, FetchParams, FetchSpec, ProduceStatus
from .log import InvalidReadSizeError, LogManager
from .log.checkpoint_batch import batched_checkpoints
from .metrics.topic_stats import BrokerTopicStats
from .metadata_cache import MetadataCache
from .partition import Partition, monotonic_ms
from .purgatory import AsyncTimerDriver, DelayedOperationPurgatory, Timer
from .purgatory.completion import Completion
from .replica_log_dir_mover import ReplicaLogDirMover
from .replication_quota import ReplicationQuotas
from .replica_selector import ClientMetadata, Selector, preferred_read_replica

if TYPE_CHECKING:
    from .isr_manager import IsrManager

log = logging.getLogger(__name__)

ISR_CHECK_STEP = 1000  # partitions the periodic lag check looks at between two turns of the event loop

# A LeaderAndIsr of thousands of partitions is applied in slices of about this much event-loop time, so the
# broker keeps answering other requests meanwhile (Kafka applies it on a request handler thread of its own).
LEADER_AND_ISR_SLICE_S = 0.02
_STATES_PER_CHECK = 16

# StopReplica v3 marks partitions of a topic being deleted with this leader epoch (Kafka's EpochDuringDelete).
EPOCH_DURING_DELETE = -2


def follower_watch_key(replica_id: int) -> tuple[str, int, str]:
    """The purgatory key every parked fetch of follower ``replica_id`` also waits under (three parts, so it
    is never a partition's key)."""
    return ("follower", replica_id, "fetch")


@dataclass
class ProducePartitionResult:
    error_code: int = 0
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str]] | None = None  # (index in the batch, message): Produce v8+


# Kafka's Request.DebuggingConsumerId: the replica verification tool, which reads followers too. So does any
# consumer with Fetch v11+ (KIP-392, FetchParams.client), below the follower's high watermark.
DEBUGGING_CONSUMER_ID = -2


@dataclass
class FetchPartitionResult:
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) for a follower that diverged
    aborted_transactions: list | None = None  # read_committed: AbortedTxn entries overlapping the records
    withheld: bool = False  # records were there for the fetcher but none were sent (throttle, max_bytes)
    preferred_read_replica: int = -1  # KIP-392: read this partition from that broker instead (no records here)


class FollowerFetchers(Protocol):
    """What the replica manager drives of the follower side (broker/replica_fetcher.py's
    ReplicaFetcherManager, which imports this module): named here so the dependency stays one-way."""

    listener_name: str | None  # inter.broker.listener.name, to pick a leader's endpoint

    def add_partitions(self, targets: Mapping[tuple[str, int], tuple[int, tuple[str, int], int]]) -> None: ...

    def remove_partitions(self, keys: Iterable[tuple[str, int]]) -> None: ...


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, metadata_cache: MetadataCache,
                 clock: Callable[[], int] = monotonic_ms, *, fetch_purge_interval: int = 1000,
                 produce_purge_interval: int = 1000, delete_records_purge_interval: int = 1,
                 topic_stats: BrokerTopicStats | None = None,
                 replication_quotas: ReplicationQuotas | None = None,
                 replica_selector: Selector | None = None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.clock = clock
        # Set once by attach_replication (the server; unit tests may leave them None or set them directly).
        self.isr_manager: IsrManager | None = None           # None: ISR changes stay in memory
        self.fetcher_manager: FollowerFetchers | None = None  # None: no fetching
        # Told (led keys, no longer led keys) after LeaderAndIsr and StopReplica: the group coordinator
        # loads and unloads its __consumer_offsets partitions (Kafka's onLeadershipChange callback).
        self.on_leadership_change: Callable[[list[tuple[str, int]], list[tuple[str, int]]], None] | None = None
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Partitions whose log dir went offline (Kafka's HostedPartition.Offline): KAFKA_STORAGE_ERROR until restart
        self.offline_partitions: set[tuple[str, int]] = set()
        self.controller_epoch = 0
        # Kafka's replicaStateChangeLock: one LeaderAndIsr or StopReplica applied at a time (they yield)
        self.state_change_lock = asyncio.Lock()
        # per-topic bytes and records (broker/metrics)
        self.topic_stats = topic_stats if topic_stats is not None else BrokerTopicStats()
        # Replication throttles (leader side here, follower side in the replica fetcher); the server passes
        # one built from its config and fed by the dynamic config manager.
        self.replication_quotas = (replication_quotas if replication_quotas is not None
                                   else ReplicationQuotas(broker_id))
        # Fetch sessions read only the partitions that changed since their last answer: every change a
        # fetcher may need to hear of (records, high watermark, log start offset, leadership) is noted
        # here, key -> sequence number of its latest change, oldest first (see changed_since).
        self._changes: dict[tuple[str, int], int] = {}
        self.change_seq = 0
        # when each follower last fetched from us (a partition it is caught up on stays so until it grows)
        self.follower_fetch_ms: dict[int, int] = {}
        # The purgatory keys under which fetch sessions holding a partition park their fetches (a session's
        # fetch waits under one key, not one per partition: broker/apis/fetch.py sets this).
        self.session_watch_keys: Callable[[tuple[str, int]], Iterable[Hashable]] = lambda key: ()
        # replica.selector.class (KIP-392): where the leader sends Fetch v11+ consumers; None: it serves them
        self.replica_selector = replica_selector
        self.isr_shrinks = 0  # ISR changes started as leader (IsrShrinksPerSec / IsrExpandsPerSec)
        self.isr_expands = 0
        # *.purgatory.purge.interval.requests: completed operations are dropped from the watch lists once
        # this many more were watched than wait in the timer
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch", Timer(), fetch_purge_interval)
        self.produce_purgatory = DelayedOperationPurgatory("Produce", Timer(), produce_purge_interval)
        # DeleteRecords waiting for the replicas' log start offsets (apis/delete_records.py)
        self.delete_records_purgatory = DelayedOperationPurgatory("DeleteRecords", Timer(),
                                                                  delete_records_purge_interval)
        self._purgatories = (self.fetch_purgatory, self.produce_purgatory, self.delete_records_purgatory)
        self._drivers = [AsyncTimerDriver(p.timer) for p in self._purgatories]
        # replicas being moved between this broker's log dirs (AlterReplicaLogDirs)
        self.log_dir_mover = ReplicaLogDirMover(self, quota=self.replication_quotas.alter_log_dirs)

    def attach_replication(self, fetcher_manager: FollowerFetchers, isr_manager: IsrManager) -> None:
        """The one-time wiring of the replication pieces. Their lifetimes form a true cycle, so they
        cannot be constructor arguments: the fetcher manager is built with this replica manager (its
        fetchers append to our partitions) and the ISR manager with our ``on_isr_changed`` (a written ISR
        completes waiting produces), while this replica manager drives both."""
        if self.fetcher_manager is not None or self.isr_manager is not None:
            raise RuntimeError("replication is already attached to this replica manager")
        self.fetcher_manager = fetcher_manager
        self.isr_manager = isr_manager

    def start(self) -> None:
        for driver in self._drivers:
            driver.start()

    def shutdown(self) -> None:
        self.log_dir_mover.shutdown()
        for driver in self._drivers:
            driver.shutdown()
        for purgatory in self._purgatories:
            purgatory.shutdown()

    # -- lookups ----------------------------------------------------------------------------------

    def online_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def partition_or_error(self, topic: str, partition: int) -> Partition:
        """Kafka's getPartitionOrException: unknown to the cluster vs. not hosted here."""
        found = self.partitions.get((topic, partition))
        if found is not None:
            return found
        if (topic, partition) in self.offline_partitions:
            raise KafkaStorageError(f"{topic}-{partition} is on an offline log directory of broker {self.broker_id}")
        if self.metadata_cache.partition(topic, partition) is not None:
            raise NotLeaderOrFollowerError(f"{topic}-{partition} is not hosted on broker {self.broker_id}")
        raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition:
        found = self.partition_or_error(topic, partition)
        found.ensure_leader(current_leader_epoch)
        return found

    def leader_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_leader)

    # -- changes fetch sessions must hear of -----------------------------------------------------

    def note_change(self, key: tuple[str, int]) -> None:
        self.change_seq += 1
        changes = self._changes
        changes.pop(key, None)
        changes[key] = self.change_seq

    def _wake_fetches(self, key: tuple[str, int]) -> None:
        """Parked fetches waiting on ``key``: sessionless ones watch it, sessions watch their own key."""
        purgatory = self.fetch_purgatory
        purgatory.check_and_complete(key)
        for watch_key in self.session_watch_keys(key):
            purgatory.check_and_complete(watch_key, key)

    def _wake_followers_not_fetching(self, partition: Partition) -> None:
        """A follower that has not fetched ``partition`` since we lead it may be parked in a fetch that does
        not hold it: its fetcher took the partition (a new topic, a leader change) while that fetch was out,
        and names it only in its next one, up to replica.fetch.wait.max.ms later, which an acks=-1 produce
        would wait for. Answer such parked fetches now (empty, as at expiry), once per follower and
        leadership, so the follower's next fetch names the partition. Not in Kafka 2.8, whose followers
        wait the same way; an answer before max_wait_ms is always allowed."""
        for replica, state in partition.replica_states.items():
            if state.log_end_offset < 0 and not state.woken_unfetched:
                woken = self.fetch_purgatory.cancel_for_key(follower_watch_key(replica))
                for op in woken:
                    op.force_complete()
                state.woken_unfetched = bool(woken)

    def changed_since(self, seq: int) -> list[tuple[str, int]]:
        """Partitions changed after sequence number ``seq``: O(changes since), newest first."""
        out = []
        for key, changed in reversed(self._changes.items()):
            if changed <= seq:
                break
            out.append(key)
        return out

    # -- LeaderAndIsr / StopReplica ---------------------------------------------------------------

    def check_controller_epoch(self, controller_epoch: int, what: str) -> None:
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(f"{what} with controller epoch {controller_epoch} is older than "
                                            f"the latest {self.controller_epoch}")
        self.controller_epoch = controller_epoch

    def become_leader_or_follower(self, controller_epoch: int, states: Iterable[Any],
                                  topic_configs: Mapping[str, Mapping[str, Any]],
                                  leader_endpoints: Mapping[int, tuple[str, int]] | None = None
                                  ) -> dict[tuple[str, int], int]:
        """Apply a LeaderAndIsr request's partition states at once; returns the error code per partition.

        ``leader_endpoints`` (the request's live leaders, id -> (host, port)) tell followers where
        to fetch from; leaders missing there are looked up in the metadata cache."""
        self.check_controller_epoch(controller_epoch, "LeaderAndIsr")
        return self._apply_partition_states(list(states), topic_configs, leader_endpoints or {})

    async def apply_leader_and_isr(self, controller_epoch: int, states: Iterable[Any],
                                   topic_configs: Mapping[str, Mapping[str, Any]],
                                   leader_endpoints: Mapping[int, tuple[str, int]] | None = None
                                   ) -> dict[tuple[str, int], int]:
        """``become_leader_or_follower`` for the request handler: in slices of about
        ``LEADER_AND_ISR_SLICE_S`` of work, letting the event loop serve other requests in between, under the
        replica state lock (Kafka's replicaStateChangeLock, so a newer controller's request waits), and
        with the leader epoch checkpoints written together on threads before it returns."""
        async with self.state_change_lock:
            self.check_controller_epoch(controller_epoch, "LeaderAndIsr")
            pending = list(states)
            count = len(pending)
            errors: dict[tuple[str, int], int] = {}
            started = time.monotonic()
            try:
                with batched_checkpoints() as checkpoints:
                    while pending:
                        began = time.monotonic()
                        done = 0
                        while done < len(pending) and time.monotonic() - began < LEADER_AND_ISR_SLICE_S:
                            chunk = pending[done:done + _STATES_PER_CHECK]
                            errors.update(self._apply_partition_states(chunk, topic_configs, leader_endpoints or {}))
                            done += len(chunk)
                        pending = pending[done:]
                        if pending:
                            await asyncio.sleep(0)
            finally:
                applied, written = time.monotonic(), len(checkpoints)
                await checkpoints.write_concurrently()
            if count >= 1000:  # where a big one's time goes (bench_controlled_shutdown prints it)
                log.info("LeaderAndIsr of %d partitions: states applied in %.0f ms, %d leader epoch checkpoints "
                          "written in %.0f ms", count, (applied - started) * 1000, written,
                          (time.monotonic() - applied) * 1000)
        return errors

    def _apply_partition_states(self, states: list[Any], topic_configs: Mapping[str, Mapping[str, Any]],
                                leader_endpoints: Mapping[int, tuple[str, int]]) -> dict[tuple[str, int], int]:
        errors: dict[tuple[str, int], int] = {}
        new_leaders: list[Partition] = []
        new_followers: list[Partition] = []
        for topic, state in states:
            key = (topic, state.partition_index)
            if key in self.offline_partitions:
                # its log dir is offline: the controller marks the replica offline (Kafka's HostedPartition.Offline)
                errors[key] = KafkaStorageError.code
                continue
            current = self.partitions.get(key)
            current_epoch = current.leader_epoch if current is not None else -1
            if state.leader_epoch <= current_epoch:
                # Kafka 2.8 answers an old or repeated leader epoch with STALE_CONTROLLER_EPOCH.
                errors[key] = StaleControllerEpochError.code
                continue
            if self.broker_id not in state.replicas:
                errors[key] = UnknownTopicOrPartitionError.code
                continue
            try:
                partition = current or self._create_partition(topic, state.partition_index,
                                                              topic_configs.get(topic, {}), state.is_new)
                if state.leader == self.broker_id:
                    partition.make_leader(state)
                    new_leaders.append(partition)
                else:
                    partition.make_follower(state)
                    new_followers.append(partition)
                errors[key] = 0
            except KafkaError as exc:
                errors[key] = exc.code
            except OSError:
                log.exception("Cannot create the log of %s-%d", topic, state.partition_index)
                errors[key] = KafkaStorageError.code
        # A leader change completes what waited on these partitions (with NOT_LEADER if it moved away).
        changed = [key for key, code in errors.items() if code == 0]
        for key in changed:
            self.note_change(key)
        for purgatory in self._purgatories:
            purgatory.check_and_complete_all(changed)
        self.fetch_purgatory.check_and_complete_all(
            {watch_key: None for key in changed for watch_key in self.session_watch_keys(key)})
        self._update_fetchers(new_leaders, new_followers, leader_endpoints)
        for partition in new_leaders + new_followers:  # a move a restart or StopReplica interrupted goes on
            self.log_dir_mover.resume(partition.key)
        if self.on_leadership_change is not None:
            self.on_leadership_change([p.key for p in new_leaders], [p.key for p in new_followers])
        return errors

    def _update_fetchers(self, leaders: list[Partition], followers: list[Partition],
                         endpoints: Mapping[int, tuple[str, int]]) -> None:
        """Kafka's makeLeaders/makeFollowers: leaders stop fetching; followers stop fetching from the
        old leader and start again from the new one at the new epoch (truncating first)."""
        if self.fetcher_manager is None:
            return
        self.fetcher_manager.remove_partitions([p.key for p in leaders + followers])
        targets = {}
        for partition in followers:
            endpoint = endpoints.get(partition.leader_id) or self._endpoint_from_cache(partition.leader_id)
            if endpoint is None:
                log.info("No live endpoint for leader %d of %s-%d; not fetching until a new LeaderAndIsr",
                         partition.leader_id, *partition.key)
                continue
            targets[partition.key] = (partition.leader_id, endpoint, partition.leader_epoch)
        if targets:
            self.fetcher_manager.add_partitions(targets)

    def _endpoint_from_cache(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.metadata_cache.brokers.get(broker_id)
        if broker is None or not broker.endpoints:
            return None
        listener = getattr(self.fetcher_manager, "listener_name", None)
        endpoint = broker.endpoints.get(listener) if listener else None
        endpoint = endpoint or next(iter(broker.endpoints.values()))
        return endpoint.host, endpoint.port

    def _create_partition(self, topic: str, partition: int, overrides: Mapping[str, Any],
                          is_new: bool = True) -> Partition:
        log_ = self.log_manager.get_or_create_log(topic, partition, overrides, is_new)
        created = Partition(topic, partition, self.broker_id, log_, self.clock, self.follower_fetch_ms)
        self.partitions[(topic, partition)] = created
        return created

    def stop_replicas(self, controller_epoch: int,
                      partitions: Iterable[tuple[str, int, int, bool]]) -> dict[tuple[str, int], int]:
        """StopReplica: (topic, partition, leader_epoch, delete) each; returns the error per partition."""
        self.check_controller_epoch(controller_epoch, "StopReplica")
        errors: dict[tuple[str, int], int] = {}
        stopped: list[tuple[str, int]] = []
        for topic, index, leader_epoch, delete in partitions:
            key = (topic, index)
            if key in self.offline_partitions:
                errors[key] = KafkaStorageError.code
                continue
            current = self.partitions.get(key)
            if current is not None and leader_epoch not in (-1, EPOCH_DURING_DELETE) \
                    and leader_epoch < current.leader_epoch:
                errors[key] = FencedLeaderEpochError.code
                continue
            self.partitions.pop(key, None)
            self.log_dir_mover.stop(key)  # the future log stays (and resumes) unless the replica is deleted
            stopped.append(key)
            self.note_change(key)
            for purgatory in self._purgatories:
                for op in purgatory.cancel_for_key(key):
                    op.force_complete()  # they see the partition gone and answer NOT_LEADER
            self._wake_fetches(key)  # fetch sessions holding it
            if delete:
                try:
                    self.log_manager.delete_log(topic, index)
                except OSError:
                    log.exception("Cannot delete the log of %s-%d", topic, index)
                    errors[key] = KafkaStorageError.code
                    continue
            errors[key] = 0
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions(stopped)
        if self.on_leadership_change is not None:
            self.on_leadership_change([], [key for key, code in errors.items() if code == 0])
        return errors

    # -- log directory failure ----------------------------------------------------------------------

    def is_offline(self, key: tuple[str, int]) -> bool:
        return key in self.offline_partitions

    def handle_log_dir_failure(self, log_dir: str) -> list[tuple[str, int]]:
        """Kafka's ReplicaManager.handleLogDirFailure: the directory's partitions stop (no fetcher, parked
        requests answered, KAFKA_STORAGE_ERROR from now on) and the LogManager drops their logs. Returns them;
        the caller tells the controller (log_dir_failure_handler.py)."""
        gone = [key for key, partition in self.partitions.items() if os.path.dirname(partition.log.dir) == log_dir]
        for key in gone:
            del self.partitions[key]
            self.offline_partitions.add(key)
            self.log_dir_mover.stop(key)
        for key, future in self.log_manager.future_logs().items():  # moves into the dir stop (Kafka's too)
            if os.path.dirname(future.dir) == log_dir:
                self.log_dir_mover.stop(key)
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions(gone)
        for key in gone:
            self.note_change(key)
            for purgatory in self._purgatories:  # what waits on them is answered KAFKA_STORAGE_ERROR
                purgatory.check_and_complete(key)
            self._wake_fetches(key)
        self.log_manager.handle_log_dir_failure(log_dir)
        if self.on_leadership_change is not None:  # coordinators unload what they led there
            self.on_leadership_change([], gone)
        log.warning("Broker %d stopped serving replicas in %s: %s", self.broker_id, log_dir,
                    [f"{t}-{p}" for t, p in gone][:50])
        return gone

    # -- produce ----------------------------------------------------------------------------------

    def append_records(self, required_acks: int, timeout_ms: int,
                       entries: Mapping[tuple[str, int], bytearray | KafkaError]
                       ) -> dict[tuple[str, int], ProducePartitionResult] | Completion:
        """Append to local leaders. Returns the results, or (acks=-1 still waiting) a Completion of them, set
        in the call that moves the high watermark past the records (purgatory/completion.py).

        ``entries`` maps a partition to its validated batch, or to the error its validation raised.
        """
        results: dict[tuple[str, int], ProducePartitionResult] = {}
        if required_acks not in (-1, 0, 1):
            # partitions already refused (unknown, unauthorized) keep their error, as in Kafka
            for key, records in entries.items():
                results[key] = ProducePartitionResult(
                    records.code if isinstance(records, KafkaError) else InvalidRequiredAcksError.code)
            return results
        appended: dict[tuple[str, int], int] = {}
        for key, records in entries.items():
            if isinstance(records, KafkaError):  # Kafka sends a message only with record errors (below)
                results[key] = ProducePartitionResult(records.code)
                self.topic_stats.record_failed_produce(key[0])
                continue
            partition = None
            try:
                partition = self.partition_or_error(*key)
                info, _ = partition.append_records_to_leader(records, required_acks)
            except KafkaError as exc:
                if exc.code == OutOfOrderSequenceNumberError.code:  # Kafka 2.8 logs it at ERROR too
                    log.error("Error processing append operation on partition %s-%d (leader epoch %d, log end "
                              "offset %d): %s", *key, partition.leader_epoch, partition.log_end_offset, exc)
                # Kafka's processFailedRecord: the log start offset of a partition hosted here; a message only
                # for a RecordValidationException (one with record errors)
                record_errors = getattr(exc, "record_errors", None)
                start = partition.log.log_start_offset if partition is not None and partition.log is not None else -1
                results[key] = ProducePartitionResult(exc.code, log_start_offset=start,
                                                      error_message=(exc.detail or None) if record_errors else None,
                                                      record_errors=record_errors)
                self.topic_stats.record_failed_produce(key[0])
                continue
            except Exception as exc:  # Kafka's appendToLocalLog: "case t: Throwable", this partition only
                log.error("Error processing append operation on partition %s-%d", *key, exc_info=exc)
                results[key] = ProducePartitionResult(UnknownServerError.code)
                self.topic_stats.record_failed_produce(key[0])
                continue
            self.topic_stats.record_append(key[0], info.last_offset - info.first_offset + 1, len(records))
            results[key] = ProducePartitionResult(0, info.first_offset, info.log_append_time,
                                                  info.log_start_offset)
            appended[key] = info.last_offset + 1
            self.note_change(key)
            # Consumers wake on a high watermark move, followers on any append.
            self._wake_fetches(key)
            self._wake_followers_not_fetching(partition)
        if required_acks != -1 or not appended:
            return results
        statuses = {key: ProduceStatus(appended.get(key, 0), result, acks_pending=key in appended)
                    for key, result in results.items()}
        future = Completion()
        op = DelayedProduce(timeout_ms, statuses, self, future)
        self.produce_purgatory.try_complete_else_watch(op, list(appended))
        return future

    # -- fetch ------------------------------------------------------------------------------------

    def fetch_messages(self, params: FetchParams, specs: list[FetchSpec],
                       to_read: Callable[[], list[FetchSpec]] | None = None,
                       watch_keys: list[Hashable] | None = None,
                       spec_of: Callable[[tuple[str, int]], FetchSpec | None] | None = None
                       ) -> dict[tuple[str, int], FetchPartitionResult] | Completion:
        """Read now if there is enough (or an error, or no wait); otherwise a Completion of the results, set in
        the call that wakes the fetch (an append, a high watermark move).

        ``specs`` are the partitions the fetch waits on; ``to_read()`` (default: all of them) the ones
        worth reading now, asked again when a parked fetch completes (a fetch session's changed ones).
        ``watch_keys``: park under these (a fetch session's key, see session_watch_keys) rather than one
        key per partition; ``spec_of`` then finds the spec of the partition that woke it."""
        results = self.read_from_local_log(specs if to_read is None else to_read(), params)
        for (topic, _), result in results.items():
            self.topic_stats.record_fetch_request(topic, failed=result.error_code != 0)
        if params.max_wait_ms <= 0 or not specs or params.min_bytes <= 0:
            return results
        total = 0
        for result in results.values():
            if result.error_code or result.preferred_read_replica >= 0:  # Kafka answers either at once
                return results
            total += len(result.records)
        if total >= params.min_bytes:
            return results
        future = Completion()
        op = DelayedFetch(params.max_wait_ms, specs, params, self, future, to_read, spec_of)
        # A follower's partitions were just read, synchronously: trying again finds nothing new (a consumer's
        # try may still complete at once, for a fetch offset above the high watermark, as Kafka's).
        keys = watch_keys or [(s.topic, s.partition) for s in specs]
        if not params.committed_only:  # a follower: see _wake_followers_not_fetching
            keys = [*keys, follower_watch_key(params.replica_id)]
        self.fetch_purgatory.try_complete_else_watch(op, keys, tried=not params.committed_only)
        return future

    def read_from_local_log(self, specs: list[FetchSpec], params: FetchParams
                            ) -> dict[tuple[str, int], FetchPartitionResult]:
        """Kafka's readFromLocalLog: the first batch may exceed the limits (KIP-74) unless Fetch v0-2.

        Each partition is read under its own guard: whatever goes wrong with one (a negative partition
        max bytes, a storage failure, a bug) is that partition's error, never the request's.

        A follower's position is recorded on every read, a parked fetch's answer included: Kafka records it
        once per fetch, but Kafka's incremental session reads every partition of the session at every fetch,
        while ours reads only those that changed. A follower whose ISR expansion was held back by a write in
        flight is retried from here; without it, it never rejoined (test_election_safety.py)."""
        results: dict[tuple[str, int], FetchPartitionResult] = {}
        limit = params.max_bytes
        min_one = not params.hard_max_bytes_limit
        committed_only = params.committed_only
        read_committed = params.read_committed
        if not committed_only and params.replica_id >= 0:
            self.follower_fetch_ms[params.replica_id] = self.clock()
        for spec in specs:
            key = (spec.topic, spec.partition)
            try:
                if params.replica_id == DEBUGGING_CONSUMER_ID:  # reads a follower too, below its HW
                    partition = self.partition_or_error(spec.topic, spec.partition)
                elif params.client is not None:
                    partition = self.partition_or_error(spec.topic, spec.partition)
                    partition.check_leader_epoch(spec.current_leader_epoch)
                    redirect = self._redirect(partition, params.client, spec)
                    if redirect is not None:
                        results[key] = redirect
                        continue
                else:
                    partition = self.leader_partition(spec.topic, spec.partition, spec.current_leader_epoch)
                assigned = committed_only or partition.knows_replica(params.replica_id)
                if not committed_only:
                    diverged = self._diverged(partition, spec)
                    if diverged is not None:
                        results[key] = diverged
                        continue
                leader_end = partition.log_end_offset
                data = partition.read(spec.fetch_offset, min(spec.max_bytes, limit),
                                      committed_only=committed_only, min_one_batch=min_one,
                                      read_committed=read_committed,
                                      leader_only=params.replica_id != DEBUGGING_CONSUMER_ID and params.client is None)
                if not assigned:
                    # Kafka 2.8's updateFollowerFetchState: a replica id that is not one of the partition's
                    # followers is answered without records, and its position is not recorded.
                    log.warning("Leader %d: replica %d is not assigned to %s-%d (replicas %s): no records",
                                self.broker_id, params.replica_id, spec.topic, spec.partition, partition.replicas)
                    log_ = partition.log
                    results[key] = FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset,
                                                        log_.log_start_offset, b"")
                    continue
                if not committed_only:
                    if data.records and self.should_leader_throttle(partition, params.replica_id):
                        data = data._replace(records=b"")  # Kafka: throttled and over the quota: no records
                        self.replication_quotas.leader.throttle_events += 1
                    self._update_follower(partition, params.replica_id, spec.fetch_offset, leader_end,
                                          spec.log_start_offset, params.previous_fetch_ms)
                log_ = partition.log
                results[key] = result = FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset,
                                                             log_.log_start_offset, data.records)
                if not data.records:
                    available = leader_end if not committed_only else (
                        log_.last_stable_offset if read_committed else log_.high_watermark)
                    result.withheld = available > spec.fetch_offset
                if read_committed:
                    results[key].aborted_transactions = \
                        log_.aborted_transactions_in(spec.fetch_offset, data.records) if data.records else []
                if data.records:
                    self.topic_stats.record_bytes_out(spec.topic, len(data.records), not committed_only)
                    min_one = False
                    limit = max(0, limit - len(data.records))
            except KafkaError as exc:
                results[key] = FetchPartitionResult(exc.code)
            except Exception as exc:
                # Kafka's "case e: Throwable": UNKNOWN_SERVER_ERROR for this partition, logged.
                results[key] = FetchPartitionResult(UnknownServerError.code)
                log.error("Error processing fetch with max size %d from replica %d on partition %s-%d "
                          "(offset %d): %s", min(spec.max_bytes, limit), params.replica_id, spec.topic,
                          spec.partition, spec.fetch_offset, exc,
                          exc_info=None if isinstance(exc, InvalidReadSizeError) else exc)
        return results

    def _redirect(self, partition: Partition, client: ClientMetadata, spec: FetchSpec) -> FetchPartitionResult | None:
        """KIP-392: the answer sending a consumer to its preferred read replica, or None to read here."""
        if self.replica_selector is None:
            return None
        preferred = preferred_read_replica(self.replica_selector, partition, self.metadata_cache, client,
                                           spec.fetch_offset, self.clock())
        if preferred is None:
            return None
        log_ = partition.log
        return FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset, log_.log_start_offset, b"",
                                    preferred_read_replica=preferred)

    def follower_offsets_moved(self, key: tuple[str, int]) -> None:
        """A follower's high watermark or log start offset moved: consumers reading this follower (KIP-392)
        hear of it (Kafka's completeDelayedFetchRequests from the replica fetcher)."""
        self.note_change(key)
        self._wake_fetches(key)

    # -- the leader's view of its followers -------------------------------------------------------

    def should_leader_throttle(self, partition: Partition, replica_id: int) -> bool:
        """Kafka's shouldLeaderThrottle: a follower outside the ISR, a throttled partition, quota exceeded."""
        return self.replication_quotas.should_leader_throttle(partition.key, partition.isr, replica_id)

    def _diverged(self, partition: Partition, spec: FetchSpec) -> FetchPartitionResult | None:
        """A follower whose log diverged gets its diverging epoch and no records (None: it did not)."""
        diverging = partition.diverging_epoch(spec.fetch_offset, spec.last_fetched_epoch)
        if diverging is None:
            return None
        log_ = partition.log
        return FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset, log_.log_start_offset, b"",
                                    diverging_epoch=diverging)

    def _update_follower(self, partition: Partition, replica_id: int, fetch_offset: int, leader_end: int,
                         log_start_offset: int = -1, previous_fetch_ms: int | None = None) -> None:
        """Kafka's updateFollowerFetchState: position, caught-up time, HW, log start offset (waiting
        DeleteRecords), and maybe a bigger ISR."""
        if partition.update_follower_position(replica_id, fetch_offset, leader_end, log_start_offset,
                                              previous_fetch_ms):
            # The high watermark moved: consumers and acks=-1 produces waiting for it can go on; the
            # consumers first, as Kafka's tryCompleteDelayedRequests (the records reach them sooner).
            self.note_change(partition.key)
            self._wake_fetches(partition.key)
            self.produce_purgatory.check_and_complete(partition.key)
        self.delete_records_purgatory.check_and_complete(partition.key)
        new_isr = partition.isr_to_expand(replica_id)
        if new_isr is not None:
            log.debug("[Partition %s-%d broker=%d] expanding ISR from %s to %s", *partition.key, self.broker_id,
                      partition.isr, new_isr)  # the ISR manager logs what it writes, in one line
            self.isr_expands += 1
            self._change_isr(partition, new_isr)

    async def shrink_lagging_isrs(self, max_lag_ms: int, step: int = ISR_CHECK_STEP) -> int:
        """The periodic lag check (every replica.lag.time.max.ms / 2), ``step`` partitions at a time with the
        event loop free in between: in one go it held the loop 20-35 ms at 10,000 partitions (Kafka runs it on
        its scheduler thread). A partition replaced or removed meanwhile is skipped. Returns how many ISRs shrank."""
        partitions = list(self.partitions.values())
        shrunk = []
        for start in range(0, len(partitions), step):
            if start:
                await asyncio.sleep(0)
            for partition in partitions[start:start + step]:
                if self.partitions.get(partition.key) is partition and self._shrink_if_lagging(partition, max_lag_ms):
                    shrunk.append(partition.key)
        self._log_shrunk(shrunk, max_lag_ms)
        return len(shrunk)

    def _shrink_if_lagging(self, partition: Partition, max_lag_ms: int) -> bool:
        new_isr = partition.isr_to_shrink(max_lag_ms)
        if new_isr is None:
            return False
        log.debug("[Partition %s-%d broker=%d] shrinking ISR from %s to %s (not caught up within %d ms)",
                  *partition.key, self.broker_id, partition.isr, new_isr, max_lag_ms)
        self.isr_shrinks += 1
        self._change_isr(partition, new_isr)
        return True

    def _log_shrunk(self, shrunk: list[tuple[str, int]], max_lag_ms: int) -> None:
        if shrunk:
            log.info("[Broker %d] shrinking the ISRs of %d partitions whose followers did not catch up within %d ms: "
                     "%s%s", self.broker_id, len(shrunk), max_lag_ms, ", ".join(f"{t}-{p}" for t, p in shrunk[:10]),
                     " ..." if len(shrunk) > 10 else "")

    def _change_isr(self, partition: Partition, new_isr: list[int]) -> None:
        if self.isr_manager is not None:
            self.isr_manager.submit(partition, new_isr)
            return
        partition.apply_isr(new_isr, partition.partition_epoch + 1)  # no ZooKeeper (unit tests)
        self.on_isr_changed(partition)

    def on_isr_changed(self, partition: Partition) -> None:
        """A new ISR may move the high watermark, or fail waiting produces (too few replicas left)."""
        self.note_change(partition.key)
        self._wake_fetches(partition.key)
        self.produce_purgatory.check_and_complete(partition.key)

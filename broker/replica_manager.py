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
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

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
from .delayed_ops import DelayedFetch, DelayedProduce, FetchSpec, ProduceStatus
from .log import InvalidReadSizeError, LogManager
from .metrics.topic_stats import BrokerTopicStats
from .metadata_cache import MetadataCache
from .partition import Partition, monotonic_ms
from .purgatory import AsyncTimerDriver, DelayedOperationPurgatory, Timer
from .replication_quota import ReplicationQuotas

log = logging.getLogger(__name__)

# StopReplica v3 marks partitions of a topic being deleted with this leader epoch (Kafka's EpochDuringDelete).
EPOCH_DURING_DELETE = -2


@dataclass
class ProducePartitionResult:
    error_code: int = 0
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str]] | None = None  # (index in the batch, message): Produce v8+


# Kafka's Request.DebuggingConsumerId: the replica verification tool. Kafka 2.8 lets any consumer with
# Fetch v11+ read a follower (KIP-392, below the follower's high watermark); we allow it only this id,
# so a client with stale metadata still gets NOT_LEADER_OR_FOLLOWER from a former leader.
DEBUGGING_CONSUMER_ID = -2


@dataclass
class FetchParams:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = 0
    hard_max_bytes_limit: bool = False  # Fetch v0-2: never return a batch over the partition's max

    @property
    def committed_only(self) -> bool:
        """Consumers read below the high watermark; followers (replica_id >= 0) read to the log end."""
        return self.replica_id < 0

    @property
    def read_committed(self) -> bool:
        """isolation_level 1: below the last stable offset, with the aborted transactions. Followers
        always read uncommitted data (Kafka ignores their isolation level)."""
        return self.isolation_level == 1 and self.replica_id < 0


@dataclass
class FetchPartitionResult:
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) for a follower that diverged
    aborted_transactions: list | None = None  # read_committed: AbortedTxn entries overlapping the records


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, metadata_cache: MetadataCache,
                 clock: Callable[[], int] = monotonic_ms, *, fetch_purge_interval: int = 1000,
                 produce_purge_interval: int = 1000, delete_records_purge_interval: int = 1) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.clock = clock
        self.isr_manager: Any = None      # broker.isr_manager.IsrManager; None: ISR changes stay in memory
        self.fetcher_manager: Any = None  # broker.replica_fetcher.ReplicaFetcherManager; None: no fetching
        # Told (led keys, no longer led keys) after LeaderAndIsr and StopReplica: the group coordinator
        # loads and unloads its __consumer_offsets partitions (Kafka's onLeadershipChange callback).
        self.on_leadership_change: Callable[[list[tuple[str, int]], list[tuple[str, int]]], None] | None = None
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.controller_epoch = 0
        self.topic_stats = BrokerTopicStats()  # per-topic bytes and records (broker/metrics)
        # Replication throttles (leader side here, follower side in the replica fetcher); the server
        # replaces it with one built from its config and fed by the dynamic config manager.
        self.replication_quotas = ReplicationQuotas(broker_id)
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

    def start(self) -> None:
        for driver in self._drivers:
            driver.start()

    def shutdown(self) -> None:
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
        if self.metadata_cache.partition(topic, partition) is not None:
            raise NotLeaderOrFollowerError(f"{topic}-{partition} is not hosted on broker {self.broker_id}")
        raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Partition:
        found = self.partition_or_error(topic, partition)
        found.ensure_leader(current_leader_epoch)
        return found

    def leader_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_leader)

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
        """Apply a LeaderAndIsr request's partition states; returns the error code per partition.

        ``leader_endpoints`` (the request's live leaders, id -> (host, port)) tell followers where
        to fetch from; leaders missing there are looked up in the metadata cache."""
        self.check_controller_epoch(controller_epoch, "LeaderAndIsr")
        errors: dict[tuple[str, int], int] = {}
        new_leaders: list[Partition] = []
        new_followers: list[Partition] = []
        for topic, state in states:
            key = (topic, state.partition_index)
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
                                                              topic_configs.get(topic, {}))
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
            # A leader change completes what waited on this partition (with NOT_LEADER if it moved away).
            for purgatory in self._purgatories:
                purgatory.check_and_complete(key)
        self._update_fetchers(new_leaders, new_followers, leader_endpoints or {})
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

    def _create_partition(self, topic: str, partition: int, overrides: Mapping[str, Any]) -> Partition:
        log_ = self.log_manager.get_or_create_log(topic, partition, overrides)
        created = Partition(topic, partition, self.broker_id, log_, self.clock)
        self.partitions[(topic, partition)] = created
        return created

    def stop_replicas(self, controller_epoch: int,
                      partitions: Iterable[tuple[str, int, int, bool]]) -> dict[tuple[str, int], int]:
        """StopReplica: (topic, partition, leader_epoch, delete) each; returns the error per partition."""
        self.check_controller_epoch(controller_epoch, "StopReplica")
        errors: dict[tuple[str, int], int] = {}
        for topic, index, leader_epoch, delete in partitions:
            key = (topic, index)
            current = self.partitions.get(key)
            if current is not None and leader_epoch not in (-1, EPOCH_DURING_DELETE) \
                    and leader_epoch < current.leader_epoch:
                errors[key] = FencedLeaderEpochError.code
                continue
            self.partitions.pop(key, None)
            if self.fetcher_manager is not None:
                self.fetcher_manager.remove_partitions([key])
            for purgatory in self._purgatories:
                for op in purgatory.cancel_for_key(key):
                    op.force_complete()  # they see the partition gone and answer NOT_LEADER
            if delete:
                try:
                    self.log_manager.delete_log(topic, index)
                except OSError:
                    log.exception("Cannot delete the log of %s-%d", topic, index)
                    errors[key] = KafkaStorageError.code
                    continue
            errors[key] = 0
        if self.on_leadership_change is not None:
            self.on_leadership_change([], [key for key, code in errors.items() if code == 0])
        return errors

    # -- produce ----------------------------------------------------------------------------------

    def append_records(self, required_acks: int, timeout_ms: int,
                       entries: Mapping[tuple[str, int], bytearray | KafkaError]
                       ) -> dict[tuple[str, int], ProducePartitionResult] | asyncio.Future:
        """Append to local leaders. Returns the results, or (acks=-1 still waiting) a future of them.

        ``entries`` maps a partition to its validated batch, or to the error its validation raised.
        """
        results: dict[tuple[str, int], ProducePartitionResult] = {}
        if required_acks not in (-1, 0, 1):
            for key in entries:
                results[key] = ProducePartitionResult(InvalidRequiredAcksError.code)
            return results
        appended: dict[tuple[str, int], int] = {}
        for key, records in entries.items():
            if isinstance(records, KafkaError):
                results[key] = ProducePartitionResult(records.code, error_message=records.detail or None)
                self.topic_stats.record_failed_produce(key[0])
                continue
            try:
                partition = self.partition_or_error(*key)
                info, _ = partition.append_records_to_leader(records, required_acks)
            except KafkaError as exc:
                if exc.code == OutOfOrderSequenceNumberError.code:  # Kafka 2.8 logs it at ERROR too
                    log.error("Error processing append operation on partition %s-%d (leader epoch %d, log end "
                              "offset %d): %s", *key, partition.leader_epoch, partition.log_end_offset, exc)
                results[key] = ProducePartitionResult(exc.code, error_message=exc.detail or None,
                                                      record_errors=getattr(exc, "record_errors", None))
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
            # Consumers wake on a high watermark move, followers on any append.
            self.fetch_purgatory.check_and_complete(key)
        if required_acks != -1 or not appended:
            return results
        statuses = {key: ProduceStatus(appended.get(key, 0), result, acks_pending=key in appended)
                    for key, result in results.items()}
        future = asyncio.get_running_loop().create_future()
        op = DelayedProduce(timeout_ms, statuses, self, future)
        self.produce_purgatory.try_complete_else_watch(op, list(appended))
        return future

    # -- fetch ------------------------------------------------------------------------------------

    def fetch_messages(self, params: FetchParams, specs: list[FetchSpec]
                       ) -> dict[tuple[str, int], FetchPartitionResult] | asyncio.Future:
        """Read now if there is enough (or an error, or no wait); otherwise a future of the results."""
        results = self.read_from_local_log(specs, params)
        for (topic, _), result in results.items():
            self.topic_stats.record_fetch_request(topic, failed=result.error_code != 0)
        if params.max_wait_ms <= 0 or not specs or params.min_bytes <= 0:
            return results
        total = 0
        for result in results.values():
            if result.error_code:
                return results
            total += len(result.records)
        if total >= params.min_bytes:
            return results
        future = asyncio.get_running_loop().create_future()
        op = DelayedFetch(params.max_wait_ms, specs, params, self, future)
        self.fetch_purgatory.try_complete_else_watch(op, [(s.topic, s.partition) for s in specs])
        return future

    def read_from_local_log(self, specs: list[FetchSpec], params: FetchParams
                            ) -> dict[tuple[str, int], FetchPartitionResult]:
        """Kafka's readFromLocalLog: the first batch may exceed the limits (KIP-74) unless Fetch v0-2.

        Each partition is read under its own guard: whatever goes wrong with one (a negative partition
        max bytes, a storage failure, a bug) is that partition's error, never the request's."""
        results: dict[tuple[str, int], FetchPartitionResult] = {}
        limit = params.max_bytes
        min_one = not params.hard_max_bytes_limit
        committed_only = params.committed_only
        read_committed = params.read_committed
        for spec in specs:
            key = (spec.topic, spec.partition)
            try:
                if params.replica_id == DEBUGGING_CONSUMER_ID:  # reads a follower too, below its HW
                    partition = self.partition_or_error(spec.topic, spec.partition)
                else:
                    partition = self.leader_partition(spec.topic, spec.partition, spec.current_leader_epoch)
                if not committed_only:
                    diverged = self._check_follower(partition, params.replica_id, spec)
                    if diverged is not None:
                        results[key] = diverged
                        continue
                leader_end = partition.log_end_offset
                data = partition.read(spec.fetch_offset, min(spec.max_bytes, limit),
                                      committed_only=committed_only, min_one_batch=min_one,
                                      read_committed=read_committed,
                                      leader_only=params.replica_id != DEBUGGING_CONSUMER_ID)
                if not committed_only:
                    if data.records and self.should_leader_throttle(partition, params.replica_id):
                        data = data._replace(records=b"")  # Kafka: throttled and over the quota: no records
                        self.replication_quotas.leader.throttle_events += 1
                    self._update_follower(partition, params.replica_id, spec.fetch_offset, leader_end,
                                          spec.log_start_offset)
                log_ = partition.log
                results[key] = FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset,
                                                    log_.log_start_offset, data.records)
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

    # -- the leader's view of its followers -------------------------------------------------------

    def should_leader_throttle(self, partition: Partition, replica_id: int) -> bool:
        """Kafka's shouldLeaderThrottle: a follower outside the ISR, a throttled partition, quota exceeded."""
        return self.replication_quotas.should_leader_throttle(partition.key, partition.isr, replica_id)

    def _check_follower(self, partition: Partition, replica_id: int, spec: FetchSpec
                        ) -> FetchPartitionResult | None:
        """An unassigned replica is refused; a diverged one gets its diverging epoch and no records."""
        if not partition.knows_replica(replica_id):
            raise NotLeaderOrFollowerError(f"replica {replica_id} is not assigned to {partition.topic}-"
                                           f"{partition.partition} (replicas {partition.replicas})")
        diverging = partition.diverging_epoch(spec.fetch_offset, spec.last_fetched_epoch)
        if diverging is None:
            return None
        log_ = partition.log
        return FetchPartitionResult(0, log_.high_watermark, log_.last_stable_offset, log_.log_start_offset, b"",
                                    diverging_epoch=diverging)

    def _update_follower(self, partition: Partition, replica_id: int, fetch_offset: int, leader_end: int,
                         log_start_offset: int = -1) -> None:
        """Kafka's updateFollowerFetchState: position, caught-up time, HW, log start offset (waiting
        DeleteRecords), and maybe a bigger ISR."""
        if partition.update_follower_position(replica_id, fetch_offset, leader_end, log_start_offset):
            # The high watermark moved: acks=-1 produces and consumers waiting for it can go on.
            self.produce_purgatory.check_and_complete(partition.key)
            self.fetch_purgatory.check_and_complete(partition.key)
        self.delete_records_purgatory.check_and_complete(partition.key)
        new_isr = partition.isr_to_expand(replica_id)
        if new_isr is not None:
            log.info("[Partition %s-%d broker=%d] expanding ISR from %s to %s", *partition.key, self.broker_id,
                     partition.isr, new_isr)
            self.isr_expands += 1
            self._change_isr(partition, new_isr)

    def maybe_shrink_isr(self, max_lag_ms: int) -> int:
        """The periodic lag check (every replica.lag.time.max.ms / 2); returns how many ISRs shrank."""
        shrunk = 0
        for partition in list(self.partitions.values()):
            new_isr = partition.isr_to_shrink(max_lag_ms)
            if new_isr is None:
                continue
            log.info("[Partition %s-%d broker=%d] shrinking ISR from %s to %s (not caught up within %d ms)",
                     *partition.key, self.broker_id, partition.isr, new_isr, max_lag_ms)
            self.isr_shrinks += 1
            self._change_isr(partition, new_isr)
            shrunk += 1
        return shrunk

    def _change_isr(self, partition: Partition, new_isr: list[int]) -> None:
        if self.isr_manager is not None:
            self.isr_manager.submit(partition, new_isr)
            return
        partition.apply_isr(new_isr, partition.partition_epoch + 1)  # no ZooKeeper (unit tests)
        self.on_isr_changed(partition)

    def on_isr_changed(self, partition: Partition) -> None:
        """A new ISR may move the high watermark, or fail waiting produces (too few replicas left)."""
        self.produce_purgatory.check_and_complete(partition.key)
        self.fetch_purgatory.check_and_complete(partition.key)

"""TransactionStateManager: the transactional ids of the ``__transaction_state`` partitions this broker leads.

A transactional id lives in partition ``Utils.abs(hashCode(id)) % transaction.state.log.num.partitions``
(Java's String.hashCode, as Kafka 2.8). When this broker becomes a partition's leader it reads the
partition from its start (last record per id wins, a null value removes the id) under the
partition's leader epoch, which is the coordinator epoch written into markers; until then the ids
answer COORDINATOR_LOAD_IN_PROGRESS. Transactions found in PrepareCommit/PrepareAbort are handed to
``on_partition_loaded`` so their markers are sent again. State changes are appended with acks=-1
through the replica manager and applied to the cache only once the append succeeded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ....protocol.records import RecordBatchBuilder, iter_batches
from ..group.metadata_manager import kafka_partition_for, wall_ms
from . import records as fmt
from .trace import trace
from .transaction_metadata import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    DEAD,
    EMPTY,
    NONE,
    NOT_COORDINATOR,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    STATE_NAMES,
    UNKNOWN_SERVER_ERROR,
    TransactionMetadata,
    TxnTransit,
)

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"

# Kafka's TransactionStateManager.appendTransactionToLog error mapping.
_NOT_AVAILABLE = {3, 19, 20, 7}      # unknown partition, not enough replicas (after append), request timed out
_NOT_COORDINATOR = {6, 56}           # not leader or follower, storage error
_UNKNOWN = {10, 18}                  # message too large, record list too large


@dataclass
class TxnEntry:
    """A cached transaction and the epoch of the coordinator that loaded it (Kafka's CoordinatorEpochAndTxnMetadata)."""
    coordinator_epoch: int
    metadata: TransactionMetadata


@dataclass
class _CompletionWrite:
    """A CompleteCommit/CompleteAbort appended and waiting to be replicated, and the next transaction's Ongoing
    state appended right behind it meanwhile (append_behind_completion): its transition and append result."""
    transit: TxnTransit
    coordinator_epoch: int
    behind: tuple[TxnTransit, Awaitable[Any]] | None = None


class TransactionStateManager:
    def __init__(self, broker_id: int, config: Any, replica_manager: Any) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.num_partitions: int = config.get("transaction.state.log.num.partitions")
        self.load_buffer_size: int = config.get("transaction.state.log.load.buffer.size")
        self.max_timeout_ms: int = config.get("transaction.max.timeout.ms")
        self.id_expiration_ms: int = config.get("transactional.id.expiration.ms")
        self.request_timeout_ms: int = config.get("request.timeout.ms")
        self._config = config
        # partition -> (coordinator epoch, {transactional id: metadata}) of the partitions loaded here
        self.partitions: dict[int, tuple[int, dict[str, TransactionMetadata]]] = {}
        self.loading: dict[int, int] = {}   # partition -> coordinator epoch being loaded
        self._loads: set[asyncio.Task] = set()
        # Called with (partition, coordinator epoch, transactions in PrepareCommit/PrepareAbort) after a load.
        self.on_partition_loaded: Callable[[int, int, list[TransactionMetadata]], None] | None = None
        # Called with the partition when it is unloaded (its markers stop).
        self.on_partition_unloaded: Callable[[int], None] | None = None
        # Called with the transactional id after each write of its state, applied or failed (requests
        # held until the id's transaction completes re-check then).
        self.on_transition: Callable[[str], None] | None = None
        # transactional id -> its completion being replicated, for append_behind_completion
        self._completion_writes: dict[str, _CompletionWrite] = {}

    # -- placement --------------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return kafka_partition_for(transactional_id, self.num_partitions)

    def validate_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.max_timeout_ms

    def topic_configs(self) -> dict[str, str]:
        """Kafka's transactionTopicConfigs."""
        cfg = self._config
        return {"cleanup.policy": "compact", "compression.type": "uncompressed",
                "unclean.leader.election.enable": "false",
                "min.insync.replicas": str(cfg.get("transaction.state.log.min.isr")),
                "segment.bytes": str(cfg.get("transaction.state.log.segment.bytes"))}

    # -- lookups ----------------------------------------------------------------------------------

    def get_state(self, transactional_id: str) -> tuple[int, TxnEntry | None]:
        """(error, entry): COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR if not ours,
        else (NONE, the entry or None when the id is unknown)."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading:
            return COORDINATOR_LOAD_IN_PROGRESS, None
        owned = self.partitions.get(partition)
        if owned is None:
            return NOT_COORDINATOR, None
        epoch, cache = owned
        metadata = cache.get(transactional_id)
        return NONE, TxnEntry(epoch, metadata) if metadata is not None else None

    def put_if_not_exists(self, metadata: TransactionMetadata) -> tuple[int, TxnEntry | None]:
        partition = self.partition_for(metadata.transactional_id)
        code, entry = self.get_state(metadata.transactional_id)
        if code != NONE or entry is not None:
            return code, entry
        epoch, cache = self.partitions[partition]
        cache[metadata.transactional_id] = metadata
        return NONE, TxnEntry(epoch, metadata)

    def all_transactions(self) -> list[TransactionMetadata]:
        return [m for _, cache in self.partitions.values() for m in cache.values()]

    # -- leadership -------------------------------------------------------------------------------

    def on_leadership_change(self, led: list[tuple[str, int]], not_led: list[tuple[str, int]]) -> None:
        for topic, partition in not_led:
            if topic == TRANSACTION_STATE_TOPIC:
                self.unload_partition(partition)
        for topic, partition in led:
            if topic == TRANSACTION_STATE_TOPIC:
                found = self.replica_manager.online_partition(topic, partition)
                if found is not None:
                    self.load_partition(partition, found.leader_epoch)

    def load_partition(self, partition: int, coordinator_epoch: int) -> None:
        """Start loading (Kafka's loadTransactionsForTxnTopicPartition). A partition this broker already
        leads keeps its coordinator epoch: Kafka elects (and loads) only on becoming leader, not on a
        leader epoch bumped by an ISR change."""
        if partition in self.partitions or partition in self.loading:
            return
        found = self.replica_manager.online_partition(TRANSACTION_STATE_TOPIC, partition)
        if found is None:
            return
        self.loading[partition] = coordinator_epoch
        task = asyncio.get_running_loop().create_task(self._load(partition, coordinator_epoch, found.log))
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def _load(self, partition: int, coordinator_epoch: int, log_: Any) -> None:
        started = time.monotonic()
        try:
            loaded = await self._read_partition(log_, partition, coordinator_epoch)
        except Exception:
            log.exception("Error loading transactions from %s-%d", TRANSACTION_STATE_TOPIC, partition)
            if self.loading.get(partition) == coordinator_epoch:
                del self.loading[partition]
            return
        if self.loading.get(partition) != coordinator_epoch:
            return  # unloaded or reloaded meanwhile
        del self.loading[partition]
        cache = {tid: TransactionMetadata.from_record(tid, record) for tid, record in loaded.items()}
        self.partitions[partition] = (coordinator_epoch, cache)
        log.info("Finished loading %d transaction metadata from %s-%d in %d ms (coordinator epoch %d)", len(cache),
                 TRANSACTION_STATE_TOPIC, partition, (time.monotonic() - started) * 1000, coordinator_epoch)
        pending = [m for m in cache.values() if m.state in (PREPARE_COMMIT, PREPARE_ABORT)]
        if self.on_partition_loaded is not None:
            self.on_partition_loaded(partition, coordinator_epoch, pending)

    async def _read_partition(self, log_: Any, partition: int, coordinator_epoch: int) -> dict[str, fmt.TxnRecord]:
        loaded: dict[str, fmt.TxnRecord] = {}
        position, end = log_.log_start_offset, log_.log_end_offset
        while position < end and self.loading.get(partition) == coordinator_epoch:
            data = log_.read(position, self.load_buffer_size, min_one_batch=True).records
            if not data:
                break
            for batch in iter_batches(data):
                position = batch.next_offset
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.key is None:
                        continue
                    try:
                        transactional_id = fmt.parse_key(record.key)
                        if record.value is None:
                            loaded.pop(transactional_id, None)
                        else:
                            loaded[transactional_id] = fmt.parse_value(record.value)
                    except fmt.BadRecord as exc:
                        log.warning("Skipping a record of %s-%d at offset %d: %s", TRANSACTION_STATE_TOPIC,
                                    partition, record.offset, exc)
            await asyncio.sleep(0)  # a big partition loads in chunks, between other requests
        return loaded

    def unload_partition(self, partition: int) -> None:
        """Kafka's removeTransactionsForTxnTopicPartition: forget the ids; their markers stop."""
        self.loading.pop(partition, None)
        if self.partitions.pop(partition, None) is not None:
            log.info("Unloaded transaction metadata of %s-%d", TRANSACTION_STATE_TOPIC, partition)
        if self.on_partition_unloaded is not None:
            self.on_partition_unloaded(partition)

    # -- writes -----------------------------------------------------------------------------------

    async def append_transaction(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransit,
                                 retry_on_error: Callable[[int], bool] = lambda code: False,
                                 follow_up: TxnTransit | None = None) -> int:
        """Write the transition; apply it on success. Kafka's appendTransactionToLog.

        ``follow_up`` (a completion's successor, TransactionMetadata.prepare_add_partitions_after) goes into
        the same batch, so both are durable together, and is applied right after ``transit``."""
        try:
            return await self._append_transaction(transactional_id, coordinator_epoch, transit, retry_on_error,
                                                  follow_up)
        finally:
            if self.on_transition is not None:
                self.on_transition(transactional_id)

    async def _append_transaction(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransit,
                                  retry_on_error: Callable[[int], bool], follow_up: TxnTransit | None) -> int:
        code, entry = self.get_state(transactional_id)
        if code != NONE:
            return code
        if entry is None or entry.coordinator_epoch != coordinator_epoch:
            return NOT_COORDINATOR
        tp = (TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        states = STATE_NAMES[transit.state] + (f"+{STATE_NAMES[follow_up.state]}" if follow_up is not None else "")
        trace(transit.producer_id, "state-write", state=states)
        result = self._append(transactional_id, tp, (transit, follow_up) if follow_up is not None else (transit,))
        if not isinstance(result, dict):  # parked until replicated: a Completion of the results
            pending = None
            if follow_up is None and transit.state in (COMPLETE_COMMIT, COMPLETE_ABORT):
                pending = self._completion_writes[transactional_id] = _CompletionWrite(transit, coordinator_epoch)
            try:
                result = await result
            finally:
                if pending is not None and self._completion_writes.get(transactional_id) is pending:
                    del self._completion_writes[transactional_id]
            code = _map_append_error(result[tp].error_code)
            trace(transit.producer_id, "state-durable", state=states, error=code)
            if pending is not None and pending.behind is not None and code == NONE:
                # The Ongoing state appended behind the completion is applied with it, once durable too.
                behind, behind_result = pending.behind
                behind_code = _map_append_error((await behind_result)[tp].error_code)
                trace(transit.producer_id, "state-durable", state="Ongoing(behind)", error=behind_code)
                if behind_code == NONE:
                    follow_up = behind
        else:
            code = _map_append_error(result[tp].error_code)
            trace(transit.producer_id, "state-durable", state=states, error=code)
        current_code, current = self.get_state(transactional_id)
        if code == NONE:
            if current_code != NONE:
                return current_code
            if current is None or current.coordinator_epoch != coordinator_epoch:
                return NOT_COORDINATOR  # the partition moved away and back meanwhile
            current.metadata.complete_transition(transit)
            if follow_up is not None:
                current.metadata.complete_follow_up(follow_up)
            if transit.state == DEAD:
                self._remove(transactional_id, current.metadata)
            return NONE
        if current_code == NONE and current is not None and current.coordinator_epoch == coordinator_epoch \
                and not retry_on_error(code):
            current.metadata.pending_state = None
        log.info("Appending %s's transition to %s failed with error %d", transactional_id, transit.state, code)
        return code

    def append_behind_completion(self, transactional_id: str,
                                 next_transaction: Callable[[TxnTransit], TxnTransit | None]) -> bool:
        """While the id's CompleteCommit/CompleteAbort is being replicated (written without a follow-up), append
        ``next_transaction(completion)`` (its successor, TransactionMetadata.prepare_add_partitions_after) right
        behind it in the log, so both replicate in overlapping rounds instead of one after the other. It is
        applied with the completion once both are durable, never alone; if it fails, the completion is applied
        alone and the requests that wanted it run again (and write their own Ongoing state, as without this).
        Log order keeps Kafka's: a replica holding the Ongoing record holds the completion before it."""
        pending = self._completion_writes.get(transactional_id)
        if pending is None or pending.behind is not None:
            return False
        code, entry = self.get_state(transactional_id)
        if code != NONE or entry is None or entry.coordinator_epoch != pending.coordinator_epoch:
            return False
        follow_up = next_transaction(pending.transit)
        if follow_up is None:
            return False
        tp = (TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        trace(follow_up.producer_id, "state-write", state="Ongoing(behind)")
        result = self._append(transactional_id, tp, (follow_up,))
        if isinstance(result, dict):  # refused at once (e.g. no longer leader): nothing appended
            return False
        pending.behind = (follow_up, result)
        return True

    def _append(self, transactional_id: str, tp: tuple[str, int], transits: tuple[TxnTransit, ...]) -> Any:
        """One batch of ``transits`` (acks=-1): the replica manager's results, or a future of them."""
        builder = RecordBatchBuilder()
        for written in transits:
            value = None if written.state == DEAD else fmt.txn_value(written.to_record(), empty_state=EMPTY)
            builder.append(wall_ms(), fmt.txn_key(transactional_id), value)
        return self.replica_manager.append_records(-1, self.request_timeout_ms, {tp: bytearray(builder.build())})

    def _remove(self, transactional_id: str, metadata: TransactionMetadata) -> None:
        owned = self.partitions.get(self.partition_for(transactional_id))
        if owned is not None and owned[1].get(transactional_id) is metadata:
            del owned[1][transactional_id]

    # -- timeouts ---------------------------------------------------------------------------------

    def timed_out_transactions(self, now_ms: int | None = None) -> list[tuple[str, int, int]]:
        """(id, producer id, producer epoch) of Ongoing transactions older than their timeout."""
        now_ms = wall_ms() if now_ms is None else now_ms
        return [(m.transactional_id, m.producer_id, m.producer_epoch) for m in self.all_transactions()
                if m.state == ONGOING and m.pending_state is None and m.start_timestamp + m.timeout_ms < now_ms]

    def expired_transactional_ids(self, now_ms: int | None = None) -> list[tuple[TxnEntry, str]]:
        """Idle ids (no transaction pending) unused for transactional.id.expiration.ms."""
        now_ms = wall_ms() if now_ms is None else now_ms
        expired = []
        for partition, (epoch, cache) in self.partitions.items():
            for tid, m in cache.items():
                if m.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT) and m.pending_state is None \
                        and m.last_update_timestamp <= now_ms - self.id_expiration_ms:
                    expired.append((TxnEntry(epoch, m), tid))
        return expired

    async def remove_expired_transactional_ids(self, now_ms: int | None = None) -> int:
        """Write a tombstone for each expired id (Kafka's removeExpiredTransactionalIds); returns how many."""
        removed = 0
        for entry, tid in self.expired_transactional_ids(now_ms):
            transit = entry.metadata.prepare_dead()
            if await self.append_transaction(tid, entry.coordinator_epoch, transit) == NONE:
                removed += 1
        if removed:
            log.info("Removed %d expired transactional ids", removed)
        return removed


def _map_append_error(code: int) -> int:
    if code in _NOT_AVAILABLE:
        return COORDINATOR_NOT_AVAILABLE
    if code in _NOT_COORDINATOR:
        return NOT_COORDINATOR
    if code in _UNKNOWN:
        return UNKNOWN_SERVER_ERROR
    return code


"""TransactionCoordinator: InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn and EndTxn for the
transactional ids this broker coordinates, and the periodic abort of timed-out transactions and
removal of expired ids (Kafka 2.8's TransactionCoordinator).

Results are Kafka error codes (0 = success); the API modules turn them into responses and map
PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request versions that predate it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..group.metadata_manager import wall_ms
from .completion_waiters import MAX_HOLD_MS, TxnCompletionWaiters
from .marker_sender import TransactionMarkerSender
from .state_manager import TRANSACTION_STATE_TOPIC, TransactionStateManager
from .trace import trace
from .transaction_metadata import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    CONCURRENT_TRANSACTIONS,
    EMPTY,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_REQUEST,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    NOT_COORDINATOR,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    PREPARE_EPOCH_FENCE,
    PRODUCER_FENCED,
    STATE_NAMES,
    TransactionMetadata,
    TxnTransit,
    is_epoch_exhausted,
)

log = logging.getLogger(__name__)


@dataclass
class InitProducerIdResult:
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(self, broker_id: int, config: Any, replica_manager: Any, metadata_cache: Any,
                 generate_producer_id: Callable[[], Awaitable[int]], listener_name: str) -> None:
        self.broker_id = broker_id
        self.state = TransactionStateManager(broker_id, config, replica_manager)
        self.markers = TransactionMarkerSender(broker_id, config, metadata_cache, self.state, listener_name)
        self.generate_producer_id = generate_producer_id
        self.completions = TxnCompletionWaiters()
        # transactional id -> (producer id, epoch, partitions) of each held AddPartitionsToTxn/AddOffsetsToTxn
        self._held_adds: dict[str, list[tuple[int, int, set[tuple[str, int]]]]] = {}
        self.markers.next_transaction = self._next_transaction
        self.state.on_partition_loaded = self._resume_markers
        self.state.on_partition_unloaded = self._on_partition_unloaded
        self.state.on_transition = self.completions.wake

    def on_leadership_change(self, led: list[tuple[str, int]], not_led: list[tuple[str, int]]) -> None:
        self.state.on_leadership_change(led, not_led)

    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    def topic_configs(self) -> dict[str, str]:
        return self.state.topic_configs()

    async def shutdown(self) -> None:
        self.completions.shutdown()
        await self.markers.shutdown()

    def _on_partition_unloaded(self, partition: int) -> None:
        self.markers.remove_for_partition(partition)
        # Held requests of its ids re-run now and answer NOT_COORDINATOR.
        self.completions.wake_where(lambda tid: self.partition_for(tid) == partition)

    # -- waiting for the previous transaction to complete -----------------------------------------

    def _completing(self, transactional_id: str, metadata: TransactionMetadata) -> bool:
        """Is this id (still the same cached metadata) between PrepareCommit/PrepareAbort and its completion?"""
        code, entry = self.state.get_state(transactional_id)
        return code == NONE and entry is not None and entry.metadata is metadata \
            and metadata.state in (PREPARE_COMMIT, PREPARE_ABORT)

    async def _await_completion(self, transactional_id: str, metadata: TransactionMetadata, held_since: float,
                                adding: tuple[int, int, set[tuple[str, int]]] | None = None) -> bool:
        """Hold a request whose id is completing its previous transaction (completion_waiters.py). True: run
        the request again now; False: its time ran out, answer CONCURRENT_TRANSACTIONS as Kafka does.
        ``adding``: the (producer id, epoch, partitions) of a held AddPartitionsToTxn/AddOffsetsToTxn, which
        the completion's write may carry along (_next_transaction)."""
        left_ms = MAX_HOLD_MS - (time.monotonic() - held_since) * 1000
        if left_ms <= 0 or not self._completing(transactional_id, metadata):
            return False
        trace(metadata.producer_id, "held", state=STATE_NAMES[metadata.state])
        if adding is not None:
            self._held_adds.setdefault(transactional_id, []).append(adding)
            # The completion may already be on its way to the replicas: the Ongoing state goes right behind it.
            self.state.append_behind_completion(transactional_id,
                                                lambda complete: self._next_transaction(metadata, complete))
        try:
            released = await self.completions.wait(
                transactional_id, lambda: self._completing(transactional_id, metadata), int(left_ms))
        finally:
            if adding is not None:
                held = self._held_adds[transactional_id]
                held.remove(adding)
                if not held:
                    del self._held_adds[transactional_id]
        trace(metadata.producer_id, "released" if released else "hold-expired", state=STATE_NAMES[metadata.state])
        return released

    def _next_transaction(self, metadata: TransactionMetadata, complete: TxnTransit) -> TxnTransit | None:
        """The Ongoing state held AddPartitionsToTxn/AddOffsetsToTxn requests of this producer wait to write,
        to go into the same batch as the completion (one replicated write instead of two). Their checks are
        the ones the requests ran before holding (the completion changes neither producer id nor epoch); once
        released they run again, find their partitions in the transaction and answer without writing."""
        wanted = [partitions for producer_id, epoch, partitions in self._held_adds.get(metadata.transactional_id, ())
                  if producer_id == complete.producer_id and epoch == complete.producer_epoch]
        if not wanted or metadata.pending_state != complete.state:
            return None
        return metadata.prepare_add_partitions_after(complete, set().union(*wanted), wall_ms())

    # -- InitProducerId ---------------------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None = None) -> InitProducerIdResult:
        """``expected``: the (producer id, epoch) a v3+ client sends to recover (KIP-360), else None."""
        if not transactional_id:
            return InitProducerIdResult(INVALID_REQUEST)
        if not self.state.validate_timeout(timeout_ms):
            return InitProducerIdResult(INVALID_TRANSACTION_TIMEOUT)
        held_since = time.monotonic()
        while True:
            result = await self._init_producer_id(transactional_id, timeout_ms, expected, held_since)
            if result is not None:
                return result

    async def _init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None,
                                held_since: float) -> InitProducerIdResult | None:
        """One attempt; None when it waited for the id's previous transaction to complete and must run again."""
        code, entry = self.state.get_state(transactional_id)
        if code != NONE:
            return InitProducerIdResult(code)
        if entry is None:
            producer_id = await self.generate_producer_id()
            created = TransactionMetadata(transactional_id, producer_id, timeout_ms=timeout_ms, state=EMPTY,
                                          last_update_timestamp=wall_ms())
            code, entry = self.state.put_if_not_exists(created)
            if code != NONE or entry is None:
                return InitProducerIdResult(code or NOT_COORDINATOR)
        metadata, coordinator_epoch = entry.metadata, entry.coordinator_epoch
        prepared = await self._prepare_init_producer_id(metadata, timeout_ms, expected)
        if isinstance(prepared, int):
            if prepared == CONCURRENT_TRANSACTIONS and await self._await_completion(transactional_id, metadata,
                                                                                    held_since):
                return None
            return InitProducerIdResult(prepared)
        if prepared.state == PREPARE_EPOCH_FENCE:
            # An ongoing transaction: abort it first under a bumped epoch (never handed out). Kafka answers
            # CONCURRENT_TRANSACTIONS and the client retries; we wait for the abort and run again.
            code = await self.end_transaction(transactional_id, prepared.producer_id, prepared.producer_epoch,
                                              commit=False, from_client=False)
            if code == NONE and await self._await_completion(transactional_id, metadata, held_since):
                return None
            return InitProducerIdResult(code if code != NONE else CONCURRENT_TRANSACTIONS)
        code = await self.state.append_transaction(transactional_id, coordinator_epoch, prepared)
        if code != NONE:
            log.info("Returning error %d to InitProducerId of %s", code, transactional_id)
            return InitProducerIdResult(code)
        log.info("Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
                 transactional_id, prepared.producer_id, prepared.producer_epoch, TRANSACTION_STATE_TOPIC,
                 self.state.partition_for(transactional_id))
        return InitProducerIdResult(NONE, prepared.producer_id, prepared.producer_epoch)

    async def _prepare_init_producer_id(self, metadata: TransactionMetadata, timeout_ms: int,
                                        expected: tuple[int, int] | None) -> TxnTransit | int:
        """Kafka's prepareInitProducerIdTransit."""
        if metadata.pending_transition_in_progress:
            return CONCURRENT_TRANSACTIONS
        if expected is not None and not self._is_valid_producer_id(metadata, expected):
            return PRODUCER_FENCED
        state = metadata.state
        if state in (PREPARE_ABORT, PREPARE_COMMIT):
            return CONCURRENT_TRANSACTIONS
        if state in (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                new_producer_id = await self.generate_producer_id()
                if metadata.pending_transition_in_progress:  # someone else moved it while we waited
                    return CONCURRENT_TRANSACTIONS
                return metadata.prepare_producer_id_rotation(new_producer_id, timeout_ms, wall_ms(),
                                                             expected is not None)
            return metadata.prepare_increment_producer_epoch(timeout_ms, expected[1] if expected else None,
                                                             wall_ms())
        if state == ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise RuntimeError(f"transactional id {metadata.transactional_id} is in state {STATE_NAMES[state]}, "
                           "which InitProducerId never sees")

    @staticmethod
    def _is_valid_producer_id(metadata: TransactionMetadata, expected: tuple[int, int]) -> bool:
        producer_id, epoch = expected
        return metadata.producer_epoch == -1 or producer_id == metadata.producer_id or \
            (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch))

    def _existing_transaction(self, transactional_id: str) -> tuple[int, Any]:
        """(error, None) or (NONE, entry) for a request about a transactional id that must exist: an empty id
        is INVALID_REQUEST, a partition this coordinator cannot serve its state's error (loading, not
        coordinator), an unknown id INVALID_PRODUCER_ID_MAPPING (Kafka's AddPartitionsToTxn and EndTxn)."""
        if not transactional_id:
            return INVALID_REQUEST, None
        code, entry = self.state.get_state(transactional_id)
        if code != NONE:
            return code, None
        if entry is None:
            return INVALID_PRODUCER_ID_MAPPING, None
        return NONE, entry

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: set[tuple[str, int]]) -> int:
        held_since = time.monotonic()
        while True:
            code = await self._add_partitions(transactional_id, producer_id, producer_epoch, partitions, held_since)
            if code is not None:
                return code

    async def _add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: set[tuple[str, int]], held_since: float) -> int | None:
        """One attempt; None when it waited for the id's previous transaction to complete and must run again."""
        code, entry = self._existing_transaction(transactional_id)
        if entry is None:
            return code
        metadata = entry.metadata
        if metadata.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return PRODUCER_FENCED
        if metadata.state in (PREPARE_COMMIT, PREPARE_ABORT) and await self._await_completion(
                transactional_id, metadata, held_since, (producer_id, producer_epoch, partitions)):
            return None
        if metadata.pending_transition_in_progress or metadata.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS
        if metadata.state == ONGOING and partitions <= metadata.partitions:
            return NONE  # already part of the transaction
        transit = metadata.prepare_add_partitions(partitions, wall_ms())
        return await self.state.append_transaction(transactional_id, entry.coordinator_epoch, transit)

    # -- EndTxn -----------------------------------------------------------------------------------

    async def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                              from_client: bool = True) -> int:
        """Kafka's endTransaction: write PrepareCommit/PrepareAbort, answer, then send the markers."""
        code, entry = self._existing_transaction(transactional_id)
        if entry is None:
            return code
        metadata, coordinator_epoch = entry.metadata, entry.coordinator_epoch
        prepared = self._prepare_end(metadata, producer_id, producer_epoch, commit, from_client)
        if isinstance(prepared, int):
            return prepared
        transit, is_epoch_fence = prepared
        code = await self.state.append_transaction(transactional_id, coordinator_epoch, transit)
        if code != NONE:
            log.info("Not sending the markers of %s: writing %s failed with error %d", transactional_id,
                     STATE_NAMES[transit.state], code)
            if is_epoch_fence:
                current_code, current = self.state.get_state(transactional_id)
                if current_code == NONE and current is not None and current.coordinator_epoch == coordinator_epoch:
                    current.metadata.has_failed_epoch_fence = True  # the bumped epoch was never handed out
            return code
        # The prepared state is durable: re-check, then answer and send the markers in the background.
        code, entry = self.state.get_state(transactional_id)
        if code != NONE or entry is None:
            return code or NOT_COORDINATOR
        if entry.coordinator_epoch != coordinator_epoch:
            return NOT_COORDINATOR
        metadata = entry.metadata
        if metadata.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return PRODUCER_FENCED
        if metadata.pending_transition_in_progress:
            return CONCURRENT_TRANSACTIONS
        expected = PREPARE_COMMIT if commit else PREPARE_ABORT
        if metadata.state != expected:
            return INVALID_TXN_STATE
        complete = metadata.prepare_complete(wall_ms())
        self.markers.add_markers(coordinator_epoch, commit, metadata, complete)
        return NONE

    @staticmethod
    def _prepare_end(metadata: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                     from_client: bool) -> tuple[TxnTransit, bool] | int:
        if metadata.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        # Clients must match the epoch exactly; the coordinator's own aborts carry a bumped epoch.
        if (from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
            return PRODUCER_FENCED
        if metadata.pending_transition_in_progress and metadata.pending_state != PREPARE_EPOCH_FENCE:
            return CONCURRENT_TRANSACTIONS
        state = metadata.state
        if state == ONGOING:
            is_epoch_fence = False
            if not commit and metadata.pending_state == PREPARE_EPOCH_FENCE:
                # Kafka 2.8: clear the fence and abort under the bumped epoch.
                is_epoch_fence = True
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = -1
            new_state = PREPARE_COMMIT if commit else PREPARE_ABORT
            return metadata.prepare_abort_or_commit(new_state, wall_ms()), is_epoch_fence
        if state == COMPLETE_COMMIT:
            return NONE if commit else INVALID_TXN_STATE
        if state == COMPLETE_ABORT:
            return NONE if not commit else INVALID_TXN_STATE
        if state == PREPARE_COMMIT:
            return CONCURRENT_TRANSACTIONS if commit else INVALID_TXN_STATE
        if state == PREPARE_ABORT:
            return CONCURRENT_TRANSACTIONS if not commit else INVALID_TXN_STATE
        if state == EMPTY:
            return INVALID_TXN_STATE
        raise RuntimeError(f"transactional id {metadata.transactional_id} is in state {STATE_NAMES[state]}, "
                           "which EndTxn never sees")

    # -- after a load -----------------------------------------------------------------------------

    def _resume_markers(self, partition: int, coordinator_epoch: int, pending: list[TransactionMetadata]) -> None:
        """A new coordinator finishes what its predecessor prepared (Kafka's loadTransactionsForTxnTopicPartition)."""
        for metadata in pending:
            if metadata.pending_transition_in_progress:
                continue
            log.info("Resuming the %s markers of %s (coordinator epoch %d)",
                     "COMMIT" if metadata.state == PREPARE_COMMIT else "ABORT", metadata.transactional_id,
                     coordinator_epoch)
            complete = metadata.prepare_complete(wall_ms())
            self.markers.add_markers(coordinator_epoch, metadata.state == PREPARE_COMMIT, metadata, complete)

    # -- periodic work ----------------------------------------------------------------------------

    async def abort_timed_out_transactions(self, now_ms: int | None = None) -> int:
        """Kafka's abortTimedOutTransactions: fence the producer's epoch and abort. Returns how many began."""
        aborted = 0
        for transactional_id, producer_id, _ in self.state.timed_out_transactions(now_ms):
            code, entry = self.state.get_state(transactional_id)
            if code != NONE or entry is None:
                continue
            metadata = entry.metadata
            if metadata.producer_id != producer_id or metadata.pending_transition_in_progress \
                    or metadata.state != ONGOING:
                continue
            try:
                fence = metadata.prepare_fence_producer_epoch()
            except RuntimeError as exc:
                log.error("Cannot abort timed-out transaction %s: %s", transactional_id, exc)
                continue
            log.info("Aborting transaction %s (producer id %d) after its timeout of %d ms", transactional_id,
                     producer_id, metadata.timeout_ms)
            code = await self.end_transaction(transactional_id, fence.producer_id, fence.producer_epoch,
                                              commit=False, from_client=False)
            if code == NONE:
                aborted += 1
            else:
                log.info("Aborting timed-out transaction %s failed with error %d", transactional_id, code)
                current_code, current = self.state.get_state(transactional_id)
                if current_code == NONE and current is not None and current.metadata.pending_state == PREPARE_EPOCH_FENCE:
                    current.metadata.pending_state = None
        return aborted

    async def remove_expired_transactional_ids(self, now_ms: int | None = None) -> int:
        return await self.state.remove_expired_transactional_ids(now_ms)


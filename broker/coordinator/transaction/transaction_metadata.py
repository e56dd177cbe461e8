"""TransactionMetadata: one transactional id's state and the legal moves between states (Kafka 2.8's).

A change is prepared first (``prepare_*`` returns a ``TxnTransit`` and sets ``pending_state``), written
to ``__transaction_state``, and only then applied (``complete_transition``); a failed write clears the
pending state. While a transition is pending, other requests for the id get CONCURRENT_TRANSACTIONS.
Everything runs on the broker's event loop, so the pending state is the only lock needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import TxnRecord

# State bytes as written to __transaction_state (Kafka's TransactionState.byte).
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = range(8)

STATE_NAMES = {EMPTY: "Empty", ONGOING: "Ongoing", PREPARE_COMMIT: "PrepareCommit", PREPARE_ABORT: "PrepareAbort",
               COMPLETE_COMMIT: "CompleteCommit", COMPLETE_ABORT: "CompleteAbort", DEAD: "Dead",
               PREPARE_EPOCH_FENCE: "PrepareEpochFence"}

# Kafka's TransactionMetadata.validPreviousStates.
VALID_PREVIOUS_STATES = {
    EMPTY: {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    ONGOING: {ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    PREPARE_COMMIT: {ONGOING},
    PREPARE_ABORT: {ONGOING, PREPARE_EPOCH_FENCE},
    COMPLETE_COMMIT: {PREPARE_COMMIT},
    COMPLETE_ABORT: {PREPARE_ABORT},
    DEAD: {EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT},
    PREPARE_EPOCH_FENCE: {ONGOING},
}

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MaxValue: an exhausted epoch rotates the producer id

# Error codes the coordinator answers with.
NONE = 0
NOT_COORDINATOR = 16
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
UNKNOWN_SERVER_ERROR = -1
PRODUCER_FENCED = 90


class IllegalTransition(RuntimeError):
    """A transition Kafka would treat as a fatal bug (IllegalStateException)."""


def is_epoch_exhausted(epoch: int) -> bool:
    # Kafka keeps one epoch in reserve for fencing (the coordinator bumps once more when it aborts).
    return epoch >= MAX_EPOCH - 1


@dataclass
class TxnTransit:
    """The state a transition leads to (Kafka's TxnTransitMetadata)."""
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: int
    partitions: set[tuple[str, int]]
    start_timestamp: int
    last_update_timestamp: int

    def to_record(self) -> TxnRecord:
        return TxnRecord(self.producer_id, self.producer_epoch, self.timeout_ms, self.state, set(self.partitions),
                         self.last_update_timestamp, self.start_timestamp)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: int = EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_timestamp: int = -1
    last_update_timestamp: int = -1
    pending_state: int | None = None
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_record(cls, transactional_id: str, record: TxnRecord) -> "TransactionMetadata":
        """Kafka 2.8 does not persist the previous id and epoch: they load as unknown."""
        return cls(transactional_id, record.producer_id, NO_PRODUCER_ID, record.producer_epoch, NO_PRODUCER_EPOCH,
                   record.timeout_ms, record.state, set(record.partitions), record.start_timestamp,
                   record.last_update_timestamp)

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT)

    def remove_partition(self, partition: tuple[str, int]) -> None:
        """A marker was written (or the partition is gone): one fewer to wait for."""
        if self.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            raise IllegalTransition(f"transaction {self.transactional_id} removes a partition in state "
                                    f"{STATE_NAMES[self.state]}")
        self.partitions.discard(partition)

    # -- preparing transitions --------------------------------------------------------------------

    def prepare_no_transit(self) -> TxnTransit:
        """The current state unchanged (used to rewrite the same state)."""
        return self._transit(self.state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions, self.start_timestamp, self.last_update_timestamp)

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch so that markers fence the current producer; a previously failed fence does not
        bump again (its epoch was never handed out)."""
        if self.producer_epoch >= MAX_EPOCH:
            raise IllegalTransition(f"cannot fence producer {self.producer_id}: its epoch would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.timeout_ms,
                             self.partitions, self.start_timestamp, self.last_update_timestamp)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit | int:
        """InitProducerId on an idle id: the next epoch, or PRODUCER_FENCED (Kafka 2.8's rules, KIP-360)."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"no more epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH  # a new producer
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch  # the producer recovers from an error
        elif expected_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch  # a retry of a bump that worked
        else:
            return PRODUCER_FENCED
        return self._prepare(EMPTY, self.producer_id, next_epoch, last_epoch, timeout_ms, set(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.has_pending_transaction:
            raise IllegalTransition("cannot rotate the producer id while a transaction is pending")
        return self._prepare(EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             timeout_ms, set(), -1, now_ms)

    def prepare_add_partitions(self, added: set[tuple[str, int]], now_ms: int) -> TxnTransit:
        start = now_ms if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.start_timestamp
        return self._prepare(ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions | added, start, now_ms)

    def prepare_add_partitions_after(self, complete: TxnTransit, added: set[tuple[str, int]],
                                     now_ms: int) -> TxnTransit:
        """The next transaction's Ongoing state, to be written right behind ``complete`` (the pending
        CompleteCommit/CompleteAbort) and applied after it: what prepare_add_partitions gives once
        ``complete`` is applied. The pending state stays ``complete``'s."""
        if self.pending_state != complete.state or complete.state not in (COMPLETE_COMMIT, COMPLETE_ABORT):
            raise IllegalTransition(f"transaction {self.transactional_id}: no completion pending to follow")
        return TxnTransit(complete.producer_id, complete.producer_id, complete.producer_epoch,
                          complete.last_producer_epoch, complete.timeout_ms, ONGOING, set(added), now_ms, now_ms)

    def complete_follow_up(self, transit: TxnTransit) -> None:
        """Apply a transition written behind the one just applied (prepare_add_partitions_after)."""
        if self.pending_state is not None:
            raise IllegalTransition(f"transaction {self.transactional_id} still moves to "
                                    f"{STATE_NAMES[self.pending_state]}")
        if self.state not in VALID_PREVIOUS_STATES[transit.state]:
            raise IllegalTransition(f"transaction {self.transactional_id} cannot move from "
                                    f"{STATE_NAMES[self.state]} to {STATE_NAMES[transit.state]}")
        self.pending_state = transit.state
        self.complete_transition(transit)

    def prepare_abort_or_commit(self, new_state: int, now_ms: int) -> TxnTransit:
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions, self.start_timestamp, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        new_state = COMPLETE_COMMIT if self.state == PREPARE_COMMIT else COMPLETE_ABORT
        # Kafka resets the partitions here: nothing is pending once the markers are written.
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, set(), self.start_timestamp, now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.timeout_ms,
                             set(), self.start_timestamp, self.last_update_timestamp)

    def _prepare(self, new_state: int, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: set[tuple[str, int]], start: int, updated: int) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(f"transaction {self.transactional_id} already moves to "
                                    f"{STATE_NAMES[self.pending_state]}")
        if self.state not in VALID_PREVIOUS_STATES[new_state]:
            raise IllegalTransition(f"transaction {self.transactional_id} cannot move from "
                                    f"{STATE_NAMES[self.state]} to {STATE_NAMES[new_state]}")
        self.pending_state = new_state
        return self._transit(new_state, producer_id, epoch, last_epoch, timeout_ms, partitions, start, updated)

    def _transit(self, state: int, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: set[tuple[str, int]], start: int, updated: int) -> TxnTransit:
        # Kafka's prepareTransitionTo: the previous producer id is the current one.
        return TxnTransit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state, set(partitions),
                          start, updated)

    # -- completing -------------------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransit) -> None:
        """Apply a transition whose record was written (Kafka's completeTransitionTo, with its checks)."""
        to_state = self.pending_state
        if to_state is None or to_state != transit.state and not (
                to_state == PREPARE_EPOCH_FENCE and transit.state == PREPARE_ABORT):
            raise IllegalTransition(f"transaction {self.transactional_id}: completing {STATE_NAMES[transit.state]} "
                                    f"but the pending state is {STATE_NAMES.get(to_state, to_state)}")
        if transit.state == ONGOING:
            if not self.partitions <= transit.partitions or self.timeout_ms != transit.timeout_ms \
                    or self.producer_epoch != transit.producer_epoch:
                raise IllegalTransition(f"transaction {self.transactional_id}: inconsistent Ongoing transition")
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_timestamp = transit.start_timestamp
        self.last_update_timestamp = transit.last_update_timestamp
        self.pending_state = None
        self.has_failed_epoch_fence = False

    def describe(self) -> str:
        return (f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, state={STATE_NAMES[self.state]}, "
                f"pendingState={STATE_NAMES.get(self.pending_state) if self.pending_state is not None else None}, "
                f"partitions={sorted(self.partitions)})")

"""TransactionManager: the client side of Kafka transactions, for a producer with a transactional_id.

It follows Kafka's Java TransactionManager (2.8): the same states and valid transitions, the same
requests to the transaction coordinator (FindCoordinator key_type 1, InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn) and to the group coordinator (FindCoordinator key_type 0, TxnOffsetCommit),
and the same error classes:

- coordinator moves (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, a lost connection) look the
  coordinator up again and retry; CONCURRENT_TRANSACTIONS and COORDINATOR_LOAD_IN_PROGRESS retry
  after a backoff; all until ``max_block_ms`` runs out (RequestTimedOutError; the call may be repeated);
- PRODUCER_FENCED / INVALID_PRODUCER_EPOCH are fatal (``ProducerFencedError``): a newer producer
  with our transactional id took over, or the coordinator aborted our transaction on its timeout.
  So are authorization of the transactional id, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING and
  anything unexpected. A fatal producer can only be closed;
- everything else (a batch that failed, a topic or group we may not write) is abortable: the
  transaction must be aborted, then the producer can begin a new one.

The manager sends nothing on its own: the producer calls it from ``send`` (``maybe_add_partition``),
from its sender loop (``maybe_add_partitions``, which sends one AddPartitionsToTxn for every new
partition collected since the last, as the Java client batches them) and from the public methods.
It needs only ``client.send(node_id | None, request)`` (SimpleClient's), so unit tests can hand it a
fake coordinator.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any, Awaitable, Callable, Iterable, Mapping

from ...protocol.errors import (
    ConcurrentTransactionsError, CoordinatorLoadInProgressError, CoordinatorNotAvailableError, KafkaError,
    NotCoordinatorError, OperationNotAttemptedError, ProducerFencedError, RequestTimedOutError,
    UnknownTopicOrPartitionError, for_code,
)
from ...protocol.messages import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest,
    InitProducerIdRequest, TxnOffsetCommitRequest,
)
from ..types import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator key types
_FENCED = frozenset({47, 90})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
_COORDINATOR_MOVED = frozenset({CoordinatorNotAvailableError.code, NotCoordinatorError.code})
_TRY_AGAIN = frozenset({ConcurrentTransactionsError.code, CoordinatorLoadInProgressError.code})
_ABORTABLE_CODES = frozenset({29, 30})  # TOPIC_/GROUP_AUTHORIZATION_FAILED
_COMMIT_FAILED = frozenset({22, 25})  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID (Java's CommitFailedException)
# Java's ADD_PARTITIONS_RETRY_BACKOFF_MS: the first AddPartitionsToTxn of a transaction usually meets
# CONCURRENT_TRANSACTIONS while the coordinator still writes the previous one's markers; that passes
# in milliseconds, so waiting the full retry backoff (100 ms) would dominate short transactions.
_CONCURRENT_BACKOFF = 0.02


class TransactionState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = TransactionState
# Java's TransactionManager.State.isTransitionValid: target -> the states it may be entered from.
_VALID_SOURCES: dict[TransactionState, frozenset[TransactionState]] = {
    S.UNINITIALIZED: frozenset(),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING_TRANSACTION}),  # the second: epoch bump after an abort
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR}),
    S.FATAL_ERROR: frozenset(S),
}


class TransactionStateError(KafkaError):
    """A transactional method called in a state that does not allow it (Java's IllegalStateException,
    or KafkaException 'Cannot execute transactional method because we are in an error state')."""

    name = "ILLEGAL_TRANSACTION_STATE"


class TransactionAbortedError(KafkaError):
    """A record that was still unsent when its transaction was aborted (Java's TransactionAbortedException)."""

    name = "TRANSACTION_ABORTED"


class CommitFailedError(KafkaError):
    """TxnOffsetCommit refused the group generation or member id (Java's CommitFailedException)."""

    name = "COMMIT_FAILED"


class _Abortable(Exception):
    def __init__(self, error: KafkaError) -> None:
        self.error = error


class _Fatal(Exception):
    def __init__(self, error: KafkaError) -> None:
        self.error = error


def _error(code: int, what: str) -> KafkaError:
    if code in _FENCED:  # Java turns INVALID_PRODUCER_EPOCH into ProducerFencedException for transactions
        return ProducerFencedError(f"{what}: a newer producer with the same transactional.id fenced this one "
                                   f"(error {code})")
    return for_code(code)(what)


class TransactionManager:
    def __init__(self, client: Any, transactional_id: str, *, transaction_timeout_ms: int = 60000,
                 retry_backoff_ms: int = 100, max_block_ms: int = 60000) -> None:
        self.client = client
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff = retry_backoff_ms / 1000
        self.max_block = max_block_ms / 1000
        self.state = S.UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.producer_id, self.producer_epoch = -1, -1
        self.partitions_in_transaction: set[TopicPartition] = set()
        self._new_partitions: set[TopicPartition] = set()  # not yet in an AddPartitionsToTxn
        self._partitions_being_added: set[TopicPartition] = set()
        self._transaction_started = False  # the coordinator knows of a partition or offsets of ours
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> node id
        self._add_task: asyncio.Task | None = None

    # -- state ------------------------------------------------------------------------------------
    def _transition(self, target: TransactionState) -> None:
        if self.state is S.FATAL_ERROR and target is not S.FATAL_ERROR:
            raise self._state_error(f"transition to {target.value}")
        if self.state not in _VALID_SOURCES[target]:
            raise TransactionStateError(f"invalid transition attempted from state {self.state.value} "
                                        f"to state {target.value}")
        log.debug("transactional id %s: %s -> %s", self.transactional_id, self.state.value, target.value)
        self.state = target

    def _state_error(self, what: str) -> KafkaError:
        """The error a method refused in an error state raises: the fatal error itself, else one naming it."""
        if self.state is S.FATAL_ERROR and self.last_error is not None:
            return self.last_error
        if self.state is S.ABORTABLE_ERROR:
            error = TransactionStateError(f"cannot {what}: the transaction must be aborted after {self.last_error}")
            error.__cause__ = self.last_error
            return error
        return TransactionStateError(f"cannot {what} in state {self.state.value}")

    def set_fatal(self, error: KafkaError) -> None:
        log.error("transactional id %s: fatal error: %s", self.transactional_id, error)
        self.last_error = error
        self.state = S.FATAL_ERROR
        self._new_partitions.clear()

    def set_abortable(self, error: KafkaError) -> None:
        """A failed batch or request: the transaction can only be aborted (ignored while aborting)."""
        if self.state in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR):
            log.warning("transactional id %s: abortable error: %s", self.transactional_id, error)
            self.last_error = error
            self._transition(S.ABORTABLE_ERROR)
            self._new_partitions.clear()

    def on_batch_error(self, error: BaseException) -> None:
        """A batch of the transaction failed for good: fenced is fatal, anything else abortable."""
        if isinstance(error, KafkaError) and error.code in _FENCED:
            self.set_fatal(_error(error.code, "Produce"))
        elif self.state is not S.FATAL_ERROR:
            self.set_abortable(error if isinstance(error, KafkaError) else KafkaError(str(error)))

    @property
    def is_fatal(self) -> bool:
        return self.state is S.FATAL_ERROR

    @property
    def drops_unsent(self) -> bool:
        """Whether queued batches must fail now (Java's sender aborts undrained batches in these states)."""
        return self.state in (S.ABORTABLE_ERROR, S.ABORTING_TRANSACTION, S.FATAL_ERROR)

    def unsent_error(self) -> KafkaError:
        if self.state is S.ABORTING_TRANSACTION or self.last_error is None:
            return TransactionAbortedError("the transaction was aborted before the record was sent")
        return self.last_error

    # -- public steps -------------------------------------------------------------------------------
    async def init_transactions(self) -> tuple[int, int]:
        """InitProducerId with our transactional id: fences older producers of the id, finishes (aborts)
        their open transaction, and gives us the producer id and a new epoch. A no-op once READY."""
        if self.state is S.READY:
            return self.producer_id, self.producer_epoch
        if self.state is not S.INITIALIZING:  # INITIALIZING: a previous call timed out; try again
            self._transition(S.INITIALIZING)
        await self._init_producer_id(-1, -1)
        self._transition(S.READY)
        return self.producer_id, self.producer_epoch

    async def bump_epoch(self) -> None:
        """After an abort that left our sequence numbers uncertain: a new epoch (KIP-360; InitProducerId
        v3+ names the current producer id and epoch, so a newer producer is not fenced by mistake)."""
        self._transition(S.INITIALIZING)
        await self._init_producer_id(self.producer_id, self.producer_epoch)
        self._transition(S.READY)

    async def _init_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        request = InitProducerIdRequest(transactional_id=self.transactional_id,
                                        transaction_timeout_ms=self.transaction_timeout_ms,
                                        producer_id=producer_id, producer_epoch=producer_epoch)
        response = await self._run(self._coordinator_request(TRANSACTION_KEY, self.transactional_id, request,
                                                             lambda r: [r.error_code], "InitProducerId"),
                                   abortable=False)
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        log.info("transactional id %s: producer id %d epoch %d", self.transactional_id,
                 self.producer_id, self.producer_epoch)

    def begin_transaction(self) -> None:
        if self.state is not S.READY:
            raise self._state_error("begin a transaction")
        self._transition(S.IN_TRANSACTION)

    def check_send(self) -> None:
        """Raise unless records may be sent now (only inside a transaction)."""
        if self.state is S.IN_TRANSACTION:
            return
        if self.state is S.UNINITIALIZED or self.state is S.INITIALIZING:
            raise TransactionStateError("cannot send before init_transactions() completed")
        if self.state is S.READY:
            raise TransactionStateError("cannot send outside a transaction: call begin_transaction() first")
        raise self._state_error("send")

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """Called for every record sent: a partition new to the transaction waits for AddPartitionsToTxn."""
        self.check_send()
        if tp not in self.partitions_in_transaction and tp not in self._partitions_being_added:
            self._new_partitions.add(tp)

    def is_send_allowed(self, tp: TopicPartition) -> bool:
        return tp in self.partitions_in_transaction

    def maybe_add_partitions(self, on_done: Callable[[], None]) -> None:
        """Start one AddPartitionsToTxn for every partition collected so far, unless one is running."""
        if (not self._new_partitions or (self._add_task is not None and not self._add_task.done())
                or self.state not in (S.IN_TRANSACTION, S.COMMITTING_TRANSACTION)):
            return
        partitions, self._new_partitions = self._new_partitions, set()
        self._partitions_being_added = partitions
        self._add_task = asyncio.create_task(self._add_partitions(partitions), name="odradek-add-partitions-to-txn")
        self._add_task.add_done_callback(lambda _: on_done())

    async def _add_partitions(self, partitions: set[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = AddPartitionsToTxnRequest(
            transactional_id=self.transactional_id, producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()])

        def codes(response: Any) -> list[int]:
            # OPERATION_NOT_ATTEMPTED only says another partition failed; UNKNOWN_TOPIC_OR_PARTITION is
            # retried as Java does (the coordinator's metadata may lag a new topic).
            return [p.error_code for t in response.results for p in t.results
                    if p.error_code != OperationNotAttemptedError.code] or [0]

        try:
            await self._run(self._coordinator_request(TRANSACTION_KEY, self.transactional_id, request, codes,
                                                      "AddPartitionsToTxn",
                                                      retry_codes={UnknownTopicOrPartitionError.code},
                                                      concurrent_backoff=_CONCURRENT_BACKOFF),
                            abortable=True)
            # Even if an abort began meanwhile: the coordinator has them now, so EndTxn must be sent.
            self.partitions_in_transaction |= partitions
            self._transaction_started = True
        except Exception as exc:  # the transaction's error now (fatal ones are recorded by _run)
            if isinstance(exc, KafkaError) and self.state is not S.FATAL_ERROR:
                self.set_abortable(exc)  # e.g. timed out: the batches waiting for it fail through it
            log.debug("AddPartitionsToTxn failed: %s", exc)
        finally:
            self._partitions_being_added = set()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any], group: Any) -> None:
        """AddOffsetsToTxn to our coordinator, then TxnOffsetCommit to the group's coordinator: the
        offsets become the group's committed offsets when (and only if) the transaction commits.

        ``group`` is a group id, or an object with ``group_id`` (and ``generation_id``, ``member_id``,
        ``group_instance_id``), like Java's ConsumerGroupMetadata, so a group member can be fenced.
        """
        if self.state is not S.IN_TRANSACTION:
            raise self._state_error("send offsets to the transaction")
        if isinstance(group, str):
            group_id, generation, member, instance = group, -1, "", None
        else:
            group_id = group.group_id
            generation = getattr(group, "generation_id", -1)
            member = getattr(group, "member_id", "")
            instance = getattr(group, "group_instance_id", None)
        add = AddOffsetsToTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                     producer_epoch=self.producer_epoch, group_id=group_id)
        await self._run(self._coordinator_request(TRANSACTION_KEY, self.transactional_id, add,
                                                  lambda r: [r.error_code], "AddOffsetsToTxn",
                                                  concurrent_backoff=_CONCURRENT_BACKOFF), abortable=True)
        self._transaction_started = True
        by_topic: dict[str, list[Any]] = {}
        for tp, meta in sorted(offsets.items()):
            meta = OffsetAndMetadata(meta) if isinstance(meta, int) else meta
            by_topic.setdefault(tp[0], []).append(TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
                                                  .TxnOffsetCommitRequestPartition(
                partition_index=tp[1], committed_offset=meta.offset,
                committed_leader_epoch=getattr(meta, "leader_epoch", -1), committed_metadata=meta.metadata or ""))
        commit = TxnOffsetCommitRequest(
            transactional_id=self.transactional_id, group_id=group_id, producer_id=self.producer_id,
            producer_epoch=self.producer_epoch, generation_id=generation, member_id=member,
            group_instance_id=instance,
            topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()])

        def codes(response: Any) -> list[int]:
            return [p.error_code for t in response.topics for p in t.partitions] or [0]

        await self._run(self._coordinator_request(GROUP_KEY, group_id, commit, codes, "TxnOffsetCommit",
                                                  retry_codes={UnknownTopicOrPartitionError.code,
                                                               RequestTimedOutError.code}),
                        abortable=True)

    def begin_commit(self) -> None:
        if self.state is S.COMMITTING_TRANSACTION:  # a commit that timed out is being retried
            return
        if self.state is not S.IN_TRANSACTION:
            raise self._state_error("commit the transaction")
        self._transition(S.COMMITTING_TRANSACTION)

    def begin_abort(self) -> None:
        if self.state is S.ABORTING_TRANSACTION:
            return
        if self.state not in (S.IN_TRANSACTION, S.ABORTABLE_ERROR):
            raise self._state_error("abort the transaction")
        self._transition(S.ABORTING_TRANSACTION)
        self._new_partitions.clear()

    async def end_transaction(self, commit: bool, bump_epoch: bool = False) -> None:
        """EndTxn once every batch is answered (the producer waits for them first). A transaction the
        coordinator never heard of (no partition, no offsets) ends without a request, as in Java."""
        if self._add_task is not None and not self._add_task.done():
            await asyncio.shield(self._add_task)
        expected = S.COMMITTING_TRANSACTION if commit else S.ABORTING_TRANSACTION
        if self.state is not expected:
            raise self._state_error("commit the transaction" if commit else "abort the transaction")
        if commit and self._new_partitions:  # records were sent whose partitions were never added
            raise TransactionStateError("records of the transaction are still waiting for their partitions")
        if self._transaction_started:
            request = EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.producer_id,
                                    producer_epoch=self.producer_epoch, committed=commit)
            await self._run(self._coordinator_request(TRANSACTION_KEY, self.transactional_id, request,
                                                      lambda r: [r.error_code], "EndTxn"), abortable=False)
        self.partitions_in_transaction.clear()
        self._new_partitions.clear()
        self._transaction_started = False
        if bump_epoch:
            await self.bump_epoch()
        else:
            self._transition(S.READY)

    # -- requests -----------------------------------------------------------------------------------
    async def _run(self, request: Awaitable[Any], *, abortable: bool) -> Any:
        """Await a coordinator request; its failure becomes the transaction's state and is raised.
        ``abortable``: may a non-fatal error leave the transaction abortable (else it is fatal)?"""
        try:
            return await request
        except _Fatal as fatal:
            self.set_fatal(fatal.error)
            raise fatal.error from None
        except _Abortable as failure:
            if abortable and self.state is not S.FATAL_ERROR:
                self.set_abortable(failure.error)
            elif not abortable:
                self.set_fatal(failure.error)
            raise failure.error from None

    async def _find_coordinator(self, key_type: int, key: str) -> int:
        node = self._coordinators.get((key_type, key))
        if node is not None:
            return node
        response = await self.client.send(None, FindCoordinatorRequest(key=key, key_type=key_type))
        code = response.error_code
        if code:
            error = for_code(code)(f"FindCoordinator({key!r}, key_type {key_type})")
            if error.retriable:
                raise error
            # Kafka 2.8: TRANSACTIONAL_ID_AUTHORIZATION_FAILED is fatal, GROUP_AUTHORIZATION_FAILED abortable.
            raise (_Abortable(error) if key_type == GROUP_KEY else _Fatal(error))
        self._coordinators[(key_type, key)] = response.node_id
        return response.node_id

    async def _coordinator_request(self, key_type: int, key: str, request: Any, codes: Callable[[Any], list[int]],
                                   what: str, retry_codes: Iterable[int] = (),
                                   concurrent_backoff: float | None = None) -> Any:
        """Send ``request`` to the coordinator of ``key`` until it answers with something final.

        Returns the response when every code is 0; raises _Fatal or _Abortable otherwise, or
        RequestTimedOutError once max_block_ms has passed (the state is kept: the call may be repeated).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_block
        retry = _TRY_AGAIN | frozenset(retry_codes)
        while True:
            backoff = self.retry_backoff
            try:
                node = await self._find_coordinator(key_type, key)
                response = await self.client.send(node, request)
                found = codes(response)
                bad = next((c for c in found if c), 0)
                if bad == 0:
                    return response
                if bad in _COORDINATOR_MOVED:
                    self._coordinators.pop((key_type, key), None)
                elif bad not in retry:
                    raise self._classify(bad, what)
                elif bad == ConcurrentTransactionsError.code and concurrent_backoff is not None:
                    backoff = min(backoff, concurrent_backoff)
                log.debug("%s: error %d, retrying", what, bad)
                last: BaseException = for_code(bad)(what)
            except (_Fatal, _Abortable):
                raise
            except KafkaError as exc:
                if not exc.retriable:
                    raise _Fatal(exc) from None  # e.g. UnsupportedVersionError: no InitProducerId v3 for a bump
                last = exc
            except OSError as exc:  # a lost connection: the coordinator may have moved
                self._coordinators.pop((key_type, key), None)
                last = exc
            if loop.time() + backoff >= deadline:
                raise RequestTimedOutError(f"{what} did not complete within max_block_ms "
                                           f"({self.max_block * 1000:.0f} ms); last error: {last}")
            await asyncio.sleep(backoff)

    @staticmethod
    def _classify(code: int, what: str) -> Exception:
        if code in _FENCED:
            return _Fatal(_error(code, what))
        if code in _COMMIT_FAILED:
            return _Abortable(CommitFailedError(f"{what}: the group member's generation or id is no longer valid "
                                                f"(error {code})"))
        if code in _ABORTABLE_CODES:
            return _Abortable(for_code(code)(what))
        return _Fatal(for_code(code)(what))  # INVALID_TXN_STATE, authorization of the id, the unexpected

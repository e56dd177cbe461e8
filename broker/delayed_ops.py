"""DelayedFetch and DelayedProduce: requests parked in the purgatory (Kafka's server/Delayed*.scala);
DelayedPartitionsWait, the per-partition wait DelayedProduce shares with DelayedDeleteRecords.

A fetch that cannot gather ``min_bytes`` waits until a produce to one of its partitions wakes it
(``check_and_complete``) or ``max_wait_ms`` passes; an acks=-1 produce waits until the high watermark
of each of its partitions passes the appended records. Each operation resolves a future (a
``purgatory.completion.Completion`` for fetches and produces: its answer is sent in the call that completes
it), so no handler task is held while the request waits.

An operation that raises while being checked or completed fails alone (``on_error``, see
``purgatory/delayed_operation.py``): a fetch's future gets the exception (its request is answered
UNKNOWN_SERVER_ERROR), a produce's waiting partitions get UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from ..protocol.errors import (  # type: ignore[attr-defined]
    KafkaStorageError, NotEnoughReplicasAfterAppendError, NotLeaderOrFollowerError, RequestTimedOutError, UnknownServerError,
)
from .purgatory import DelayedOperation

if TYPE_CHECKING:
    from .partition import Partition
    from .replica_selector import ClientMetadata
    from .purgatory.completion import Completion


@dataclass
class FetchSpec:
    """One partition of a fetch request."""
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1  # Fetch v12 followers: the epoch of the last batch they have


@dataclass
class FetchParams:
    """The request-level parameters of a fetch (Kafka's FetchParams)."""
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = 0
    hard_max_bytes_limit: bool = False  # Fetch v0-2: never return a batch over the partition's max
    # A follower's fetch session: when its previous fetch was (partitions of the session that are not read
    # this time were caught up then, see Partition.update_follower_position); None for a sessionless fetch.
    previous_fetch_ms: int | None = None
    # A Fetch v11+ consumer's rack and listener (KIP-392): it may be redirected by the leader and served by a
    # follower. None: a follower, or an older consumer, which read from the leader only.
    client: "ClientMetadata | None" = None

    @property
    def committed_only(self) -> bool:
        """Consumers read below the high watermark; followers (replica_id >= 0) read to the log end."""
        return self.replica_id < 0

    @property
    def read_committed(self) -> bool:
        """isolation_level 1: below the last stable offset, with the aborted transactions. Followers
        always read uncommitted data (Kafka ignores their isolation level)."""
        return self.isolation_level == 1 and self.replica_id < 0


class ReplicaReads(Protocol):
    """What the delayed operations read of the replica manager (broker/replica_manager.py implements it):
    passed down to them, so this module does not import the replica manager that parks them."""

    def online_partition(self, topic: str, partition: int) -> "Partition | None": ...

    def is_offline(self, key: tuple[str, int]) -> bool: ...

    def should_leader_throttle(self, partition: "Partition", replica_id: int) -> bool: ...

    def read_from_local_log(self, specs: list[FetchSpec], params: FetchParams) -> Mapping[tuple[str, int], Any]: ...


def _resolve(future: "asyncio.Future | Completion", value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: "asyncio.Future | Completion", exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class DelayedFetch(DelayedOperation):
    __slots__ = ("specs", "params", "replica_manager", "future", "to_read", "_spec_of")

    def __init__(self, delay_ms: int, specs: list[FetchSpec], params: FetchParams,
                 replica_manager: ReplicaReads, future: "asyncio.Future | Completion",
                 to_read: Callable[[], list[FetchSpec]] | None = None,
                 spec_of: Callable[[tuple[str, int]], FetchSpec | None] | None = None) -> None:
        super().__init__(delay_ms)
        self.specs = specs
        self.params = params
        self.replica_manager = replica_manager
        self.future = future
        self.to_read = to_read  # what to read on completion (a fetch session's changed partitions)
        self._spec_of = spec_of  # a partition's spec (a fetch session's lookup), else built on first need

    def try_complete_for(self, key: Any) -> bool:
        """Woken by ``key``'s change: with min_bytes <= 1 (followers, most consumers) that partition alone
        decides, as any other change would have woken the fetch under its own key; a fetch of thousands of
        partitions is not walked through on every produce."""
        if self.params.min_bytes > 1 or self.params.read_committed:
            return self.try_complete()
        if self._spec_of is None:
            self._spec_of = {(spec.topic, spec.partition): spec for spec in self.specs}.get
        spec = self._spec_of(key) if isinstance(key, tuple) and len(key) == 2 else None
        return self.try_complete() if spec is None else self._check(spec, 0) is True

    def try_complete(self) -> bool:
        """Kafka's cases: a partition lost or no longer led here, the log truncated below the fetch
        offset, or enough bytes gathered, complete the fetch now."""
        accumulated = 0
        min_bytes = self.params.min_bytes
        for spec in self.specs:
            checked = self._check(spec, min_bytes)
            if checked is True:
                return True
            accumulated += checked
        if accumulated >= min_bytes:
            return self.force_complete()
        return False

    def _check(self, spec: FetchSpec, min_bytes: int) -> bool | int:
        """True if this partition completed the fetch, else the bytes it has for it."""
        partition = self.replica_manager.online_partition(spec.topic, spec.partition)
        if partition is None or not (partition.is_leader or self.params.client is not None):
            return self.force_complete()
        # read_committed consumers count only what is below the last stable offset, so a marker
        # (or HW move) that moves the LSO is what wakes them (Kafka's FetchTxnCommitted).
        if self.params.read_committed:
            end = partition.last_stable_offset
        elif self.params.committed_only:
            end = partition.high_watermark
        else:
            end = partition.log_end_offset
        if end < spec.fetch_offset:
            if self.params.read_committed:
                return 0  # ahead of the LSO: wait for it to get there (no busy answer loop)
            return self.force_complete()
        if not self.params.committed_only and \
                self.replica_manager.should_leader_throttle(partition, self.params.replica_id):
            return 0  # Kafka's DelayedFetch: a throttled follower's bytes do not count toward min_bytes
        if end > spec.fetch_offset:
            if min_bytes <= 1:
                return self.force_complete()
            if spec.max_bytes <= 0:
                # Kafka adds min(bytes available, partition max bytes): a negative limit counts
                # against min_bytes. Nothing is read (the answer's read reports the bad size).
                return spec.max_bytes
            try:
                data = partition.read(spec.fetch_offset, spec.max_bytes,
                                      committed_only=self.params.committed_only, min_one_batch=False,
                                      read_committed=self.params.read_committed,
                                      leader_only=self.params.client is None)
            except Exception:
                # A failing partition completes the fetch now; the answer's read gives that
                # partition its error (read_from_local_log) and the others their data.
                return self.force_complete()
            return len(data.records)
        return 0

    def on_complete(self) -> None:
        if self.future.done():  # the client went away; nothing to read for
            return
        specs = self.specs if self.to_read is None else self.to_read()
        _resolve(self.future, self.replica_manager.read_from_local_log(specs, self.params))

    def on_error(self, exc: BaseException) -> None:
        _fail(self.future, exc)

    def __repr__(self) -> str:
        return f"DelayedFetch({[(s.topic, s.partition) for s in self.specs]}, {self.params})"


@dataclass
class ProduceStatus:
    """One partition of an acks=-1 produce while it waits for the ISR."""
    required_offset: int  # the high watermark must pass this (last appended offset + 1)
    result: Any           # the partition result to send, its error set on timeout
    acks_pending: bool = True


class DelayedPartitionsWait(DelayedOperation):
    """A request waiting until each of its partitions reaches a required offset on the leader (Kafka's
    DelayedProduce and DelayedDeleteRecords share this shape). ``statuses`` maps (topic, partition) to a
    status with ``required_offset``, ``result`` (the partition result to send) and ``acks_pending``; a
    partition that lost its leader fails NOT_LEADER_OR_FOLLOWER, one still waiting at expiry
    REQUEST_TIMED_OUT. Subclasses say when a partition is done and what the future resolves to."""

    __slots__ = ("statuses", "replica_manager", "future")

    def __init__(self, delay_ms: int, statuses: dict[tuple[str, int], Any], replica_manager: ReplicaReads,
                 future: "asyncio.Future | Completion") -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self.replica_manager = replica_manager
        self.future = future

    def partition_done(self, partition: "Partition", status: Any) -> bool:
        """Whether the leader ``partition`` satisfied ``status`` (setting its result if so)."""
        raise NotImplementedError

    def fail(self, status: Any, error_code: int) -> None:
        status.result.error_code = error_code

    def resolve(self) -> None:
        raise NotImplementedError

    def try_complete(self) -> bool:
        for key, status in self.statuses.items():
            if not status.acks_pending:
                continue
            partition = self.replica_manager.online_partition(*key)
            if partition is None and self.replica_manager.is_offline(key):
                self.fail(status, KafkaStorageError.code)  # its log dir went offline while waiting
                status.acks_pending = False
            elif partition is None or not partition.is_leader:
                self.fail(status, NotLeaderOrFollowerError.code)  # leadership moved while waiting
                status.acks_pending = False
            elif self.partition_done(partition, status):
                status.acks_pending = False
        if any(s.acks_pending for s in self.statuses.values()):
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        for status in self.statuses.values():
            if status.acks_pending:
                self.fail(status, RequestTimedOutError.code)
        self.resolve()

    def on_error(self, exc: BaseException) -> None:
        """The partitions still waiting get UNKNOWN_SERVER_ERROR; the others keep their answers."""
        for status in self.statuses.values():
            if status.acks_pending:
                status.acks_pending = False
                self.fail(status, UnknownServerError.code)
        try:
            self.resolve()
        except Exception as failure:
            _fail(self.future, failure)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.statuses)})"


class DelayedProduce(DelayedPartitionsWait):
    """An acks=-1 produce: a partition is done when its high watermark passes the appended records."""

    __slots__ = ()

    def partition_done(self, partition: "Partition", status: "ProduceStatus") -> bool:
        if partition.high_watermark < status.required_offset:
            return False
        # Kafka's checkEnoughReplicasReachOffset: the ISR may have shrunk below
        # min.insync.replicas while waiting; the records are there but under-replicated.
        if not partition.enough_replicas_after_append():
            status.result.error_code = NotEnoughReplicasAfterAppendError.code
        return True

    def resolve(self) -> None:
        _resolve(self.future, {key: s.result for key, s in self.statuses.items()})

"""A producer's batch on its way (its records, sequence and outcome) and the RecordMetadata it answers with.

The accumulator (record_accumulator.py) queues batches, the sender (sender.py) decides when they go
and sequences.py what their sequences are; a batch only holds its records, is sealed into bytes once
per producer epoch, and settles its records' futures, once: a batch that expired while its request was in
flight keeps its outcome when the late answer comes (Java's ProducerBatch.done).

Records come in runs (``append``: many records encoded in one codec call); the batch keeps each record's
timestamp and sizes in one buffer (``meta``), so RecordMetadata is made only for the futures that ask.
Who learns the outcome: asyncio futures of ``AIOProducer.send`` (``futures``: set one by one), the blocking
Producer's futures (bound to the batch and index by ``record_futures.bind``: nothing per record when the
answer comes), and ``send_batch`` calls (``calls``: told how many of their records are done).
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from ...protocol.records import Compression, RecordBatchBuilder
from ...protocol.records.pure_codec import RECORD_META
from .record_futures import FAILED, PENDING, SUCCEEDED, batch_settled
from ..types import TopicPartition

# Per-batch overhead when estimating a batch's size (the v2 batch header).
BATCH_OVERHEAD = 61


class RecordMetadata(NamedTuple):
    """kafka-python's RecordMetadata; ``offset`` is -1 with acks=0, ``timestamp`` the broker's
    LogAppendTime when the topic uses it, else the record's create time."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int
    log_start_offset: int
    checksum: None
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int


class Columns(NamedTuple):
    """Records to append, in the codec's forms (``RecordBatchBuilder.append_many``)."""

    timestamps: Any
    keys: Any
    values: Any
    headers: Any


class _Batch:
    """One partition's records on their way; ``done`` resolves when all of them are answered.

    Futures keep their batch after it settled, so a settled batch lets go of everything but its outcome and
    its records' sizes, and its lists exist only when used: fewer objects for the garbage collector to walk."""

    __slots__ = ("tp", "order", "builder", "meta", "record_count", "size", "futures", "calls", "watched", "state",
                 "result", "error", "created", "retry_at", "attempts", "sequence", "producer", "data", "full",
                 "last_error", "done")

    def __init__(self, tp: TopicPartition, order: int, compression: Compression, now: float) -> None:
        self.tp = tp
        self.order = order  # its place in the partition's queue
        self.builder: RecordBatchBuilder | None = RecordBatchBuilder(compression)
        self.meta = bytearray()  # RECORD_META per record
        self.record_count = 0
        self.size = BATCH_OVERHEAD
        self.futures: list[tuple[int, asyncio.Future]] | None = None  # (index, future) settled one by one
        self.calls: list[tuple[Any, int, int]] | None = None  # (send_batch call, index of its first record, how many)
        self.watched: list[Any] | None = None  # bound record futures with callbacks (record_futures)
        self.state = PENDING
        self.result: tuple[int, int, int] | None = None  # (base offset, log append time, log start offset)
        self.error: BaseException | None = None
        self.created = now
        self.retry_at = 0.0
        self.attempts = 0
        self.sequence: int | None = None
        self.producer: tuple[int, int] | None = None  # (id, epoch) its sequence belongs to
        self.data: bytes | None = None
        self.full = False
        self.last_error: BaseException | None = None  # what its last attempt was answered with, if it failed
        self.done: asyncio.Future | None = asyncio.get_running_loop().create_future()  # None once settled

    @property
    def is_done(self) -> bool:
        """Its records' outcome is known (acknowledged, failed or expired), though a request may still be out."""
        return self.state != PENDING

    def add_futures(self, pairs: list[tuple[int, Any]]) -> None:
        if self.futures is None:
            self.futures = []
        self.futures += pairs

    def add_call(self, call: Any, first: int, count: int) -> None:
        if self.calls is None:
            self.calls = []
        self.calls.append((call, first, count))

    def watch(self, future: Any) -> None:
        if self.watched is None:
            self.watched = []
        self.watched.append(future)

    @property
    def last_sequence(self) -> int:
        """The sequence of its last record (sealed batches only); sequences wrap at Integer.MAX_VALUE."""
        assert self.sequence is not None
        return (self.sequence + self.record_count - 1) % (2**31)

    def append(self, columns: Columns, start: int, stop: int, max_size: int) -> int:
        """Add records ``start..stop-1`` of ``columns`` while the batch stays within ``max_size`` bytes (an
        empty batch takes one whatever its size); returns how many. A batch that refused one is full."""
        if self.full or self.data is not None or self.builder is None:
            return 0
        builder = self.builder
        added = builder.append_many(columns.values, columns.keys, columns.headers, columns.timestamps, start, stop,
                                    max_size=max_size, meta=self.meta)
        self.record_count += added
        self.size = builder.size_in_bytes
        self.full = added < stop - start or self.size >= max_size
        return added

    def seal(self, producer_id: int, epoch: int, sequence: int | None, transactional: bool = False) -> None:
        """Build the bytes; a sealed batch is sent as is, every time."""
        if self.builder is None:
            return  # done: it will not be sent
        if sequence is not None:
            self.builder.producer_id, self.builder.producer_epoch = producer_id, epoch
            self.builder.base_sequence = sequence
            self.builder.is_transactional = transactional
            self.producer = (producer_id, epoch)
        self.sequence = sequence
        self.data = self.builder.build()

    def unseal(self) -> None:
        """Forget the sequence (the producer epoch changed); sealed again at the next send. It stays
        closed to new records: it was sent, so later batches of its partition may hold newer ones."""
        self.sequence = self.producer = self.data = None
        self.full = True

    # -- outcome ------------------------------------------------------------------------------------
    def metadata(self, index: int) -> RecordMetadata:
        assert self.result is not None
        base_offset, log_append_time, log_start_offset = self.result
        timestamp, key_size, value_size, header_size = RECORD_META.unpack_from(self.meta, RECORD_META.size * index)
        return RecordMetadata(self.tp.topic, self.tp.partition, self.tp,
                              base_offset + index if base_offset >= 0 else -1,
                              log_append_time if log_append_time >= 0 else timestamp, log_start_offset, None,
                              key_size, value_size, header_size)

    def outcome(self, index: int) -> tuple[int, Any]:
        """(state, RecordMetadata or error) of record ``index``, for the futures bound to the batch."""
        state = self.state
        if state == SUCCEEDED:
            return state, self.metadata(index)
        return state, self.error

    def complete(self, base_offset: int, log_append_time: int, log_start_offset: int) -> bool:
        """Answer every record; False (and nothing changes) if the batch was already done."""
        if self.state != PENDING:
            return False
        self.result = (base_offset, log_append_time, log_start_offset)
        self.state = SUCCEEDED
        futures, calls = self._settled()
        for index, future in futures or ():
            if not future.done():
                future.set_result(self.metadata(index))
        for call, first, count in calls or ():
            call.acknowledged(self, first, count)
        return True

    def fail(self, error: BaseException) -> bool:
        """Fail every record with ``error``; False (and nothing changes) if the batch was already done."""
        if self.state != PENDING:
            return False
        self.error = error
        self.state = FAILED
        futures, calls = self._settled()
        for _, future in futures or ():
            if not future.done():
                future.set_exception(error)
        for call, _, _ in calls or ():
            call.failed(error)
        return True

    def _settled(self) -> tuple[list | None, list | None]:
        """Let go of what only the way there needed (record futures may keep the batch for long); returns the
        futures and calls to answer."""
        futures, calls = self.futures, self.calls
        self.builder = self.data = self.futures = self.calls = None
        done, self.done = self.done, None
        if done is not None:
            done.set_result(None)
        batch_settled(self)
        return futures, calls


__all__ = ["BATCH_OVERHEAD", "Columns", "RecordMetadata", "_Batch"]

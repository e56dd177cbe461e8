"""A producer's batch on its way (its records, sequence and outcome) and the RecordMetadata it answers with.

The accumulator (record_accumulator.py) queues batches, the sender (producer_sender.py) decides when they go
and producer_sequences.py what their sequences are; a batch only holds its records, is sealed into bytes once
per producer epoch, and completes its records' futures, once: a batch that expired while its request was in
flight keeps its outcome when the late answer comes (Java's ProducerBatch.done).
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from ..protocol.records import Compression, RecordBatchBuilder
from .types import TopicPartition

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


class _Record(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    size: int  # estimated bytes in a batch
    key_size: int
    value_size: int
    header_size: int


class _Batch:
    """One partition's records on their way; ``done`` resolves when all of them are answered."""

    def __init__(self, tp: TopicPartition, order: int, compression: Compression, now: float) -> None:
        self.tp = tp
        self.order = order  # its place in the partition's queue
        self.builder = RecordBatchBuilder(compression)
        self.records: list[tuple[asyncio.Future, int, _Record]] = []  # (future, timestamp, record)
        self.size = BATCH_OVERHEAD
        self.created = now
        self.retry_at = 0.0
        self.attempts = 0
        self.sequence: int | None = None
        self.producer: tuple[int, int] | None = None  # (id, epoch) its sequence belongs to
        self.data: bytes | None = None
        self.full = False
        self.last_error: BaseException | None = None  # what its last attempt was answered with, if it failed
        self.done = asyncio.get_running_loop().create_future()

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def is_done(self) -> bool:
        """Its records' outcome is known (acknowledged, failed or expired), though a request may still be out."""
        return self.done.done()

    @property
    def last_sequence(self) -> int:
        """The sequence of its last record (sealed batches only); sequences wrap at Integer.MAX_VALUE."""
        assert self.sequence is not None
        return (self.sequence + len(self.records) - 1) % (2**31)

    def try_append(self, record: _Record, timestamp: int, future: asyncio.Future, batch_size: int) -> bool:
        if self.full or self.data is not None or (self.records and self.size + record.size > batch_size):
            self.full = True
            return False
        self.builder.append(timestamp, record.key, record.value, record.headers)
        self.records.append((future, timestamp, record))
        self.size += record.size
        self.full = self.size >= batch_size
        return True

    def seal(self, producer_id: int, epoch: int, sequence: int | None, transactional: bool = False) -> None:
        """Build the bytes; a sealed batch is sent as is, every time."""
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

    def complete(self, base_offset: int, log_append_time: int, log_start_offset: int) -> bool:
        """Answer every record; False (and nothing changes) if the batch was already done."""
        if self.done.done():
            return False
        for index, (future, timestamp, record) in enumerate(self.records):
            if not future.done():
                offset = base_offset + index if base_offset >= 0 else -1
                future.set_result(RecordMetadata(
                    self.tp.topic, self.tp.partition, self.tp, offset,
                    log_append_time if log_append_time >= 0 else timestamp, log_start_offset, None,
                    record.key_size, record.value_size, record.header_size))
        self.done.set_result(None)
        return True

    def fail(self, error: BaseException) -> bool:
        """Fail every record with ``error``; False (and nothing changes) if the batch was already done."""
        if self.done.done():
            return False
        for future, _, _ in self.records:
            if not future.done():
                future.set_exception(error)
        self.done.set_result(None)
        return True


__all__ = ["BATCH_OVERHEAD", "RecordMetadata", "_Batch", "_Record"]

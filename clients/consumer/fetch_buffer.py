"""One partition's fetched records between the Fetch answer and the application, decoded only when taken.

A Fetch answer's batches are checked (CRC), filtered (control batches, aborted transactions, batches
before the fetch offset) and decompressed when they arrive (``batch_specs``); their records stay
undecoded until the application takes them, as ConsumerRecords (``take_records``: getmany, poll,
iteration) or as one Arrow RecordBatch (``take_arrow``: poll_arrow), both through the record codec in
one call per batch (or per take). A batch is described by the codec's spec
``(records, count, base_offset, base_timestamp, timestamp_type, fixed_timestamp, min_offset)``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from ...protocol.records import RecordBatchView, decompress
from ...protocol.records import codec
from ...protocol.records.batch import LOG_APPEND_TIME
from ..fetched_batches import scan_fetched
from ..types import ConsumerRecord

Spec = tuple  # (records, count, base_offset, base_timestamp, timestamp_type, fixed_timestamp, min_offset)


def batch_spec(batch: RecordBatchView, min_offset: int) -> Spec:
    """The codec's description of ``batch``'s records (decompressed; uncompressed records are not copied)."""
    compression = batch.compression
    records = decompress(compression, batch.records_data) if compression else batch.records_data
    timestamp_type = batch.timestamp_type
    return (records, batch.record_count, batch.base_offset, batch.base_timestamp, timestamp_type,
            batch.max_timestamp if timestamp_type == LOG_APPEND_TIME else None, min_offset)


def batch_specs(data: Any, fetch_offset: int, aborted_transactions: list[Any] | None = None
                ) -> tuple[list[Spec], int]:
    """``scan_fetched`` with the batches as codec specs."""
    batches, next_offset = scan_fetched(data, fetch_offset, aborted_transactions)
    return [batch_spec(batch, fetch_offset) for batch in batches], next_offset


class PartitionBuffer:
    """The undecoded batches of one partition, and the rest of a batch of which only part was taken."""

    __slots__ = ("topic", "partition", "batches", "next_offset", "leftover", "leftover_index", "leftover_spec")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.batches: deque[Spec] = deque()
        self.next_offset = 0  # after the last batch of the Fetch answer the batches came from
        self.leftover: list[ConsumerRecord] | None = None  # decoded records not handed out yet
        self.leftover_index = 0
        self.leftover_spec: Spec | None = None  # the batch they came from

    def __bool__(self) -> bool:
        return bool(self.batches) or self.leftover is not None

    def clear(self) -> None:
        self.batches.clear()
        self.leftover = self.leftover_spec = None

    def extend(self, specs: list[Spec], next_offset: int) -> None:
        self.batches.extend(specs)
        self.next_offset = next_offset

    def take_records(self, limit: int, key_deserializer: Callable | None,
                     value_deserializer: Callable | None) -> list[ConsumerRecord]:
        """Up to ``limit`` records, in offset order."""
        taken: list[ConsumerRecord] = []
        while limit > 0:
            if self.leftover is None:
                if not self.batches:
                    break
                spec = self.batches.popleft()
                records = codec.decode_consumer_records(
                    *spec[:4], spec[5], spec[6], self.topic, self.partition, spec[4], ConsumerRecord,
                    key_deserializer, value_deserializer)
                if len(records) <= limit:
                    taken += records
                    limit -= len(records)
                    continue
                self.leftover, self.leftover_index, self.leftover_spec = records, 0, spec
            start = self.leftover_index
            end = min(start + limit, len(self.leftover))
            taken += self.leftover[start:end]
            limit -= end - start
            if end == len(self.leftover):
                self.leftover = self.leftover_spec = None
            else:
                self.leftover_index = end
        return taken

    def take_arrow(self, limit: int) -> Any:
        """Up to ``limit`` records as one ``pyarrow.RecordBatch`` (``arrow.KAFKA_SCHEMA``), or None."""
        from ...protocol.records import arrow  # pyarrow only when asked for

        if self.leftover is not None:  # a batch partly taken as records: decode the rest again
            next_offset = self.leftover[self.leftover_index].offset
            self.batches.appendleft(self.leftover_spec[:6] + (next_offset,))
            self.leftover = self.leftover_spec = None
        while self.batches:
            specs, upper_bound = [], 0
            while self.batches and upper_bound < limit:
                spec = self.batches.popleft()
                specs.append(spec)
                upper_bound += spec[1]
            batch = arrow.decode_record_batch(specs, self.topic, self.partition)
            if batch.num_rows > limit:
                # Only the last batch can be cut: the ones before it hold fewer than ``limit`` records together.
                rest = batch.column(4)[limit].as_py()
                self.batches.appendleft(specs[-1][:6] + (rest,))
                batch = batch.slice(0, limit)
            if batch.num_rows:  # else compaction left nothing at or after the fetch offset in these
                return batch
        return None

"""Reading one offset range of one partition in a Spark Python worker, as Arrow record batches.

The worker runs our synchronous ``Consumer`` (an ``AIOConsumer`` on a private loop thread), assigned the
one partition and sought to the range's start, with auto_offset_reset="none" so an offset that aged
out surfaces as OFFSET_OUT_OF_RANGE instead of a silent jump. Records come as Arrow from ``poll_arrow``
(decoded by the compiled codec straight into Spark's schema, no Python object per row) and are passed
on as they are, cut at the range's end. The range is done when the consumer's
position reaches its end: compacted offsets and transaction markers (and, read_committed, aborted
records) are stepped over by the consumer, so gaps are not data loss (Spark's
KafkaDataConsumer does the same with its "fetched offset jumped" handling).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition

from ..clients.consumer.sync_consumer import Consumer
from ..clients.types import TopicPartition
from ..protocol.errors import KafkaError
from .schema import arrow_schema

log = logging.getLogger(__name__)

ROWS_PER_BATCH = 50000


class KafkaInputPartition(InputPartition):
    """One task's range: ``start`` is the first offset read, ``end`` the offset after the last one."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


@dataclass(frozen=True)
class ReadSettings:
    """What a worker needs, pickled with each task."""
    bootstrap_servers: str
    read_committed: bool
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    consumer_params: dict[str, Any]


# Spark's KafkaSourceProvider.INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE / _FALSE.
FAIL_INSTRUCTION = ("Some data may have been lost because they are not available in Kafka any more; either the "
                    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
                    "topic was processed. If you don't want your streaming query to fail on such cases, set the "
                    "source option \"failOnDataLoss\" to \"false\".")
WARN_INSTRUCTION = ("Some data may have been lost because they are not available in Kafka any more; either the "
                    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
                    "topic was processed. If you want your streaming query to fail on such cases, set the "
                    "source option \"failOnDataLoss\" to \"true\".")


class KafkaDataLossError(RuntimeError):
    """Spark's KafkaIllegalStateException of KAFKA_DATA_LOSS (or the IllegalStateException its executors throw)."""


def data_loss_message(reason: str, condition: str | None = None) -> str:
    """Spark 4's text: ``[KAFKA_DATA_LOSS.<condition>] <instruction> Reason: <reason>`` for the driver's
    checks; the executor's "<reason> <instruction>" without a condition."""
    if condition is None:
        return f"{reason} {FAIL_INSTRUCTION}"
    return f"[KAFKA_DATA_LOSS.{condition}] {FAIL_INSTRUCTION} Reason: {reason}"


def report_data_loss(fail: bool, reason: str, condition: str | None = None, warning: str | None = None) -> None:
    """Spark's reportDataLoss: raise (failOnDataLoss=true), or log ``warning`` (default: ``reason``) and go on."""
    if fail:
        raise KafkaDataLossError(data_loss_message(reason, condition))
    log.warning("%s %s", warning or reason, WARN_INSTRUCTION)


def report_offset_changed(fail: bool, tp: TopicPartition, start: int, end: int) -> None:
    """An end offset below the start: Spark's PARTITION_OFFSET_CHANGED (batch and streaming readers)."""
    report_data_loss(fail, f"Partition {tp.topic}-{tp.partition} offset was changed from {start} to {end}. This "
                           f"could either be a user error that the start offset is set too high and this is the "
                           f"first batch, or the kafka topic-partition is broken, and some data may have been "
                           f"missed.", "PARTITION_OFFSET_CHANGED")


def tp_names(partitions) -> str:
    """Partitions as Kafka's TopicPartition.toString names them: ``[topic-0, topic-1]``."""
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)) + "]"


def read_range(settings: ReadSettings, part: KafkaInputPartition) -> Iterator[pa.RecordBatch]:
    if part.start >= part.end:
        return
    tp = TopicPartition(part.topic, part.partition)
    params = {k: v for k, v in settings.consumer_params.items() if k not in ("consumer_timeout_ms",)}
    params.setdefault("client_id", f"odradek-spark-{part.topic}-{part.partition}")
    consumer = Consumer(bootstrap_servers=settings.bootstrap_servers, auto_offset_reset="none",
                        enable_auto_commit=False, group_id=None,
                        isolation_level="read_committed" if settings.read_committed else "read_uncommitted",
                        **params)
    try:
        consumer.assign([tp])
        start = part.start
        earliest = consumer.beginning_offsets([tp])[tp]
        if start < earliest:
            _report_out_of_range(settings, tp, start, earliest)
            start = earliest
        if start >= part.end:
            return
        consumer.seek(tp, start)
        yield from _read_until(consumer, tp, start, part.end, settings)
    finally:
        consumer.close(autocommit=False)


def _report_out_of_range(settings: ReadSettings, tp: TopicPartition, offset: int, earliest: int) -> None:
    """The range starts below the log start (delete_records or retention moved it): Spark's
    KafkaDataConsumer fails with "Cannot fetch offset", or warns that the gap will be skipped."""
    report_data_loss(settings.fail_on_data_loss,
                     f"Cannot fetch offset {offset} (TopicPartition: {tp.topic}-{tp.partition}); the earliest "
                     f"available offset is {earliest}.",
                     warning=f"Offset {offset} of {tp.topic}-{tp.partition} is out of range (the earliest available "
                             f"is {earliest}), and records in [{offset}, {earliest}) will be skipped.")


def _read_until(consumer: Consumer, tp: TopicPartition, start: int, end: int,
                settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(settings.include_headers)
    position = start
    idle_since = time.monotonic()
    while position < end:
        try:
            batches = consumer.poll_arrow(timeout_ms=500, max_records=ROWS_PER_BATCH)
        except KafkaError as exc:
            if getattr(exc, "code", None) != 1:  # not OFFSET_OUT_OF_RANGE
                raise
            earliest = consumer.beginning_offsets([tp])[tp]
            _report_out_of_range(settings, tp, position, earliest)
            if earliest >= end or earliest <= position:
                return
            consumer.seek(tp, earliest)
            position = earliest
            continue
        batch = batches.get(tp)
        if batch is not None:
            rows = _before(batch, end)
            if rows.num_rows:
                yield pa.RecordBatch.from_arrays(rows.columns[:len(schema)], schema=schema)
        new_position = consumer.position(tp)
        if new_position > position or batch is not None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > settings.poll_timeout_ms / 1000.0:
            raise TimeoutError(f"Cannot fetch record for offset {position} of {tp.topic}-{tp.partition} in "
                               f"{settings.poll_timeout_ms} milliseconds")
        position = new_position


def _before(batch: pa.RecordBatch, end: int) -> pa.RecordBatch:
    """The rows of ``batch`` (in offset order) whose offset is below ``end``."""
    offsets = batch.column("offset")
    if offsets[-1].as_py() < end:
        return batch
    return batch.slice(0, pc.sum(pc.less(offsets, end)).as_py() or 0)

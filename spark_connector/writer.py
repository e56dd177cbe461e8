"""The batch and streaming writers: ``df.write.format("odradek")`` and ``df.writeStream.format("odradek")``.

Rows carry ``value`` (string or binary, required) and optionally ``key`` (string or binary), ``topic``
(string; the ``topic`` option overrides it, as in Spark), ``partition`` (int) and ``headers``
(array<struct<key string, value binary>>) -- Spark's Kafka sink's columns.

Exactly once (the default; ``exactlyOnce=false`` gives Spark's at-least-once with an idempotent
producer). Spark's commit protocol has tasks write and return commit messages, then the driver's
``commit(messages, batchId)`` finalizes. A Kafka transaction cannot be handed from a task to the
driver, so each task commits its own, and a replay is recognised by markers committed *inside* that
transaction as consumer-group offsets (atomic with the records, KIP-98's send_offsets_to_transaction):

- transactional.id = ``<prefix>-<task partition id>``, with prefix ``odradek-spark-<query id>`` (the
  query's checkpointed id, from the task's local property ``sql.streaming.queryId``), or the
  ``transactionalIdPrefix`` option; a batch (non-streaming) write uses a fresh prefix per job.
- The task calls init_transactions first: that fences any earlier attempt of the same task and
  completes (commits or aborts) its open transaction, so what is committed is now settled.
- It then reads its marker group (the group named like the transactional.id) and the query's batch
  group (named like the prefix): a committed offset ``batchId + 1`` in either means this batch's
  records for this task (or the whole batch) are already in Kafka, and the task writes nothing.
- Otherwise it writes its rows in one transaction with the marker ``batchId + 1`` and commits.
- The driver's ``commit(messages, batchId)`` commits ``batchId + 1`` to the batch group, so a replay
  after the driver died between Spark's commit and its commit log skips every task at once.
The marker offsets sit on partition 0 of a topic the task wrote to (offset commits need an existing
topic); markers are read as the maximum over all of a group's committed offsets.

Rows are written in bulk: each Arrow batch Spark hands over is split by topic and partition (pyarrow compute,
no Python object per row) and each part goes to ``Producer.send_batch``, whose codec reads the key and value
(string or binary) columns from their Arrow buffers.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from ..clients.admin.client import Admin
from ..clients.producer.sync_producer import Producer
from ..clients.types import OffsetAndMetadata, TopicPartition
from .options import SinkOptions, security_of

log = logging.getLogger(__name__)

QUERY_ID_PROPERTY = "sql.streaming.queryId"  # StreamExecution.QUERY_ID_KEY
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # MicroBatchExecution.BATCH_ID_KEY
TRANSACTION_TIMEOUT_MS = 600000  # below Kafka's default transaction.max.timeout.ms (15 min)


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    partition_id: int
    records: int  # written by this attempt (0 when skipped)
    topics: list[str] = field(default_factory=list)
    skipped: bool = False  # a replay: this task's records were already committed
    prefix: str = ""


class SinkWriteError(RuntimeError):
    """Records of a task were not acknowledged by Kafka (the task fails)."""


def validate_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """KafkaWriter.validateQuery's checks and messages."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    if "topic" not in types and options.topic is None:
        raise ValueError("topic option required when no 'topic' attribute is present. "
                         "Use the topic option for setting a topic.")
    if "topic" in types and not isinstance(types["topic"], StringType):
        raise ValueError("Topic type must be a StringType")
    if "key" in types and not isinstance(types["key"], (StringType, BinaryType)):
        raise ValueError("key attribute type must be a StringType or BinaryType")
    if "value" not in types:
        raise ValueError("Required attribute 'value' not found")
    if not isinstance(types["value"], (StringType, BinaryType)):
        raise ValueError("value attribute type must be a StringType or BinaryType")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise ValueError("partition attribute type must be an IntegerType")
    if "headers" in types:
        headers = types["headers"]
        ok = isinstance(headers, ArrayType) and isinstance(headers.elementType, StructType) and [
            (f.name, type(f.dataType)) for f in headers.elementType.fields] == [
            ("key", StringType), ("value", BinaryType)]
        if not ok:
            raise ValueError("headers attribute type must be an ArrayType of StructType(key StringType, "
                             "value BinaryType)")


def _groups(batches: Iterator[pa.RecordBatch], default_topic: str | None) -> Iterator[tuple[str, int | None, dict]]:
    """(topic, partition or None, columns for send_batch) for each run of rows that go to one place: the rows
    of every Arrow batch grouped by topic (the ``topic`` option wins over the column, as in Spark) and by
    the ``partition`` column when there is one, each group in the rows' order. No Python object per row."""
    for batch in batches:
        if not batch.num_rows:
            continue
        columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        pieces: list[tuple[str, Any]] = []
        if default_topic is not None:
            pieces.append((default_topic, None))
        else:
            topics = columns["topic"]
            if topics.null_count:
                raise ValueError("Null topic present in the data. Use the topic option for setting a topic.")
            for topic in pc.unique(topics).to_pylist():
                pieces.append((topic, pc.equal(topics, topic)))
        for topic, mask in pieces:
            selected = columns if mask is None else {name: pc.filter(column, mask) for name, column in columns.items()}
            for partition, rows in _by_partition(selected):
                yield topic, partition, rows


def _by_partition(columns: dict) -> Iterator[tuple[int | None, dict]]:
    partitions = columns.get("partition")
    if partitions is None or partitions.null_count == len(partitions):
        yield None, columns
        return
    for partition in pc.unique(partitions).to_pylist():
        mask = pc.is_null(partitions) if partition is None else pc.fill_null(pc.equal(partitions, partition), False)
        yield partition, {name: pc.filter(column, mask) for name, column in columns.items()}


def _send_rows(producer: Producer, topic: str, partition: int | None, columns: dict) -> Any:
    """One send_batch of the group's key, value and headers columns (strings are sent as their UTF-8)."""
    return producer.send_batch(topic, columns["value"], keys=columns.get("key"), headers=columns.get("headers"),
                               partition=partition)


def last_marked_batch(admin: Admin, group_id: str) -> int:
    """The highest ``batchId + 1`` committed as a marker by ``group_id`` (0: none)."""
    offsets = admin.list_consumer_group_offsets(group_id)
    return max((o.offset for o in offsets.values()), default=0)


class _TaskWriter:
    """One task's write of one batch (streaming micro-batch, or the whole batch job as batch 0)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def _producer(self, transactional_id: str | None) -> Producer:
        params = dict(self.options.producer_params)
        if transactional_id is not None:
            params.setdefault("transaction_timeout_ms", TRANSACTION_TIMEOUT_MS)
            params["transactional_id"] = transactional_id
        else:
            params.setdefault("enable_idempotence", True)
        return Producer(bootstrap_servers=self.options.bootstrap_servers, **params)

    def write(self, batches: Iterator[pa.RecordBatch], prefix: str, partition_id: int,
              batch_id: int) -> KafkaCommitMessage:
        if not self.options.exactly_once:
            return self._write_at_least_once(batches, prefix, partition_id)
        transactional_id = f"{prefix}-{partition_id}"
        producer = self._producer(transactional_id)
        try:
            producer.init_transactions()  # fences older attempts; their transaction is settled after this
            with Admin(self.options.bootstrap_servers, **security_of(self.options.producer_params)) as admin:
                done = max(last_marked_batch(admin, transactional_id), last_marked_batch(admin, prefix))
            if done >= batch_id + 1:
                log.info("batch %d of %s already committed by task %d: writing nothing", batch_id, prefix,
                         partition_id)
                for _ in batches:
                    pass
                return KafkaCommitMessage(partition_id, 0, [], True, prefix)
            producer.begin_transaction()
            count, topics = 0, []
            try:
                for topic, partition, columns in _groups(batches, self.options.topic):
                    _send_rows(producer, topic, partition, columns)
                    count += len(columns["value"])
                    if topic not in topics:
                        topics.append(topic)
                if topics:
                    marker = OffsetAndMetadata(batch_id + 1, json.dumps({"batch": batch_id, "records": count}))
                    producer.send_offsets_to_transaction({TopicPartition(topics[0], 0): marker}, transactional_id)
                producer.commit_transaction()
            except BaseException:
                try:
                    producer.abort_transaction()
                except Exception as exc:  # fenced or broken: the coordinator aborts it anyway
                    log.warning("aborting the transaction of %s failed: %s", transactional_id, exc)
                raise
            return KafkaCommitMessage(partition_id, count, topics, False, prefix)
        finally:
            producer.close()

    def _write_at_least_once(self, batches: Iterator[pa.RecordBatch], prefix: str,
                             partition_id: int) -> KafkaCommitMessage:
        producer = self._producer(None)
        calls, topics = [], []  # (send_batch future, its record count)
        try:
            for topic, partition, columns in _groups(batches, self.options.topic):
                calls.append((_send_rows(producer, topic, partition, columns), len(columns["value"])))
                if topic not in topics:
                    topics.append(topic)
            producer.flush()  # returns once every record is acknowledged or failed (delivery.timeout.ms)
        finally:
            producer.close()
        count = sum(size for _, size in calls)
        failed = [(future, size) for future, size in calls if future.failed()]
        if failed:  # a failed send fails the task, as Spark's sink does; one line for thousands alike
            first = failed[0][0].exception()
            raise SinkWriteError(f"{sum(size for _, size in failed)} of {count} records could not be written "
                                 f"to {', '.join(topics)}; the first error: {first}") from first
        return KafkaCommitMessage(partition_id, count, topics, False, prefix)



def _task_context() -> Any:
    from pyspark import TaskContext  # noqa: PLC0415 (only inside a task)
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the odradek writer must run inside a Spark task")
    return context


def commit_batch_marker(options: SinkOptions, messages: list[Any], batch_id: int) -> None:
    """The driver's part: mark ``batch_id`` done for the whole query (see the module's docstring)."""
    done = [m for m in messages if isinstance(m, KafkaCommitMessage)]
    topics = [t for m in done for t in m.topics]
    if not options.exactly_once or not topics:
        return
    with Admin(options.bootstrap_servers, **security_of(options.producer_params)) as admin:
        admin.alter_consumer_group_offsets(done[0].prefix, {TopicPartition(topics[0], 0): OffsetAndMetadata(
            batch_id + 1, json.dumps({"batch": batch_id}))})


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        # Made once on the driver and pickled to every task: one transactional-id family per job.
        self.prefix = f"{options.transactional_id_prefix or 'odradek-spark-batch'}-{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _TaskWriter(self.options).write(iterator, self.prefix, _task_context().partitionId(), 0)

    def commit(self, messages: list[Any]) -> None:
        written = sum(m.records for m in messages if isinstance(m, KafkaCommitMessage))
        log.info("odradek batch write committed: %d records", written)

    def abort(self, messages: list[Any]) -> None:
        # Kafka cannot take back committed transactions: what finished tasks wrote stays (Spark's sink too).
        log.warning("odradek batch write aborted; %d task(s) had already committed their records",
                    sum(1 for m in messages if isinstance(m, KafkaCommitMessage) and m.records))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        context = _task_context()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
        batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
        if batch_id is None or (query_id is None and self.options.transactional_id_prefix is None):
            raise RuntimeError("the streaming query's id and batch id are not visible to the task; "
                               "set the 'transactionalIdPrefix' option")
        prefix = self.options.transactional_id_prefix or f"odradek-spark-{query_id}"
        return _TaskWriter(self.options).write(iterator, prefix, context.partitionId(), int(batch_id))

    def commit(self, messages: list[Any], batchId: int) -> None:
        commit_batch_marker(self.options, messages, batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:
        log.warning("odradek streaming write of batch %d aborted; a retry of it writes only what was not "
                    "committed", batchId)

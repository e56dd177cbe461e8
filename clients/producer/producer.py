"""AIOProducer: the asyncio producer, shaped like aiokafka's AIOKafkaProducer with kafka-python's kwargs.

    async with AIOProducer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as producer:
        future = await producer.send("events", b"value", key=b"key")    # queued in a batch
        metadata = await future                                          # RecordMetadata
        await producer.send_and_wait("events", b"other")

Records are appended to one open batch per partition (``record_accumulator.py``); a sender task
(``sender.py``) sends a partition's batch when it reaches ``batch_size``, ``linger_ms`` after it
was opened, or on ``flush``/``close``, grouping the batches for one leader into one Produce request (one
batch per partition, as the Java client does). Retriable errors (and lost connections) put the batch back
at its place in the queue after ``retry_backoff_ms`` and refresh the metadata. ``delivery_timeout_ms``
bounds every record from its batch's creation to its outcome, whatever it waits for (a retry, an earlier
batch, a leader, an epoch bump, an answer): then its future fails with REQUEST_TIMED_OUT, naming the error
it was last retried after, as Kafka 2.8's producer does; so ``flush`` and ``close`` always return.

Idempotence (on unless acks, retries or max_in_flight_requests_per_connection rule it out, as in
Kafka 3.x) gives each partition's batches consecutive sequence numbers under a producer id from
InitProducerId. A retried batch keeps its sequence, so the broker drops a copy it already wrote; it
is resent only once the partition has nothing else in flight, so up to 5 in flight keep their order.
When a sequenced batch fails for good, the producer bumps its epoch (Kafka 2.8's idempotent bump, KIP-360:
same producer id, next epoch, sequences from 0) before sending more, since the broker's expected sequence
no longer matches ours; a batch refused for that gap (OUT_OF_ORDER_SEQUENCE_NUMBER) is re-sent under the
new epoch rather than failed, as Kafka's idempotent producer does (a transactional producer fails it: the
transaction aborts). Only the batch whose sequence broke and those queued behind it restart at sequence
0; any other batch being retried (an earlier one of that partition, or of another) keeps its old epoch
and sequence (it may already be written, and only that lets the broker recognise it), and the partition's
new-epoch batches wait until its old ones are answered, as Java's Sender does
(TransactionManager.maybeUpdateProducerIdAndEpoch). A sent batch that expires leaves its partition's
sequences unresolved: nothing new goes there until the answers show whether it was written, and the epoch
is bumped if they do not (Java's unresolved sequences). The numbers are kept in ``sequences.py``.

A ``transactional_id`` makes the producer transactional (and idempotent), as kafka-python's and
aiokafka's: ``init_transactions``, ``begin_transaction``, ``send_offsets_to_transaction``,
``commit_transaction``, ``abort_transaction`` and ``async with producer.transaction():``. The protocol
and state machine are in ``transaction_manager.py``; here batches wait until their partition is in the
transaction, carry the transactional bit, and are dropped when the transaction aborts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Iterable

from ...protocol.errors import KafkaError, RequestTimedOutError, for_code
from ...protocol.records import Compression
from ...protocol.records.codec import pure_python_forced
from ..errors import KafkaConnectionError
from .partitioner import DefaultPartitioner
from .batch_input import BatchInput, SendBatchCall, batch_input
from .partitioner import partition_for_key
from .batch import Columns, RecordMetadata, _Batch
from .record_futures import bind
from .sender import Sender
from .sequences import ProducerSequences
from .record_accumulator import RecordAccumulator
from ..simple_client import SimpleClient
from .transaction_manager import TransactionManager, TransactionState, TransactionStateError
from ..security.client_security import SECURITY_DEFAULTS, client_security
from ..types import KafkaConfigurationError, TopicPartition, check_configs

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1


_DEFAULTS: dict[str, Any] = {
    "bootstrap_servers": "localhost",
    "client_id": None,
    "key_serializer": None,
    "value_serializer": None,
    "acks": None,  # "all" when idempotent, else 1
    "compression_type": None,
    "retries": _INT32_MAX,
    "batch_size": 16384,
    "linger_ms": 0,
    "partitioner": None,
    "max_request_size": 1048576,
    "request_timeout_ms": 30000,
    "delivery_timeout_ms": 120000,
    "retry_backoff_ms": 100,
    "max_block_ms": 60000,
    "buffer_memory": 33554432,
    "max_in_flight_requests_per_connection": 5,
    "enable_idempotence": None,  # None: on unless the other settings rule it out
    "metadata_max_age_ms": 300000,
    "connections_max_idle_ms": 540000,  # accepted for kafka-python compatibility; connections stay open
    "transactional_id": None,
    "transaction_timeout_ms": 60000,
    **SECURITY_DEFAULTS,  # security_protocol, ssl_*, sasl_* (kafka-python's names)
}


def _parse_acks(acks: Any) -> int | None:
    if acks is None:
        return None
    if acks == "all":
        return -1
    if acks not in (0, 1, -1, "0", "1", "-1"):
        raise KafkaConfigurationError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")
    return int(acks)


def _parse_compression(name: str | None) -> Compression:
    try:
        return Compression[(name or "none").upper()]
    except KeyError:
        raise KafkaConfigurationError(f"compression_type must be none, gzip, snappy, lz4 or zstd, not {name!r}") from None


def producer_config(configs: dict[str, Any], whole: bool = True) -> dict[str, Any]:
    """The defaults overridden by ``configs``; unknown names and contradictions raise KafkaConfigurationError.
    ``whole=False`` checks settings one by one (the Spark sink's options): no rule between timeouts then."""
    config = check_configs(configs, _DEFAULTS)
    acks = _parse_acks(config["acks"])
    idempotent = config["enable_idempotence"]
    if config["transactional_id"] is not None:  # a transactional producer is idempotent (Kafka's rule)
        if idempotent is False:
            raise KafkaConfigurationError("transactional_id needs enable_idempotence (leave it unset or True)")
        idempotent = True
    compatible = (acks in (None, -1) and config["retries"] > 0
                  and config["max_in_flight_requests_per_connection"] <= 5)
    if idempotent and not compatible:
        raise KafkaConfigurationError("enable_idempotence needs acks='all', retries > 0 and "
                                      "max_in_flight_requests_per_connection <= 5")
    config["enable_idempotence"] = compatible if idempotent is None else bool(idempotent)
    config["acks"] = (-1 if config["enable_idempotence"] else 1) if acks is None else acks
    config["compression_type"] = _parse_compression(config["compression_type"])
    if config["max_in_flight_requests_per_connection"] < 1:
        raise KafkaConfigurationError("max_in_flight_requests_per_connection must be at least 1")
    # Kafka 2.8's KafkaProducer.configureDeliveryTimeout: a record must have time for its linger and one request.
    least = config["linger_ms"] + config["request_timeout_ms"]
    if whole and config["delivery_timeout_ms"] < least:
        if "delivery_timeout_ms" in configs:
            raise KafkaConfigurationError(f"delivery_timeout_ms should be equal to or larger than linger_ms + "
                                          f"request_timeout_ms ({least}), not {config['delivery_timeout_ms']}")
        log.warning("delivery_timeout_ms raised to linger_ms + request_timeout_ms = %d ms", least)
        config["delivery_timeout_ms"] = least
    return config


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _serialize(serializer: Callable[[Any], Any] | None, value: Any) -> bytes | None:
    if serializer is not None and value is not None:
        value = serializer(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"keys and values must be bytes, str or None after serialization, not {type(value).__name__}")
    return bytes(value) if isinstance(value, (bytearray, memoryview)) else value


def run_end_py(rows: list[tuple], start: int, end: int) -> int:
    """Where the run of rows that go into batches together ends: keyless rows without a partition, of one
    topic, are appended in one codec call; any other row alone."""
    topic, _, key, partition = rows[start][:4]
    if key is not None or partition is not None:
        return start + 1
    index = start + 1
    while index < end:
        row = rows[index]
        if row[2] is not None or row[3] is not None or row[0] != topic:
            break
        index += 1
    return index


try:  # the same in C (clients/producer/producer_c/producer.c): this pass runs over every row a blocking Producer sends
    if pure_python_forced():
        raise ImportError("ODRADEK_PURE_PYTHON")
    from ._producer import run_end as _run_end
except ImportError:
    _run_end = run_end_py


def _check_target(topic: Any, partition: Any) -> None:
    if not isinstance(topic, str) or not topic:
        raise TypeError("topic must be a non-empty str")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise ValueError(f"partition must be a non-negative int, not {partition!r}")


def _fail(future: Any, error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


class AIOProducer:
    def __init__(self, **configs: Any) -> None:
        self.config = producer_config(configs)
        c = self.config
        self._client = SimpleClient(c["bootstrap_servers"], client_id=c["client_id"] or "odradek-producer",
                                    request_timeout=c["request_timeout_ms"] / 1000,
                                    retry_backoff=c["retry_backoff_ms"] / 1000, security=client_security(c))
        self._partitioner = c["partitioner"] or DefaultPartitioner()
        self._idempotent: bool = c["enable_idempotence"]
        self._txn: TransactionManager | None = None
        if c["transactional_id"] is not None:
            self._txn = TransactionManager(self._client, c["transactional_id"],
                                           transaction_timeout_ms=c["transaction_timeout_ms"],
                                           retry_backoff_ms=c["retry_backoff_ms"], max_block_ms=c["max_block_ms"])
        self._sequences = ProducerSequences() if self._idempotent else None
        self._topics: set[str] = set()  # topics waited for: kept in the sender's metadata refreshes
        self._accumulator = RecordAccumulator(batch_size=c["batch_size"], compression=c["compression_type"],
                                              buffer_memory=c["buffer_memory"], max_request_size=c["max_request_size"],
                                              delivery_timeout_ms=c["delivery_timeout_ms"], on_ready=self._wake)
        self._sender = Sender(c, self._client, self._accumulator, self._sequences, self._txn, self._topics)
        self._closing = False  # sends are refused
        self._closed = False  # close() was called
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._sender_task: asyncio.Task | None = None

    @property
    def _producer_id(self) -> int:
        return self._sequences.producer_id if self._sequences is not None else -1

    @property
    def _producer_epoch(self) -> int:
        return self._sequences.epoch if self._sequences is not None else -1

    @_producer_epoch.setter
    def _producer_epoch(self, epoch: int) -> None:  # tests set it (an exhausted epoch)
        assert self._sequences is not None
        self._sequences.epoch = epoch

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect, learn the cluster and (idempotent) take a producer id. ``send`` calls it if needed."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            if self._closing:
                raise KafkaConnectionError("the producer is closed")
            await self._client.metadata(topics=[])
            if self._sequences is not None and self._txn is None:  # transactional: init_transactions() takes it
                self._sequences.use(*await self._client.init_producer_id())
            self._sender_task = asyncio.create_task(self._sender.run(), name="odradek-producer-sender")
            self._sender_task.add_done_callback(self._sender_stopped)
            self._started = True

    def _sender_stopped(self, task: asyncio.Task) -> None:
        """A sender that died of a bug must not leave flush() waiting for ever: its records fail, and so do
        later sends (as after close)."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("the producer's sender stopped", exc_info=task.exception())
        self._closing = self._sender.closing = True
        error = KafkaConnectionError(f"the producer's sender stopped: {task.exception()!r}")
        for batch in list(self._accumulator.incomplete):
            batch.fail(error)

    async def __aenter__(self) -> "AIOProducer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def metrics(self) -> dict[str, dict[str, float]]:
        """Java's producer throttle metrics, ms (NaN without a response in the last minute):
        ``{"producer-metrics": {"produce-throttle-time-avg": ..., "produce-throttle-time-max": ...}}``."""
        return {"producer-metrics": self._client.throttle_time.metrics("produce-throttle-time")}

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now, without waiting for linger, and wait until every record sent so far is
        done: acknowledged or failed (``delivery_timeout_ms`` bounds that). RequestTimedOutError if that takes
        more than ``timeout`` s; the records are not affected."""
        waiting = [batch.done for batch in self._accumulator.incomplete if batch.done is not None]
        if not waiting:
            return
        self._sender.flushing += 1
        self._wake()
        try:
            # asyncio.wait, not gather: a timeout must not cancel the batches' futures (they are their outcome)
            _, pending = await asyncio.wait(waiting, timeout=timeout)
        finally:
            self._sender.flushing -= 1
        if pending:
            raise RequestTimedOutError(f"flush did not finish within {timeout} s: "
                                       f"{sum(b.record_count for b in self._accumulator.incomplete)} records pending")

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` s, None = as long as it takes), then disconnect.
        Records still unsent after the timeout fail with KafkaConnectionError. An open transaction is
        aborted first, as Kafka's producer does, so it does not hold back read_committed consumers
        until the coordinator times it out."""
        if self._closed:
            return
        self._closed = True
        if self._txn is not None and self._started and self._txn.state in (
                TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR, TransactionState.ABORTING_TRANSACTION):
            try:
                # asyncio.timeout, not wait_for: DESIGN.md, "Deadlines"
                async with asyncio.timeout(timeout):
                    await self.abort_transaction()
            except TimeoutError:
                log.warning("closing with the transaction still open: its abort did not finish within %s s", timeout)
            except (KafkaError, OSError) as exc:
                log.warning("closing with the transaction still open: its abort failed: %s", exc)
        self._closing = self._sender.closing = True
        try:
            if self._sender_task is not None:
                self._wake()
                try:
                    async with asyncio.timeout(timeout):
                        await asyncio.shield(self._sender_task)
                except TimeoutError:
                    log.warning("producer closed with %d batches unsent", len(self._accumulator.incomplete))
        finally:
            tasks = [t for t in (self._sender_task, *self._sender.tasks()) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for batch in list(self._accumulator.incomplete):
                batch.fail(KafkaConnectionError("the producer was closed before the record was sent"))
            await self._client.close()

    # -- transactions (the protocol and states are in transaction_manager.py) ----------------------
    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise TransactionStateError("transactional methods need a producer with a transactional_id")
        return self._txn

    @property
    def transaction_state(self) -> TransactionState | None:
        return None if self._txn is None else self._txn.state

    async def init_transactions(self) -> None:
        """Take the producer id of our transactional_id, fencing older producers of it and ending
        (aborting) any transaction they left open. Needed once before the first transaction."""
        txn = self._transactions()
        if not self._started:
            await self.start()
        await txn.init_transactions()
        self._use_transaction_producer_id()

    def _use_transaction_producer_id(self) -> None:
        """The id and epoch init_transactions or an abort's bump gave: sequences restart at 0 (an abort dropped
        every queued batch, so nothing is left to re-sequence)."""
        assert self._txn is not None and self._sequences is not None
        self._sequences.use(self._txn.producer_id, self._txn.producer_epoch)

    def begin_transaction(self) -> None:
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, Any], group_id: Any) -> None:
        """Commit a consumer group's offsets (``{TopicPartition: offset or OffsetAndMetadata}``, the
        next offsets to read) as part of the transaction: visible only if it commits."""
        await self._transactions().send_offsets_to_transaction(offsets, group_id)

    async def commit_transaction(self) -> None:
        """Send every record of the transaction, then commit it (EndTxn). Raises the transaction's
        error if a record failed (then abort), ProducerFencedError if a newer producer took over."""
        txn = self._transactions()
        txn.begin_commit()
        await self.flush()
        await txn.end_transaction(commit=True)

    async def abort_transaction(self) -> None:
        """Fail the records not sent yet (TransactionAbortedError), wait for those in flight, then abort
        (EndTxn); read_committed consumers never see the transaction's records."""
        txn = self._transactions()
        txn.begin_abort()
        self._wake()  # the sender fails the queued batches
        await self.flush()
        # A batch dropped or failed after it had a sequence leaves the broker expecting another one:
        # take a new epoch, as Kafka's producer does after such an abort (KIP-360).
        assert self._sequences is not None
        await txn.end_transaction(commit=False, bump_epoch=self._sequences.bump_required)
        self._use_transaction_producer_id()

    def transaction(self) -> "TransactionContext":
        """``async with producer.transaction(): ...`` begins a transaction (calling init_transactions
        first if needed), commits it on success and aborts it on an exception (aiokafka's shape)."""
        return TransactionContext(self)

    async def _end_transaction(self, failed: bool) -> None:
        """The end of a transaction() block: commit, else (or if the commit failed abortably) abort."""
        txn = self._transactions()
        if failed:
            if not txn.is_fatal:
                await self.abort_transaction()
            return
        try:
            await self.commit_transaction()
        except KafkaError:
            if txn.state is TransactionState.ABORTABLE_ERROR:
                await self.abort_transaction()
            raise

    # -- sending ----------------------------------------------------------------------------------
    # A record on its way to a batch is a row (topic, value, key, partition, timestamp_ms, headers) with a
    # future (its ``futures[i]``, or the row's for the blocking Producer): runs of rows are encoded in one
    # codec call.

    def row(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
            timestamp_ms: int | None = None, headers: Iterable | None = None) -> tuple:
        """A checked and serialized row (raises at once on bad input; the blocking Producer sends these)."""
        _check_target(topic, partition)
        key_bytes = _serialize(self.config["key_serializer"], key)
        value_bytes = _serialize(self.config["value_serializer"], value)
        header_list = None
        if headers:
            header_list = []
            for header_key, header_value in headers:
                if not isinstance(header_key, str):
                    raise TypeError(f"header keys must be str, not {type(header_key).__name__}")
                header_list.append((header_key, _serialize(None, header_value)))
        return (topic, value_bytes, key_bytes, partition, timestamp_ms, header_list)

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp_ms: int | None = None, headers: Iterable | None = None) -> asyncio.Future:
        """Queue a record; returns a future of its RecordMetadata (aiokafka's shape)."""
        future = asyncio.get_running_loop().create_future()
        rows, futures = [self.row(topic, value, key, partition, timestamp_ms, headers)], [future]
        if self._started and not self._closing and not self._accumulator.is_full:
            partitions = self._client.cluster.partitions_for(topic)
            if partitions:  # nothing to wait for: no await on the way (each costs a task step)
                if self._txn is not None:
                    self._txn.check_send()
                self._append_rows(rows, futures, 0, 1, partitions, lazy=False)
                return future
        await self.append_waiting(rows, futures, 0, lazy=False)
        return future

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            timestamp_ms: int | None = None, headers: Iterable | None = None) -> RecordMetadata:
        return await (await self.send(topic, value, key, partition, timestamp_ms, headers))

    async def append_waiting(self, rows: list[tuple], futures: list, index: int, deadline: float | None = None,
                             lazy: bool = True) -> None:
        """Append row ``index`` after waiting, if needed, for the producer to start, for its topic's metadata
        and for buffer_memory; those waits end at ``deadline`` (loop time; default ``max_block_ms`` from now,
        the time Java's send may block) with RequestTimedOutError, raised here. Its future (a blocking
        Producer's when ``lazy``, else an asyncio one) gets the record's own errors."""
        await self._ready_to_send()
        if deadline is None:
            deadline = self._time() + self.config["max_block_ms"] / 1000
        await self._wait_for_partitions(rows[index][0], deadline)
        if self._accumulator.is_full:
            await self._accumulator.wait_for_space(deadline, self.config["max_block_ms"])
        self._append_rows(rows, futures, index, index + 1, self._client.cluster.partitions_for(rows[index][0]), lazy)

    def _by_key(self, topic: str, given: BatchInput, partitions: list[int]) -> list[tuple[int, Columns, int]]:
        """``send_batch``'s records grouped by partition, each group in the call's order, so every partition
        gets its records in that order: a key's partition by Kafka's murmur2, the keyless ones all the sticky
        partition's. ``batch_input`` gives every column as Python objects when there are keys."""
        assert given.keys is not None
        sticky: int | None = None
        groups: dict[int, list[int]] = {}
        for index, key in enumerate(given.keys):
            if key is not None:
                partition = partition_for_key(key, len(partitions))
            else:
                if sticky is None:
                    sticky = self._partitioner.partition(topic, None, partitions, self._available(topic, partitions))
                partition = sticky
            groups.setdefault(partition, []).append(index)
        pieces = []
        for partition, indexes in groups.items():
            def take(column: Any) -> Any:
                return [column[i] for i in indexes] if isinstance(column, list) else column
            pieces.append((partition, Columns(*(take(column) for column in given.columns)), len(indexes)))
        return pieces

    async def _ready_to_send(self) -> None:
        if self._closing:
            raise KafkaConnectionError("the producer is closed")
        if not self._started:
            await self.start()
        if self._txn is not None:
            self._txn.check_send()

    async def send_batch(self, topic: str, values: Any, keys: Any = None, headers: Any = None,
                         partition: int | None = None, timestamps: Any = None, future: Any = None) -> Any:
        """Queue many records of ``topic`` in one call; returns one future (an asyncio one unless ``future`` is
        given) that resolves to a ``SendBatchResult`` when every record is acknowledged, or fails with the first
        error one met. ``values``: a sequence of bytes (or None) or a pyarrow binary/string array, or a pyarrow
        Table/RecordBatch with ``value`` and optionally ``key``, ``headers`` and ``timestamp`` columns;
        ``keys``: a sequence or array (records go to their key's partition, as with ``send``); ``headers``:
        one list of (str, bytes) pairs per record; ``timestamps``: one int (ms) for all, a sequence or an
        int64/timestamp array; ``partition``: all records there. Runs of records are encoded in one codec
        call each; ordering, idempotence, transactions, retries and delivery_timeout_ms are send's."""
        given = batch_input(values, keys, headers, timestamps, self.config["key_serializer"],
                            self.config["value_serializer"])
        return await self.send_input(topic, given, partition, future)

    async def send_input(self, topic: str, given: BatchInput, partition: int | None = None, future: Any = None) -> Any:
        """``send_batch`` for input ``batch_input`` already checked (the blocking Producer does that in its
        caller's thread)."""
        _check_target(topic, partition)
        call = SendBatchCall(asyncio.get_running_loop().create_future() if future is None else future, given.count)
        if not given.count:
            return call.future
        await self._ready_to_send()
        max_block = self.config["max_block_ms"] / 1000
        partitions = await self._wait_for_partitions(topic, self._time() + max_block)
        if partition is not None and partition not in partitions:
            raise ValueError(f"{topic!r} has no partition {partition} (it has {len(partitions)})")
        if partition is None and given.keys is not None:
            pieces = self._by_key(topic, given, partitions)
        else:
            pieces = [(partition, given.columns, given.count)]
        accumulator = self._accumulator
        try:
            for piece_partition, columns, count in pieces:
                index = 0
                while index < count:
                    if self._closing:
                        raise KafkaConnectionError("the producer was closed before the records were queued")
                    if accumulator.is_full:
                        await accumulator.wait_for_space(self._time() + max_block, self.config["max_block_ms"])
                    index = self._append_columns(topic, partitions, piece_partition, None, columns, index, count,
                                                 call.settle, bulk=True)
        except Exception as exc:  # noqa: BLE001 - the records not queued are not sent: the call has failed
            call.failed(exc)
        return call.future

    def append_now(self, rows: list[tuple], futures: list, start: int = 0, lazy: bool = True) -> int:
        """Queue ``rows[start:]`` in order without awaiting (the blocking Producer's hand-off), in runs of
        many records per codec call; returns the index of the first row that would have to wait (producer
        not started, topic not known yet, buffer_memory full), ``len(rows)`` if none: send that one with
        ``await append_waiting(rows, index)``, then call again after it. What ``append_waiting`` would raise
        for a row goes to its future."""
        if not self._started:
            return start
        cluster = self._client.cluster
        accumulator = self._accumulator
        known: dict[str, list[int]] = {}  # the metadata cannot change while this runs (no await)
        index, end = start, len(rows)
        while index < end:
            topic = rows[index][0]
            partitions = known.get(topic)
            if partitions is None:
                partitions = known[topic] = cluster.partitions_for(topic)
            if not partitions or accumulator.is_full:
                return index
            try:
                if self._closing:
                    raise KafkaConnectionError("the producer is closed")
                if self._txn is not None:
                    self._txn.check_send()
            except Exception as exc:  # noqa: BLE001 - the row's own error, as append_waiting raises it
                _fail(futures[index], exc)
                index += 1
                continue
            index = self._append_rows(rows, futures, index, _run_end(rows, index, end), partitions, lazy)
        return end

    def _append_rows(self, rows: list[tuple], futures: list, start: int, stop: int, partitions: list[int],
                     lazy: bool) -> int:
        """Append ``rows[start:stop]`` (one topic; one run of keyless rows without partition, or a single row);
        a row's error goes to its future. Returns the index after the last row handled: ``stop``, or less
        when buffer_memory filled up."""
        columns = Columns((rows, 4), (rows, 2), (rows, 1), (rows, 5))
        row = rows[start]
        topic, key, partition = row[0], row[2], row[3]

        def settle(batch: _Batch, first: int, begin: int, count: int) -> None:
            if lazy:
                bind(futures, begin, count, batch, first)
            else:
                batch.add_futures([(first + i, futures[begin + i]) for i in range(count)])

        index = start
        while index < stop:
            try:
                if partition is not None and partition not in partitions:
                    raise ValueError(f"{topic!r} has no partition {partition} (it has {len(partitions)})")
                index = self._append_columns(topic, partitions, partition, key, columns, index, stop, settle)
            except Exception as exc:  # noqa: BLE001 - row ``index`` could not be appended (bad value, too large...)
                if stop - index == 1:
                    _fail(futures[index], exc)
                    return stop
                for single in range(index, stop):  # which row: one at a time from here
                    if self._accumulator.is_full:
                        return single
                    self._append_rows(rows, futures, single, single + 1, partitions, lazy)
                return stop
            if self._accumulator.is_full:
                return index
        return stop

    def _append_columns(self, topic: str, partitions: list[int], partition: int | None, key: bytes | None,
                        columns: Columns, start: int, stop: int,
                        settle: Callable[[_Batch, int, int, int], None], bulk: bool = False) -> int:
        """Append records ``start..stop-1`` of ``columns`` to ``partition`` (None: the key's, or the sticky
        one, which moves on when its batch is full, as Kafka's sticky partitioner does: KIP-480), in as many
        batches as they take; ``settle(batch, first index in it, start, count)`` for each piece. Returns the
        index after the last appended: ``stop``, or less when buffer_memory filled up or a record failed
        after others were appended (raises if record ``start`` itself cannot be appended)."""
        accumulator = self._accumulator
        available = self._available(topic, partitions) if partition is None and key is None else partitions
        index = start
        while index < stop:
            try:
                batch, first, added = self._append_piece(topic, partitions, available, partition, key, columns, index,
                                                         stop, bulk)
            except Exception:
                if index > start:
                    return index  # the caller comes back for the failing record
                raise
            settle(batch, first, index, added)
            index += added
            if accumulator.is_full:
                break  # the caller waits for buffer_memory
        return index

    def _append_piece(self, topic: str, partitions: list[int], available: list[int], partition: int | None,
                      key: bytes | None, columns: Columns, start: int, stop: int,
                      bulk: bool) -> tuple[_Batch, int, int]:
        accumulator = self._accumulator
        if partition is not None or key is not None:
            if partition is None:
                partition = self._partitioner.partition(topic, key, partitions, partitions)
            tp = TopicPartition(topic, partition)
            if self._txn is not None:
                self._txn.maybe_add_partition(tp)  # raises if the transaction ended while we waited
            batch, first, added = accumulator.append(tp, columns, start, stop, bulk=bulk)
        else:
            tp = TopicPartition(topic, self._partitioner.partition(topic, None, partitions, available))
            if self._txn is not None:
                self._txn.maybe_add_partition(tp)
            batch, first, added = accumulator.append(tp, columns, start, stop, open_new=False, bulk=bulk)
            if not added:  # the sticky partition's batch is full: another partition, and a new batch
                self._partitioner.new_batch(topic, tp.partition, partitions, available)
                tp = TopicPartition(topic, self._partitioner.partition(topic, None, partitions, available))
                if self._txn is not None:
                    self._txn.maybe_add_partition(tp)
                batch, first, added = accumulator.append(tp, columns, start, stop, bulk=bulk)
        assert batch is not None
        return batch, first, added

    def _available(self, topic: str, partitions: list[int]) -> list[int]:
        cluster = self._client.cluster
        return [p for p in partitions if cluster.leader_for(topic, p) is not None]

    async def partitions_for(self, topic: str) -> set[int]:
        """The topic's partitions (looked up, and auto-created where the broker allows, if unknown)."""
        if not self._started:
            await self.start()
        return set(await self._wait_for_partitions(topic))

    async def _wait_for_partitions(self, topic: str, deadline: float | None = None) -> list[int]:
        """The topic's partitions, asking Metadata (which may auto-create it) until it has some or ``deadline``
        (loop time; default max_block_ms from now) passes: then RequestTimedOutError, Java's wording."""
        partitions = self._client.cluster.partitions_for(topic)
        if partitions:
            return partitions
        self._topics.add(topic)
        if deadline is None:
            deadline = self._time() + self.config["max_block_ms"] / 1000
        while True:
            remaining = deadline - self._time()
            if remaining <= 0:
                raise RequestTimedOutError(f"Topic {topic} not present in metadata after "
                                           f"{self.config['max_block_ms']} ms.")
            try:
                async with asyncio.timeout(remaining):
                    await self._client.metadata(sorted(self._topics), allow_auto_topic_creation=True)
            except (OSError, KafkaError) as exc:  # TimeoutError included: the loop ends at the deadline
                log.debug("metadata for %s failed: %s", topic, exc)
            info = self._client.cluster.topics.get(topic)
            if info is not None and info.partitions:
                return sorted(info.partitions)
            if info is not None and info.error_code and not for_code(info.error_code).retriable:
                raise for_code(info.error_code)(f"topic {topic!r}")
            await asyncio.sleep(min(self.config["retry_backoff_ms"] / 1000, max(deadline - self._time(), 0)))

    @staticmethod
    def _time() -> float:
        return asyncio.get_running_loop().time()

    def _wake(self) -> None:
        self._sender.wake()


class TransactionContext:
    """What ``AIOProducer.transaction()`` returns: an async context manager around one transaction."""

    def __init__(self, producer: AIOProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> "TransactionContext":
        producer = self._producer
        if producer._transactions().state in (TransactionState.UNINITIALIZED, TransactionState.INITIALIZING):
            await producer.init_transactions()
        producer.begin_transaction()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self._producer._end_transaction(failed=exc_type is not None)

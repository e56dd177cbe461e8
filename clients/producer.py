"""AIOProducer: the asyncio producer, shaped like aiokafka's AIOKafkaProducer with kafka-python's kwargs.

    async with AIOProducer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as producer:
        future = await producer.send("events", b"value", key=b"key")    # queued in a batch
        metadata = await future                                          # RecordMetadata
        await producer.send_and_wait("events", b"other")

Records are appended to one open batch per partition (``record_accumulator.py``); a sender task
(``producer_sender.py``) sends a partition's batch when it reaches ``batch_size``, ``linger_ms`` after it
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
is bumped if they do not (Java's unresolved sequences). The numbers are kept in ``producer_sequences.py``.

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

from ..protocol.errors import KafkaError, MessageTooLargeError, RequestTimedOutError, for_code
from ..protocol.records import Compression
from .errors import KafkaConnectionError
from .partitioner import DefaultPartitioner
from .producer_batch import BATCH_OVERHEAD as _BATCH_OVERHEAD, RecordMetadata, _Batch, _Record  # noqa: F401 (_Batch: tests)
from .producer_sender import Sender
from .producer_sequences import ProducerSequences
from .record_accumulator import RecordAccumulator
from .simple_client import SimpleClient
from .transaction_manager import TransactionManager, TransactionState, TransactionStateError
from .security.client_security import SECURITY_DEFAULTS, client_security
from .types import KafkaConfigurationError, TopicPartition, check_configs

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1
# Per-record overhead when estimating a batch's size (varints and attributes; Java's estimate too is loose).
_RECORD_OVERHEAD = 21


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
                                              buffer_memory=c["buffer_memory"],
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
        waiting = [batch.done for batch in self._accumulator.incomplete]
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
                                       f"{sum(len(b.records) for b in self._accumulator.incomplete)} records pending")

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
                await asyncio.wait_for(self.abort_transaction(), timeout)
            except TimeoutError:
                log.warning("closing with the transaction still open: its abort did not finish within %s s", timeout)
            except (KafkaError, OSError) as exc:
                log.warning("closing with the transaction still open: its abort failed: %s", exc)
        self._closing = self._sender.closing = True
        try:
            if self._sender_task is not None:
                self._wake()
                try:
                    await asyncio.wait_for(asyncio.shield(self._sender_task), timeout)
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
    def serialize(self, topic: str, value: Any = None, key: Any = None, headers: Iterable | None = None) -> _Record:
        """Serialize and size a record (raises at once on bad input; used by the blocking Producer)."""
        if not isinstance(topic, str) or not topic:
            raise TypeError("topic must be a non-empty str")
        key_bytes = _serialize(self.config["key_serializer"], key)
        value_bytes = _serialize(self.config["value_serializer"], value)
        header_list = [(k, _serialize(None, v)) for k, v in headers or ()]
        header_size = sum(len(k.encode("utf-8")) + len(v or b"") for k, v in header_list)
        key_size = len(key_bytes) if key_bytes is not None else -1
        value_size = len(value_bytes) if value_bytes is not None else -1
        size = _RECORD_OVERHEAD + max(key_size, 0) + max(value_size, 0) + header_size + 2 * len(header_list)
        return _Record(key_bytes, value_bytes, header_list, size, key_size, value_size, header_size)

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp_ms: int | None = None, headers: Iterable | None = None) -> asyncio.Future:
        """Queue a record; returns a future of its RecordMetadata (aiokafka's shape)."""
        return await self.send_serialized(topic, self.serialize(topic, value, key, headers), partition, timestamp_ms)

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            timestamp_ms: int | None = None, headers: Iterable | None = None) -> RecordMetadata:
        return await (await self.send(topic, value, key, partition, timestamp_ms, headers))

    async def send_serialized(self, topic: str, record: _Record, partition: int | None = None,
                              timestamp_ms: int | None = None, future: Any = None, deadline: float | None = None) -> Any:
        """Queue a record ``serialize`` made; its outcome goes to ``future`` (a new asyncio future if
        None; the blocking Producer passes its own, anything with done/set_result/set_exception).
        Waiting for the topic's metadata or for buffer_memory ends at ``deadline`` (loop time; default
        ``max_block_ms`` from now, the time Java's send may block) with RequestTimedOutError."""
        if self._closing:
            raise KafkaConnectionError("the producer is closed")
        if not self._started:
            await self.start()
        if self._txn is not None:
            self._txn.check_send()
        if future is None:
            future = asyncio.get_running_loop().create_future()
        if self._too_large(record, future):
            return future
        if deadline is None:
            deadline = self._time() + self.config["max_block_ms"] / 1000
        partitions = await self._wait_for_partitions(topic, deadline)
        if partition is not None and partition not in partitions:
            raise ValueError(f"{topic!r} has no partition {partition} (it has {len(partitions)})")
        if self._accumulator.is_full:
            await self._accumulator.wait_for_space(deadline, self.config["max_block_ms"])
        self._append_record(topic, record, partitions, partition, timestamp_ms, future)
        return future

    def append_now(self, entries: list[tuple[str, _Record, int | None, int | None, Any]], start: int = 0) -> int:
        """``send_serialized`` for many records in a row without awaiting (the blocking Producer's
        hand-off): queues ``entries[start:]``, each ``(topic, record, partition, timestamp_ms, future)``,
        in order, and returns the index of the first one that would have to wait (producer not
        started, topic not known yet, buffer_memory full), ``len(entries)`` if none: send that one
        with ``await send_serialized(..., future=future)``, then call again after it. What
        send_serialized would raise for a record goes to its future."""
        if not self._started:
            return start
        cluster = self._client.cluster
        accumulator = self._accumulator
        limit = accumulator.buffer_memory
        known: dict[str, list[int]] = {}  # the metadata cannot change while this runs (no await)
        for index in range(start, len(entries)):
            topic, record, partition, timestamp_ms, future = entries[index]
            partitions = known.get(topic)
            if partitions is None:
                partitions = known[topic] = cluster.partitions_for(topic)
            if not partitions or accumulator.buffered > limit:
                return index
            try:
                if self._closing:
                    raise KafkaConnectionError("the producer is closed")
                if self._txn is not None:
                    self._txn.check_send()
                if self._too_large(record, future):
                    continue
                if partition is not None and partition not in partitions:
                    raise ValueError(f"{topic!r} has no partition {partition} (it has {len(partitions)})")
                self._append_record(topic, record, partitions, partition, timestamp_ms, future)
            except Exception as exc:  # noqa: BLE001 - the record's own error, as send_serialized raises it
                if not future.done():
                    future.set_exception(exc)
        return len(entries)

    def _too_large(self, record: _Record, future: Any) -> bool:
        if record.size + _BATCH_OVERHEAD <= self.config["max_request_size"]:
            return False
        future.set_exception(MessageTooLargeError(
            f"the record is about {record.size} bytes, more than max_request_size "
            f"{self.config['max_request_size']}"))
        return True

    def _append_record(self, topic: str, record: _Record, partitions: list[int], partition: int | None,
                       timestamp_ms: int | None, future: Any) -> None:
        if partition is None:
            partition = self._choose_partition(topic, record, partitions)
        timestamp = _now_ms() if timestamp_ms is None else timestamp_ms
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            self._txn.maybe_add_partition(tp)  # raises if the transaction ended while we waited
        self._accumulator.append(tp, record, timestamp, future)

    async def partitions_for(self, topic: str) -> set[int]:
        """The topic's partitions (looked up, and auto-created where the broker allows, if unknown)."""
        if not self._started:
            await self.start()
        return set(await self._wait_for_partitions(topic))

    def _choose_partition(self, topic: str, record: _Record, partitions: list[int]) -> int:
        cluster = self._client.cluster
        available = [p for p in partitions if cluster.leader_for(topic, p) is not None]
        partition = self._partitioner.partition(topic, record.key, partitions, available)
        if record.key is None and not self._accumulator.fits(TopicPartition(topic, partition), record):
            # Kafka's sticky partitioner moves on when a new batch would be opened (KIP-480).
            self._partitioner.new_batch(topic, partition, partitions, available)
            partition = self._partitioner.partition(topic, record.key, partitions, available)
        return partition

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

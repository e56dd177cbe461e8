"""AIOProducer: the asyncio producer, shaped like aiokafka's AIOKafkaProducer with kafka-python's kwargs.

    async with AIOProducer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as producer:
        future = await producer.send("events", b"value", key=b"key")    # queued in a batch
        metadata = await future                                          # RecordMetadata
        await producer.send_and_wait("events", b"other")

Records are appended to one open batch per partition; a sender task sends a partition's batch when
it reaches ``batch_size``, ``linger_ms`` after it was opened, or on ``flush``/``close``, grouping the
batches for one leader into one Produce request (one batch per partition, as the Java client does).
Retriable errors (and lost connections) put the batch back at its place in the queue after
``retry_backoff_ms`` and refresh the metadata; ``delivery_timeout_ms`` bounds the whole time.

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
(TransactionManager.maybeUpdateProducerIdAndEpoch).

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
from collections import deque
from typing import Any, Callable, Iterable

from ..protocol.api_keys import ApiKey
from ..protocol.errors import (
    DuplicateSequenceNumberError, KafkaError, MessageTooLargeError, OutOfOrderSequenceNumberError,
    RequestTimedOutError, UnknownProducerIdError, UnsupportedVersionError, for_code,
)
from ..protocol.messages import ProduceRequest
from ..protocol.records import Compression
from .partitioner import DefaultPartitioner
from .producer_batch import BATCH_OVERHEAD as _BATCH_OVERHEAD, RecordMetadata, _Batch, _Record
from .simple_client import SimpleClient
from .errors import KafkaConnectionError
from .transaction_manager import TransactionManager, TransactionState, TransactionStateError
from .security.client_security import SECURITY_DEFAULTS, client_security
from .types import KafkaConfigurationError, TopicPartition, check_configs

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1
_INT16_MAX = 2**15 - 1
# Errors after which the partition's leader must be looked up again (Kafka's InvalidMetadataException).
_REFRESH_CODES = frozenset({3, 5, 6})
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


def producer_config(configs: dict[str, Any]) -> dict[str, Any]:
    """The defaults overridden by ``configs``; unknown names and contradictions raise KafkaConfigurationError."""
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
        self._queues: dict[TopicPartition, deque[_Batch]] = {}
        self._in_flight: dict[TopicPartition, list[_Batch]] = {}
        self._next_sequence: dict[TopicPartition, int] = {}
        self._next_order = 0
        self._unfinished: set[_Batch] = set()
        self._buffered = 0
        self._producer_id, self._producer_epoch = -1, -1
        self._epoch_stale = False
        # Per partition, the first batch (its queue order) whose sequence broke: it and the batches after it
        # restart at sequence 0 in the next epoch; the batches before it keep their epoch and sequence.
        self._broken_sequences: dict[TopicPartition, int] = {}
        self._topics: set[str] = set()
        self._flushing = 0
        self._closing = False
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._sender: asyncio.Task | None = None
        self._requests: set[asyncio.Task] = set()
        self._metadata_task: asyncio.Task | None = None
        self._wakeup: asyncio.Event | None = None
        self._space: asyncio.Event | None = None

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
            if self._idempotent and self._txn is None:  # transactional: init_transactions() takes the id
                self._producer_id, self._producer_epoch = await self._client.init_producer_id()
            self._wakeup, self._space = asyncio.Event(), asyncio.Event()
            self._sender = asyncio.create_task(self._run_sender(), name="odradek-producer-sender")
            self._started = True

    async def __aenter__(self) -> "AIOProducer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now, without waiting for linger, and wait for every answer."""
        if not self._unfinished:
            return
        self._flushing += 1
        self._wake()
        try:
            waiting = [batch.done for batch in self._unfinished]
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waiting)
        except TimeoutError:
            raise RequestTimedOutError(f"flush did not finish within {timeout} s") from None
        finally:
            self._flushing -= 1

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` s, None = as long as it takes), then disconnect.
        Records still unsent after the timeout fail with KafkaConnectionError. An open transaction is
        aborted first, as Kafka's producer does, so it does not hold back read_committed consumers
        until the coordinator times it out."""
        if self._closing:
            return
        if self._txn is not None and self._started and self._txn.state in (
                TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR, TransactionState.ABORTING_TRANSACTION):
            try:
                await asyncio.wait_for(self.abort_transaction(), timeout)
            except (KafkaError, OSError, TimeoutError) as exc:
                log.warning("closing with the transaction still open: its abort failed: %s", exc)
        self._closing = True
        try:
            if self._sender is not None:
                self._wake()
                try:
                    await asyncio.wait_for(asyncio.shield(self._sender), timeout)
                except TimeoutError:
                    log.warning("producer closed with %d batches unsent", len(self._unfinished))
        finally:
            for task in [self._sender, self._metadata_task, *self._requests]:
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(*(t for t in [self._sender, self._metadata_task, *self._requests] if t),
                                 return_exceptions=True)
            for batch in list(self._unfinished):
                batch.fail(KafkaConnectionError("the producer was closed before the record was sent"))
            self._unfinished.clear()
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
        self._use_producer_id(txn.producer_id, txn.producer_epoch)

    def _use_producer_id(self, producer_id: int, epoch: int) -> None:
        if (producer_id, epoch) != (self._producer_id, self._producer_epoch):
            self._producer_id, self._producer_epoch = producer_id, epoch
            self._next_sequence.clear()  # a new epoch starts every partition's sequence at 0
        self._epoch_stale = False
        self._broken_sequences.clear()  # an abort dropped every queued batch: nothing to re-sequence

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
        await txn.end_transaction(commit=False, bump_epoch=self._epoch_stale)
        self._use_producer_id(txn.producer_id, txn.producer_epoch)

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

    def _transaction_step(self) -> None:
        """The sender's transactional work before draining: fail what may no longer be sent (aborting,
        abortable or fatal error, as Java's abortUndrainedBatches), else add new partitions."""
        txn = self._txn
        assert txn is not None
        if not txn.drops_unsent:
            txn.maybe_add_partitions(self._wake)
            return
        error = txn.unsent_error()
        for queue in self._queues.values():
            while queue:
                batch = queue.popleft()
                if batch.sequence is not None:
                    self._mark_broken(batch)  # its sequence was taken (maybe even written)
                batch.fail(error)

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
                              timestamp_ms: int | None = None, future: Any = None) -> Any:
        """Queue a record ``serialize`` made; its outcome goes to ``future`` (a new asyncio future if
        None; the blocking Producer passes its own, anything with done/set_result/set_exception)."""
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
        partitions = await self._wait_for_partitions(topic)
        if partition is not None and partition not in partitions:
            raise ValueError(f"{topic!r} has no partition {partition} (it has {len(partitions)})")
        await self._wait_for_space()
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
        limit = self.config["buffer_memory"]
        known: dict[str, list[int]] = {}  # the metadata cannot change while this runs (no await)
        for index in range(start, len(entries)):
            topic, record, partition, timestamp_ms, future = entries[index]
            partitions = known.get(topic)
            if partitions is None:
                partitions = known[topic] = cluster.partitions_for(topic)
            if not partitions or self._buffered > limit:
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
        self._append(tp, record, timestamp, future)

    async def partitions_for(self, topic: str) -> set[int]:
        """The topic's partitions (looked up, and auto-created where the broker allows, if unknown)."""
        if not self._started:
            await self.start()
        return set(await self._wait_for_partitions(topic))

    def _choose_partition(self, topic: str, record: _Record, partitions: list[int]) -> int:
        cluster = self._client.cluster
        available = [p for p in partitions if cluster.leader_for(topic, p) is not None]
        partition = self._partitioner.partition(topic, record.key, partitions, available)
        if record.key is None and not self._fits(TopicPartition(topic, partition), record):
            # Kafka's sticky partitioner moves on when a new batch would be opened (KIP-480).
            self._partitioner.new_batch(topic, partition, partitions, available)
            partition = self._partitioner.partition(topic, record.key, partitions, available)
        return partition

    def _fits(self, tp: TopicPartition, record: _Record) -> bool:
        queue = self._queues.get(tp)
        if not queue:
            return False
        last = queue[-1]
        return not last.full and last.data is None and last.size + record.size <= self.config["batch_size"]

    def _append(self, tp: TopicPartition, record: _Record, timestamp: int, future: asyncio.Future) -> None:
        queue = self._queues.setdefault(tp, deque())
        if not queue or not queue[-1].try_append(record, timestamp, future, self.config["batch_size"]):
            batch = _Batch(tp, self._next_order, self.config["compression_type"], self._time())
            self._next_order += 1
            batch.try_append(record, timestamp, future, self.config["batch_size"])
            queue.append(batch)
            self._unfinished.add(batch)
            self._buffered += batch.size
            batch.done.add_done_callback(lambda _, b=batch: self._release(b))
            self._wake()
        else:
            self._buffered += record.size
            if queue[-1].full:
                self._wake()

    def _release(self, batch: _Batch) -> None:
        self._unfinished.discard(batch)
        self._buffered -= batch.size
        if self._space is not None and self._buffered <= self.config["buffer_memory"]:
            self._space.set()
        if self._closing and not self._unfinished:
            # This done-callback may run after the sender last looked (its wake-up was already due):
            # wake it again, or close() waits for a sender that sleeps forever.
            self._wake()

    async def _wait_for_space(self) -> None:
        """Block like Java's buffer.memory: wait up to max_block_ms while too much is queued."""
        if self._buffered <= self.config["buffer_memory"]:
            return
        assert self._space is not None
        deadline = self._time() + self.config["max_block_ms"] / 1000
        while self._buffered > self.config["buffer_memory"]:
            self._space.clear()
            try:
                async with asyncio.timeout(max(deadline - self._time(), 0)):
                    await self._space.wait()
            except TimeoutError:
                raise RequestTimedOutError(f"buffer_memory stayed full for {self.config['max_block_ms']} ms") from None

    async def _wait_for_partitions(self, topic: str) -> list[int]:
        """The topic's partitions, asking Metadata (which may auto-create it) until it has some."""
        partitions = self._client.cluster.partitions_for(topic)
        if partitions:
            return partitions
        self._topics.add(topic)
        deadline = self._time() + self.config["max_block_ms"] / 1000
        while True:
            try:
                await self._client.metadata(sorted(self._topics), allow_auto_topic_creation=True)
            except (OSError, KafkaError) as exc:
                log.debug("metadata for %s failed: %s", topic, exc)
            info = self._client.cluster.topics.get(topic)
            if info is not None and info.partitions:
                return sorted(info.partitions)
            if info is not None and info.error_code and not for_code(info.error_code).retriable:
                raise for_code(info.error_code)(f"topic {topic!r}")
            if self._time() >= deadline:
                raise RequestTimedOutError(f"no metadata for topic {topic!r} after {self.config['max_block_ms']} ms")
            await asyncio.sleep(self.config["retry_backoff_ms"] / 1000)

    # -- the sender -------------------------------------------------------------------------------
    @staticmethod
    def _time() -> float:
        return asyncio.get_running_loop().time()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def _run_sender(self) -> None:
        assert self._wakeup is not None
        while True:
            self._wakeup.clear()
            if self._epoch_stale and self._txn is None and not any(self._in_flight.values()):
                await self._bump_epoch()
            if self._txn is not None:
                self._transaction_step()
            by_node, wake_at = self._drain(self._time())
            for node, batches in by_node.items():
                task = asyncio.create_task(self._send_batches(node, batches))
                self._requests.add(task)
                task.add_done_callback(self._requests.discard)
            if self._closing and not self._unfinished:
                return
            timeout = None if wake_at is None else max(wake_at - self._time(), 0)
            try:
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    async def _bump_epoch(self) -> None:
        """Kafka 2.8's idempotent epoch bump (KIP-360): the same producer id with the next epoch, taken
        locally; a fresh InitProducerId only once the epoch is exhausted. Every partition's sequences
        restart at 0. Keeping the id matters: a leader that knows the id refuses a new epoch's batch that
        is not sequence 0, whereas a fresh id is unknown everywhere and its first batch is accepted at any
        sequence (Kafka's rule for lost producer state), so after a leader move a later batch of the new
        id could be written before an earlier one."""
        if self._producer_epoch < _INT16_MAX:
            self._producer_epoch += 1
        else:
            try:
                self._producer_id, self._producer_epoch = await self._client.init_producer_id()
            except (OSError, KafkaError) as exc:
                log.warning("could not get a new producer id: %s", exc)
                await asyncio.sleep(self.config["retry_backoff_ms"] / 1000)
                return
        self._epoch_stale = False
        self._next_sequence.clear()
        # Only from the batch whose sequence broke on are the queued batches re-sequenced (the leader refused
        # them for the gap). Any other retried batch keeps its old epoch and sequence: it may have been
        # written (NOT_LEADER_OR_FOLLOWER after the append, a lost answer), and re-sending it as sequence 0
        # of the new epoch would store it twice (librdkafka#4953's duplicate).
        for tp, first_broken in self._broken_sequences.items():
            for batch in self._queues.get(tp, ()):
                if batch.sequence is not None and batch.order >= first_broken:
                    batch.unseal()
        self._broken_sequences.clear()

    def _mark_broken(self, batch: _Batch) -> None:
        """``batch`` failed for good or was refused for a gap: the next epoch bump re-sequences it and the
        batches after it. Those before it may be written (answered NOT_LEADER_OR_FOLLOWER after the append,
        an answer lost with its connection): they keep their epoch and sequence so the leader recognises
        them, as a batch re-sent as sequence 0 of the new epoch would be stored twice."""
        self._epoch_stale = True
        self._broken_sequences[batch.tp] = min(batch.order, self._broken_sequences.get(batch.tp, batch.order))

    def _drain(self, now: float) -> tuple[dict[int, list[_Batch]], float | None]:
        """Take each partition's first batch if it is due and may go; returns batches by leader and
        when to look again (None: only when woken)."""
        c = self.config
        linger = c["linger_ms"] / 1000
        by_node: dict[int, list[_Batch]] = {}
        wake_at: float | None = None
        missing_leader = False
        for tp, queue in self._queues.items():
            while queue and self._expire(queue[0], now):
                queue.popleft()
            if not queue:
                continue
            batch = queue[0]
            in_flight = self._in_flight.setdefault(tp, [])
            if self._epoch_stale and self._idempotent:
                continue
            if self._txn is not None and not self._txn.is_send_allowed(tp):
                continue  # its AddPartitionsToTxn is still to be answered
            if batch.retry_at > now:
                wake_at = min(wake_at or batch.retry_at, batch.retry_at)
                continue
            if batch.sequence is not None and in_flight:
                continue  # a retry waits for the rest of its partition to be answered (keeps order)
            if batch.data is None and in_flight and self._idempotent and any(
                    b.producer != (self._producer_id, self._producer_epoch) for b in in_flight):
                continue  # a new epoch's first batch waits for the old epoch's batches (Java's drain rule)
            due = batch.created + linger
            if not (batch.full or len(queue) > 1 or self._flushing or self._closing or now >= due):
                wake_at = min(wake_at or due, due)
                continue
            if len(in_flight) >= c["max_in_flight_requests_per_connection"]:
                continue
            leader = self._client.cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                missing_leader = True
                continue
            queue.popleft()
            if batch.data is None:
                self._seal(batch)
            in_flight.append(batch)
            batch.attempts += 1
            by_node.setdefault(leader, []).append(batch)
        if missing_leader:
            self._refresh_metadata()
        return by_node, wake_at

    def _seal(self, batch: _Batch) -> None:
        if not self._idempotent:
            batch.seal(-1, -1, None)
            return
        sequence = self._next_sequence.get(batch.tp, 0)
        batch.seal(self._producer_id, self._producer_epoch, sequence, transactional=self._txn is not None)
        # Sequences wrap from Integer.MAX_VALUE to 0 (DefaultRecordBatch.incrementSequence).
        self._next_sequence[batch.tp] = (sequence + batch.builder.record_count) % (_INT32_MAX + 1)

    def _expire(self, batch: _Batch, now: float) -> bool:
        """delivery_timeout_ms passed for a queued batch: fail it (Kafka's TimeoutException)."""
        if now - batch.created < self.config["delivery_timeout_ms"] / 1000:
            return False
        error = RequestTimedOutError(f"{batch.tp.topic}-{batch.tp.partition}: not delivered within "
                                     f"delivery_timeout_ms={self.config['delivery_timeout_ms']}")
        batch.fail(error)
        if batch.sequence is not None and batch.attempts:
            self._mark_broken(batch)  # it may have been written: our sequences are uncertain
        if self._txn is not None:
            self._txn.on_batch_error(error)
        return True

    def _refresh_metadata(self) -> None:
        if self._metadata_task is not None and not self._metadata_task.done():
            return

        async def refresh() -> None:
            try:
                topics = sorted(self._topics | {tp.topic for tp in self._queues})
                await self._client.metadata(topics)
            except (OSError, KafkaError) as exc:
                log.debug("metadata refresh failed: %s", exc)
                await asyncio.sleep(self.config["retry_backoff_ms"] / 1000)
            self._wake()

        self._metadata_task = asyncio.create_task(refresh())

    async def _send_batches(self, node: int, batches: list[_Batch]) -> None:
        c = self.config
        by_topic: dict[str, list[Any]] = {}
        for batch in batches:
            by_topic.setdefault(batch.tp.topic, []).append(
                ProduceRequest.TopicProduceData.PartitionProduceData(index=batch.tp.partition, records=batch.data))
        request = ProduceRequest(transactional_id=c["transactional_id"], acks=c["acks"], timeout_ms=c["request_timeout_ms"],
                                 topic_data=[ProduceRequest.TopicProduceData(name=name, partition_data=data)
                                             for name, data in by_topic.items()])
        try:
            conn = await self._client.connection(node)
            version = conn.version_for(ApiKey.PRODUCE)
            if version < 3:
                raise UnsupportedVersionError(f"{conn.host}:{conn.port} cannot take v2 record batches")
            response = await conn.send(request, version=version, timeout=2 * c["request_timeout_ms"] / 1000)
        except asyncio.CancelledError:
            raise
        except (OSError, KafkaError) as exc:
            retriable = isinstance(exc, OSError) or exc.retriable
            for batch in batches:
                self._on_error(batch, exc, retriable, refresh=True)
            self._wake()
            return
        answers = {}
        if response is not None:
            for topic in response.responses:
                for part in topic.partition_responses:
                    answers[(topic.name, part.index)] = part
        for batch in batches:
            answer = answers.get(batch.tp) if response is not None else None
            if response is None:  # acks=0: no answer, no offset
                self._finish(batch)
                batch.complete(-1, -1, -1)
            elif answer is None:
                self._on_error(batch, KafkaConnectionError(f"the response has no entry for {batch.tp}"), True, True)
            else:
                self._on_answer(batch, answer)
        self._wake()

    def _finish(self, batch: _Batch) -> None:
        in_flight = self._in_flight.get(batch.tp)
        if in_flight and batch in in_flight:
            in_flight.remove(batch)

    def _on_answer(self, batch: _Batch, answer: Any) -> None:
        code = answer.error_code
        if code == 0 or code == DuplicateSequenceNumberError.code:  # a duplicate was written before
            self._finish(batch)
            batch.complete(answer.base_offset, answer.log_append_time_ms, answer.log_start_offset)
            return
        error = for_code(code)(answer.error_message or f"producing to {batch.tp.topic}-{batch.tp.partition}")
        retriable = error.retriable
        if code in (OutOfOrderSequenceNumberError.code, UnknownProducerIdError.code) and batch.sequence is not None:
            current = batch.producer == (self._producer_id, self._producer_epoch)
            if self._txn is not None and (not current or self._epoch_stale):
                self._finish(batch)  # sent under an epoch we gave up: resend under the new one
                batch.unseal()
                batch.attempts -= 1
                self._requeue(batch)
                return
            # An earlier batch of the partition is being retried: this one was refused because of it.
            retriable = current and any(
                other.producer == batch.producer and other.sequence < batch.sequence
                for other in (*self._queues.get(batch.tp, ()), *self._in_flight.get(batch.tp, ())))
            if not retriable and self._txn is None:
                # A real gap (the batch before it failed for good, or was lost), or a refusal under an epoch
                # already given up. Kafka 2.8's idempotent producer retries every OUT_OF_ORDER_SEQUENCE after
                # bumping the epoch (TransactionManager.canRetry); the broker checks sequences before
                # appending, so this batch was not written; the bump re-sequences it and the batches behind
                # it together (re-sequencing only this one could leave an older epoch's batch to follow a
                # newer one, which the leader refuses for good).
                self._mark_broken(batch)
                retriable = True
        self._on_error(batch, error, retriable, refresh=code in _REFRESH_CODES)

    def _on_error(self, batch: _Batch, error: BaseException, retriable: bool, refresh: bool) -> None:
        self._finish(batch)
        c = self.config
        now = self._time()
        if (retriable and batch.attempts <= c["retries"]
                and now - batch.created < c["delivery_timeout_ms"] / 1000):
            log.debug("retrying %s after %s (attempt %d)", batch.tp, error, batch.attempts)
            batch.retry_at = now + c["retry_backoff_ms"] / 1000
            self._requeue(batch)
            if refresh:
                self._refresh_metadata()
            return
        batch.fail(error)
        if batch.sequence is not None:
            self._mark_broken(batch)
        if self._txn is not None:
            self._txn.on_batch_error(error)

    def _requeue(self, batch: _Batch) -> None:
        """Put a batch back at its place (queues stay in creation order, so retries keep order)."""
        queue = self._queues.setdefault(batch.tp, deque())
        index = 0
        while index < len(queue) and queue[index].order < batch.order:
            index += 1
        queue.insert(index, batch)


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

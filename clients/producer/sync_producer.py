"""Producer: the blocking producer in kafka-python's KafkaProducer shape, over AIOProducer.

    with Producer(bootstrap_servers="127.0.0.1:9092", value_serializer=str.encode) as producer:
        future = producer.send("events", "value", key=b"key")
        future.add_callback(print).add_errback(log_error)
        metadata = future.get(timeout=10)
        producer.flush()

The AIOProducer runs on a private event loop in a daemon thread (an EventLoopThread). ``send``
serializes in the caller's thread, so bad input raises at once as with kafka-python, and appends the
record (a row: topic, value, key, partition, timestamp, headers, future) to a hand-off queue; the loop is
woken once per burst, not once per record, and moves the whole burst into the AIOProducer's batches in one
go (``AIOProducer.append_now``: runs of keyless records are encoded in one codec call), awaiting only for a
record whose topic is not known yet or while buffer_memory is full (the records behind it wait, so
each partition keeps the order of the sends). ``send_batch`` hands many records over in one call. Such waits end ``max_block_ms`` after the loop took the
burst, for the whole burst: the time Java's ``send`` would have blocked, not that much per record (a
burst to a topic that never appears fails within max_block_ms, not after one wait per record). Once in
a batch, ``delivery_timeout_ms`` bounds a record. A record's ``FutureRecordMetadata``
(``record_futures.py``) is bound to its batch, whose answer settles all its records at once. Callbacks run
in the producer's thread, as kafka-python's run in its sender thread: keep them short.

With a ``transactional_id`` it has kafka-python's transactional methods, and ``with
producer.transaction(): ...`` (commit on success, abort on an exception):

    producer.init_transactions()
    producer.begin_transaction()
    producer.send("out", b"value")
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 42}, "my-group")
    producer.commit_transaction()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Callable, Iterable, Iterator

from ...protocol.errors import RequestTimedOutError
from .batch_input import batch_input
from ..errors import KafkaConnectionError
from ..event_loop_thread import EventLoopThread
from .producer import AIOProducer
from .record_futures import FutureBatchMetadata, FutureRecordMetadata, rows_of
from .transaction_manager import TransactionState

log = logging.getLogger(__name__)

class Producer:
    """kafka-python's KafkaProducer over AIOProducer; same keyword arguments as AIOProducer."""

    def __init__(self, **configs: Any) -> None:
        self._aio = AIOProducer(**configs)  # validates the configuration before a thread starts
        self.config = self._aio.config
        self._thread = EventLoopThread("odradek-producer")
        self._closed = False
        # Records handed to the loop in bulk: ``send`` appends (deque.append is atomic) and wakes the
        # loop only when no drain is scheduled, so a burst costs one call_soon_threadsafe, not one each.
        self._handoff: deque[tuple] = deque()
        self._handoff_scheduled = False
        self._handoff_task: asyncio.Task | None = None
        # send's fast path: no serializer to call, so bytes and None go as they are
        self._plain = self.config["key_serializer"] is None and self.config["value_serializer"] is None
        try:
            self._thread.run(self._aio.start())
        except BaseException:
            self._thread.stop()
            raise

    def send(self, topic: str, value: Any = None, key: Any = None, headers: Iterable | None = None,
             partition: int | None = None, timestamp_ms: int | None = None) -> FutureRecordMetadata:
        """Queue a record; returns at once with a future of its RecordMetadata. Waiting for the topic's
        metadata or for buffer_memory happens on the loop; running out of max_block_ms fails the future."""
        if self._closed:
            raise RuntimeError("send after the producer was closed")
        if self._aio._txn is not None:
            self._aio._txn.check_send()  # outside a transaction: raise here, as kafka-python does
        if (self._plain and headers is None and (partition is None or partition.__class__ is int)
                and (value is None or value.__class__ is bytes)
                and (key is None or key.__class__ is bytes) and topic.__class__ is str and topic):
            result = FutureRecordMetadata((topic, value, key, partition, timestamp_ms, None))
        else:
            result = FutureRecordMetadata(self._aio.row(topic, value, key, partition, timestamp_ms, headers))
        self._handoff.append(result)
        # Appended before the flag is read, and the drain clears the flag before it looks at the
        # queue a last time: one of the two sees the other, so no record is left behind.
        if not self._handoff_scheduled:
            self._handoff_scheduled = True
            self._thread.loop.call_soon_threadsafe(self._start_handoff)
        return result

    def _start_handoff(self) -> None:
        if self._handoff_task is None or self._handoff_task.done():  # else the running drain takes them
            self._handoff_task = asyncio.get_running_loop().create_task(self._take_handoff())

    async def _take_handoff(self) -> None:
        """Queue the records ``send`` handed over, in their order (runs on the loop, one drain at a time).
        Records go to the AIOProducer's batches many at a time; only one that must wait (topic
        unknown yet, buffer_memory full) goes through the awaiting path, and the rest wait behind it."""
        handoff, aio = self._handoff, self._aio
        entries: list[FutureRecordMetadata] = []
        index = 0
        loop = asyncio.get_running_loop()
        max_block = aio.config["max_block_ms"] / 1000
        try:
            while True:
                while handoff:
                    entries = [handoff.popleft() for _ in range(len(handoff))]
                    rows = rows_of(entries)
                    deadline = loop.time() + max_block  # for every record of the burst together
                    index = aio.append_now(rows, entries)
                    while index < len(entries):
                        try:
                            await aio.append_waiting(rows, entries, index, deadline=deadline)
                        except Exception as exc:  # noqa: BLE001 - the record's error goes to its future
                            entries[index].set_exception(exc)
                        index = aio.append_now(rows, entries, index + 1)
                self._handoff_scheduled = False
                if not handoff:
                    return
                self._handoff_scheduled = True  # a send saw the flag still set: this drain takes its record
        except BaseException as exc:  # cancelled (the loop stops) or a bug: no record may wait forever
            error = KafkaConnectionError(f"the record was not handed to the producer: {exc!r}")
            for result in entries[index:]:
                result.set_exception(error)
            while handoff:
                handoff.popleft().set_exception(error)
            self._handoff_scheduled = False
            raise

    async def _handed_over(self) -> None:
        """Wait until every record ``send`` accepted so far is in the AIOProducer's batches."""
        while self._handoff_scheduled or (self._handoff_task is not None and not self._handoff_task.done()):
            if self._handoff_task is not None and not self._handoff_task.done():
                await asyncio.shield(self._handoff_task)
            else:
                await asyncio.sleep(0)  # scheduled with call_soon_threadsafe, not started yet

    async def _flush(self, timeout: float | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                await self._handed_over()
        except TimeoutError:
            raise RequestTimedOutError(f"flush did not finish within {timeout} s: records are still being "
                                       f"handed to the producer") from None
        await self._aio.flush(None if deadline is None else max(deadline - loop.time(), 0))

    async def _close(self, timeout: float | None) -> None:
        await self._handed_over()
        await self._aio.close(timeout)

    def send_batch(self, topic: str, values: Any, keys: Any = None, headers: Any = None, partition: int | None = None,
                   timestamps: Any = None) -> FutureBatchMetadata:
        """Queue many records of ``topic`` in one call (``AIOProducer.send_batch``: sequences of bytes, pyarrow
        arrays, or a Table/RecordBatch with key/value columns); returns one future whose ``get(timeout)`` gives
        a ``SendBatchResult`` once every record is acknowledged. Returns when the records are in batches
        (blocking, as send would, while buffer_memory is full); records sent before it go first."""
        if self._closed:
            raise RuntimeError("send after the producer was closed")
        given = batch_input(values, keys, headers, timestamps, self.config["key_serializer"],
                            self.config["value_serializer"])  # bad input raises here, in the caller's thread
        future = FutureBatchMetadata()
        self._thread.run(self._send_input(topic, given, partition, future))
        return future

    async def _send_input(self, topic: str, given: Any, partition: int | None, future: FutureBatchMetadata) -> None:
        await self._handed_over()
        await self._aio.send_input(topic, given, partition, future)

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait until every record sent so far is acknowledged or has failed
        (``delivery_timeout_ms`` bounds that); RequestTimedOutError after ``timeout`` s."""
        self._thread.run(self._flush(timeout))

    # -- transactions ---------------------------------------------------------------------------------
    @property
    def transaction_state(self) -> TransactionState | None:
        return self._aio.transaction_state

    def init_transactions(self) -> None:
        self._thread.run(self._aio.init_transactions())

    def begin_transaction(self) -> None:
        self._thread.call(self._aio.begin_transaction)

    def send_offsets_to_transaction(self, offsets: dict[Any, Any], group_id: Any) -> None:
        self._thread.run(self._aio.send_offsets_to_transaction(offsets, group_id))

    async def _after_handoff(self, step: Callable[[], Any]) -> None:
        await self._handed_over()  # records sent before the call belong to the transaction
        await step()

    def commit_transaction(self) -> None:
        self._thread.run(self._after_handoff(self._aio.commit_transaction))

    def abort_transaction(self) -> None:
        self._thread.run(self._after_handoff(self._aio.abort_transaction))

    @contextlib.contextmanager
    def transaction(self) -> Iterator["Producer"]:
        """Begin a transaction (init_transactions first if needed); commit it when the block ends,
        abort it if the block raises."""
        if self.transaction_state in (TransactionState.UNINITIALIZED, TransactionState.INITIALIZING):
            self.init_transactions()
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            self._thread.run(self._after_handoff(lambda: self._aio._end_transaction(failed=True)))
            raise
        self._thread.run(self._after_handoff(lambda: self._aio._end_transaction(failed=False)))

    def partitions_for(self, topic: str) -> set[int]:
        return self._thread.run(self._aio.partitions_for(topic))

    def metrics(self) -> dict[str, dict[str, float]]:
        return self._thread.call(self._aio.metrics)  # the sensors live on the loop's thread

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (up to ``timeout`` s), then disconnect and stop the thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.run(self._close(timeout))
        finally:
            self._thread.stop()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

"""Producer: the blocking producer in kafka-python's KafkaProducer shape, over AIOProducer.

    with Producer(bootstrap_servers="127.0.0.1:9092", value_serializer=str.encode) as producer:
        future = producer.send("events", "value", key=b"key")
        future.add_callback(print).add_errback(log_error)
        metadata = future.get(timeout=10)
        producer.flush()

The AIOProducer runs on a private event loop in a daemon thread (an EventLoopThread). ``send``
serializes in the caller's thread, so bad input raises at once as with kafka-python; the rest of the
record's life is on the loop, and its outcome reaches a ``FutureRecordMetadata``. Callbacks run in
the producer's thread, as kafka-python's run in its sender thread: keep them short.

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
import concurrent.futures
import contextlib
import threading
from collections import deque
from typing import Any, Callable, Iterable, Iterator

from ..protocol.errors import RequestTimedOutError
from .event_loop_thread import EventLoopThread
from .producer import AIOProducer, RecordMetadata
from .transaction_manager import TransactionState


class FutureRecordMetadata(concurrent.futures.Future):
    """A concurrent future with kafka-python's methods: ``get``, ``add_callback``, ``add_errback``."""

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The RecordMetadata; raises the send's KafkaError, or RequestTimedOutError after ``timeout`` s."""
        try:
            return self.result(timeout)
        except concurrent.futures.TimeoutError:
            raise RequestTimedOutError(f"no answer for the record within {timeout} s") from None

    def add_callback(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> "FutureRecordMetadata":
        """``function(*args, metadata, **kwargs)`` on success."""
        def call(future: concurrent.futures.Future) -> None:
            if not future.cancelled() and future.exception() is None:
                function(*args, future.result(), **kwargs)
        self.add_done_callback(call)
        return self

    def add_errback(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> "FutureRecordMetadata":
        """``function(*args, exception, **kwargs)`` on failure."""
        def call(future: concurrent.futures.Future) -> None:
            if not future.cancelled() and future.exception() is not None:
                function(*args, future.exception(), **kwargs)
        self.add_done_callback(call)
        return self

    def is_done(self) -> bool:
        return self.done()

    def succeeded(self) -> bool:
        return self.done() and not self.cancelled() and self.exception() is None

    def failed(self) -> bool:
        return self.done() and not self.cancelled() and self.exception() is not None


def _link(source: asyncio.Future, target: FutureRecordMetadata) -> None:
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())


class Producer:
    """kafka-python's KafkaProducer over AIOProducer; same keyword arguments as AIOProducer."""

    def __init__(self, **configs: Any) -> None:
        self._aio = AIOProducer(**configs)  # validates the configuration before a thread starts
        self.config = self._aio.config
        self._thread = EventLoopThread("odradek-producer")
        self._closed = False
        # Records handed to the loop in bulk: one wake-up of the loop per burst, not per record.
        self._handoff: deque[tuple[Any, ...]] = deque()
        self._handoff_lock = threading.Lock()
        self._handoff_scheduled = False
        self._handoff_task: asyncio.Task | None = None
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
        record = self._aio.serialize(topic, value, key, headers)
        result = FutureRecordMetadata()
        with self._handoff_lock:
            self._handoff.append((topic, record, partition, timestamp_ms, result))
            schedule, self._handoff_scheduled = not self._handoff_scheduled, True
        if schedule:
            self._thread.loop.call_soon_threadsafe(self._start_handoff)
        return result

    def _start_handoff(self) -> None:
        self._handoff_task = asyncio.get_running_loop().create_task(self._take_handoff())

    async def _take_handoff(self) -> None:
        """Queue the records ``send`` handed over, in their order (runs on the loop)."""
        while True:
            with self._handoff_lock:
                if not self._handoff:
                    self._handoff_scheduled = False
                    return
                topic, record, partition, timestamp_ms, result = self._handoff.popleft()
            try:
                future = await self._aio.send_serialized(topic, record, partition, timestamp_ms)
            except Exception as exc:
                result.set_exception(exc)
                continue
            future.add_done_callback(lambda done, result=result: _link(done, result))

    async def _handed_over(self) -> None:
        """Wait until every record ``send`` accepted so far is in the AIOProducer's batches."""
        while self._handoff_scheduled or (self._handoff_task is not None and not self._handoff_task.done()):
            if self._handoff_task is not None and not self._handoff_task.done():
                await asyncio.shield(self._handoff_task)
            else:
                await asyncio.sleep(0)  # scheduled with call_soon_threadsafe, not started yet

    async def _flush(self, timeout: float | None) -> None:
        await self._handed_over()
        await self._aio.flush(timeout)

    async def _close(self, timeout: float | None) -> None:
        await self._handed_over()
        await self._aio.close(timeout)

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait for the answers (RequestTimedOutError after ``timeout`` s)."""
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

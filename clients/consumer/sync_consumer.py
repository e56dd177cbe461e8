"""Consumer: the synchronous consumer, shaped as kafka-python's KafkaConsumer.

    with Consumer("events", bootstrap_servers="127.0.0.1:9092", auto_offset_reset="earliest",
                  consumer_timeout_ms=1000) as consumer:
        for record in consumer: ...

It drives an ``AIOConsumer`` on a private event loop in a daemon thread, so the fetcher keeps
prefetching between the application's calls. Every AIOConsumer method is available here, blocking;
``poll(timeout_ms=0, max_records=None)``, ``poll_arrow(timeout_ms=0, max_records=None)`` (one
``pyarrow.RecordBatch`` per partition) and iteration follow kafka-python (iteration ends after
``consumer_timeout_ms`` without a record, never when it is None). Iteration takes every buffered record
from the loop's thread at once and hands them out from the application's thread, moving each partition's
position record by record (as kafka-python's iterator does), so a commit covers only what was handed out.

A rebalance listener's plain (non-async) methods run in a worker thread, not on the private loop, so
they may call this Consumer (``commit()`` in ``on_partitions_revoked`` is the usual case) without
deadlocking it.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Iterator

from .consumer import AIOConsumer
from ..event_loop_thread import EventLoopThread
from ..types import ConsumerRecord


class Consumer:
    def __init__(self, *topics: str, **configs: Any) -> None:
        self._consumer = AIOConsumer(*topics, **configs)  # checks the configs before a thread starts
        self._thread = EventLoopThread("odradek-consumer")
        self._closed = False
        self._iterator: Iterator[ConsumerRecord] | None = None
        try:
            self._thread.run(self._consumer.start())
        except BaseException:
            self.close()
            raise

    def __getattr__(self, name: str) -> Any:
        return self._thread.blocking(getattr(self._consumer, name))

    # State the fetcher reads lives on the loop's thread: change it there.
    def assign(self, partitions: Any) -> None:
        self._thread.call(self._consumer.assign, list(partitions))

    def seek(self, partition: Any, offset: int) -> None:
        self._thread.call(self._consumer.seek, partition, offset)

    def pause(self, *partitions: Any) -> None:
        self._thread.call(self._consumer.pause, *partitions)

    def resume(self, *partitions: Any) -> None:
        self._thread.call(self._consumer.resume, *partitions)

    def subscribe(self, topics: Any = (), pattern: Any = None, listener: Any = None) -> None:
        wrapped = _ThreadedListener(listener) if listener is not None else None
        self._thread.run(self._consumer.subscribe(topics, pattern=pattern, listener=wrapped))

    def unsubscribe(self) -> None:
        self._thread.call(self._consumer.unsubscribe)

    def metrics(self) -> dict[str, dict[str, float]]:
        return self._thread.call(self._consumer.metrics)  # the sensors live on the loop's thread

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, list[ConsumerRecord]]:
        return self._thread.run(self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records))

    def poll_arrow(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, Any]:
        return self._thread.run(self._consumer.poll_arrow(timeout_ms=timeout_ms, max_records=max_records))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        if self._iterator is None:
            self._iterator = self._records()
        return self._iterator

    def __next__(self) -> ConsumerRecord:
        return next(iter(self))

    def _records(self) -> Iterator[ConsumerRecord]:
        timeout = self._consumer.config["consumer_timeout_ms"]
        take = self._consumer._take_chunk
        try:
            while True:
                chunk = self._thread.run(take(1000 if timeout is None else timeout))
                if not chunk and timeout is not None:
                    return
                for state, records in chunk:
                    for record in records:  # ends early if the partition is sought or revoked meanwhile
                        state.position = record.offset + 1
                        yield record
        finally:
            self._iterator = None

    def close(self, autocommit: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.run(self._consumer.close(autocommit))
        finally:
            self._thread.stop()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class _ThreadedListener:
    """Runs a listener's plain methods in the loop's default executor (async ones on the loop)."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    async def _call(self, name: str, partitions: Any) -> None:
        method = getattr(self.listener, name, None)
        if method is None:
            return
        if inspect.iscoroutinefunction(method):
            await method(partitions)
        else:
            await asyncio.get_running_loop().run_in_executor(None, method, partitions)

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._call("on_partitions_revoked", revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._call("on_partitions_assigned", assigned)

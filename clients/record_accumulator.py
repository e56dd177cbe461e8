"""RecordAccumulator: the producer's per-partition queues of batches, as Kafka 2.8's Java RecordAccumulator.

Records are appended to the last open batch of their partition's queue, or to a new one; a queue holds its
batches in creation order, retries included (a retried batch goes back to its place), so the first batch
of a queue is always its oldest. The accumulator counts the bytes it holds against ``buffer_memory``,
keeps the set of batches not yet done (what ``flush`` waits for), and hands out the batches whose
``delivery_timeout_ms`` has passed, oldest first, with the time the next one will (``take_expired``).
Which batch may be sent when is the sender's business (producer_sender.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Callable, Iterator

from ..protocol.errors import RequestTimedOutError
from ..protocol.records import Compression
from .producer_batch import _Batch, _Record
from .types import TopicPartition


class RecordAccumulator:
    def __init__(self, *, batch_size: int, compression: Compression, buffer_memory: int,
                 delivery_timeout_ms: int, on_ready: Callable[[], None]) -> None:
        self.batch_size = batch_size
        self.compression = compression
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.queues: dict[TopicPartition, deque[_Batch]] = {}
        self.incomplete: set[_Batch] = set()  # appended and not done: what flush() and close() wait for
        self.buffered = 0  # estimated bytes of the incomplete batches
        self._next_order = 0
        self._on_ready = on_ready  # wakes the sender: a batch opened or filled, or nothing is left
        self._space: asyncio.Event | None = None

    # -- appending --------------------------------------------------------------------------------
    def fits(self, tp: TopicPartition, record: _Record) -> bool:
        """Whether ``record`` would join the partition's open batch (the sticky partitioner asks)."""
        queue = self.queues.get(tp)
        if not queue:
            return False
        last = queue[-1]
        return not last.full and last.data is None and last.size + record.size <= self.batch_size

    def append(self, tp: TopicPartition, record: _Record, timestamp: int, future: Any) -> None:
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        if queue and queue[-1].try_append(record, timestamp, future, self.batch_size):
            self.buffered += record.size
            if queue[-1].full:
                self._on_ready()
            return
        batch = _Batch(tp, self._next_order, self.compression, asyncio.get_running_loop().time())
        self._next_order += 1
        batch.try_append(record, timestamp, future, self.batch_size)
        queue.append(batch)
        self.incomplete.add(batch)
        self.buffered += batch.size
        batch.done.add_done_callback(lambda _, b=batch: self._release(b))
        self._on_ready()

    def _release(self, batch: _Batch) -> None:
        self.incomplete.discard(batch)
        self.buffered -= batch.size
        if self._space is not None and self.buffered <= self.buffer_memory:
            self._space.set()
        if not self.incomplete:
            # A close() or flush() may wait for exactly this; the sender may have looked last just before.
            self._on_ready()

    @property
    def is_full(self) -> bool:
        return self.buffered > self.buffer_memory

    async def wait_for_space(self, deadline: float, max_block_ms: int) -> None:
        """Block like Java's buffer.memory: wait (until ``deadline``, loop time) while too much is held."""
        loop = asyncio.get_running_loop()
        if self._space is None:
            self._space = asyncio.Event()
        while self.is_full:
            self._space.clear()
            try:
                async with asyncio.timeout(max(deadline - loop.time(), 0)):
                    await self._space.wait()
            except TimeoutError:
                raise RequestTimedOutError(f"buffer_memory stayed full for {max_block_ms} ms") from None

    # -- the sender's side --------------------------------------------------------------------------
    def reenqueue(self, batch: _Batch) -> None:
        """Put a batch back at its place (queues stay in creation order, so retries keep their order)."""
        queue = self.queues.setdefault(batch.tp, deque())
        index = 0
        while index < len(queue) and queue[index].order < batch.order:
            index += 1
        queue.insert(index, batch)

    def take_expired(self, now: float) -> tuple[list[_Batch], float | None]:
        """Take out the queued batches created ``delivery_timeout_ms`` or more ago (Java's expiredBatches: from
        the head of each queue, which holds its oldest); also returns when the next queued one will expire."""
        expired: list[_Batch] = []
        next_expiry: float | None = None
        timeout = self.delivery_timeout
        for queue in self.queues.values():
            while queue:
                expires = queue[0].created + timeout
                if now < expires:
                    if next_expiry is None or expires < next_expiry:
                        next_expiry = expires
                    break
                expired.append(queue.popleft())
        return expired, next_expiry

    def take_all(self) -> Iterator[_Batch]:
        """Empty every queue (Java's abortUndrainedBatches, when a transaction can only be aborted)."""
        for queue in self.queues.values():
            while queue:
                yield queue.popleft()


__all__ = ["RecordAccumulator"]

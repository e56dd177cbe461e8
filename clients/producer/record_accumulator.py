"""RecordAccumulator: the producer's per-partition queues of batches, as Kafka 2.8's Java RecordAccumulator.

Records are appended in runs (many in one codec call) to the last open batch of their partition's queue, or
to a new one; a queue holds its batches in creation order, retries included (a retried batch goes back to its place), so the first batch
of a queue is always its oldest. The accumulator counts the bytes it holds against ``buffer_memory``,
keeps the set of batches not yet done (what ``flush`` waits for), and hands out the batches whose
``delivery_timeout_ms`` has passed, oldest first, with the time the next one will (``take_expired``).
Which batch may be sent when is the sender's business (sender.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Callable, Iterator

from ...protocol.errors import MessageTooLargeError, RequestTimedOutError
from ...protocol.records import Compression
from .batch import BATCH_OVERHEAD, Columns, _Batch
from ..types import TopicPartition

BULK_BATCH_SIZE = 256 * 1024


class RecordAccumulator:
    def __init__(self, *, batch_size: int, compression: Compression, buffer_memory: int,
                 delivery_timeout_ms: int, on_ready: Callable[[], None], max_request_size: int = 1048576) -> None:
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.max_size = min(batch_size, max_request_size)  # a batch must fit in a request
        # send_batch's records are all there at once: its batches go up to BULK_BATCH_SIZE (librdkafka's
        # batch.size is 1 MB), which spares a batch's fixed costs (about 100 us of Python) per 16 KiB.
        self.bulk_max_size = max(self.max_size, min(max_request_size, BULK_BATCH_SIZE))
        self.compression = compression
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.queues: dict[TopicPartition, deque[_Batch]] = {}
        self.incomplete: set[_Batch] = set()  # appended and not done: what flush() and close() wait for
        self.buffered = 0  # bytes of the incomplete batches
        self._next_order = 0
        self._on_ready = on_ready  # wakes the sender: a batch opened or filled, or nothing is left
        self._space: asyncio.Event | None = None

    # -- appending --------------------------------------------------------------------------------
    def append(self, tp: TopicPartition, columns: Columns, start: int, stop: int, open_new: bool = True,
               bulk: bool = False) -> tuple[_Batch | None, int, int]:
        """Append records ``start..stop-1`` of ``columns`` to the partition's open batch, as many as fit, or
        (``open_new``) to a new batch when it has none with room: ``(batch, index of the first one in it,
        how many)``; ``(None, 0, 0)`` when nothing was appended. MessageTooLargeError if record ``start``
        alone is larger than max_request_size (nothing is appended). ``bulk``: batches up to bulk_max_size."""
        max_size = self.bulk_max_size if bulk else self.max_size
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        if queue:
            last = queue[-1]
            first, before = last.record_count, last.size
            added = last.append(columns, start, stop, max_size)
            if added:
                self.buffered += last.size - before
                if last.full:
                    self._on_ready()
                return last, first, added
        if not open_new:
            return None, 0, 0
        batch = _Batch(tp, self._next_order, self.compression, asyncio.get_running_loop().time())
        added = batch.append(columns, start, stop, max_size)  # takes one at least
        if added == 1 and batch.size > self.max_request_size:
            raise MessageTooLargeError(f"the record is {batch.size - BATCH_OVERHEAD} bytes, more than "
                                       f"max_request_size {self.max_request_size} with the batch header")
        self._next_order += 1
        queue.append(batch)
        self.incomplete.add(batch)
        self.buffered += batch.size
        batch.done.add_done_callback(lambda _, b=batch: self._release(b))
        self._on_ready()
        return batch, 0, added

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

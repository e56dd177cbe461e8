"""Hierarchical timing wheel timer (the shape of Kafka's utils/timer), as a pure core.

Nothing here reads the wall clock except through the injected ``time_ms`` function and nothing
sleeps: a driver (see ``driver.py``) or a test decides when to call ``Timer.advance_clock``.

Everything runs on one asyncio thread, so there are no locks. Kafka needs its lock dance
(``TimerTaskEntry.remove`` looping, per-list synchronisation) because expiration and completion
happen on different threads; here a callback runs to completion before any other can start.

Granularity is Kafka's: a task lands in the bucket of the tick that contains its expiration and
fires when the clock reaches the start of that tick. With the default ``tick_ms=1`` and an integer
millisecond clock that means "exactly at or after its expiration".
"""
from __future__ import annotations

import heapq
import itertools
import logging
import time
from typing import Callable, Iterator, List, Optional, Tuple


log = logging.getLogger(__name__)


def monotonic_ms() -> int:
    """Default clock: integer milliseconds of a monotonic clock (never goes backwards)."""
    return time.monotonic_ns() // 1_000_000


class TimerTask:
    """Something to run once ``delay_ms`` after it is added to a Timer, unless cancelled first."""

    __slots__ = ("delay_ms", "_entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._entry: Optional[TimerTaskEntry] = None

    def run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        """Take the task out of its bucket; it will not run. Safe to call at any time, repeatedly."""
        entry = self._entry
        if entry is not None:
            entry.remove()
        self._entry = None

    def _set_entry(self, entry: "TimerTaskEntry") -> None:
        # A task re-added to a timer drops its old entry so it can only fire once.
        if self._entry is not None and self._entry is not entry:
            self._entry.remove()
        self._entry = entry


class CallbackTask(TimerTask):
    """A TimerTask that calls ``fn()``; handy for tests and one-off timeouts."""

    __slots__ = ("fn",)

    def __init__(self, delay_ms: int, fn: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.fn = fn

    def run(self) -> None:
        self.fn()


class TimerTaskEntry:
    """A task's node in a TimerTaskList (doubly linked, so removal is O(1))."""

    __slots__ = ("task", "expiration_ms", "list", "next", "prev")

    def __init__(self, task: Optional[TimerTask], expiration_ms: int) -> None:
        self.task = task
        self.expiration_ms = expiration_ms
        self.list: Optional[TimerTaskList] = None
        self.next: Optional[TimerTaskEntry] = None
        self.prev: Optional[TimerTaskEntry] = None
        if task is not None:
            task._set_entry(self)

    @property
    def cancelled(self) -> bool:
        return self.task is None or self.task._entry is not self

    def remove(self) -> None:
        if self.list is not None:
            self.list.remove(self)


class _Counter:
    """Shared task count of one Timer: every bucket of every wheel updates the same object."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTaskList:
    """One bucket: a circular doubly linked list with a sentinel root, plus the bucket's expiration."""

    __slots__ = ("_counter", "_root", "expiration_ms")

    def __init__(self, counter: _Counter) -> None:
        self._counter = counter
        self._root = TimerTaskEntry(None, -1)
        self._root.next = self._root
        self._root.prev = self._root
        self.expiration_ms = -1  # -1: not scheduled in the timer's queue

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the bucket's expiration; True if it changed (the bucket must then be queued)."""
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def add(self, entry: TimerTaskEntry) -> None:
        entry.remove()
        tail = self._root.prev
        entry.next = self._root
        entry.prev = tail
        entry.list = self
        tail.next = entry
        self._root.prev = entry
        self._counter.value += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        if entry.list is self:
            entry.next.prev = entry.prev
            entry.prev.next = entry.next
            entry.next = entry.prev = None
            entry.list = None
            self._counter.value -= 1

    def flush(self, fn: Callable[[TimerTaskEntry], None]) -> None:
        """Remove every entry, handing each to ``fn`` (the timer's reinsert), and unschedule the bucket."""
        head = self._root.next
        while head is not self._root:
            self.remove(head)
            fn(head)
            head = self._root.next
        self.expiration_ms = -1

    def __iter__(self) -> Iterator[TimerTaskEntry]:
        e = self._root.next
        while e is not self._root:
            nxt = e.next
            if not e.cancelled:
                yield e
            e = nxt

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration_ms={self.expiration_ms}, tasks={len(self)})"


class TimingWheel:
    """One level of the hierarchy: ``wheel_size`` buckets of ``tick_ms`` each.

    Expirations beyond this wheel's span go to an overflow wheel whose tick is this wheel's whole
    interval; it is created on demand. ``queue`` is told about every bucket that gets a new
    expiration (the Timer keeps them in a heap, Kafka keeps them in a DelayQueue).
    """

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        counter: Optional[_Counter] = None,
        queue: Optional[Callable[[TimerTaskList], None]] = None,
    ) -> None:
        if tick_ms < 1 or wheel_size < 1:
            raise ValueError("tick_ms and wheel_size must be >= 1")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self.current_time = start_ms - (start_ms % tick_ms)  # always a multiple of tick_ms
        self._counter = counter if counter is not None else _Counter()
        self._queue = queue if queue is not None else (lambda bucket: None)
        self.buckets = [TimerTaskList(self._counter) for _ in range(wheel_size)]
        self.overflow_wheel: Optional[TimingWheel] = None

    def _add_overflow_wheel(self) -> None:
        if self.overflow_wheel is None:
            self.overflow_wheel = TimingWheel(
                self.interval, self.wheel_size, self.current_time, self._counter, self._queue
            )

    def add(self, entry: TimerTaskEntry) -> bool:
        """Put the entry in a bucket; False if it is cancelled or already expired (the caller runs it)."""
        expiration = entry.expiration_ms
        if entry.cancelled:
            return False
        if expiration < self.current_time + self.tick_ms:
            return False
        if expiration < self.current_time + self.interval:
            virtual_id = expiration // self.tick_ms
            bucket = self.buckets[virtual_id % self.wheel_size]
            bucket.add(entry)
            # Only a bucket whose expiration changed is new to the queue: a bucket is queued at
            # most once per expiration because flush resets it to -1.
            if bucket.set_expiration(virtual_id * self.tick_ms):
                self._queue(bucket)
            return True
        if self.overflow_wheel is None:
            self._add_overflow_wheel()
        return self.overflow_wheel.add(entry)

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_time + self.tick_ms:
            self.current_time = time_ms - (time_ms % self.tick_ms)
            if self.overflow_wheel is not None:
                self.overflow_wheel.advance_clock(self.current_time)


class Timer:
    """Kafka's SystemTimer without its threads: wheels + a heap of scheduled buckets.

    ``advance_clock(now_ms)`` expires every bucket due at ``now_ms``; tasks of an overflow bucket
    are reinserted and either land in a finer wheel or, if due, run. ``add`` of an already expired
    task runs it at once, synchronously.
    """

    def __init__(
        self,
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: Optional[int] = None,
        time_ms: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.time_ms = time_ms
        self._counter = _Counter()
        self._heap: List[Tuple[int, int, TimerTaskList]] = []
        self._seq = itertools.count()  # tie-break so the heap never compares buckets
        self._listener: Optional[Callable[[int], None]] = None
        start = time_ms() if start_ms is None else start_ms
        self.wheel = TimingWheel(tick_ms, wheel_size, start, self._counter, self._offer)

    def set_bucket_listener(self, fn: Optional[Callable[[int], None]]) -> None:
        """``fn(expiration_ms)`` is called whenever a bucket is scheduled (a driver re-arms on it)."""
        self._listener = fn

    def _offer(self, bucket: TimerTaskList) -> None:
        heapq.heappush(self._heap, (bucket.expiration_ms, next(self._seq), bucket))
        if self._listener is not None:
            self._listener(bucket.expiration_ms)

    def add(self, task: TimerTask) -> None:
        self._add_entry(TimerTaskEntry(task, task.delay_ms + self.time_ms()))

    def _add_entry(self, entry: TimerTaskEntry) -> None:
        if not self.wheel.add(entry) and not entry.cancelled:
            # Expired: drop the task's link first so a cancel() from inside run() is a no-op.
            task = entry.task
            task._entry = None
            try:
                task.run()
            except Exception:  # Kafka runs tasks on an executor: one failure must not stop the rest
                log.exception("timer task %r failed", task)

    def _pop_due(self, now_ms: int) -> Optional[TimerTaskList]:
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            expiration, _, bucket = heapq.heappop(heap)
            if bucket.expiration_ms == expiration:  # otherwise a stale entry
                return bucket
        return None

    def advance_clock(self, now_ms: Optional[int] = None) -> bool:
        """Expire all buckets due at ``now_ms`` (default: the clock). True if any bucket was flushed."""
        now = self.time_ms() if now_ms is None else now_ms
        flushed = False
        bucket = self._pop_due(now)
        while bucket is not None:
            self.wheel.advance_clock(bucket.expiration_ms)
            bucket.flush(self._add_entry)  # reinsert: lands in a finer wheel or runs
            flushed = True
            bucket = self._pop_due(now)
        return flushed

    def next_expiration_ms(self) -> Optional[int]:
        """Expiration of the earliest bucket that still holds a task; None when nothing is pending."""
        heap = self._heap
        while heap:
            expiration, _, bucket = heap[0]
            if bucket.expiration_ms != expiration:
                heapq.heappop(heap)
            elif bucket._root.next is bucket._root:
                # Emptied by cancellations: unschedule it now rather than wake up for nothing.
                heapq.heappop(heap)
                bucket.expiration_ms = -1
            else:
                return expiration
        return None

    @property
    def size(self) -> int:
        """Number of tasks waiting in the wheels (cancelled ones are removed at once)."""
        return self._counter.value

    def __len__(self) -> int:
        return self._counter.value

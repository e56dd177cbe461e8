"""Delayed operations and the purgatory that watches them (Kafka's server/DelayedOperation).

An operation (a produce waiting for acks=all, a fetch waiting for min bytes, a join waiting for
members) either completes when some event makes its condition true, or expires after ``delay_ms``.
The purgatory indexes waiting operations by key (e.g. ``("topic", 0)``) so the code that causes an
event calls ``check_and_complete(key)`` and only the operations that care are re-tried.

Single-threaded: the loop serialises completion and expiration, so the "exactly once" guarantee is a
plain flag set before ``on_complete`` runs (Kafka needs an AtomicBoolean and per-op locks).

Isolation: an exception raised by one operation's ``try_complete``, ``on_complete`` or
``on_expiration`` is caught here and fails that operation alone (``on_error``: its request gets an
error answer); it never reaches the code that called ``check_and_complete`` (an append, a follower
fetch), the other operations watched under the same key, or the timer.
"""
from __future__ import annotations

import logging
from typing import Dict, Hashable, Iterable, List, Optional

from .timer import Timer, TimerTask

log = logging.getLogger(__name__)


class DelayedOperation(TimerTask):
    """Subclasses implement ``try_complete``, ``on_complete`` and ``on_expiration``."""

    __slots__ = ("_completed",)

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self._completed = False

    @property
    def is_completed(self) -> bool:
        return self._completed

    def try_complete(self) -> bool:
        """Check the condition; if met, call ``force_complete()`` and return its result."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Runs exactly once, whether the operation completed or expired (e.g. send the response)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Runs after ``on_complete`` only when the operation timed out (e.g. count a metric)."""

    def on_error(self, exc: BaseException) -> None:
        """``try_complete`` or ``on_complete`` raised ``exc``: answer the waiting request with an error.
        The operation is already completed. Operations that resolve a future must override this."""

    def force_complete(self) -> bool:
        """Complete now. The first caller wins and gets True; every later call returns False."""
        if self._completed:
            return False
        self._completed = True
        self.cancel()  # out of the timer: a completed op must not expire
        try:
            self.on_complete()
        except Exception as exc:
            self._failed(exc, "completing")
        return True

    def safe_try_complete(self) -> bool:
        # Kafka takes the op's lock here; on one loop thread only the "already done" check remains.
        if self._completed:
            return False
        try:
            return self.try_complete()
        except Exception as exc:
            if self._completed:  # on_complete ran (and is guarded); the raise came after it
                log.exception("%r failed after completing", self)
                return True
            self._completed = True
            self.cancel()
            self._failed(exc, "checking")
            return True

    def _failed(self, exc: BaseException, doing: str) -> None:
        log.error("Delayed operation %r failed while %s it; it is answered with an error", self, doing,
                  exc_info=exc)
        try:
            self.on_error(exc)
        except Exception:
            log.exception("Delayed operation %r could not be failed", self)

    def run(self) -> None:
        # Called by the timer on expiration; loses quietly if a completion got there first.
        if self.force_complete():
            try:
                self.on_expiration()
            except Exception:
                log.exception("Delayed operation %r failed in its expiration callback", self)


class _Watchers:
    """Operations watched under one key, in insertion order (a dict used as an ordered set)."""

    __slots__ = ("key", "ops")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.ops: Dict[DelayedOperation, None] = {}

    def watch(self, op: DelayedOperation) -> None:
        self.ops[op] = None

    def try_complete_watched(self) -> int:
        completed = 0
        # Iterate over a snapshot: completing one op may watch or complete others under this key.
        for op in list(self.ops):
            if op.is_completed:
                self.ops.pop(op, None)  # completed through another key or by expiration
            elif op.safe_try_complete():
                self.ops.pop(op, None)
                completed += 1
        return completed

    def purge_completed(self) -> int:
        done = [op for op in self.ops if op.is_completed]
        for op in done:
            del self.ops[op]
        return len(done)

    def cancel(self) -> List[DelayedOperation]:
        ops = list(self.ops)
        self.ops.clear()
        for op in ops:
            op.cancel()
        return ops


class DelayedOperationPurgatory:
    """Watch operations by key and expire them with a Timer.

    Give each purgatory its own Timer, as Kafka does: ``num_delayed`` is the timer's size, and the
    purge trigger compares it with the number of operations ever watched.
    """

    def __init__(self, name: str, timer: Optional[Timer] = None, purge_interval: int = 1000) -> None:
        self.name = name
        self.timer = timer if timer is not None else Timer()
        self.purge_interval = purge_interval
        self._watchers: Dict[Hashable, _Watchers] = {}
        # Ops watched since the last purge (approximate: completions via check_and_complete are
        # not subtracted), as Kafka's estimatedTotalOperations.
        self._estimated_total = 0
        self.purges = 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """True if ``op`` completed now; otherwise it is watched under every key and timed.

        Order matters (Kafka's contract): try; watch under each key; try again, because an event
        between the first try and the watch would otherwise call check_and_complete before the op
        was watched and the op would sit until it expires; then add to the timer.
        """
        keys = list(keys)
        if not keys:
            raise ValueError("an operation must be watched under at least one key")
        if op.safe_try_complete():
            return True
        watched = False
        for key in keys:
            if op.is_completed:  # completed meanwhile (e.g. by a callback); stop watching
                return False
            self._watch_for_operation(key, op)
            if not watched:
                watched = True
                self._estimated_total += 1
        if op.safe_try_complete():
            return True
        if not op.is_completed:
            self.timer.add(op)
            if op.is_completed:  # expired at once (delay <= 0); make sure it is out of the timer
                op.cancel()
        self._maybe_purge()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try the operations watched under ``key``; return how many this call completed."""
        watchers = self._watchers.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        self._remove_key_if_empty(key, watchers)
        return completed

    def cancel_for_key(self, key: Hashable) -> List[DelayedOperation]:
        """Stop watching ``key`` and take its ops out of the timer (e.g. the partition left this broker).

        The ops are neither completed nor expired; the caller decides what to answer.
        """
        watchers = self._watchers.pop(key, None)
        return watchers.cancel() if watchers is not None else []

    def _watch_for_operation(self, key: Hashable, op: DelayedOperation) -> None:
        watchers = self._watchers.get(key)
        if watchers is None:
            watchers = self._watchers[key] = _Watchers(key)
        watchers.watch(op)

    def _remove_key_if_empty(self, key: Hashable, watchers: _Watchers) -> None:
        if not watchers.ops and self._watchers.get(key) is watchers:
            del self._watchers[key]

    def _maybe_purge(self) -> None:
        # Kafka's reaper does this every 200 ms; here it piggybacks on watching, an O(1) check.
        if self._estimated_total - self.num_delayed > self.purge_interval:
            self.purge_completed()

    def purge_completed(self) -> int:
        """Drop completed (typically expired) ops from every watcher list; return how many."""
        self._estimated_total = self.num_delayed
        purged = 0
        for key, watchers in list(self._watchers.items()):
            purged += watchers.purge_completed()
            self._remove_key_if_empty(key, watchers)
        self.purges += 1
        return purged

    @property
    def watched(self) -> int:
        """Watch entries over all keys (an op watched under 3 keys counts 3, as in Kafka)."""
        return sum(len(w.ops) for w in self._watchers.values())

    def watched_keys(self) -> List[Hashable]:
        return list(self._watchers)

    @property
    def num_delayed(self) -> int:
        """Operations waiting in the timer."""
        return self.timer.size

    @property
    def delayed(self) -> int:
        return self.timer.size

    def shutdown(self) -> None:
        """Forget every watched op and take them out of the timer; none is completed or expired."""
        for watchers in list(self._watchers.values()):
            watchers.cancel()
        self._watchers.clear()
        self._estimated_total = 0

"""``queued.max.request.bytes``: back-pressure on the bytes of requests read but not yet handled.

Kafka's SimpleMemoryPool (non-strict, as the broker uses it): the bytes of every request read count
until its handler has run (the records it carried are then in the log); once they reach the limit
the processors read nothing more, from any connection, until handling brings them back under it.
Non-strict means a request already read is never refused: the count may go past the limit by what was
in flight. -1 (Kafka's default) means no limit and no pool.
"""

from __future__ import annotations

from typing import Callable


class MemoryPool:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.exhausted_count = 0  # times reading stopped for it (a counter for metrics and tests)
        self._listeners: list[Callable[[], None]] = []

    @property
    def exhausted(self) -> bool:
        return self.used >= self.limit

    def on_change(self, listener: Callable[[], None]) -> None:
        """``listener()`` runs whenever ``exhausted`` flips."""
        self._listeners.append(listener)

    def allocate(self, size: int) -> None:
        was = self.exhausted
        self.used += size
        if not was and self.exhausted:
            self.exhausted_count += 1
            self._notify()

    def release(self, size: int) -> None:
        was = self.exhausted
        self.used = max(0, self.used - size)
        if was and not self.exhausted:
            self._notify()

    def _notify(self) -> None:
        for listener in self._listeners:
            listener()

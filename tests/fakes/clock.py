"""A clock the test moves by hand."""

from __future__ import annotations


class ManualClock:
    """Callable like the clocks the broker takes (``time_ms=``, ``clock=``): returns ``now``, which only the
    test changes, so expiries and rates are reached exactly, never by waiting."""

    def __init__(self, now: float = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

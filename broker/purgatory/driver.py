"""Drive a Timer from an asyncio loop: one ``call_at`` for the earliest bucket, never a tick poll.

Kafka's expiration reaper thread blocks on its DelayQueue for at most 200 ms at a time. On an event
loop the equivalent is a single timer handle armed for the earliest scheduled bucket: it is moved
earlier when a sooner bucket appears (the Timer's bucket listener) and re-armed after each flush.
An idle timer has no handle at all, so it costs no wake-ups.

No locks: the loop runs one callback at a time, so ``advance_clock`` never interleaves with ``add``.
"""
from __future__ import annotations

import asyncio
from typing import Optional

from .timer import Timer


class AsyncTimerDriver:
    def __init__(self, timer: Timer, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self.timer = timer
        self._loop = loop
        self._handle: Optional[asyncio.TimerHandle] = None
        self._armed_for: Optional[int] = None  # bucket expiration (timer ms) the handle is for
        self._firing = False
        self._running = False
        self.wakeups = 0  # times the loop called us back (for tests and metrics)
        self.arms = 0  # times a handle was (re)scheduled

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        """Attach to the running loop (or the one given) and arm for whatever is already pending."""
        if self._running:
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        self._running = True
        self.timer.set_bucket_listener(self._on_bucket)
        self._arm()

    def shutdown(self) -> None:
        """Stop expiring; pending tasks stay in the timer and can be driven again by a new start()."""
        self._running = False
        self.timer.set_bucket_listener(None)
        self._cancel_handle()

    def rearm(self) -> None:
        """Re-aim the handle at the earliest non-empty bucket, e.g. after many cancellations.

        Not required for correctness: a handle left on an emptied bucket costs one idle wake-up.
        """
        if self._running and not self._firing:
            self._arm()

    def _cancel_handle(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._armed_for = None

    def _on_bucket(self, expiration_ms: int) -> None:
        # While firing, the flush reinserts tasks; _fire re-arms once at the end instead.
        if self._firing:
            return
        if self._armed_for is None or expiration_ms < self._armed_for:
            self._arm()

    def _arm(self) -> None:
        expiration = self.timer.next_expiration_ms()
        if expiration is None:
            self._cancel_handle()
            return
        if self._handle is not None and self._armed_for == expiration:
            return
        self._cancel_handle()
        loop = self._loop
        delay_s = max(0, expiration - self.timer.time_ms()) / 1000.0
        # call_at on the loop's own clock: the timer's clock may be a different monotonic source.
        self._handle = loop.call_at(loop.time() + delay_s, self._fire)
        self._armed_for = expiration
        self.arms += 1

    def _fire(self) -> None:
        self._handle = None
        self._armed_for = None
        self.wakeups += 1
        if not self._running:
            return
        self._firing = True
        try:
            self.timer.advance_clock()
        finally:
            self._firing = False
            if self._running:
                self._arm()

"""``log.cleaner.io.max.bytes.per.second``: Kafka's Throttler, shared by all cleaner workers.

Each worker reports the bytes it read or wrote; every ``check_interval_ms`` the observed rate is compared
with the desired one and, when above it, the reporter sleeps long enough to bring the average down,
holding the lock so that every worker waits (Kafka's maybeThrottle). The rate can change at run time
(Kafka 2.8 restarts its cleaner threads with the new value but keeps the first throttler; here the new
rate applies).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

DOUBLE_MAX = 1.7976931348623157e308


class Throttler:
    def __init__(self, rate_per_sec: float, check_interval_ms: int = 300,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep) -> None:
        self.rate_per_sec = rate_per_sec
        self.check_interval = check_interval_ms / 1000.0
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._period_start = clock()
        self._observed = 0.0
        self.total_bytes = 0  # a meter of everything observed (Kafka's "cleaner-io" meter)
        self.slept_secs = 0.0

    @property
    def enabled(self) -> bool:
        return self.rate_per_sec < DOUBLE_MAX

    def maybe_throttle(self, observed: float) -> None:
        with self._lock:
            self.total_bytes += int(observed)
            self._observed += observed
            now = self._clock()
            elapsed = now - self._period_start
            if elapsed > self.check_interval and self._observed > 0:
                rate = self._observed / elapsed
                if rate > self.rate_per_sec:
                    sleep_secs = self._observed / self.rate_per_sec - elapsed
                    if sleep_secs > 0:
                        self._sleep(sleep_secs)
                        self.slept_secs += sleep_secs
                self._period_start = self._clock()
                self._observed = 0.0

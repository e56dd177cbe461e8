"""Kafka's windowed statistics (``org.apache.kafka.common.metrics.stats``) that quotas are measured with.

A ``SampledStat`` keeps a ring of ``num_samples`` samples, each covering ``window_ms``: recording moves to
the next slot once the current sample is a window old, and a sample older than the whole ring
(``num_samples * window_ms``) restarts empty when measured (SampledStat.purgeObsoleteSamples).

- ``Rate`` (Kafka's Rate over a WindowedSum): the recorded total per second over the time since the oldest
  live sample began, but never over less than ``num_samples - 1`` whole windows. A young sensor is thus
  measured as if it had been idle before, so one burst is not taken for a high rate (client quotas).
- ``SimpleRate``: the same total over the elapsed time, but never over less than one window (replication
  quotas: the bound bites from the first second).
- ``Avg``: the mean of the recorded values of the live samples, NaN when there are none (throttle-time).

Times are milliseconds from any monotonic clock; single-threaded (the broker's event loop): no locks.
"""

from __future__ import annotations

import math
import time


def monotonic_ms() -> float:
    return time.monotonic() * 1000


class _Sample:
    __slots__ = ("start_ms", "value", "count")

    def __init__(self, start_ms: float) -> None:
        self.start_ms = start_ms
        self.value = 0.0
        self.count = 0

    def reset(self, start_ms: float) -> None:
        self.start_ms = start_ms
        self.value = 0.0
        self.count = 0


class SampledStat:
    """The ring of samples; ``value`` of a sample is the sum of what was recorded in it."""

    __slots__ = ("num_samples", "window_ms", "_samples", "_current")

    def __init__(self, num_samples: int = 11, window_ms: float = 1000) -> None:
        self.num_samples = max(1, num_samples)
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:  # Sample.isComplete: on to the next slot
            self._current = (self._current + 1) % self.num_samples
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.count += 1

    def _current_sample(self, now_ms: float) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def purge_obsolete(self, now_ms: float) -> None:
        expire_age = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_age:
                sample.reset(now_ms)


class Rate(SampledStat):
    """Kafka's Rate: per second, over at least ``num_samples - 1`` whole windows."""

    __slots__ = ()

    def _span(self, elapsed_ms: float) -> float:
        full_windows = int(elapsed_ms // self.window_ms)
        min_full_windows = self.num_samples - 1
        if full_windows < min_full_windows:
            elapsed_ms += (min_full_windows - full_windows) * self.window_ms
        return elapsed_ms

    def measure_with_window(self, now_ms: float) -> tuple[float, float]:
        """(the rate, the span in ms it was measured over: Rate.windowSize, which throttle times scale
        with), in one pass over the samples, purging the obsolete ones."""
        samples = self._samples
        if not samples:
            samples.append(_Sample(now_ms))
        expire_age = self.num_samples * self.window_ms
        total = 0.0
        oldest = now_ms
        for sample in samples:
            if now_ms - sample.start_ms >= expire_age:
                sample.reset(now_ms)
            else:
                total += sample.value
                if sample.start_ms < oldest:
                    oldest = sample.start_ms
        span = self._span(now_ms - oldest)
        return (total / (span / 1000) if span > 0 else 0.0), span

    def window_size(self, now_ms: float) -> float:
        return self.measure_with_window(now_ms)[1]

    def measure(self, now_ms: float) -> float:
        return self.measure_with_window(now_ms)[0]


class SimpleRate(Rate):
    """Kafka's SimpleRate: per second, over at least one window."""

    __slots__ = ()

    def _span(self, elapsed_ms: float) -> float:
        return max(elapsed_ms, self.window_ms)


class Avg(SampledStat):
    """Kafka's Avg: the mean of the values recorded in the live samples; NaN when nothing was."""

    __slots__ = ()

    def measure(self, now_ms: float) -> float:
        self.purge_obsolete(now_ms)
        count = sum(s.count for s in self._samples)
        return sum(s.value for s in self._samples) / count if count else math.nan

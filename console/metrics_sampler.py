"""The brokers' Prometheus endpoints sampled into a 15-minute ring per broker, for the Overview's plots.

Only the few series the plots need are parsed (a line filter by prefix: a broker with 10,000 partitions
exposes tens of thousands of per-partition lines the console does not read). Counters are turned into
per-second rates between consecutive samples; gauges and p99 quantiles are kept as they are.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

import aiohttp

from .periodic import Periodic

WINDOW_S = 15 * 60

# plot name -> (metric name, required labels, is a counter)
SERIES: dict[str, tuple[str, dict[str, str], bool]] = {
    "bytes_in": ("kafka_server_brokertopicmetrics_bytesin_total", {}, True),
    "bytes_out": ("kafka_server_brokertopicmetrics_bytesout_total", {}, True),
    "messages_in": ("kafka_server_brokertopicmetrics_messagesin_total", {}, True),
    "produce_p99_ms": ("kafka_network_requestmetrics_totaltimems", {"request": "Produce", "quantile": "0.99"}, False),
    "fetch_p99_ms": ("kafka_network_requestmetrics_totaltimems", {"request": "FetchConsumer", "quantile": "0.99"},
                     False),
    "under_replicated": ("kafka_server_replicamanager_underreplicatedpartitions", {}, False),
    "under_min_isr": ("kafka_server_replicamanager_underminisrpartitioncount", {}, False),
    "offline": ("kafka_controller_kafkacontroller_offlinepartitionscount", {}, False),
    "controller_epoch": ("kafka_controller_kafkacontroller_controllerepoch", {}, False),
    "active_controller": ("kafka_controller_kafkacontroller_activecontrollercount", {}, False),
}
_PREFIXES = tuple(sorted({name for name, _, _ in SERIES.values()}))


def parse_samples(text: str) -> dict[str, float]:
    """The SERIES values found in a Prometheus text exposition (counters still raw)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(_PREFIXES):
            continue
        head, _, value = line.rpartition(" ")
        name, _, label_text = head.partition("{")
        labels = _labels(label_text.rstrip("}")) if label_text else {}
        for plot, (metric, wanted, _) in SERIES.items():
            if name == metric and _matches(labels, wanted):
                try:
                    found[plot] = float(value)
                except ValueError:
                    pass
    return found


def _labels(text: str) -> dict[str, str]:
    labels = {}
    for part in text.split('",'):
        key, _, value = part.partition("=")
        labels[key.strip()] = value.strip().strip('"')
    return labels


def _matches(labels: dict[str, str], wanted: dict[str, str]) -> bool:
    # a family with a topic label reports the all-topics value without one; wanted={} means "no labels"
    if not wanted:
        return not labels
    return all(labels.get(k) == v for k, v in wanted.items())


class BrokerSeries:
    """One endpoint's ring of (time, {plot: value}) points, rates already computed."""

    def __init__(self, url: str, interval_s: float) -> None:
        self.url = url
        self.points: deque[tuple[float, dict[str, float]]] = deque(maxlen=int(WINDOW_S / interval_s) + 1)
        self.last_raw: tuple[float, dict[str, float]] | None = None
        self.latest: dict[str, float] = {}
        self.error: str | None = None

    def add(self, now: float, raw: dict[str, float]) -> None:
        point = {}
        previous = self.last_raw
        for plot, (_, _, counter) in SERIES.items():
            if plot not in raw:
                continue
            if not counter:
                point[plot] = raw[plot]
            elif previous is not None and plot in previous[1] and now > previous[0]:
                # a restarted broker's counters start again from 0: no negative rate
                point[plot] = max(0.0, raw[plot] - previous[1][plot]) / (now - previous[0])
        self.last_raw = (now, raw)
        self.latest = raw
        self.error = None
        if point:
            self.points.append((now, point))


class MetricsSampler(Periodic):
    """Scrapes every ``host:port`` each ``interval_s`` while started."""

    def __init__(self, endpoints: list[str], interval_s: float = 5.0) -> None:
        super().__init__(interval_s)
        self.brokers = {endpoint: BrokerSeries(_url(endpoint), interval_s) for endpoint in endpoints}
        self._session: aiohttp.ClientSession | None = None

    def start(self) -> None:
        if self.brokers:
            super().start()

    async def stop(self) -> None:
        await super().stop()
        if self._session is not None:
            await self._session.close()

    async def run_once(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=max(2.0, self.interval_s)))
        await asyncio.gather(*(self._scrape(series) for series in self.brokers.values()))

    async def _scrape(self, series: BrokerSeries) -> None:
        assert self._session is not None
        try:
            async with self._session.get(series.url) as response:
                response.raise_for_status()
                text = await response.text()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            series.error = f"{series.url}: {type(exc).__name__} {exc}".strip()
            return
        series.add(time.time(), parse_samples(text))

    def snapshot(self, since: float = 0.0) -> dict[str, Any]:
        return {endpoint: {"url": s.url, "error": s.error,
                           "points": [[t, p] for t, p in s.points if t > since]}
                for endpoint, s in self.brokers.items()}

    def latest_sum(self, plot: str) -> float | None:
        """The plot's latest value summed over the brokers that answered (None: none did)."""
        values = [s.latest[plot] for s in self.brokers.values() if plot in s.latest and s.error is None]
        return sum(values) if values else None

    def latest_max(self, plot: str) -> float | None:
        values = [s.latest[plot] for s in self.brokers.values() if plot in s.latest and s.error is None]
        return max(values) if values else None


def _url(endpoint: str) -> str:
    if endpoint.startswith(("http://", "https://")):
        return endpoint
    return f"http://{endpoint}/metrics"

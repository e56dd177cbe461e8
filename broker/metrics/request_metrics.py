"""Per-request-type rates, errors and latency breakdown (Kafka's RequestChannel metrics), and the request log.

The handler pool calls ``record`` once per answered request with the moments it was dequeued, handled
locally, done waiting (purgatory or ZooKeeper) and written. From those and the receive time come Kafka's
timers: RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs, ThrottleTimeMs (the client-quota throttle the
request got), ResponseQueueTimeMs (always ~0: responses go straight to the connection on the one event
loop), ResponseSendTimeMs (handing the bytes to the transport) and TotalTimeMs. Each timer keeps its last 1028 samples (the size of the Yammer reservoir Kafka's histograms
use) and reports the JMX exporter's quantiles at scrape time; ``_count`` counts every sample. A request's
seven times are kept as one tuple and folded into the timers a batch at a time (or at scrape time): this
runs for every request, and seven timer updates each were a few percent of a follower fetch's cost.

As Kafka, a Fetch is recorded under ``Fetch`` and also under ``FetchConsumer`` or ``FetchFollower``.
Errors are counted per error code found in the response (``error="NONE"`` included), as Kafka's
``ErrorsPerSec`` from ``AbstractResponse.errorCounts``.

The request log (``kafka.request.logger`` at DEBUG) is written from here too: request_log.py.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ...protocol.api_keys import ApiKey
from ...protocol.errors import for_code
from ...protocol.fields import EncodedArray
from .request_log import describe_response, log_completed

if TYPE_CHECKING:
    from ..network.request_channel import Request

RESERVOIR_SIZE = 1028
# The JMX exporter's kafka-2_0_0.yml turns 50thPercentile..999thPercentile into quantile="0.50".."0.999"
QUANTILES = (("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
TIMERS = ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs",
          "ResponseQueueTimeMs", "ResponseSendTimeMs")
_FETCH = int(ApiKey.FETCH)


def request_name(api_key: int) -> str:
    """Kafka's ApiKeys name: PRODUCE -> Produce, LEADER_AND_ISR -> LeaderAndIsr."""
    try:
        return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))
    except ValueError:
        return f"Unknown{api_key}"


_NAMES = {int(k): request_name(int(k)) for k in ApiKey}


def error_name(code: int) -> str:
    if code == 0:
        return "NONE"
    error = for_code(code)
    return error.name if error is not None else "UNKNOWN_SERVER_ERROR"


def count_errors(body: Any, counts: dict[int, int]) -> dict[int, int]:
    """Every ``error_code`` in a response body and the structs nested in it (Kafka's errorCounts). Only the
    struct-typed fields with an error code below them are walked (``Struct._error_nested``): this runs for
    every response."""
    code = getattr(body, "error_code", None)
    if code is not None:
        counts[code] = counts.get(code, 0) + 1
    for name in getattr(type(body), "_error_nested", ()):
        value = getattr(body, name)
        if type(value) is list:
            for item in value:
                count_errors(item, counts)
        elif type(value) is EncodedArray:  # elements encoded ahead: their codes were counted then
            for code, n in value.error_counts.items():
                counts[code] = counts.get(code, 0) + n
        elif value is not None:
            count_errors(value, counts)
    return counts


class Timer:
    __slots__ = ("samples", "count", "total")

    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=RESERVOIR_SIZE)
        self.count = 0
        self.total = 0.0

    def update_all(self, values: tuple[float, ...] | list[float]) -> None:
        self.samples.extend(values)
        self.count += len(values)
        self.total += sum(values)

    def quantiles(self) -> list[tuple[str, float]]:
        ordered = sorted(self.samples)
        if not ordered:
            return [(label, 0.0) for label, _ in QUANTILES]
        last = len(ordered) - 1
        return [(label, ordered[min(last, int(q * len(ordered)))]) for label, q in QUANTILES]


# requests' times held before they are folded into the timers (memory: a few tuples per request type)
FOLD_EVERY = 64


class RequestTypeMetrics:
    """The metrics of one request name."""
    __slots__ = ("versions", "errors", "_timers", "pending")

    def __init__(self) -> None:
        self.versions: dict[int, int] = {}
        self.errors: dict[int, int] = {}
        self._timers = {name: Timer() for name in TIMERS}
        self.pending: list[tuple[float, ...]] = []  # one tuple of TIMERS' values per request not yet folded

    def add(self, times: tuple[float, ...]) -> None:
        pending = self.pending
        pending.append(times)
        if len(pending) >= FOLD_EVERY:
            self.fold()

    def fold(self) -> None:
        if not self.pending:
            return
        columns = zip(*self.pending)
        self.pending = []
        for name, values in zip(TIMERS, columns):
            self._timers[name].update_all(values)

    @property
    def timers(self) -> dict[str, Timer]:
        self.fold()
        return self._timers


class RequestMetrics:
    def __init__(self) -> None:
        self.by_name: dict[str, RequestTypeMetrics] = {}

    def _of(self, name: str) -> RequestTypeMetrics:
        m = self.by_name.get(name)
        if m is None:
            m = self.by_name[name] = RequestTypeMetrics()
        return m

    def _names(self, request: Request) -> tuple[str, ...]:
        api_key = request.header.api_key
        name = _NAMES.get(api_key) or request_name(api_key)
        if api_key == _FETCH and request.body is not None:
            return (name, "FetchFollower" if request.body.replica_id >= 0 else "FetchConsumer")
        return (name,)

    def record_errors(self, request: Request, body: Any) -> None:
        """Called with each response body before it is encoded (KafkaApis.on_response)."""
        if request.log_entry is not None:
            describe_response(request, body)
        counts = count_errors(body, {})
        for name in self._names(request):
            errors = self._of(name).errors
            for code, n in counts.items():
                errors[code] = errors.get(code, 0) + n

    def record(self, request: Request, dequeued: float, local_done: float, remote_done: float, sent: float) -> None:
        """One answered request; times are time.monotonic() seconds (request.receive_time is the start)."""
        received = request.receive_time
        times = (  # in TIMERS' order
            (sent - received) * 1000.0,
            (dequeued - received) * 1000.0,
            (local_done - dequeued) * 1000.0,
            (remote_done - local_done) * 1000.0,
            float(getattr(request, "throttle_time_ms", None) or 0),  # client quotas
            0.0,
            (sent - remote_done) * 1000.0,
        )
        version = request.header.api_version
        for name in self._names(request):
            m = self._of(name)
            m.versions[version] = m.versions.get(version, 0) + 1
            m.add(times)
        if request.log_entry is not None:
            log_completed(request, zip(TIMERS, times))


class RequestMetricsCollector:
    """``kafka_network_requestmetrics_*`` and the request queue size, read at scrape time."""

    def __init__(self, metrics: RequestMetrics, channel_provider: Any) -> None:
        self.metrics = metrics
        self.channel_provider = channel_provider  # () -> RequestChannel | None (the socket server starts late)

    def collect(self) -> Iterator[Metric]:
        by_name = list(self.metrics.by_name.items())
        rates = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered, per type and "
                                    "version", labels=["request", "version"])
        errors = CounterMetricFamily("kafka_network_requestmetrics_errors", "Error codes in responses, per type",
                                     labels=["request", "error"])
        for name, m in by_name:
            for version, n in sorted(m.versions.items()):
                rates.add_metric([name, str(version)], n)
            for code, n in sorted(m.errors.items()):
                errors.add_metric([name, error_name(code)], n)
        yield rates
        yield errors
        for timer in TIMERS:
            metric_name = f"kafka_network_requestmetrics_{timer.lower()}"
            family = Metric(metric_name, f"Kafka's {timer} per request type (last {RESERVOIR_SIZE} samples)",
                            "summary")
            for name, m in by_name:
                t = m.timers[timer]
                for label, value in t.quantiles():
                    family.add_sample(metric_name, {"request": name, "quantile": label}, value)
                family.add_sample(metric_name + "_count", {"request": name}, t.count)
                family.add_sample(metric_name + "_sum", {"request": name}, t.total)
            yield family
        channel = self.channel_provider()
        yield GaugeMetricFamily("kafka_network_requestchannel_requestqueuesize",
                                "Requests waiting for a handler", value=channel.qsize() if channel else 0)
        yield GaugeMetricFamily("kafka_network_requestchannel_responsequeuesize",
                                "Responses waiting for a network processor (always 0: responses are written "
                                "by the handler)", value=0)

"""Kafka 2.8's ClientQuotaManager (produce and fetch byte rates) and ClientRequestQuotaManager (handler time).

Each sensor (one per set of metric tags, see ``entity.QuotaStore.metric_tags``) records into a ``Rate``
of ``quota.window.num`` samples of ``quota.window.size.seconds``. After recording, a rate above the bound
is a violation, and the client is throttled for the time that brings the rate back to the bound if
nothing more were recorded (Kafka's QuotaUtils.throttleTime): with O the observed rate, T the bound and W
the rate's window, X = (O - T) / T * W. The request quota is in percent of one handler's time per second
and its throttle is capped at one window (ClientRequestQuotaManager.maxThrottleTimeMs).

Throttling (KIP-219) is done by the caller's connection: it stays muted for the throttle time, so no
further request is read from it, while the response (carrying ``throttle_time_ms``) goes out at once.
Sensors idle for an hour are dropped, as Kafka's inactive-sensor expiry.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Iterator

from .entity import DEFAULT_NAME, UNLIMITED, QuotaKey, QuotaStore, sanitize
from .stats import Avg, Rate, monotonic_ms

log = logging.getLogger(__name__)

PRODUCE, FETCH, REQUEST = "Produce", "Fetch", "Request"  # Kafka's QuotaType names (the metrics' type=)
INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000
_EXPIRY_CHECK_MS = 30_000  # Kafka's ExpireSensorTask period
# The throttle-time Avg uses the broker's metrics config (metrics.num.samples=2, metrics.sample.window.ms=30000).
_METRIC_SAMPLES, _METRIC_WINDOW_MS = 2, 30_000
_INT32_MAX = 2**31 - 1
NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1e9


class ClientSensors:
    """One quota sensor: its tags, bound, rate and throttle times."""

    __slots__ = ("user", "client_id", "bound", "rate", "throttle_time", "last_record_ms")

    def __init__(self, user: str, client_id: str, bound: float, num_samples: int, window_ms: float,
                 now_ms: float) -> None:
        self.user = user
        self.client_id = client_id
        self.bound = bound
        self.rate = Rate(num_samples, window_ms)
        self.throttle_time = Avg(_METRIC_SAMPLES, _METRIC_WINDOW_MS)
        self.last_record_ms = now_ms


def throttle_time_ms(observed: float, bound: float, window_ms: float) -> int:
    """Kafka's QuotaUtils.throttleTime, rounded as Java's Math.round."""
    if bound <= 0:
        return _INT32_MAX
    return min(_INT32_MAX, int(math.floor((observed - bound) / bound * window_ms + 0.5)))


class ClientQuotaManager:
    """The byte-rate quotas of one quota type (``PRODUCE`` or ``FETCH``)."""

    metric_name = "byte-rate"  # the sensor's Kafka metric name (the request quota's is request-time)

    def __init__(self, quota_type: str, *, quota_default: float = UNLIMITED, num_samples: int = 11,
                 window_seconds: int = 1, clock: Callable[[], float] = monotonic_ms) -> None:
        self.quota_type = quota_type
        self.num_samples = num_samples
        self.window_ms = window_seconds * 1000
        self.clock = clock
        self.store = QuotaStore(quota_default)
        self.sensors: dict[tuple[str, str], ClientSensors] = {}
        self.throttled_channels = 0  # connections muted by this quota right now (Kafka's queue-size)
        self._next_expiry_check = 0.0

    @property
    def quotas_enabled(self) -> bool:
        return self.store.enabled

    # -- recording ------------------------------------------------------------------------------------

    def sensors_for(self, user: str, client_id: str, now: float | None = None) -> ClientSensors:
        """The sensor this principal name and client-id are measured by (getOrCreateQuotaSensors)."""
        if now is None:
            now = self.clock()
        if now >= self._next_expiry_check:
            self._expire_sensors(now)
        tags = self.store.metric_tags(sanitize(user), client_id)
        sensors = self.sensors.get(tags)
        if sensors is None:
            sensors = self.sensors[tags] = ClientSensors(*tags, self._bound(*tags), self.num_samples,
                                                         self.window_ms, now)
        return sensors

    def maybe_record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float,
                                              now_ms: float | None = None) -> int:
        """Record ``value`` when any quota of this type exists; the throttle time in ms (0: within quota)."""
        if not self.store.enabled:
            return 0
        return self.record_and_get_throttle_time_ms(user, client_id, value, now_ms)

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float,
                                        now_ms: float | None = None) -> int:
        now = self.clock() if now_ms is None else now_ms
        sensors = self.sensors_for(user, client_id, now)
        sensors.last_record_ms = now
        sensors.rate.record(value, now)
        if sensors.bound >= UNLIMITED:
            return 0
        observed, window_ms = sensors.rate.measure_with_window(now)
        if observed <= sensors.bound:
            return 0
        throttle = self._throttle_time(observed, sensors.bound, window_ms)
        log.debug("Quota violated for %s sensor of (%r, %r): %.1f > %.1f, throttle %d ms", self.quota_type,
                  sensors.user, sensors.client_id, observed, sensors.bound, throttle)
        return throttle

    def _throttle_time(self, observed: float, bound: float, window_ms: float) -> int:
        return throttle_time_ms(observed, bound, window_ms)

    def record_no_throttle(self, user: str, client_id: str, value: float) -> None:
        """Record without checking the quota: the next request pays for it."""
        now = self.clock()
        sensors = self.sensors_for(user, client_id)
        sensors.last_record_ms = now
        sensors.rate.record(value, now)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float | None = None) -> None:
        """Take back a recorded value (a throttled fetch answers empty: its bytes were never sent)."""
        now = self.clock() if now_ms is None else now_ms
        self.sensors_for(user, client_id, now).rate.record(-value, now)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """The most that can be recorded at once without a certain throttle: bound x (samples - 1) x window
        (getMaxValueInQuotaWindow); a consumer's fetch max_bytes is capped by it."""
        if not self.store.enabled:
            return math.inf
        bound = self.sensors_for(user, client_id).bound
        if bound >= UNLIMITED:
            return math.inf
        return bound * (self.num_samples - 1) * self.window_ms / 1000

    def throttle(self, connection: Any, throttle_ms: int, user: str, client_id: str) -> None:
        """Mute the connection for ``throttle_ms`` and record the throttle time (ClientQuotaManager.throttle)."""
        if throttle_ms <= 0:
            return
        sensors = self.sensors_for(user, client_id)
        sensors.throttle_time.record(throttle_ms, self.clock())
        if connection is not None and connection.throttle(throttle_ms / 1000, self._throttle_done):
            self.throttled_channels += 1

    def _throttle_done(self) -> None:
        self.throttled_channels -= 1

    # -- quotas -----------------------------------------------------------------------------------------

    def update_quota(self, key: QuotaKey, bound: float | None) -> None:
        """Set or remove an entity's quota; every sensor takes its new bound (updateQuotaMetricConfigs)."""
        if bound is not None:
            log.info("Changing %s quota for %s to %s", self.quota_type, _describe(key), bound)
        elif key in self.store.overrides:
            log.info("Removing %s quota for %s", self.quota_type, _describe(key))
        self.store.update(key, bound)
        for tags, sensors in self.sensors.items():
            sensors.bound = self._bound(*tags)

    def _bound(self, user_tag: str, client_tag: str) -> float:
        found = self.store.limit(user_tag, client_tag)
        return UNLIMITED if found is None else found

    def quota(self, user: str, client_id: str) -> float:
        """The bound that applies to this principal name and client-id (tests; Kafka's quota())."""
        return self._bound(*self.store.metric_tags(sanitize(user), client_id))

    def _expire_sensors(self, now: float) -> None:
        self._next_expiry_check = now + _EXPIRY_CHECK_MS
        for tags in [t for t, s in self.sensors.items() if now - s.last_record_ms > INACTIVE_SENSOR_EXPIRATION_MS]:
            del self.sensors[tags]

    def metrics(self) -> Iterator[tuple[ClientSensors, float, float]]:
        """(sensors, measured value, average throttle time) of every sensor, for the metrics endpoint."""
        now = self.clock()
        for sensors in list(self.sensors.values()):
            yield sensors, sensors.rate.measure(now), sensors.throttle_time.measure(now)


class ClientRequestQuotaManager(ClientQuotaManager):
    """``request_percentage``: the share of one request handler's time per second a client may use."""

    metric_name = "request-time"

    def __init__(self, *, num_samples: int = 11, window_seconds: int = 1,
                 clock: Callable[[], float] = monotonic_ms) -> None:
        super().__init__(REQUEST, num_samples=num_samples, window_seconds=window_seconds, clock=clock)
        self.max_throttle_time_ms = window_seconds * 1000

    def _throttle_time(self, observed: float, bound: float, window_ms: float) -> int:
        return min(super()._throttle_time(observed, bound, window_ms), self.max_throttle_time_ms)

    def maybe_record_handler_time(self, user: str, client_id: str, seconds: float, now_ms: float | None = None) -> int:
        """Record a request's handler time; the throttle time in ms."""
        return self.maybe_record_and_get_throttle_time_ms(user, client_id, seconds * 1e9 * NANOS_TO_PERCENTAGE_PER_SECOND,
                                                          now_ms)


def _describe(key: QuotaKey) -> str:
    """As Kafka's KafkaQuotaEntity.toString: "user alice client-id app", "default user", ..."""
    user, client = key
    parts = [] if user is None else ["default user" if user is DEFAULT_NAME else f"user {user}"]
    parts += [] if client is None else ["default client-id" if client is DEFAULT_NAME else f"client-id {client}"]
    return " ".join(parts)

"""Client-side throttling (KIP-219), as Kafka 2.8's Java client does it.

A broker that throttles a client answers at once, with ``throttle_time_ms`` in the response, and mutes the
connection for that long. A client that went on sending would only have its requests wait unread in the
broker's socket buffer, their request timeouts running; one that timed out and reconnected would get a new
connection the broker has not muted, and escape the quota. So, as Java's NetworkClient (maybeThrottle), a
response whose throttle time is > 0, at a version where Kafka's client honours it
(``AbstractResponse.shouldClientThrottle``), stops the client sending to that broker until the time has
passed (``BrokerConnection`` holds the requests; their request timeouts start when they are written).

- ``ThrottleState`` is Java's ``NodeConnectionState.throttleUntilTimeMs``: one per broker per client,
  outliving connections (a reconnect does not lift a throttle), never moving backwards.
- ``ThrottleTimeSensor`` is the sensor Java's NetworkClient records every response's throttle time in
  (0 included): the producer's ``produce-throttle-time`` and the consumer's ``fetch-throttle-time``, an Avg
  and a Max over the client metrics' default 2 samples of 30 s (Kafka's SampledStat: recording moves to
  the next sample once the current one is a window old; samples older than all the windows are ignored).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from ..protocol.api_keys import ApiKey

_NEVER = 2**15
# Kafka 2.8's shouldClientThrottle per response: the first version the client honours a throttle at (older
# versions predate KIP-219: a broker of their time delayed the response itself). Keys absent here are never
# throttled by the client (AbstractResponse's default), even when their responses carry a throttle time:
# DescribeClientQuotas, AlterClientQuotas, DescribeCluster, OffsetForLeaderEpoch, SASL, cluster actions.
_THROTTLES_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 6, ApiKey.FETCH: 8, ApiKey.LIST_OFFSETS: 3, ApiKey.METADATA: 6, ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4, ApiKey.FIND_COORDINATOR: 2, ApiKey.JOIN_GROUP: 3, ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2, ApiKey.SYNC_GROUP: 2, ApiKey.DESCRIBE_GROUPS: 2, ApiKey.LIST_GROUPS: 2,
    ApiKey.API_VERSIONS: 2, ApiKey.CREATE_TOPICS: 3, ApiKey.DELETE_TOPICS: 2, ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1, ApiKey.ADD_PARTITIONS_TO_TXN: 1, ApiKey.ADD_OFFSETS_TO_TXN: 1, ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1, ApiKey.DESCRIBE_ACLS: 1, ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1,
    ApiKey.DESCRIBE_CONFIGS: 2, ApiKey.ALTER_CONFIGS: 1, ApiKey.DESCRIBE_LOG_DIRS: 1, ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.DELETE_GROUPS: 1, ApiKey.ELECT_LEADERS: 0, ApiKey.INCREMENTAL_ALTER_CONFIGS: 0,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0, ApiKey.LIST_PARTITION_REASSIGNMENTS: 0, ApiKey.OFFSET_DELETE: 0,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
}
THROTTLES_FROM: dict[int, int] = {int(key): version for key, version in _THROTTLES_FROM.items()}

# Java's client metrics defaults: metrics.num.samples=2, metrics.sample.window.ms=30000.
_SAMPLES, _WINDOW_MS = 2, 30_000


def client_throttles(api_key: int, version: int) -> bool:
    """Whether Kafka 2.8's client waits out a throttle time in this response (shouldClientThrottle)."""
    return version >= THROTTLES_FROM.get(api_key, _NEVER)


class ThrottleState:
    """Until when (event-loop time, seconds) nothing may be sent to one broker."""

    __slots__ = ("until",)

    def __init__(self) -> None:
        self.until = -math.inf

    def throttle(self, until: float) -> None:
        if until > self.until:  # the deadline never regresses (ClusterConnectionStates.throttle)
            self.until = until

    def delay(self, now: float) -> float:
        """Seconds left (0 when not throttled)."""
        return self.until - now if self.until > now else 0.0


class ThrottleTimeSensor:
    """Throttle times (ms) of every response a client received: Avg and Max over the last minute or so.
    Used from the client's event loop only. One ring of samples serves both stats (it is on every response's
    path): each sample is [start ms, total, count, max]."""

    __slots__ = ("_samples", "_current", "_clock")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._samples = [[-math.inf, 0.0, 0, 0.0] for _ in range(_SAMPLES)]
        self._current = 0
        self._clock = clock  # seconds

    def record(self, throttle_ms: int) -> None:
        now_ms = self._clock() * 1000
        sample = self._samples[self._current]
        if now_ms - sample[0] >= _WINDOW_MS:
            self._current = (self._current + 1) % _SAMPLES
            sample = self._samples[self._current]
            sample[:] = (now_ms, 0.0, 0, 0.0)
        sample[1] += throttle_ms
        sample[2] += 1
        if throttle_ms > sample[3]:
            sample[3] = throttle_ms

    def metrics(self, name: str) -> dict[str, Any]:
        """``{"<name>-avg": ms, "<name>-max": ms}`` (NaN when no response came in the last minute, as Java)."""
        oldest = self._clock() * 1000 - _SAMPLES * _WINDOW_MS
        live = [sample for sample in self._samples if sample[0] > oldest and sample[2]]
        if not live:
            return {f"{name}-avg": math.nan, f"{name}-max": math.nan}
        return {f"{name}-avg": sum(s[1] for s in live) / sum(s[2] for s in live),
                f"{name}-max": float(max(s[3] for s in live))}

"""Replication throttling: Kafka 2.8's ReplicationQuotaManager, leader and follower side.

A reassignment run with ``--throttle`` sets two kinds of config (Kafka's KIP-73):

- dynamic broker configs ``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``
  (bytes/s, default Long.MAX_VALUE = unthrottled): the rate one broker may send as leader, or fetch as
  follower, for the throttled replicas;
- topic configs ``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``:
  ``"partition:broker,..."`` or ``"*"``; a broker throttles the partitions listed with its own id.

Throttled bytes are recorded into a rate measured as Kafka's SimpleRate over
``replication.quota.window.num`` samples of ``replication.quota.window.size.seconds``; the quota is
exceeded while that rate is above the configured bound. The replica manager (leader side) and the
replica fetcher (follower side) ask ``is_throttled`` / ``is_quota_exceeded`` and ``record`` what they
move; replicas in the ISR are never throttled (Kafka's shouldLeaderThrottle / shouldFollowerThrottle).
A third quota, Kafka's QuotaType.AlterLogDirs, bounds the copy of replicas moved between this broker's log
dirs (``replica.alter.log.dirs.io.max.bytes.per.second``, dynamic, set by kafka-reassign-partitions'
``--replica-alter-log-dirs-throttle``): every byte copied is recorded, and no copy step runs while the rate is
above the bound (Kafka's ReplicaAlterLogDirsThread.buildFetch / processPartitionData).
Everything runs on the broker's event loop: no locks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .quota.manager import throttle_time_ms
from .quota.stats import SimpleRate, monotonic_ms

if TYPE_CHECKING:
    from .config import KafkaConfig

log = logging.getLogger(__name__)

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
# The three rates: dynamic broker configs only in Kafka 2.8 (DynamicConfig.Broker, not KafkaConfig)
RATES = (LEADER_RATE, FOLLOWER_RATE, ALTER_LOG_DIRS_RATE)
UNTHROTTLED = 2**63 - 1  # Kafka's QuotaBytesPerSecondDefault (Long.MAX_VALUE)
ALL_REPLICAS = "*"       # Kafka's AllReplicas wildcard: every partition of the topic


class ReplicationQuotaManager:
    """One direction's quota (leader or follower) of one broker: the bound, the throttled partitions
    per topic, and the rate of throttled bytes moved."""

    def __init__(self, kind: str, num_samples: int = 11, window_seconds: float = 1,
                 clock: Callable[[], float] = monotonic_ms) -> None:
        self.kind = kind
        self.clock = clock
        self.bound = UNTHROTTLED
        self.rate = SimpleRate(num_samples, window_seconds * 1000)
        self._throttled: dict[str, frozenset[int] | str] = {}
        self.throttled_bytes = 0  # total bytes recorded (for metrics and tests)
        self.throttle_events = 0  # times a throttled partition was held back

    def update_quota(self, bytes_per_second: int) -> None:
        if bytes_per_second != self.bound:
            log.info("%s replication throttle: %s", self.kind,
                     "none" if bytes_per_second >= UNTHROTTLED else f"{bytes_per_second} B/s")
        self.bound = bytes_per_second

    def mark_throttled(self, topic: str, partitions: frozenset[int] | str) -> None:
        self._throttled[topic] = partitions

    def remove_throttle(self, topic: str) -> None:
        self._throttled.pop(topic, None)

    @property
    def has_throttled_partitions(self) -> bool:
        return bool(self._throttled)

    def is_throttled(self, key: tuple[str, int]) -> bool:
        partitions = self._throttled.get(key[0])
        return partitions is not None and (partitions == ALL_REPLICAS or key[1] in partitions)

    def is_quota_exceeded(self) -> bool:
        """Kafka's Sensor.checkQuotas: the measured rate is above the bound."""
        if self.bound >= UNTHROTTLED:
            return False
        return self.rate.measure(self.clock()) > self.bound

    def wait_ms(self, longest_ms: int) -> int:
        """0 while the quota is not exceeded; else how long until the measured rate is back at the bound
        (Kafka's QuotaUtils.throttleTime), at least 1 ms and at most ``longest_ms``."""
        if self.bound >= UNTHROTTLED:
            return 0
        now = self.clock()
        observed, window_ms = self.rate.measure_with_window(now)
        if observed <= self.bound:
            return 0
        return max(1, min(longest_ms, throttle_time_ms(observed, self.bound, window_ms)))

    def record(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        self.rate.record(nbytes, self.clock())
        self.throttled_bytes += nbytes

    def throttled_topics(self) -> dict[str, frozenset[int] | str]:
        return dict(self._throttled)


def parse_throttled_partitions(value: str | None, broker_id: int) -> frozenset[int] | str:
    """Kafka's TopicConfigHandler.parseThrottledPartitions: the partitions listed for ``broker_id``
    ("partition:broker" entries), or ALL_REPLICAS for "*"."""
    value = (value or "").strip()
    if value == ALL_REPLICAS:
        return ALL_REPLICAS
    partitions = set()
    for item in value.split(","):
        partition, _, broker = item.strip().partition(":")
        if partition.strip().isdigit() and broker.strip().isdigit() and int(broker) == broker_id:
            partitions.add(int(partition))
    return frozenset(partitions)


class ReplicationQuotas:
    """The leader, follower and log dir move quota managers of one broker (Kafka's QuotaManagers.leader,
    .follower and .alterLogDirs)."""

    def __init__(self, broker_id: int, num_samples: int = 11, window_seconds: float = 1,
                 clock: Callable[[], float] = monotonic_ms, alter_log_dirs_samples: int = 11,
                 alter_log_dirs_window_seconds: float = 1) -> None:
        self.broker_id = broker_id
        self.leader = ReplicationQuotaManager("Leader", num_samples, window_seconds, clock)
        self.follower = ReplicationQuotaManager("Follower", num_samples, window_seconds, clock)
        self.alter_log_dirs = ReplicationQuotaManager("AlterLogDirs", alter_log_dirs_samples,
                                                      alter_log_dirs_window_seconds, clock)

    @classmethod
    def from_config(cls, config: KafkaConfig, broker_id: int) -> "ReplicationQuotas":
        return cls(broker_id, config.get("replication.quota.window.num"),
                   config.get("replication.quota.window.size.seconds"),
                   alter_log_dirs_samples=config.get("alter.log.dirs.replication.quota.window.num"),
                   alter_log_dirs_window_seconds=config.get("alter.log.dirs.replication.quota.window.size.seconds"))

    def apply_broker_config(self, config: KafkaConfig) -> None:
        """The rates in force (``config.get``); absent = unthrottled."""
        self.leader.update_quota(_rate(config, LEADER_RATE))
        self.follower.update_quota(_rate(config, FOLLOWER_RATE))
        self.alter_log_dirs.update_quota(_rate(config, ALTER_LOG_DIRS_RATE))

    def apply_topic_config(self, topic: str, overrides: Mapping[str, Any]) -> None:
        """Kafka's TopicConfigHandler.updateThrottledList for both directions; an absent or empty list
        removes the topic's throttle."""
        for key, quota in ((LEADER_REPLICAS, self.leader), (FOLLOWER_REPLICAS, self.follower)):
            value = overrides.get(key)
            if isinstance(value, (list, tuple)):
                value = ",".join(value)
            if value is not None and str(value).strip():
                quota.mark_throttled(topic, parse_throttled_partitions(str(value), self.broker_id))
            else:
                quota.remove_throttle(topic)

    def should_leader_throttle(self, key: tuple[str, int], isr: Any, replica_id: int) -> bool:
        """Kafka's ReplicaManager.shouldLeaderThrottle: only a replica outside the ISR is held back."""
        return replica_id not in isr and self.leader.is_throttled(key) and self.leader.is_quota_exceeded()

    def should_follower_throttle(self, key: tuple[str, int], in_sync: bool) -> bool:
        """Kafka's ReplicaFetcherThread.shouldFollowerThrottle: a caught-up follower is never held back."""
        return not in_sync and self.follower.is_throttled(key) and self.follower.is_quota_exceeded()


def _rate(config: KafkaConfig, key: str) -> int:
    try:
        value = config.get(key)
    except KeyError:
        return UNTHROTTLED
    return UNTHROTTLED if value is None else int(value)

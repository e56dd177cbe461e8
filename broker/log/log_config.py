"""Per-log settings under Kafka's topic-level names, built from broker defaults plus topic overrides.

The broker's defaults arrive already translated to topic keys by ``KafkaConfig.topic_defaults()``
(``log.segment.bytes`` -> ``segment.bytes``, ...); a topic's overrides use the same keys. Values may
be strings (properties).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Any, Mapping

log = logging.getLogger(__name__)

_HOUR_MS = 3_600_000
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * _HOUR_MS
    segment_jitter_ms: int = 0
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * _HOUR_MS
    index_interval_bytes: int = 4096
    max_index_size: int = 10 * 1024 * 1024
    flush_interval_messages: int = LONG_MAX
    flush_interval_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    compression_type: str = "producer"
    max_message_bytes: int = 1024 * 1024 + 12
    cleanup_policy: str = "delete"
    min_insync_replicas: int = 1
    # Compaction (the log cleaner, broker/log/cleaner/)
    delete_retention_ms: int = 24 * _HOUR_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_ratio: float = 0.5

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @classmethod
    def from_props(cls, topic_defaults: Mapping[str, Any] | None = None,
                   topic_overrides: Mapping[str, Any] | None = None) -> "LogConfig":
        """From topic-level keys: the broker's effective defaults (``KafkaConfig.topic_defaults()``,
        which already applied log.roll.hours/log.retention.minutes precedence) and a topic's overrides."""
        values: dict[str, Any] = {}
        for source in (topic_defaults or {}, topic_overrides or {}):
            for key, value in source.items():
                if value is None or value == "":
                    continue
                if key in _TOPIC_KEYS:
                    values[_TOPIC_KEYS[key]] = value
                elif key in _FIELD_NAMES:
                    values[key] = value
        types = {f.name: f.type for f in fields(cls)}
        return cls(**{k: _convert(types[k], v) for k, v in values.items()})


def _convert(kind: Any, value: Any) -> Any:
    if kind in ("str", str):
        return str(value)
    if kind in ("float", float):
        return float(value)
    return int(value)


_TOPIC_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "max_index_size",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "message.timestamp.type": "message_timestamp_type",
    "message.timestamp.difference.max.ms": "message_timestamp_difference_max_ms",
    "compression.type": "compression_type",
    "max.message.bytes": "max_message_bytes",
    "cleanup.policy": "cleanup_policy",
    "min.insync.replicas": "min_insync_replicas",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_ratio",
}
_FIELD_NAMES = {f.name for f in fields(LogConfig)}


# Topic keys that are accepted but have no effect here: the first topic that sets one gets a warning (once
# per key and process). key -> (does this value ask for something we do not do?, what we do instead)
_NOT_IMPLEMENTED = {
    "preallocate": (lambda v: str(v).lower() == "true", "segment files are never preallocated"),
}
_warned: set[str] = set()


def warn_not_implemented(topic: str, overrides: Mapping[str, Any]) -> None:
    for key, value in overrides.items():
        check = _NOT_IMPLEMENTED.get(key)
        if check is not None and key not in _warned and value is not None and check[0](value):
            _warned.add(key)
            log.warning("Topic configuration '%s' (set on %s) is accepted but not implemented: %s", key, topic, check[1])

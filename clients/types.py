"""Value types shared by our clients, shaped as kafka-python's ``kafka.structs`` and aiokafka's.

``TopicPartition``, ``OffsetAndMetadata`` and ``OffsetAndTimestamp`` are NamedTuples as in both
libraries; ``ConsumerRecord`` is a NamedTuple too (cheap to build per record) with aiokafka's and
kafka-python's field names.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class KafkaConfigurationError(ValueError):
    """A client was given an unknown or invalid setting (kafka-python's name for it)."""


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]
    serialized_key_size: int  # -1 for a null key, as Kafka's clients report it
    serialized_value_size: int
    checksum: None = None  # v2 batches carry one CRC per batch, not per record


def check_configs(given: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """``known`` (the defaults) updated with ``given``; unknown names raise as kafka-python does."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise KafkaConfigurationError(f"Unrecognized configs: {unknown}")
    return {**known, **given}

"""The record formats of ``__transaction_state`` (Kafka 2.8's TransactionLog schemas), with ``construct``.

Key: int16 version 0, then the transactional id (int16-length string). Value: int16 version 0, then
producer id, producer epoch, transaction timeout, the state byte, the partitions of the transaction
(a nullable array of topic + partition ids; Kafka writes null for Empty), the last update and the
start timestamps. A null value is a tombstone: the transactional id expired. Kafka 2.8 writes no
previous producer id or epoch (later releases added them in value version 1), so a retried
InitProducerId that spans a coordinator change may be fenced, as in Kafka 2.8.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from construct import (Bytes, Construct, ConstructError, Int8sb, Int16sb, Int32sb, Int64sb, PrefixedArray,
                       Struct, Switch, this)

KEY_VERSION = 0
VALUE_VERSION = 0


class _String(Construct):
    """Kafka's int16-length UTF-8 string (never null in these schemas)."""

    def _parse(self, stream: Any, context: Any, path: str) -> str:
        length = Int16sb._parsereport(stream, context, path)
        return "" if length < 0 else Bytes(length)._parsereport(stream, context, path).decode("utf-8")

    def _build(self, obj: str, stream: Any, context: Any, path: str) -> str:
        data = obj.encode("utf-8")
        Int16sb._build(len(data), stream, context, path)
        Bytes(len(data))._build(data, stream, context, path)
        return obj


class _NullableArray(Construct):
    """Kafka's int32-count array; count -1 is null (None)."""

    def __init__(self, element: Construct) -> None:
        super().__init__()
        self.element = element
        self._array = PrefixedArray(Int32sb, element)

    def _parse(self, stream: Any, context: Any, path: str) -> list | None:
        count = Int32sb._parsereport(stream, context, path)
        if count < 0:
            return None
        return [self.element._parsereport(stream, context, path) for _ in range(count)]

    def _build(self, obj: list | None, stream: Any, context: Any, path: str) -> list | None:
        if obj is None:
            Int32sb._build(-1, stream, context, path)
            return obj
        self._array._build(obj, stream, context, path)
        return obj


String = _String()

TXN_KEY = Struct("version" / Int16sb, "key" / Switch(this.version, {0: Struct("transactional_id" / String)}))

PARTITIONS = Struct("topic" / String, "partition_ids" / PrefixedArray(Int32sb, Int32sb))

TXN_VALUE = Struct("version" / Int16sb, "value" / Switch(this.version, {0: Struct(
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "transaction_timeout_ms" / Int32sb,
    "transaction_status" / Int8sb,
    "transaction_partitions" / _NullableArray(PARTITIONS),
    "transaction_last_update_timestamp_ms" / Int64sb,
    "transaction_start_timestamp_ms" / Int64sb,
)}))


@dataclass
class TxnRecord:
    """One value of __transaction_state, as written."""
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int                                   # transaction_metadata's state byte
    partitions: set[tuple[str, int]] = field(default_factory=set)
    last_update_timestamp: int = -1
    start_timestamp: int = -1


class BadRecord(ValueError):
    pass


def txn_key(transactional_id: str) -> bytes:
    return TXN_KEY.build({"version": KEY_VERSION, "key": {"transactional_id": transactional_id}})


def txn_value(record: TxnRecord, *, empty_state: int = 0) -> bytes:
    """Kafka writes the partitions as null for an Empty transaction, grouped by topic otherwise."""
    if record.state == empty_state:
        if record.partitions:
            raise ValueError("an Empty transaction carries no partitions")
        partitions = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(record.partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()]
    value = {"producer_id": record.producer_id, "producer_epoch": record.producer_epoch,
             "transaction_timeout_ms": record.timeout_ms, "transaction_status": record.state,
             "transaction_partitions": partitions,
             "transaction_last_update_timestamp_ms": record.last_update_timestamp,
             "transaction_start_timestamp_ms": record.start_timestamp}
    return TXN_VALUE.build({"version": VALUE_VERSION, "value": value})


def parse_key(data: bytes) -> str:
    try:
        parsed = TXN_KEY.parse(data)
    except ConstructError as exc:
        raise BadRecord(f"bad __transaction_state key: {exc}") from None
    if parsed.key is None:
        raise BadRecord(f"unknown __transaction_state key version {parsed.version}")
    return parsed.key.transactional_id


def parse_value(data: bytes) -> TxnRecord:
    try:
        parsed = TXN_VALUE.parse(data)
    except ConstructError as exc:
        raise BadRecord(f"bad __transaction_state value: {exc}") from None
    v = parsed.value
    if v is None:
        raise BadRecord(f"unknown __transaction_state value version {parsed.version}")
    partitions = {(p.topic, i) for p in v.transaction_partitions or [] for i in p.partition_ids}
    return TxnRecord(v.producer_id, v.producer_epoch, v.transaction_timeout_ms, v.transaction_status, partitions,
                     v.transaction_last_update_timestamp_ms, v.transaction_start_timestamp_ms)

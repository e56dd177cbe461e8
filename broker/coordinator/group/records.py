"""The record formats of ``__consumer_offsets`` (Kafka 2.8's GroupMetadataManager schemas), with ``construct``.

Keys start with an int16 version: 0 and 1 are an offset commit key (group, topic, partition), 2 a
group metadata key (group). Values carry their own int16 version. A null value is a tombstone
(offsets deleted, group removed). We write what Kafka 2.8 writes at IBP 2.8: OffsetCommitValue v3
and GroupMetadataValue v3; we read every version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from construct import (Bytes, Construct, ConstructError, Int16sb, Int32sb, Int64sb, PrefixedArray,
                       Struct, Switch, this)


class _NullableString(Construct):
    """Kafka's int16-length string; length -1 is null (None)."""

    def _parse(self, stream: Any, context: Any, path: str) -> str | None:
        length = Int16sb._parsereport(stream, context, path)
        if length < 0:
            return None
        return Bytes(length)._parsereport(stream, context, path).decode("utf-8")

    def _build(self, obj: str | None, stream: Any, context: Any, path: str) -> str | None:
        if obj is None:
            Int16sb._build(-1, stream, context, path)
            return obj
        data = obj.encode("utf-8")
        Int16sb._build(len(data), stream, context, path)
        Bytes(len(data))._build(data, stream, context, path)
        return obj


class _Blob(Construct):
    """Kafka's int32-length bytes (never null in these schemas; -1 is read as empty)."""

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        length = Int32sb._parsereport(stream, context, path)
        return b"" if length < 0 else Bytes(length)._parsereport(stream, context, path)

    def _build(self, obj: bytes, stream: Any, context: Any, path: str) -> bytes:
        Int32sb._build(len(obj), stream, context, path)
        Bytes(len(obj))._build(bytes(obj), stream, context, path)
        return obj


String = _NullableString()
Blob = _Blob()

OFFSET_COMMIT_KEY = Struct("group" / String, "topic" / String, "partition" / Int32sb)
GROUP_METADATA_KEY = Struct("group" / String)
KEY = Struct("version" / Int16sb, "key" / Switch(this.version, {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY,
                                                                 2: GROUP_METADATA_KEY}))

OFFSET_COMMIT_VALUE = Struct(
    "version" / Int16sb,
    "value" / Switch(this.version, {
        0: Struct("offset" / Int64sb, "metadata" / String, "commit_timestamp" / Int64sb),
        1: Struct("offset" / Int64sb, "metadata" / String, "commit_timestamp" / Int64sb,
                  "expire_timestamp" / Int64sb),
        2: Struct("offset" / Int64sb, "metadata" / String, "commit_timestamp" / Int64sb),
        3: Struct("offset" / Int64sb, "leader_epoch" / Int32sb, "metadata" / String, "commit_timestamp" / Int64sb),
    }))

_MEMBER_FIELDS = {
    0: ("member_id", "client_id", "client_host", "session_timeout", "subscription", "assignment"),
    1: ("member_id", "client_id", "client_host", "rebalance_timeout", "session_timeout", "subscription",
        "assignment"),
    3: ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout", "session_timeout",
        "subscription", "assignment"),
}
_FIELD_TYPES = {"member_id": String, "group_instance_id": String, "client_id": String, "client_host": String,
                "rebalance_timeout": Int32sb, "session_timeout": Int32sb, "subscription": Blob, "assignment": Blob}


def _member(version: int) -> Struct:
    names = _MEMBER_FIELDS[3 if version >= 3 else 1 if version >= 1 else 0]
    return Struct(*[name / _FIELD_TYPES[name] for name in names])


def _group_value(version: int) -> Struct:
    head = ["protocol_type" / String, "generation" / Int32sb, "protocol" / String, "leader" / String]
    if version >= 2:
        head.append("current_state_timestamp" / Int64sb)
    return Struct(*head, "members" / PrefixedArray(Int32sb, _member(version)))


GROUP_METADATA_VALUE = Struct("version" / Int16sb,
                              "value" / Switch(this.version, {v: _group_value(v) for v in range(4)}))

OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


@dataclass
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1     # -1: unknown (Kafka's Optional.empty)
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupRecord:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


# -- encoding -------------------------------------------------------------------------------------

def offset_key(group: str, topic: str, partition: int) -> bytes:
    return KEY.build({"version": 1, "key": {"group": group, "topic": topic, "partition": partition}})


def group_key(group: str) -> bytes:
    return KEY.build({"version": 2, "key": {"group": group}})


def offset_value(o: OffsetAndMetadata) -> bytes:
    if o.expire_timestamp is not None:  # Kafka keeps v1 for a commit with an explicit retention
        value = {"offset": o.offset, "metadata": o.metadata, "commit_timestamp": o.commit_timestamp,
                 "expire_timestamp": o.expire_timestamp}
        return OFFSET_COMMIT_VALUE.build({"version": 1, "value": value})
    value = {"offset": o.offset, "leader_epoch": o.leader_epoch, "metadata": o.metadata,
             "commit_timestamp": o.commit_timestamp}
    return OFFSET_COMMIT_VALUE.build({"version": OFFSET_VALUE_VERSION, "value": value})


def group_value(g: GroupRecord) -> bytes:
    members = [{k: getattr(m, k) for k in _MEMBER_FIELDS[3]} for m in g.members]
    value = {"protocol_type": g.protocol_type, "generation": g.generation, "protocol": g.protocol,
             "leader": g.leader, "current_state_timestamp": g.current_state_timestamp, "members": members}
    return GROUP_METADATA_VALUE.build({"version": GROUP_VALUE_VERSION, "value": value})


# -- decoding -------------------------------------------------------------------------------------

class BadRecord(ValueError):
    pass


def parse_key(data: bytes) -> tuple[str, str, Any]:
    """('offset', group, (topic, partition)) or ('group', group, None)."""
    try:
        parsed = KEY.parse(data)
    except ConstructError as exc:
        raise BadRecord(f"unknown __consumer_offsets key: {exc}") from None
    if parsed.key is None:
        raise BadRecord(f"unknown __consumer_offsets key version {parsed.version}")
    if parsed.version == 2:
        return "group", parsed.key.group, None
    return "offset", parsed.key.group, (parsed.key.topic, parsed.key.partition)


def _parse_versioned(schema: Struct, data: bytes, what: str) -> Any:
    try:
        parsed = schema.parse(data)
    except ConstructError as exc:
        raise BadRecord(f"bad {what}: {exc}") from None
    if parsed.value is None:
        raise BadRecord(f"unknown {what} version {parsed.version}")
    return parsed.value


def parse_offset_value(data: bytes) -> OffsetAndMetadata:
    v = _parse_versioned(OFFSET_COMMIT_VALUE, data, "offset commit value")
    return OffsetAndMetadata(v.offset, v.get("leader_epoch", -1), v.metadata or "", v.commit_timestamp,
                             v.get("expire_timestamp"))


def parse_group_value(data: bytes) -> GroupRecord:
    v = _parse_versioned(GROUP_METADATA_VALUE, data, "group metadata value")
    members = [MemberRecord(m.member_id, m.get("group_instance_id"), m.client_id, m.client_host,
                            m.get("rebalance_timeout", m.session_timeout), m.session_timeout,
                            m.subscription, m.assignment) for m in v.members]
    return GroupRecord(v.protocol_type or "", v.generation, v.protocol, v.leader,
                       v.get("current_state_timestamp", -1), members)

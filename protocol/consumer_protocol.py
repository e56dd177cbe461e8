"""The "consumer" embedded protocol: what members put in JoinGroup metadata and SyncGroup assignments.

Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment (non-flexible, classic int16
strings, int32 arrays and nullable bytes), sans-IO:

- Subscription v0: int16 version, topics [string], user_data nullable bytes;
  v1 adds owned_partitions [topic string, partitions [int32]] (cooperative/sticky assignors).
- Assignment v0/v1 (same layout): int16 version, assigned_partitions [topic, partitions [int32]],
  user_data nullable bytes.

Decoders are as tolerant as Kafka 2.8's ConsumerProtocol: a newer version is read as the highest
version known here and its extra trailing fields are ignored; fields missing at the very end of an
old writer's buffer get their defaults; an empty assignment buffer is an empty assignment (a member
the leader gave nothing). A negative version or a field cut in the middle raises ``ProtocolError``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .errors import ProtocolError

SUBSCRIPTION_HIGHEST_VERSION = 1
ASSIGNMENT_HIGHEST_VERSION = 1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass
class Subscription:
    version: int
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Assignment:
    version: int
    partitions: dict[str, list[int]]
    user_data: bytes | None = None


# --- encoding ---------------------------------------------------------------------------------

def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _INT16.pack(len(raw)) + raw


def _nullable_bytes(value: bytes | None) -> bytes:
    if value is None:
        return _INT32.pack(-1)
    return _INT32.pack(len(value)) + bytes(value)


def _topic_partitions(partitions: dict[str, list[int]]) -> bytes:
    out = [_INT32.pack(len(partitions))]
    for topic in sorted(partitions):
        ids = partitions[topic]
        out.append(_string(topic))
        out.append(_INT32.pack(len(ids)))
        out.extend(_INT32.pack(p) for p in ids)
    return b"".join(out)


def _check_version(version: int, highest: int, what: str) -> None:
    if not 0 <= version <= highest:
        raise ValueError(f"{what} version must be 0..{highest}, got {version}")


def encode_subscription(topics, user_data: bytes | None = None,
                        owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    """JoinGroup metadata of a consumer; topics are written sorted, as Kafka's clients do."""
    _check_version(version, SUBSCRIPTION_HIGHEST_VERSION, "subscription")
    names = sorted(set(topics))
    out = [_INT16.pack(version), _INT32.pack(len(names))]
    out.extend(_string(t) for t in names)
    out.append(_nullable_bytes(user_data))
    if version >= 1:
        out.append(_topic_partitions(owned or {}))
    return b"".join(out)


def encode_assignment(assignment: dict[str, list[int]], user_data: bytes | None = None,
                      version: int = 1) -> bytes:
    """One member's SyncGroup assignment as the leader sends it."""
    _check_version(version, ASSIGNMENT_HIGHEST_VERSION, "assignment")
    return _INT16.pack(version) + _topic_partitions(assignment) + _nullable_bytes(user_data)


# --- decoding ---------------------------------------------------------------------------------

class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data) -> None:
        self.data = memoryview(bytes(data))
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def _take(self, size: int):
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ProtocolError("consumer protocol field runs past the end of the buffer")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def int16(self) -> int:
        return _INT16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise ProtocolError("null topic name in consumer protocol")
        try:
            return bytes(self._take(length)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"topic name is not UTF-8: {exc}") from None

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else bytes(self._take(length))

    def count(self) -> int:
        n = self.int32()
        if n > len(self.data):  # each element is at least one byte: a corrupt count, not an allocation
            raise ProtocolError(f"array count {n} exceeds the buffer")
        return max(n, 0)

    def topic_partitions(self) -> dict[str, list[int]]:
        result: dict[str, list[int]] = {}
        for _ in range(self.count()):
            topic = self.string()
            partitions = [self.int32() for _ in range(self.count())]
            result.setdefault(topic, []).extend(partitions)
        return result


def _read_version(reader: _Reader, highest: int) -> tuple[int, int]:
    """(version as written, version to read as): Kafka reads newer versions as its highest."""
    version = reader.int16()
    if version < 0:
        raise ProtocolError(f"unsupported consumer protocol version {version}")
    return version, min(version, highest)


def decode_subscription(data) -> Subscription:
    reader = _Reader(data)
    version, read_as = _read_version(reader, SUBSCRIPTION_HIGHEST_VERSION)
    topics = [reader.string() for _ in range(reader.count())]
    user_data = None if reader.at_end() else reader.nullable_bytes()
    owned: dict[str, list[int]] = {}
    if read_as >= 1 and not reader.at_end():
        owned = reader.topic_partitions()
    return Subscription(version, topics, user_data, owned)


def decode_assignment(data) -> Assignment:
    if not data:
        return Assignment(0, {}, None)
    reader = _Reader(data)
    version, _read_as = _read_version(reader, ASSIGNMENT_HIGHEST_VERSION)
    partitions = reader.topic_partitions()
    user_data = None if reader.at_end() else reader.nullable_bytes()
    return Assignment(version, partitions, user_data)

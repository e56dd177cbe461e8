"""Producer-state snapshot files: Kafka's ``<20-digit offset>.snapshot`` in the partition directory.

The offset in the name is the one the snapshot was taken at (exclusive: it holds the state of every
batch below it). Layout (big-endian), version 1 as Kafka 2.8 writes it::

    int16 version (1) | uint32 CRC-32C of everything after this field | int32 entry count
    entries: int64 producer id | int16 epoch | int32 last sequence | int64 last offset
             int32 offset delta (last - first offset of the last batch) | int64 timestamp
             int32 coordinator epoch | int64 current transaction first offset (-1: none)

Read on start and written on roll and close, never per append, so the format is declared with
``construct`` (compiled once) rather than hand-written struct code.
"""

from __future__ import annotations

import os
from typing import Iterable, NamedTuple

from construct import ConstructError, Int16sb, Int32sb, Int32ub, Int64sb, PrefixedArray, Struct, Terminated
from crc32c import crc32c

from .checkpoints import write_atomically
from .segment import filename_prefix

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_CRC_OFFSET = 2  # after the version
_ENTRIES_OFFSET = _CRC_OFFSET + 4  # what the CRC covers starts here

_ENTRY = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)
_FILE = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "entries" / PrefixedArray(Int32sb, _ENTRY),
    Terminated,
).compile()
_BODY = PrefixedArray(Int32sb, _ENTRY).compile()


class CorruptSnapshotError(Exception):
    """A snapshot file that cannot be trusted (bad version, CRC or structure)."""


class SnapshotEntry(NamedTuple):
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, filename_prefix(offset) + SNAPSHOT_SUFFIX)


def list_snapshot_offsets(directory: str) -> list[int]:
    """Offsets of the ``<offset>.snapshot`` files in ``directory``, ascending."""
    offsets = []
    for name in os.listdir(directory):
        if name.endswith(SNAPSHOT_SUFFIX):
            prefix = name[: -len(SNAPSHOT_SUFFIX)]
            if prefix.isdigit():
                offsets.append(int(prefix))
    return sorted(offsets)


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    body = _BODY.build([e._asdict() for e in entries])
    return SNAPSHOT_VERSION.to_bytes(2, "big") + crc32c(body).to_bytes(4, "big") + body


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _ENTRIES_OFFSET:
        raise CorruptSnapshotError(f"{len(data)} bytes are too few for a snapshot header")
    version = int.from_bytes(data[:_CRC_OFFSET], "big", signed=True)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unknown snapshot version {version}")
    stored = int.from_bytes(data[_CRC_OFFSET:_ENTRIES_OFFSET], "big")
    computed = crc32c(data[_ENTRIES_OFFSET:])
    if stored != computed:
        raise CorruptSnapshotError(f"CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")
    try:
        parsed = _FILE.parse(data)
    except (ConstructError, ValueError) as exc:  # a negative count or a short body
        raise CorruptSnapshotError(f"malformed snapshot: {exc}") from None
    return [SnapshotEntry(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                          e.coordinator_epoch, e.current_txn_first_offset) for e in parsed.entries]


def write_snapshot(path: str, entries: Iterable[SnapshotEntry], sync: bool = True) -> None:
    """Write atomically (temporary file, fsync, rename): a crash leaves the old file or the new one.
    ``sync=False``: the caller fsyncs later (a snapshot lost to a power cut is skipped on load)."""
    write_atomically(path, encode_snapshot(entries), sync)


def read_snapshot(path: str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        return decode_snapshot(f.read())

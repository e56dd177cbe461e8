"""Batch builders shared by the log tests."""

from __future__ import annotations

from odradek.protocol.records import RecordBatchBuilder


def make_batch(count: int = 1, timestamp: int = 1_000, value_size: int = 10, *, base_offset: int = 0,
               epoch: int = -1, tag: bytes = b"") -> bytearray:
    builder = RecordBatchBuilder(base_offset=base_offset, partition_leader_epoch=epoch)
    for i in range(count):
        value = (tag + b"x" * value_size)[:max(value_size, len(tag))]
        builder.append(timestamp + i, None, value)
    return bytearray(builder.build())

"""Building RecordBatch v2 bytes: records are encoded as they are appended, the header at build().

The first record's timestamp becomes baseTimestamp (as the Java producer does), records carry
deltas against it and their offset delta, and build() fills lastOffsetDelta, maxTimestamp, the
attributes and the CRC-32C. Records are encoded by the codec (``codec.encode_records``), one at a time
(``append``) or a run of columns in one call (``append_many``).
"""

from __future__ import annotations

import struct
import time
from typing import Iterable

from crc32c import crc32c

from . import codec
from .batch import (
    CONTROL_MASK, CREATE_TIME, HEADER_SIZE, LOG_OVERHEAD, MAGIC, NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, TRANSACTIONAL_MASK,
)
from .compression import Compression, check_codec, compress

Bytes = bytes | bytearray | memoryview
HeaderList = Iterable[tuple[str | bytes, Bytes | None]]
Column = list | tuple | None  # see append_many
Timestamps = int | list | tuple | None

# The header in two parts: what precedes the CRC (not covered by it), and attributes..recordCount.
_PREFIX = struct.Struct(">qiibI")
_COVERED = struct.Struct(">hiqqqhii")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NO_LIMIT = 1 << 62


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class RecordBatchBuilder:
    """Accumulates records for one batch; ``build()`` returns the batch's bytes.

    ``base_offset`` is usually 0 (the broker assigns offsets); ``base_sequence`` is the producer's
    sequence for the first record when idempotence is on.
    """

    __slots__ = (
        "compression", "compression_level", "producer_id", "producer_epoch", "base_sequence",
        "is_transactional", "is_control", "base_offset", "partition_leader_epoch", "timestamp_type",
        "_records", "_count", "_base_timestamp", "_max_timestamp",
    )

    def __init__(self, compression: int = Compression.NONE, *, producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                 is_transactional: bool = False, is_control: bool = False, base_offset: int = 0,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 timestamp_type: int = CREATE_TIME, compression_level: int | None = None) -> None:
        self.compression = compression if type(compression) is Compression else check_codec(compression)
        self.compression_level = compression_level
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.timestamp_type = timestamp_type
        self._records = bytearray()
        self._count = 0
        self._base_timestamp = 0
        self._max_timestamp = -1

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def size_in_bytes(self) -> int:
        """Size of the batch if built uncompressed (an upper-bound estimate when compressing)."""
        return HEADER_SIZE + len(self._records)

    def append(self, timestamp: int | None, key: Bytes | None, value: Bytes | None,
               headers: HeaderList = ()) -> int:
        """Add a record; ``timestamp`` in ms (None = now). Returns its offset delta."""
        if timestamp is None:
            timestamp = _now_ms()
        elif not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise ValueError(f"timestamp {timestamp} is not an int64")
        offset_delta = self._count
        _, self._base_timestamp, self._max_timestamp = codec.encode_records(
            self._records, self._base_timestamp, offset_delta, self._max_timestamp, timestamp, timestamp,
            [key], [value], [headers] if headers else None, 0, 1, _NO_LIMIT, None)
        self._count = offset_delta + 1
        return offset_delta

    def append_many(self, values: Column, keys: Column = None, headers: Column = None,
                    timestamps: Timestamps = None, start: int = 0, stop: int | None = None,
                    max_size: int | None = None, meta: bytearray | None = None) -> int:
        """Add records ``start..stop-1`` of the columns in one call; returns how many were added.

        ``values``/``keys``: None (all null), a list of bytes-likes or None, ``(rows, index)`` (item
        ``index`` of each tuple in ``rows``), or an Arrow binary column as ``arrow.binary_column`` describes
        it. ``timestamps``: None (now), an int for all, a list or ``(rows, index)`` (None = now) or
        ``arrow.int64_column``. ``headers``: None, or per record None or (key, value) pairs, as a list or
        ``(rows, index)``. Stops before the record that would make ``size_in_bytes`` exceed ``max_size``,
        except that an empty batch always takes one. ``meta`` gets each record's timestamp and sizes
        (``pure_codec.RECORD_META``).
        """
        if stop is None:
            if not isinstance(values, list):
                raise TypeError("append_many needs stop unless values is a list")
            stop = len(values)
        now = _now_ms()
        limit = _NO_LIMIT if max_size is None else max_size - HEADER_SIZE
        added, self._base_timestamp, self._max_timestamp = codec.encode_records(
            self._records, self._base_timestamp, self._count, self._max_timestamp, now,
            now if timestamps is None else timestamps, keys, values, headers, start, stop, limit, meta)
        self._count += added
        return added

    def _attributes(self) -> int:
        attributes = int(self.compression) | (self.timestamp_type << 3)
        if self.is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.is_control:
            attributes |= CONTROL_MASK
        return attributes

    def build(self) -> bytes:
        """The whole batch, CRC included. The builder can keep appending and build again."""
        if not self._count:
            raise ValueError("a record batch needs at least one record")
        if self.compression == Compression.NONE:
            records: Bytes = self._records
        else:
            records = compress(self.compression, self._records, self.compression_level)
        return encode_batch(records, self._count, base_offset=self.base_offset, last_offset_delta=self._count - 1,
                            attributes=self._attributes(), base_timestamp=self._base_timestamp,
                            max_timestamp=self._max_timestamp, producer_id=self.producer_id,
                            producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                            partition_leader_epoch=self.partition_leader_epoch)


def encode_batch(records: Bytes, count: int, *, base_offset: int, last_offset_delta: int, attributes: int,
                 base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int,
                 partition_leader_epoch: int) -> bytes:
    """A whole v2 batch around an already encoded (and compressed) records blob, CRC computed.

    The log cleaner uses it to rewrite a batch with fewer records and the original offset range."""
    covered = _COVERED.pack(attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                            producer_epoch, base_sequence, count)
    crc = crc32c(records, crc32c(covered))
    prefix = _PREFIX.pack(base_offset, HEADER_SIZE - LOG_OVERHEAD + len(records), partition_leader_epoch, MAGIC, crc)
    return b"".join((prefix, covered, records))

"""RecordBatch v2 header: a zero-copy view, CRC-32C, in-place rewrites, and a buffer walker.

Layout (big-endian; the CRC covers attributes..end, so the broker can rewrite baseOffset and
partitionLeaderEpoch without recomputing it):

    0 baseOffset int64 | 8 batchLength int32 (bytes after this field) | 12 partitionLeaderEpoch int32
    16 magic int8 | 17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32
    27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16
    53 baseSequence int32 | 57 recordCount int32 | 61 records...

Nothing here decodes records: the produce path only needs the header, its length and the CRC.
"""

from __future__ import annotations

import struct
from typing import Iterator

from crc32c import crc32c

from . import codec
from .compression import Compression, check_codec, decompress
from .errors import CorruptRecordBatchError, InvalidRecordBatchError, RecordBatchError
from .record import Record

Buffer = bytes | bytearray | memoryview

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: what batchLength does not count
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49, a batch without records
MAGIC = 2

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
RECORDS_OFFSET = HEADER_SIZE

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 0 CreateTime, 1 LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_LOG_HEADER = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT32_MAX = 0x7FFFFFFF


def _as_view(data: Buffer) -> memoryview:
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def _check_magic(magic: int, position: int) -> None:
    if magic == MAGIC:
        return
    if magic in (0, 1):
        # Legacy message sets: no studied client sends them to a broker advertising Produce >= 3.
        raise InvalidRecordBatchError(f"batch at byte {position}: magic {magic} message sets are not supported")
    raise CorruptRecordBatchError(f"batch at byte {position}: invalid magic {magic}")


class RecordBatchView:
    """The header fields of one batch, read once from a memoryview that is not copied.

    ``buffer`` is exactly the batch's bytes. Construction checks the structure (header present,
    magic 2, batchLength at least the header and inside the data) but not the CRC: call
    ``verify_crc()`` or ``validate()``. The setters write into ``buffer``, which must then be writable
    (a bytearray or a memoryview of one).
    """

    __slots__ = (
        "buffer", "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
        "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
        "producer_epoch", "base_sequence", "record_count",
    )

    def __init__(self, data: Buffer, position: int = 0) -> None:
        view = _as_view(data)
        available = len(view) - position
        if position < 0 or available < HEADER_SIZE:
            raise CorruptRecordBatchError(
                f"batch at byte {position}: {max(available, 0)} bytes, less than the {HEADER_SIZE}-byte header")
        (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic, self.crc,
         self.attributes, self.last_offset_delta, self.base_timestamp, self.max_timestamp,
         self.producer_id, self.producer_epoch, self.base_sequence,
         self.record_count) = HEADER.unpack_from(view, position)
        _check_magic(self.magic, position)
        if self.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatchError(
                f"batch at byte {position}: batchLength {self.batch_length} is below the minimum {MIN_BATCH_LENGTH}")
        size = self.batch_length + LOG_OVERHEAD
        if size > available:
            raise CorruptRecordBatchError(
                f"batch at byte {position}: batchLength {self.batch_length} runs past the {available} bytes available")
        self.buffer = view[position:position + size]

    # -- derived header facts -------------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from INT32_MAX to 0 as in Kafka."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        last = self.base_sequence + self.last_offset_delta
        return last - _INT32_MAX - 1 if last > _INT32_MAX else last

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def records_data(self) -> memoryview:
        """The records blob after the header (compressed when ``compression`` != 0)."""
        return self.buffer[RECORDS_OFFSET:]

    # -- integrity ------------------------------------------------------------------------------

    def compute_crc(self) -> int:
        return crc32c(self.buffer[ATTRIBUTES_OFFSET:])

    def verify_crc(self) -> bool:
        return crc32c(self.buffer[ATTRIBUTES_OFFSET:]) == self.crc

    def validate(self) -> None:
        """Check what the header alone can tell: CRC, codec id, record count.

        Raises CorruptRecordBatchError (CRC), UnsupportedCodecError, InvalidRecordBatchError.
        """
        if not self.verify_crc():
            raise CorruptRecordBatchError(
                f"batch at offset {self.base_offset}: CRC {self.crc:#010x} does not match "
                f"the computed {self.compute_crc():#010x}")
        check_codec(self.compression)
        if self.record_count < 0:
            raise InvalidRecordBatchError(f"batch at offset {self.base_offset}: negative record count")

    def validate_produce(self) -> None:
        """``validate()`` plus the checks Kafka applies to a batch coming from a producer."""
        self.validate()
        if self.is_control:
            raise InvalidRecordBatchError("clients are not allowed to write control batches")
        if self.record_count <= 0:
            raise InvalidRecordBatchError(f"invalid record count {self.record_count} in a produced batch")
        if self.last_offset_delta + 1 != self.record_count:
            raise InvalidRecordBatchError(
                f"inconsistent batch: lastOffsetDelta {self.last_offset_delta} "
                f"for {self.record_count} records")
        if self.has_producer_id and self.base_sequence < 0:
            raise InvalidRecordBatchError(
                f"invalid sequence {self.base_sequence} for producer id {self.producer_id}")

    # -- in-place rewrites (none of these fields is under the CRC, except where noted) ----------

    def _writable(self) -> memoryview:
        if self.buffer.readonly:
            raise TypeError("the batch's buffer is read-only; wrap a bytearray to rewrite it")
        return self.buffer

    def set_base_offset(self, base_offset: int) -> None:
        _INT64.pack_into(self._writable(), BASE_OFFSET_OFFSET, base_offset)
        self.base_offset = base_offset

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _INT32.pack_into(self._writable(), PARTITION_LEADER_EPOCH_OFFSET, epoch)
        self.partition_leader_epoch = epoch

    def set_log_append_time(self, timestamp: int) -> None:
        """Stamp LogAppendTime: sets the timestamp-type bit and maxTimestamp, so the CRC is recomputed."""
        buf = self._writable()
        attributes = self.attributes | TIMESTAMP_TYPE_MASK
        _INT16.pack_into(buf, ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(buf, MAX_TIMESTAMP_OFFSET, timestamp)
        self.attributes, self.max_timestamp = attributes, timestamp
        self.crc = crc32c(buf[ATTRIBUTES_OFFSET:])
        _UINT32.pack_into(buf, CRC_OFFSET, self.crc)

    # -- records --------------------------------------------------------------------------------

    def records(self) -> Iterator[Record]:
        """The batch's records, decompressed if needed (see ``iter_records``)."""
        return iter_records(self)

    def __bytes__(self) -> bytes:
        return bytes(self.buffer)

    def __repr__(self) -> str:
        codec = self.compression
        codec_name = Compression(codec).name if codec <= Compression.ZSTD else str(codec)
        return (f"RecordBatchView(base_offset={self.base_offset}, records={self.record_count}, "
                f"last_offset_delta={self.last_offset_delta}, compression={codec_name}, "
                f"producer_id={self.producer_id}, size={self.size_in_bytes})")


def iter_batches(data: Buffer, *, allow_partial: bool = True,
                 max_batch_size: int | None = None) -> Iterator[RecordBatchView]:
    """Walk concatenated batches (a fetch response's records, a segment file, ...).

    A trailing incomplete batch — what Fetch responses legitimately end with when max_bytes cuts a
    batch — ends the walk quietly when ``allow_partial``; otherwise it raises. A batchLength below the
    header size or above ``max_batch_size``, or a bad magic, always raises. CRCs are not checked here.
    """
    view = _as_view(data)
    end = len(view)
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        length = _INT32.unpack_from(view, pos + LENGTH_OFFSET)[0]
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatchError(
                f"batch at byte {pos}: batchLength {length} is below the minimum {MIN_BATCH_LENGTH}")
        size = length + LOG_OVERHEAD
        if max_batch_size is not None and size > max_batch_size:
            raise CorruptRecordBatchError(
                f"batch at byte {pos}: {size} bytes exceeds the maximum {max_batch_size}")
        if end - pos > MAGIC_OFFSET:
            _check_magic(view[pos + MAGIC_OFFSET], pos)
        if size > end - pos:
            break
        yield RecordBatchView(view, pos)
        pos += size
    if pos < end and not allow_partial:
        raise CorruptRecordBatchError(f"{end - pos} trailing bytes after the last complete batch at byte {pos}")


def read_produce_batch(data: Buffer) -> RecordBatchView:
    """The single batch of a Produce (v3+) partition entry, validated as Kafka does for clients.

    More than one batch is INVALID_RECORD; truncation, trailing bytes or a bad CRC are CORRUPT_MESSAGE.
    """
    view = _as_view(data)
    batch = RecordBatchView(view)
    rest = view[batch.size_in_bytes:]
    if rest:
        try:  # well-formed extra batches are INVALID_RECORD; anything else is garbage
            for _ in iter_batches(rest, allow_partial=False):
                pass
        except RecordBatchError:
            raise CorruptRecordBatchError(f"{len(rest)} trailing bytes after the record batch") from None
        raise InvalidRecordBatchError("a produce request must carry exactly one record batch per partition")
    batch.validate_produce()
    return batch


def set_base_offset(buffer: bytearray | memoryview, base_offset: int, position: int = 0) -> None:
    """Rewrite the baseOffset of the batch at ``position`` without building a view."""
    _INT64.pack_into(buffer, position + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buffer: bytearray | memoryview, epoch: int, position: int = 0) -> None:
    """Rewrite the partitionLeaderEpoch of the batch at ``position`` without building a view."""
    _INT32.pack_into(buffer, position + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def iter_records(batch: RecordBatchView) -> Iterator[Record]:
    """Decode ``batch``'s records; record offsets and timestamps are absolute.

    The whole batch is decoded before the first record is returned, so a corrupt batch fails as a
    unit. With LogAppendTime every record carries the batch's maxTimestamp, as in Kafka. Raises
    CorruptRecordBatchError for undecodable data or a record count that disagrees with the bytes.
    """
    return iter(decode_batch(batch))


def decode_batch(batch: RecordBatchView) -> list[Record]:
    """``iter_records`` as a list."""
    codec_id = batch.compression
    data = decompress(codec_id, batch.records_data) if codec_id else batch.records_data
    fixed = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    return codec.decode_records(data, batch.record_count, batch.base_offset, batch.base_timestamp, fixed, Record)

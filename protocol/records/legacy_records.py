"""Legacy message sets (magic 0 and 1, Kafka before 0.11): reading, checking and building.

    MessageSet => [Offset int64 | MessageSize int32 | Message]
    Message v0 => Crc uint32 | Magic int8 | Attributes int8 | Key bytes | Value bytes
    Message v1 => Crc uint32 | Magic int8 | Attributes int8 | Timestamp int64 | Key bytes | Value bytes

The CRC is CRC-32 (IEEE, not the Castagnoli CRC of v2 batches) over magic..end of the message.
Attributes: bits 0-2 the codec, bit 3 (v1 only) LogAppendTime. A compressed message is a *wrapper*:
null key, its value the compressed inner message set. Inner offsets are absolute in v0; in v1 they are
relative (0, 1, ...) and the wrapper carries the absolute offset of the last one. Magic 0 has no
timestamp (NO_TIMESTAMP, -1); a v1 wrapper with LogAppendTime gives its timestamp to every inner
message. The rules follow Kafka 2.8's LegacyRecord, AbstractLegacyRecordBatch (DeepRecordsIterator)
and MemoryRecordsBuilder; the errors are Kafka's codes (CORRUPT_MESSAGE, INVALID_RECORD).
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterator, NamedTuple

from .compression import Compression
from .errors import CorruptRecordBatchError, InvalidRecordBatchError
from .legacy_compression import compress_legacy, decompress_legacy

Buffer = bytes | bytearray | memoryview

MAGIC_V0 = 0
MAGIC_V1 = 1
LOG_OVERHEAD = 12  # offset + size
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # ... plus the timestamp
NO_TIMESTAMP = -1
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
CREATE_TIME = 0
LOG_APPEND_TIME = 1
MAGIC_OFFSET = LOG_OVERHEAD + 4  # where the magic byte sits, from the start of an entry

_LOG_HEADER = struct.Struct(">qi")
_V0_HEADER = struct.Struct(">Ibb")
_V1_HEADER = struct.Struct(">Ibbq")
_INT32 = struct.Struct(">i")


class LegacyMessage(NamedTuple):
    """One message of a set: a shallow entry (maybe a wrapper) or an inner message."""
    offset: int
    magic: int
    attributes: int
    timestamp: int      # NO_TIMESTAMP for magic 0; the wrapper's for inner messages under LogAppendTime
    key: bytes | None
    value: bytes | None
    crc: int            # as stored
    computed_crc: int   # over magic..end, as read
    size: int           # of the message, without the 12-byte offset/size prefix

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """CREATE_TIME or LOG_APPEND_TIME (magic 0: CREATE_TIME, as it has no timestamp at all)."""
        return LOG_APPEND_TIME if self.magic > 0 and self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.size

    def ensure_valid(self) -> None:
        """Kafka's LegacyRecord.ensureValid: the stored CRC must match (CORRUPT_MESSAGE)."""
        if not self.crc_valid:
            raise CorruptRecordBatchError(
                f"message at offset {self.offset} is corrupt (stored crc = {self.crc}, "
                f"computed crc = {self.computed_crc})")


def record_overhead(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


def message_size(magic: int, key: Buffer | None, value: Buffer | None) -> int:
    """Bytes of one message with its offset/size prefix."""
    return LOG_OVERHEAD + record_overhead(magic) + (len(key) if key is not None else 0) + \
        (len(value) if value is not None else 0)


def entry_magic(data: Buffer, position: int = 0) -> int | None:
    """The magic byte of the entry (legacy message or v2 batch) at ``position``; None if not there.

    Byte 16 is the magic in both layouts (v2: after baseOffset, length and partitionLeaderEpoch)."""
    if len(data) - position <= MAGIC_OFFSET:
        return None
    return data[position + MAGIC_OFFSET]


def _read_bytes(buf: memoryview, pos: int, end: int, what: str, offset: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise CorruptRecordBatchError(f"message at offset {offset}: truncated {what} length")
    (size,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if size < 0:
        return None, pos
    if size > end - pos:
        raise CorruptRecordBatchError(f"message at offset {offset}: {what} length {size} runs past the message")
    return bytes(buf[pos:pos + size]), pos + size


def read_message(buf: memoryview, position: int, offset: int, size: int) -> LegacyMessage:
    """The message whose bytes (after the 12-byte prefix) are ``buf[position:position + size]``."""
    end = position + size
    magic = buf[position + 4]
    if magic == 2:  # a well-formed v2 batch among legacy messages (LogValidator.validateBatch)
        raise InvalidRecordBatchError("Batch magic 2 is not the same as the legacy messages' magic")
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptRecordBatchError(f"message at offset {offset}: invalid magic {magic}")
    if size < record_overhead(magic):
        raise CorruptRecordBatchError(
            f"message at offset {offset}: size {size} is below the {record_overhead(magic)}-byte overhead of magic {magic}")
    if magic == MAGIC_V0:
        crc, _, attributes = _V0_HEADER.unpack_from(buf, position)
        timestamp, pos = NO_TIMESTAMP, position + _V0_HEADER.size
    else:
        crc, _, attributes, timestamp = _V1_HEADER.unpack_from(buf, position)
        pos = position + _V1_HEADER.size
    key, pos = _read_bytes(buf, pos, end, "key", offset)
    value, pos = _read_bytes(buf, pos, end, "value", offset)
    computed = zlib.crc32(buf[position + 4:end])
    return LegacyMessage(offset, magic, attributes & 0xFF, timestamp, key, value, crc, computed, size)


def iter_messages(data: Buffer, *, allow_partial: bool = True) -> Iterator[LegacyMessage]:
    """The shallow entries of a message set (wrappers are not opened), as Kafka's log input streams.

    A size below the v0 overhead or a magic other than 0/1 is CORRUPT_MESSAGE. A trailing incomplete
    message ends the walk when ``allow_partial`` (a fetch cut by its size limit), else raises.
    """
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    pos, end = 0, len(view)
    while end - pos >= LOG_OVERHEAD:
        offset, size = _LOG_HEADER.unpack_from(view, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordBatchError(
                f"message at byte {pos}: size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})")
        if end - pos - LOG_OVERHEAD < size:
            break
        yield read_message(view, pos + LOG_OVERHEAD, offset, size)
        pos += LOG_OVERHEAD + size
    if pos < end and not allow_partial:
        raise CorruptRecordBatchError(f"{end - pos} trailing bytes after the last complete message at byte {pos}")


def inner_messages(wrapper: LegacyMessage) -> list[LegacyMessage]:
    """The messages inside a compressed wrapper, with absolute offsets (Kafka's DeepRecordsIterator).

    v1 inner offsets are relative: the absolute base is the wrapper's offset minus the last inner one,
    except that a wrapper offset of 0 (some producers never set it) takes the inner offsets as they are.
    A trailing incomplete inner message is dropped, as Kafka's stream reader does.
    """
    codec = wrapper.compression
    if codec == Compression.ZSTD:
        raise InvalidRecordBatchError(f"invalid wrapper compression type zstd for magic {wrapper.magic}")
    if wrapper.value is None:
        raise InvalidRecordBatchError(
            f"found invalid compressed record set with null value (magic = {wrapper.magic})")
    inner: list[LegacyMessage] = []
    for message in iter_messages(decompress_legacy(codec, wrapper.value, wrapper.magic)):
        if message.magic == MAGIC_V1 and wrapper.timestamp_type == LOG_APPEND_TIME:
            message = message._replace(timestamp=wrapper.timestamp)
        inner.append(message)
    if not inner:
        raise InvalidRecordBatchError("found invalid compressed record set with no inner records")
    if wrapper.magic == MAGIC_V1:
        last_inner = inner[-1].offset
        if wrapper.offset == 0:
            base = 0
        elif wrapper.offset < last_inner:
            raise InvalidRecordBatchError(
                f"found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper.offset}' "
                f"is less than the last inner message offset '{last_inner}' and it is not zero.")
        else:
            base = wrapper.offset - last_inner
        inner = [m._replace(offset=base + m.offset) for m in inner]
    for message in inner:
        if message.compression != Compression.NONE:
            raise InvalidRecordBatchError("inner messages must not be compressed")
    return inner


def encode_message(offset: int, magic: int, attributes: int, timestamp: int,
                   key: Buffer | None, value: Buffer | None) -> bytes:
    """One message with its offset/size prefix, CRC-32 computed."""
    parts = [_V0_HEADER.pack(0, magic, attributes)[4:] if magic == MAGIC_V0
             else _V1_HEADER.pack(0, magic, attributes, timestamp)[4:]]
    for field in (key, value):
        if field is None:
            parts.append(_INT32.pack(-1))
        else:
            parts += (_INT32.pack(len(field)), bytes(field))
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return _LOG_HEADER.pack(offset, 4 + len(body)) + struct.pack(">I", crc) + body


class LegacyMessageSetBuilder:
    """Builds a message set as Kafka's MemoryRecordsBuilder does for magic 0/1.

    Uncompressed: one message per record, absolute offsets. Compressed: one wrapper whose offset is the
    last record's, whose timestamp is the largest (or the log-append time), holding the records with
    relative offsets (v1) or absolute ones (v0). Under LogAppendTime every message carries
    ``log_append_time`` and the timestamp-type bit.
    """

    __slots__ = ("magic", "compression", "timestamp_type", "log_append_time", "base_offset",
                 "_messages", "_count", "_last_offset", "_max_timestamp")

    def __init__(self, magic: int, compression: int = Compression.NONE, *, timestamp_type: int = CREATE_TIME,
                 base_offset: int = 0, log_append_time: int = NO_TIMESTAMP) -> None:
        if magic not in (MAGIC_V0, MAGIC_V1):
            raise ValueError(f"invalid magic {magic} for a legacy message set")
        if compression == Compression.ZSTD:
            raise ValueError(f"zstd compression is not supported for magic {magic}")
        self.magic = magic
        self.compression = int(compression)
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.base_offset = base_offset
        self._messages: list[bytes] = []
        self._count = 0
        self._last_offset: int | None = None
        self._max_timestamp = NO_TIMESTAMP

    @property
    def record_count(self) -> int:
        return self._count

    def _attributes(self, codec: int) -> int:
        attributes = codec
        if self.magic > MAGIC_V0 and self.timestamp_type == LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        return attributes

    def append(self, offset: int, timestamp: int, key: Buffer | None, value: Buffer | None) -> None:
        if self._last_offset is not None and offset <= self._last_offset:
            raise ValueError(f"offset {offset} does not follow {self._last_offset}")
        if self.timestamp_type == LOG_APPEND_TIME:
            timestamp = self.log_append_time
        if self.magic == MAGIC_V0:
            timestamp = NO_TIMESTAMP
        inner = offset - self.base_offset if self.magic > MAGIC_V0 and self.compression else offset
        self._messages.append(encode_message(inner, self.magic, self._attributes(Compression.NONE), timestamp,
                                             key, value))
        self._count += 1
        self._last_offset = offset
        if self.magic > MAGIC_V0 and timestamp > self._max_timestamp:
            self._max_timestamp = timestamp

    def build(self) -> bytes:
        """The message set (empty when nothing was appended)."""
        inner = b"".join(self._messages)
        if not self._count or self.compression == Compression.NONE:
            return inner
        value = compress_legacy(self.compression, inner, self.magic)
        timestamp = self.log_append_time if self.timestamp_type == LOG_APPEND_TIME else self._max_timestamp
        return encode_message(self._last_offset, self.magic, self._attributes(self.compression), timestamp,
                              None, value)

"""Records inside a v2 batch: decoding (with decompression) into ``Record`` tuples.

    Record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
            | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
            | headerCount varint | [headerKeyLength varint | key (UTF-8) | headerValueLength varint | value]

This is the consumer's hot path, so the one-byte case of each varint is decoded inline and the
general case goes through ``varint``. Every length is checked against the record's own end, and a
record must end exactly where its length says: garbage raises CorruptRecordBatchError.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from .batch import LOG_APPEND_TIME, RecordBatchView
from .compression import decompress
from .errors import CorruptRecordBatchError
from .varint import decode_varint, decode_varlong


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


# The smallest record: seven one-byte fields (length, attributes, two deltas, two -1/0 lengths,
# header count). Used to reject impossible record counts before looping.
_MIN_RECORD_SIZE = 7


def iter_records(batch: RecordBatchView) -> Iterator[Record]:
    """Decode ``batch``'s records; record offsets and timestamps are absolute.

    With LogAppendTime every record carries the batch's maxTimestamp, as in Kafka. Raises
    CorruptRecordBatchError for undecodable data or a record count that disagrees with the bytes.
    """
    codec = batch.compression
    data = decompress(codec, batch.records_data)  # NONE: one copy to bytes, cheapest to index
    count = batch.record_count
    if count < 0 or count * _MIN_RECORD_SIZE > len(data):
        raise CorruptRecordBatchError(f"record count {count} cannot fit in {len(data)} bytes of records")
    fixed_timestamp = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    return _iter_decoded(data, count, batch.base_offset, batch.base_timestamp, fixed_timestamp)


def decode_records(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0) -> list[Record]:
    """Decode ``count`` records from an uncompressed records blob (tests, tools)."""
    return list(_iter_decoded(bytes(data), count, base_offset, base_timestamp, None))


def _iter_decoded(data: bytes, count: int, base_offset: int, base_timestamp: int,
                  fixed_timestamp: int | None) -> Iterator[Record]:
    pos = 0
    end = len(data)
    try:
        for _ in range(count):
            record, pos = _decode_record(data, pos, end, base_offset, base_timestamp)
            if fixed_timestamp is not None:
                record = record._replace(timestamp=fixed_timestamp)
            yield record
    except IndexError:  # defensive: every read is bounds-checked, but never leak an IndexError
        raise CorruptRecordBatchError(f"record data truncated near byte {pos}") from None
    except UnicodeDecodeError as exc:
        raise CorruptRecordBatchError(f"header key is not UTF-8: {exc}") from None
    if pos != end:
        raise CorruptRecordBatchError(f"{end - pos} bytes remain after the batch's {count} records")


def _decode_record(buf: bytes, pos: int, end: int, base_offset: int,
                   base_timestamp: int) -> tuple[Record, int]:
    if pos >= end:
        raise CorruptRecordBatchError(f"record data ends before the declared record count (byte {pos})")
    b = buf[pos]
    if b < 0x80:
        length = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        length, pos = decode_varint(buf, pos)
    if length < _MIN_RECORD_SIZE - 1 or length > end - pos:
        raise CorruptRecordBatchError(f"record length {length} at byte {pos} is invalid")
    rec_end = pos + length
    # Below, a field may read a few bytes past rec_end into the next record; the final
    # pos == rec_end check catches it, and buf[] past ``end`` cannot happen before rec_end <= end.
    pos += 1  # attributes: unused in v2

    b = buf[pos]
    if b < 0x80:
        timestamp_delta = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        timestamp_delta, pos = decode_varlong(buf, pos)

    b = buf[pos] if pos < rec_end else 0x80
    if b < 0x80:
        offset_delta = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        offset_delta, pos = _varint_in(buf, pos, rec_end)

    key, pos = _read_bytes(buf, pos, rec_end, "key")
    value, pos = _read_bytes(buf, pos, rec_end, "value")

    b = buf[pos] if pos < rec_end else 0x80
    if b < 0x80:
        header_count = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        header_count, pos = _varint_in(buf, pos, rec_end)
    if header_count:
        # Each header takes at least two bytes (two one-byte lengths).
        if header_count < 0 or header_count * 2 > rec_end - pos:
            raise CorruptRecordBatchError(f"invalid header count {header_count}")
        headers = []
        for _ in range(header_count):
            key_len, pos = _varint_in(buf, pos, rec_end)
            if key_len < 0 or key_len > rec_end - pos:
                raise CorruptRecordBatchError(f"invalid header key length {key_len}")
            header_key = buf[pos:pos + key_len].decode("utf-8")
            pos += key_len
            header_value, pos = _read_bytes(buf, pos, rec_end, "header value")
            headers.append((header_key, header_value))
    else:
        headers = []
    if pos != rec_end:
        raise CorruptRecordBatchError(f"record fields end at byte {pos}, its length says {rec_end}")
    return Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers), pos


def _varint_in(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """A varint that must lie before ``limit`` (the record's end)."""
    if pos >= limit:
        raise CorruptRecordBatchError("record ends in the middle of its fields")
    value, pos = decode_varint(buf, pos)
    if pos > limit:
        raise CorruptRecordBatchError("varint runs past the end of its record")
    return value, pos


def _read_bytes(buf: bytes, pos: int, limit: int, what: str) -> tuple[bytes | None, int]:
    """A varint length (-1 = null) and that many bytes, all before ``limit``."""
    b = buf[pos] if pos < limit else 0x80
    if b < 0x80:
        size = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        size, pos = _varint_in(buf, pos, limit)
    if size < 0:
        if size == -1:
            return None, pos
        raise CorruptRecordBatchError(f"invalid {what} length {size}")
    if size > limit - pos:
        raise CorruptRecordBatchError(f"{what} length {size} runs past the end of its record")
    return buf[pos:pos + size], pos + size

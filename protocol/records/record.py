"""Records inside a v2 batch: decoding (with decompression) into ``Record`` tuples.

    Record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
            | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
            | headerCount varint | [headerKeyLength varint | key (UTF-8) | headerValueLength varint | value]

This is the consumer's hot path, so the short forms of the varints are decoded inline and the
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


# NamedTuple's generated __new__ adds a Python frame per record; build the tuple directly instead.
_new_tuple = tuple.__new__

# The smallest record: seven one-byte fields (length, attributes, two deltas, two -1/0 lengths,
# header count). Used to reject impossible record counts before looping.
_MIN_RECORD_SIZE = 7


def iter_records(batch: RecordBatchView) -> Iterator[Record]:
    """Decode ``batch``'s records; record offsets and timestamps are absolute.

    The whole batch is decoded before the first record is returned, so a corrupt batch fails as a
    unit. With LogAppendTime every record carries the batch's maxTimestamp, as in Kafka. Raises
    CorruptRecordBatchError for undecodable data or a record count that disagrees with the bytes.
    """
    return iter(decode_batch(batch))


def decode_batch(batch: RecordBatchView) -> list[Record]:
    """``iter_records`` as a list."""
    codec = batch.compression
    data = decompress(codec, batch.records_data)  # NONE: one copy to bytes, cheapest to index
    records = _decode_all(data, batch.record_count, batch.base_offset, batch.base_timestamp)
    if batch.timestamp_type == LOG_APPEND_TIME:
        fixed = batch.max_timestamp
        records = [record._replace(timestamp=fixed) for record in records]
    return records


def decode_records(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0) -> list[Record]:
    """Decode ``count`` records from an uncompressed records blob (tests, tools)."""
    return _decode_all(bytes(data), count, base_offset, base_timestamp)


def _decode_all(buf: bytes, count: int, base_offset: int, base_timestamp: int) -> list[Record]:
    end = len(buf)
    if count < 0 or count * _MIN_RECORD_SIZE > end:
        raise CorruptRecordBatchError(f"record count {count} cannot fit in {end} bytes of records")
    records: list[Record] = []
    append = records.append
    pos = 0
    try:
        for _ in range(count):
            # Each varint below is decoded inline for its one- and two-byte forms (nearly all of
            # them in practice); longer ones go through decode_varint/decode_varlong.
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = decode_varint(buf, pos)
            if length < _MIN_RECORD_SIZE - 1 or length > end - pos:
                raise CorruptRecordBatchError(f"record length {length} at byte {pos} is invalid")
            # Fields may read past rec_end (never past ``end``: an IndexError there is converted);
            # every length is checked against rec_end and the record must end exactly at rec_end.
            rec_end = pos + length
            pos += 1  # attributes: unused in v2

            b = buf[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                timestamp_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                timestamp_delta, pos = decode_varlong(buf, pos)

            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                offset_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                offset_delta, pos = decode_varint(buf, pos)

            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = decode_varint(buf, pos)
            if size == -1:
                key = None
            elif 0 <= size <= rec_end - pos:
                key = buf[pos:pos + size]
                pos += size
            else:
                raise CorruptRecordBatchError(_bad_length("key", size, pos, rec_end))

            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = decode_varint(buf, pos)
            if size == -1:
                value = None
            elif 0 <= size <= rec_end - pos:
                value = buf[pos:pos + size]
                pos += size
            else:
                raise CorruptRecordBatchError(_bad_length("value", size, pos, rec_end))

            b = buf[pos]
            if b == 0:
                headers: list[tuple[str, bytes | None]] = []
                pos += 1
            else:
                headers, pos = _decode_headers(buf, pos, rec_end)
            if pos != rec_end:
                raise CorruptRecordBatchError(f"record fields end at byte {pos}, its length says {rec_end}")
            append(_new_tuple(Record, (base_offset + offset_delta, base_timestamp + timestamp_delta,
                                       key, value, headers)))
    except IndexError:
        raise CorruptRecordBatchError(f"record data ends inside a record (byte {pos} of {end})") from None
    if pos != end:
        raise CorruptRecordBatchError(f"{end - pos} bytes remain after the batch's {count} records")
    return records


def _bad_length(what: str, size: int, pos: int, limit: int) -> str:
    if size < 0:
        return f"invalid {what} length {size}"
    return f"{what} length {size} runs past the end of its record ({limit - pos} bytes left)"


def _decode_headers(buf: bytes, pos: int, rec_end: int) -> tuple[list[tuple[str, bytes | None]], int]:
    count, pos = decode_varint(buf, pos)
    # Each header takes at least two bytes (two one-byte lengths).
    if count < 0 or count * 2 > rec_end - pos:
        raise CorruptRecordBatchError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        size, pos = decode_varint(buf, pos)
        if not 0 <= size <= rec_end - pos:
            raise CorruptRecordBatchError(_bad_length("header key", size, pos, rec_end))
        try:
            key = buf[pos:pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordBatchError(f"header key is not UTF-8: {exc}") from None
        pos += size
        size, pos = decode_varint(buf, pos)
        if size == -1:
            value = None
        elif 0 <= size <= rec_end - pos:
            value = buf[pos:pos + size]
            pos += size
        else:
            raise CorruptRecordBatchError(_bad_length("header value", size, pos, rec_end))
        headers.append((key, value))
    return headers, pos

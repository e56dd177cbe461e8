"""The pure-Python record codec: v2 records (inside a batch, after decompression) to and from Python.

The reference for the compiled codec (``codec_c/``): same functions, arguments, results and errors;
``codec.py`` picks one of the two and the tests check they give identical bytes and values.

    Record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
            | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
            | headerCount varint | [headerKeyLength varint | key (UTF-8) | headerValueLength varint | value]

Decoding is the consumer's hot path when nothing is compiled, so the short forms of the varints are
decoded inline and the general case goes through ``varint``. Every length is checked against the
record's own end, and a record must end exactly where its length says: garbage raises
CorruptRecordBatchError.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any, Callable, Sequence

from .errors import CorruptRecordBatchError
from .varint import decode_varint, decode_varlong, encode_varint

# The smallest record: seven one-byte fields (length, attributes, two deltas, two -1/0 lengths,
# header count). Used to reject impossible record counts before looping.
_MIN_RECORD_SIZE = 7
_NULL = b"\x01"  # zigzag varint -1: a null key, value or header value
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1
_new_tuple = tuple.__new__  # NamedTuple's generated __new__ adds a Python frame per record


def decode_records(buf: Any, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None,
                   record_type: type) -> list:
    """``record_type(offset, timestamp, key, value, headers)`` for each of the ``count`` records in ``buf``;
    ``fixed_timestamp`` (LogAppendTime) replaces every record's timestamp."""
    records = _decode_all(bytes(buf), count, base_offset, base_timestamp, record_type)
    if fixed_timestamp is not None:
        records = [_new_tuple(record_type, (r[0], fixed_timestamp, r[2], r[3], r[4])) for r in records]
    return records


def decode_consumer_records(buf: Any, count: int, base_offset: int, base_timestamp: int,
                            fixed_timestamp: int | None, min_offset: int, topic: str, partition: int,
                            timestamp_type: int, record_type: type, key_deserializer: Callable | None,
                            value_deserializer: Callable | None) -> list:
    """``record_type(topic, partition, offset, timestamp, timestamp_type, key, value, headers, key size,
    value size, None)`` for each record at or after ``min_offset`` (sizes -1 for null)."""
    records = _decode_all(bytes(buf), count, base_offset, base_timestamp, tuple)
    _check_offsets(records, base_offset)
    out = []
    append = out.append
    for offset, timestamp, key, value, headers in records:
        if offset < min_offset:
            continue
        append(_new_tuple(record_type, (
            topic, partition, offset, timestamp if fixed_timestamp is None else fixed_timestamp, timestamp_type,
            key_deserializer(key) if key_deserializer is not None and key is not None else key,
            value_deserializer(value) if value_deserializer is not None and value is not None else value,
            headers, -1 if key is None else len(key), -1 if value is None else len(value), None)))
    return out


def decode_arrow(batches: Sequence[tuple]) -> tuple:
    """The records of ``batches`` as Arrow column buffers (``arrow.py`` makes the arrays).

    Each batch is ``(records, count, base_offset, base_timestamp, timestamp_type, fixed_timestamp,
    min_offset)``; records before ``min_offset`` are left out. Returns ``(count, keys, values, offsets,
    timestamps, timestamp_types, header_offsets, header_keys, header_values)``: a column is ``(null count,
    validity bitmap or None, int32 offsets, data)``, offsets and timestamps (µs) int64, timestamp types
    int32, header_offsets int32 (count + 1), all in native byte order.
    """
    keys, values, header_keys, header_values = _Column(), _Column(), _Column(), _Column()
    offsets, timestamps, types, header_offsets = array("q"), array("q"), array("i"), array("i", [0])
    header_total = 0
    for buf, count, base_offset, base_timestamp, timestamp_type, fixed, min_offset in batches:
        records = _decode_all(bytes(buf), count, base_offset, base_timestamp, tuple)
        _check_offsets(records, base_offset)
        for offset, timestamp, key, value, headers in records:
            if fixed is not None:
                timestamp = fixed
            elif not _INT64_MIN <= timestamp <= _INT64_MAX:
                raise CorruptRecordBatchError("record timestamp overflows int64")
            if offset < min_offset:
                continue
            micros = timestamp * 1000
            if not _INT64_MIN <= micros <= _INT64_MAX:
                raise CorruptRecordBatchError(f"record timestamp {timestamp} ms does not fit in microseconds")
            keys.add(key)
            values.add(value)
            offsets.append(offset)
            timestamps.append(micros)
            types.append(timestamp_type)
            for header_key, header_value in headers:
                header_keys.add(header_key.encode("utf-8"))
                header_values.add(header_value)
            header_total += len(headers)
            if header_total > _INT32_MAX:
                raise OverflowError("too many headers for one Arrow column")
            header_offsets.append(header_total)
    return (len(offsets), keys.result(), values.result(), offsets.tobytes(), timestamps.tobytes(), types.tobytes(),
            header_offsets.tobytes(), header_keys.result(), header_values.result())


class _Column:
    """A binary/string column being built: validity bits, int32 offsets, data."""

    __slots__ = ("validity", "offsets", "data", "size", "nulls")

    def __init__(self) -> None:
        self.validity = bytearray()
        self.offsets = array("i", [0])
        self.data: list[bytes] = []
        self.size = 0
        self.nulls = 0

    def add(self, item: bytes | None) -> None:
        index = len(self.offsets) - 1
        if not index & 7:
            self.validity.append(0)
        if item is None:
            self.nulls += 1
        else:
            self.validity[index >> 3] |= 1 << (index & 7)
            self.data.append(item)
            self.size += len(item)
            if self.size > _INT32_MAX:
                raise OverflowError("more than 2 GiB of keys, values or headers in one Arrow column")
        self.offsets.append(self.size)

    def result(self) -> tuple:
        return (self.nulls, bytes(self.validity) if self.nulls else None, self.offsets.tobytes(), b"".join(self.data))


def _check_offsets(records: list, base_offset: int) -> None:
    """Offsets must fit int64 (only a garbage base offset near the limits can break that)."""
    if _INT64_MIN + _INT32_MAX < base_offset < _INT64_MAX - _INT32_MAX:
        return
    for record in records:
        if not _INT64_MIN <= record[0] <= _INT64_MAX:
            raise CorruptRecordBatchError("record offset overflows int64")


def _decode_all(buf: bytes, count: int, base_offset: int, base_timestamp: int, record_type: type) -> list:
    end = len(buf)
    if count < 0 or count * _MIN_RECORD_SIZE > end:
        raise CorruptRecordBatchError(f"record count {count} cannot fit in {end} bytes of records")
    records: list = []
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
            append(_new_tuple(record_type, (base_offset + offset_delta, base_timestamp + timestamp_delta,
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
    # Every length is checked before any key is decoded, as the compiled codec does.
    spans = []
    for _ in range(count):
        size, pos = decode_varint(buf, pos)
        if not 0 <= size <= rec_end - pos:
            raise CorruptRecordBatchError(_bad_length("header key", size, pos, rec_end))
        key_span = (pos, pos + size)
        pos += size
        size, pos = decode_varint(buf, pos)
        if size == -1:
            value = None
        elif 0 <= size <= rec_end - pos:
            value = buf[pos:pos + size]
            pos += size
        else:
            raise CorruptRecordBatchError(_bad_length("header value", size, pos, rec_end))
        spans.append((key_span, value))
    if pos != rec_end:
        raise CorruptRecordBatchError(f"record fields end at byte {pos}, its length says {rec_end}")
    headers = []
    for (start, stop), value in spans:
        try:
            key = buf[start:stop].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordBatchError(f"header key is not UTF-8: {exc}") from None
        headers.append((key, value))
    return headers, pos


# -- encoding ---------------------------------------------------------------------------------------

# What encode_records appends to ``meta`` per record: timestamp, key size, value size (-1 when null) and
# header size (the headers' key and value bytes), native order and no padding.
RECORD_META = struct.Struct("=qiii")


def encode_records(out: bytearray, base_timestamp: int, offset_delta: int, max_timestamp: int, now: int,
                   timestamps: Any, keys: Any, values: Any, headers: Any, start: int, stop: int,
                   max_bytes: int, meta: bytearray | None) -> tuple[int, int, int]:
    """Append records ``start..stop-1`` to ``out``, a batch's records so far (``offset_delta`` of them, the
    first one's timestamp ``base_timestamp``), stopping before the first record that would take ``out`` past
    ``max_bytes`` unless the batch is still empty. Returns ``(appended, base_timestamp, max_timestamp)``;
    ``meta`` (a bytearray or None) gets a ``RECORD_META`` per record. On an error nothing is appended.

    Python objects come as a list (item i) or as ``(rows, index)`` (item ``index`` of the tuple ``rows[i]``).
    ``timestamps``: an int (every record), objects (ints; None = ``now``) or an Arrow int64 column
    ``(validity or None, values buffer, array offset)`` (null = ``now``). ``keys``/``values``: None (all
    null), objects (bytes-likes or None) or an Arrow binary column ``(validity or None, offsets buffer,
    data buffer, array offset, large)``. ``headers``: None or objects (None or (key, value) pairs).
    """
    if not isinstance(out, bytearray) or not (meta is None or isinstance(meta, bytearray)):
        raise TypeError("out (and meta unless None) must be bytearrays")
    if start < 0 or stop < start:
        raise ValueError("invalid start/stop")
    timestamp_at = _timestamps(timestamps, stop, now)
    key_at = _source(keys, stop, "keys")
    value_at = _source(values, stop, "values")
    header_at = (lambda i: None) if headers is None else _objects(headers, stop, "headers")
    out_before, meta_before = len(out), 0 if meta is None else len(meta)
    appended = 0
    try:
        for i in range(start, stop):
            timestamp = timestamp_at(i)
            if offset_delta == 0:
                base_timestamp = timestamp
            delta = timestamp - base_timestamp
            if not _INT64_MIN <= delta <= _INT64_MAX:
                raise ValueError(f"timestamp {timestamp} is too far from the batch's first, {base_timestamp}")
            key = key_at(i)
            value = value_at(i)
            parts = [b"\x00", encode_varint(delta), encode_varint(offset_delta)]
            if key is None:
                parts.append(_NULL)
            else:
                parts += (encode_varint(len(key)), key)
            if value is None:
                parts.append(_NULL)
            else:
                parts += (encode_varint(len(value)), value)
            header_size = _encode_headers(header_at(i), parts)
            body = b"".join(parts)
            encoded = encode_varint(len(body))
            if offset_delta > 0 and len(out) + len(encoded) + len(body) > max_bytes:
                break
            if offset_delta >= _INT32_MAX:
                raise ValueError("a record batch holds at most 2**31 - 1 records")
            out += encoded
            out += body
            if meta is not None:
                meta += RECORD_META.pack(timestamp, -1 if key is None else len(key),
                                         -1 if value is None else len(value), header_size)
            if timestamp > max_timestamp:
                max_timestamp = timestamp
            offset_delta += 1
            appended += 1
    except BaseException:
        del out[out_before:]  # nothing of this call stays: the caller's counts stay right
        if meta is not None:
            del meta[meta_before:]
        raise
    return appended, base_timestamp, max_timestamp


def _encode_headers(headers: Any, parts: list) -> int:
    """Append a record's headers (None: none); returns their key and value bytes."""
    if headers is None or (isinstance(headers, list) and not headers):
        parts.append(b"\x00")
        return 0
    pairs = list(headers)
    parts.append(encode_varint(len(pairs)))
    size = 0
    for pair in pairs:
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError("a header must be a (key, value) pair")
        header_key, header_value = pair
        raw_key = header_key.encode("utf-8") if isinstance(header_key, str) else _as_bytes(header_key, "header keys")
        parts += (encode_varint(len(raw_key)), raw_key)
        size += len(raw_key)
        if header_value is None:
            parts.append(_NULL)
        else:
            raw_value = _as_bytes(header_value, "header values")
            parts += (encode_varint(len(raw_value)), raw_value)
            size += len(raw_value)
    return size


def _as_bytes(item: Any, what: str) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        raise TypeError(f"{what} must be bytes-like or None, not str")
    try:
        return memoryview(item).tobytes()
    except TypeError:
        raise TypeError(f"{what} must be bytes-like or None, not {type(item).__name__}") from None


def _check_int64(value: Any) -> int:
    if not isinstance(value, int):
        raise TypeError(f"timestamps must be ints or None, not {type(value).__name__}")
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"timestamp {value} is not an int64")
    return value


def _valid(bitmap: memoryview | None, index: int) -> bool:
    return bitmap is None or bool(bitmap[index >> 3] & (1 << (index & 7)))


def _objects(column: Any, stop: int, what: str) -> Callable[[int], Any]:
    """Item i of a list, or item ``index`` of the tuple ``rows[i]`` for ``(rows, index)``."""
    index = None
    if isinstance(column, tuple) and len(column) == 2:
        column, index = column
        if index < 0:
            raise ValueError(f"{what}: negative row index")
    if not isinstance(column, list):
        raise TypeError(f"{what} must be None, a list, (rows, index) or an Arrow column description")
    if len(column) < stop:
        raise ValueError(f"{what} has fewer items than the records")
    if index is None:
        return column.__getitem__

    def item(i: int) -> Any:
        row = column[i]
        if not isinstance(row, tuple) or len(row) <= index:
            raise TypeError(f"{what}: rows must be tuples of more than {index} items")
        return row[index]

    return item


def _timestamps(timestamps: Any, stop: int, now: int) -> Callable[[int], int]:
    if isinstance(timestamps, int):
        constant = _check_int64(timestamps)
        return lambda i: constant
    if not isinstance(timestamps, tuple) or len(timestamps) != 3:
        objects = _objects(timestamps, stop, "timestamps")
        return lambda i: now if (item := objects(i)) is None else _check_int64(item)
    validity, data, offset = timestamps
    bitmap = None if validity is None else memoryview(validity).cast("B")
    raw = memoryview(data).cast("B")
    if offset < 0 or len(raw) // 8 < offset + stop or (bitmap is not None and len(bitmap) * 8 < offset + stop):
        raise ValueError("timestamps: the Arrow buffers are shorter than the records")
    items = raw[:len(raw) // 8 * 8].cast("q")
    return lambda i: items[offset + i] if _valid(bitmap, offset + i) else now


def _source(column: Any, stop: int, what: str) -> Callable[[int], bytes | None]:
    if column is None:
        return lambda i: None
    if not isinstance(column, tuple) or len(column) != 5:
        objects = _objects(column, stop, what)
        return lambda i: None if (item := objects(i)) is None else _as_bytes(item, what)
    validity, offsets, data, offset, large = column
    if offset < 0:
        raise ValueError(f"{what}: negative array offset")
    bitmap = None if validity is None else memoryview(validity).cast("B")
    width = 8 if large else 4
    raw = memoryview(offsets).cast("B")
    if len(raw) // width < offset + stop + 1 or (bitmap is not None and len(bitmap) * 8 < offset + stop):
        raise ValueError(f"{what}: the Arrow buffers are shorter than the records")
    bounds = raw[:len(raw) // width * width].cast("q" if large else "i")
    payload = memoryview(data).cast("B")

    def item(i: int) -> bytes | None:
        j = offset + i
        if not _valid(bitmap, j):
            return None
        first, last = bounds[j], bounds[j + 1]
        if first < 0 or last < first or last > len(payload):
            raise ValueError(f"{what}: invalid Arrow offsets")
        return payload[first:last].tobytes()

    return item

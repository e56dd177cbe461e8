"""Records as Arrow columns, in Spark's Kafka source schema, without a Python object per record.

Decoding: ``codec.decode_arrow`` fills plain buffers (validity bitmaps, offsets, data) for many batches
in one call, and ``record_batch`` wraps them as Arrow arrays without copying. Encoding: ``binary_column``
and ``int64_column`` describe Arrow arrays' buffers for ``RecordBatchBuilder.append_many``, which reads
them directly. Needs pyarrow (the ``spark`` extra); nothing else in ``protocol`` imports this module.

The schema is Spark's KafkaRecordToRowConverter's, as the Arrow types Spark's conversion expects: key and
value binary, topic string, partition int32, offset int64, timestamp timestamp[us, UTC], timestampType
int32, headers list<struct<key: string, value: binary>>.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from . import codec

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
HEADERS_FIELD = pa.field("headers", pa.list_(HEADER_TYPE))
KAFKA_SCHEMA = pa.schema([*_BASE_FIELDS, HEADERS_FIELD])
KAFKA_SCHEMA_WITHOUT_HEADERS = pa.schema(_BASE_FIELDS)


def kafka_schema(include_headers: bool = True) -> pa.Schema:
    return KAFKA_SCHEMA if include_headers else KAFKA_SCHEMA_WITHOUT_HEADERS


def decode_record_batch(batches: Sequence[tuple], topic: str, partition: int) -> pa.RecordBatch:
    """The records of ``batches`` (``codec.decode_arrow``'s input: one partition's batches, decompressed)
    as one RecordBatch of ``KAFKA_SCHEMA``."""
    return record_batch(codec.decode_arrow(batches), topic, partition)


def record_batch(decoded: tuple, topic: str, partition: int) -> pa.RecordBatch:
    """``codec.decode_arrow``'s buffers as a RecordBatch of ``KAFKA_SCHEMA`` (zero-copy)."""
    count, keys, values, offsets, timestamps, types, header_offsets, header_keys, header_values = decoded
    header_count = len(header_keys[2]) // 4 - 1
    headers_struct = pa.StructArray.from_arrays(
        [_binary(pa.string(), header_count, header_keys), _binary(pa.binary(), header_count, header_values)],
        fields=list(HEADER_TYPE))
    columns = [
        _binary(pa.binary(), count, keys),
        _binary(pa.binary(), count, values),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(offsets)], null_count=0),
        pa.Array.from_buffers(TIMESTAMP_TYPE, count, [None, pa.py_buffer(timestamps)], null_count=0),
        pa.Array.from_buffers(pa.int32(), count, [None, pa.py_buffer(types)], null_count=0),
        pa.Array.from_buffers(HEADERS_FIELD.type, count, [None, pa.py_buffer(header_offsets)], null_count=0,
                              children=[headers_struct]),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA)


def _binary(arrow_type: pa.DataType, count: int, column: tuple) -> pa.Array:
    nulls, validity, offsets, data = column
    return pa.Array.from_buffers(
        arrow_type, count, [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets),
                            pa.py_buffer(data)], null_count=nulls)


# -- Arrow input for the encoder ----------------------------------------------------------------------

def binary_column(array: Any) -> tuple:
    """An Arrow binary/string array (large ones too; a ChunkedArray is combined) as the encoder's column
    description ``(validity or None, offsets, data, array offset, large)``."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_binary(kind) or pa.types.is_string(kind):
        large = False
    elif pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        large = True
    elif pa.types.is_null(kind):
        return None
    else:
        raise TypeError(f"keys and values must be binary or string arrays, not {kind}")
    validity, offsets, data = array.buffers()[:3]
    if array.null_count == 0:
        validity = None
    return (validity, offsets, data if data is not None else b"", array.offset, large)


def int64_column(array: Any) -> tuple:
    """An Arrow int64 or timestamp array (milliseconds since the epoch; other units are converted) as the
    encoder's timestamps description ``(validity or None, values, array offset)``; nulls mean now."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_timestamp(array.type):
        if array.type.unit != "ms":
            array = array.cast(pa.timestamp("ms", tz=array.type.tz), safe=False)
        array = array.view(pa.int64())
    elif not pa.types.is_int64(array.type):
        array = array.cast(pa.int64())
    validity, data = array.buffers()[:2]
    return (validity if array.null_count else None, data, array.offset)


def is_arrow(obj: Any) -> bool:
    return isinstance(obj, (pa.Array, pa.ChunkedArray))


def is_table(obj: Any) -> bool:
    return isinstance(obj, (pa.Table, pa.RecordBatch))

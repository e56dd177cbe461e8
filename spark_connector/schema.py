"""The source's schema, exactly Spark's Kafka source's (KafkaRecordToRowConverter), and its Arrow twin.

Rows leave the readers as Arrow record batches whose types are the ones Spark's Arrow conversion
expects for that schema: binary, string, int32, int64, timestamp[us, tz=UTC], and for headers
list<struct<key: string, value: binary>>.
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from ..clients.types import ConsumerRecord

_HEADER_SPARK = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
_HEADER_ARROW = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])


def spark_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(_HEADER_SPARK)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", pa.list_(_HEADER_ARROW)))
    return pa.schema(fields)


def to_record_batch(records: Sequence[ConsumerRecord], include_headers: bool) -> pa.RecordBatch:
    """One Arrow batch of consumer records (all of one partition)."""
    n = len(records)
    topic = records[0].topic if n else ""
    partition = records[0].partition if n else 0
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([topic])).cast(pa.string())
        if n else pa.array([], pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp * 1000 for r in records], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    if include_headers:
        columns.append(pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records],
                                pa.list_(_HEADER_ARROW)))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))

"""The source's schema, exactly Spark's Kafka source's (KafkaRecordToRowConverter), and its Arrow twin.

Rows leave the readers as Arrow record batches whose types are the ones Spark's Arrow conversion
expects for that schema (``odradek.protocol.records.arrow.kafka_schema``, what ``poll_arrow`` returns):
binary, string, int32, int64, timestamp[us, tz=UTC], and for headers list<struct<key: string, value: binary>>.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from ..protocol.records.arrow import kafka_schema as arrow_schema

_HEADER_SPARK = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


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


__all__ = ["arrow_schema", "spark_schema"]

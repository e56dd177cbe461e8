"""Typed ``key``/``value`` columns through the schema registry: options ``valueFormat`` / ``keyFormat`` (avro,
protobuf or json) with ``schemaRegistryUrl``; the subject is ``valueSubject`` / ``keySubject``, by default
``<topic>-value`` / ``<topic>-key`` (Confluent's TopicNameStrategy, for one subscribed topic or the sink's
``topic``); ``schemaRegistryAuth`` = USER:PASSWORD for basic auth.

The reader schema is the subject's latest version when the query is planned (on the driver), so the columns'
Spark types are fixed for the query; each record is decoded with the schema its frame names and shown in the
reader's shape (``registry_codecs``). The sink encodes the struct column with that latest version and frames
it with its id. Without these options nothing changes: ``key`` and ``value`` stay binary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import BinaryType, DataType, StructField, StructType

from ..schema_registry.wire import RegistryClient, unframe
from .options import lower_keys
from .registry_codecs import CODECS

COLUMNS = ("key", "value")


@dataclass(frozen=True)
class ColumnSchema:
    column: str  # key | value
    format: str  # avro | protobuf | json
    reader: dict[str, Any]  # the subject's version as the registry answers it (id, schema, references ...)


@dataclass(frozen=True)
class TypedColumns:
    url: str
    auth: str | None
    columns: tuple[ColumnSchema, ...]

    def codec(self, column: ColumnSchema) -> Any:
        key = (self.url, column.column, column.format, json.dumps(column.reader, sort_keys=True))
        found = _CODECS.get(key)
        if found is None:  # one per Python worker: writer schemas fetched once per id
            client = RegistryClient(self.url, self.auth)
            found = _CODECS[key] = CODECS[column.format](client, column.reader)
        return found

    def spark_types(self) -> dict[str, DataType]:
        return {c.column: self.codec(c).spark_type() for c in self.columns}

    def source_schema(self, schema: StructType) -> StructType:
        types = self.spark_types()
        return StructType([StructField(f.name, types.get(f.name, f.dataType), f.nullable) for f in schema.fields])

    def sink_schema(self, schema: StructType) -> StructType:
        """The schema the sink's checks see: the typed columns as the binary they are encoded into."""
        return StructType([StructField(f.name, BinaryType() if f.name.lower() in {c.column for c in self.columns}
                                       else f.dataType, f.nullable) for f in schema.fields])


_CODECS: dict[tuple[str, str, str, str], Any] = {}


def typed_columns(options: Mapping[str, Any], topic: str | None) -> TypedColumns | None:
    """The typed columns the options ask for (the reader schemas looked up now), or None."""
    opts = lower_keys(options)
    wanted = {c: opts[f"{c}format"].strip().lower() for c in COLUMNS if opts.get(f"{c}format", "").strip()}
    if not wanted:
        return None
    for column, fmt in wanted.items():
        if fmt not in CODECS:
            raise ValueError(f"Option '{column}Format' must be one of {', '.join(sorted(CODECS))}, not '{fmt}'")
    url = opts.get("schemaregistryurl", "").strip()
    if not url:
        raise ValueError("Option 'schemaRegistryUrl' must be specified with 'keyFormat' or 'valueFormat'")
    auth = opts.get("schemaregistryauth") or None
    client = RegistryClient(url, auth)
    columns = []
    for column, fmt in wanted.items():
        subject = opts.get(f"{column}subject", "").strip()
        if not subject:
            if topic is None:
                raise ValueError(f"Option '{column}Subject' must be specified unless one topic is read or written")
            subject = f"{topic}-{column}"
        reader = client.version(subject, "latest", fmt="serialized" if fmt == "protobuf" else None)
        columns.append(ColumnSchema(column, fmt, reader))
    return TypedColumns(url, auth, tuple(columns))


def decode_batches(batches: Iterator[pa.RecordBatch], typed: TypedColumns | None) -> Iterator[pa.RecordBatch]:
    """The source's Arrow batches with the typed columns decoded (a tombstone stays null)."""
    if typed is None:
        yield from batches
        return
    targets = {c.column: (c, to_arrow_type(t, timezone="UTC")) for c, t in
               ((c, typed.codec(c).spark_type()) for c in typed.columns)}
    for batch in batches:
        arrays, fields = list(batch.columns), list(batch.schema)
        for index, field in enumerate(batch.schema):
            if field.name not in targets:
                continue
            column, arrow_type = targets[field.name]
            codec = typed.codec(column)
            protobuf = column.format == "protobuf"
            values = []
            for data in batch.column(index).to_pylist():
                if data is None:
                    values.append(None)
                    continue
                schema_id, indexes, payload = unframe(data, protobuf)
                values.append(codec.decode(schema_id, indexes, payload))
            arrays[index] = pa.array(values, type=arrow_type)
            fields[index] = pa.field(field.name, arrow_type)
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def encode_batches(batches: Iterator[pa.RecordBatch], typed: TypedColumns | None) -> Iterator[pa.RecordBatch]:
    """The sink's Arrow batches with the typed columns encoded into framed binary."""
    if typed is None:
        yield from batches
        return
    columns = {c.column: c for c in typed.columns}
    for batch in batches:
        arrays, fields = list(batch.columns), list(batch.schema)
        for index, field in enumerate(batch.schema):
            column = columns.get(field.name.lower())
            if column is None:
                continue
            codec = typed.codec(column)
            arrays[index] = pa.array([None if v is None else codec.encode(v)
                                      for v in batch.column(index).to_pylist()], type=pa.binary())
            fields[index] = pa.field(field.name, pa.binary())
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

"""Record values in the schema registry's formats <-> Spark values, one codec per format: the Spark type a
reader schema gives, decoding a framed payload (written with any registered schema) into the reader schema's
shape, and encoding a row with the reader schema.

- Avro (fastavro): a payload is read with its writer schema (fetched by id) and resolved to the reader schema,
  Avro's schema resolution: a compatible evolution mid-topic decodes into the reader's columns.
- Protobuf (protobuf): decoded with the reader's message, the message indexes of the frame choosing it; wire
  compatibility makes added and removed fields work as in any Protobuf reader.
- JSON Schema: parsed JSON, the reader schema's properties as columns (other properties dropped).
"""

from __future__ import annotations

import base64
import importlib
import io
import json
from typing import Any

from pyspark.sql.types import (
    ArrayType, BinaryType, BooleanType, DataType, DateType, DoubleType, FloatType, IntegerType, LongType, MapType,
    StringType, StructField, StructType, TimestampType,
)

from ..schema_registry.wire import RegistryClient, frame

_MAX_DEPTH = 16  # recursive schemas: deeper levels become JSON strings


class AvroCodec:
    def __init__(self, client: RegistryClient, reader: dict[str, Any]) -> None:
        import fastavro  # noqa: PLC0415 (only where the format is used)
        self.fastavro = fastavro
        self.client = client
        self.reader_id = reader["id"]
        self.named: dict[str, Any] = {}
        self.reader = self._parse(reader)
        self._writers: dict[int, Any] = {self.reader_id: self.reader}

    def _parse(self, schema: dict[str, Any]) -> Any:
        named: dict[str, Any] = {}
        for ref in schema.get("references") or []:
            self._parse_into(self.client.version(ref["subject"], ref["version"]), named)
        self.named.update(named)
        return self.fastavro.parse_schema(json.loads(schema["schema"]), named_schemas=named)

    def _parse_into(self, schema: dict[str, Any], named: dict[str, Any]) -> None:
        for ref in schema.get("references") or []:
            self._parse_into(self.client.version(ref["subject"], ref["version"]), named)
        self.fastavro.parse_schema(json.loads(schema["schema"]), named_schemas=named)

    def spark_type(self) -> DataType:
        return _avro_type(self.reader, {}, 0)

    def decode(self, schema_id: int, indexes: list[int], payload: memoryview) -> Any:
        writer = self._writers.get(schema_id)
        if writer is None:
            writer = self._writers[schema_id] = self._parse(self.client.schema_by_id(schema_id))
        return self.fastavro.schemaless_reader(io.BytesIO(payload), writer, self.reader)

    def encode(self, value: Any) -> bytes:
        out = io.BytesIO()
        self.fastavro.schemaless_writer(out, self.reader, value)
        return frame(self.reader_id, out.getvalue())


def _avro_type(schema: Any, names: dict[str, DataType], depth: int) -> DataType:
    if depth > _MAX_DEPTH:
        return StringType()
    if isinstance(schema, str):
        primitive = {"boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
                     "double": DoubleType(), "bytes": BinaryType(), "string": StringType(), "null": StringType()}
        return primitive.get(schema) or names.get(schema, StringType())
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        return _avro_type(branches[0], names, depth) if len(branches) == 1 else StringType()
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros"):
        return TimestampType()
    if logical == "date":
        return DateType()
    if kind == "record":
        struct = StructType([StructField(f["name"], _avro_type(f["type"], names, depth + 1)) for f in schema["fields"]])
        names[schema.get("name", "")] = struct
        return struct
    if kind == "enum":
        return StringType()
    if kind == "fixed":
        return BinaryType()
    if kind == "array":
        return ArrayType(_avro_type(schema["items"], names, depth + 1))
    if kind == "map":
        return MapType(StringType(), _avro_type(schema["values"], names, depth + 1))
    return _avro_type(kind, names, depth)


class ProtobufCodec:
    def __init__(self, client: RegistryClient, reader: dict[str, Any], message_indexes: list[int] | None = None
                 ) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool  # noqa: PLC0415
        self.client = client
        self.reader_id = reader["id"]
        self.pool = descriptor_pool.DescriptorPool()
        self._added: set[str] = set()
        self._descriptor_pb2 = descriptor_pb2
        self.file = self._add(reader, "__reader__.proto")
        self.indexes = message_indexes or [0]
        self._classes: dict[tuple[int, ...], Any] = {}

    def _add(self, schema: dict[str, Any], name: str) -> Any:
        proto = self._descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema["schema"]))
        proto.name = name
        given = {}
        for ref in schema.get("references") or []:
            given[ref["name"]] = self.client.version(ref["subject"], ref["version"], fmt="serialized")
        for dependency in proto.dependency:
            if dependency in self._added:
                continue
            if dependency in given:
                self._add(given[dependency], dependency)
            elif dependency.startswith("google/protobuf/"):
                module = importlib.import_module("google.protobuf." + dependency[16:-6] + "_pb2")
                self.pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
                self._added.add(dependency)
        self._added.add(name)
        self.pool.Add(proto)
        return self.pool.FindFileByName(name)

    def _message(self, indexes: list[int]) -> Any:
        key = tuple(indexes)
        found = self._classes.get(key)
        if found is None:
            from google.protobuf import message_factory  # noqa: PLC0415
            descriptor = list(self.file.message_types_by_name.values())[indexes[0]]  # in declaration order
            for index in indexes[1:]:
                descriptor = descriptor.nested_types[index]
            found = self._classes[key] = message_factory.GetMessageClass(descriptor)
        return found

    def spark_type(self) -> DataType:
        return _proto_type(self._message(self.indexes).DESCRIPTOR, 0)

    def decode(self, schema_id: int, indexes: list[int], payload: memoryview) -> Any:
        return _proto_value(self._message(indexes).FromString(bytes(payload)))

    def encode(self, value: Any) -> bytes:
        message = self._message(self.indexes)()
        _fill(message, value or {})
        return frame(self.reader_id, message.SerializeToString(), self.indexes)


def _proto_scalar(field: Any) -> DataType:
    t = field.type
    if t in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32):
        return IntegerType()
    if t in (field.TYPE_INT64, field.TYPE_SINT64, field.TYPE_SFIXED64, field.TYPE_UINT32, field.TYPE_FIXED32,
             field.TYPE_UINT64, field.TYPE_FIXED64):
        return LongType()
    return {field.TYPE_FLOAT: FloatType(), field.TYPE_DOUBLE: DoubleType(), field.TYPE_BOOL: BooleanType(),
            field.TYPE_BYTES: BinaryType()}.get(t, StringType())  # strings and enum names


def _repeated(field: Any) -> bool:
    """protobuf 6+ has ``is_repeated``; older releases only ``label``."""
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _proto_type(descriptor: Any, depth: int) -> DataType:
    fields = []
    for field in descriptor.fields:
        if _is_map(field):
            entry = field.message_type.fields_by_name
            kind: DataType = MapType(_proto_field_type(entry["key"], depth), _proto_field_type(entry["value"], depth))
        else:
            kind = _proto_field_type(field, depth)
            if _repeated(field):
                kind = ArrayType(kind)
        fields.append(StructField(field.name, kind))
    return StructType(fields)


def _proto_field_type(field: Any, depth: int) -> DataType:
    if field.message_type is not None:
        return _proto_type(field.message_type, depth + 1) if depth < _MAX_DEPTH else StringType()
    return _proto_scalar(field)


def _proto_single(field: Any, value: Any) -> Any:
    if field.message_type is not None:
        return _proto_value(value)
    if field.enum_type is not None:
        found = field.enum_type.values_by_number.get(value)
        return found.name if found is not None else str(value)
    return value


def _proto_value(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if _is_map(field):
            entry = field.message_type.fields_by_name["value"]
            out[field.name] = {k: _proto_single(entry, v) for k, v in value.items()}
        elif _repeated(field):
            out[field.name] = [_proto_single(field, v) for v in value]
        elif field.message_type is not None and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _proto_single(field, value)
    return out


def _proto_input(field: Any, value: Any) -> Any:
    if field.enum_type is not None and isinstance(value, str):
        return field.enum_type.values_by_name[value].number
    return value


def _fill(message: Any, value: dict[str, Any]) -> None:
    for field in message.DESCRIPTOR.fields:
        given = value.get(field.name)
        if given is None:
            continue
        target = getattr(message, field.name)
        if _is_map(field):
            entry = field.message_type.fields_by_name["value"]
            for k, v in (given.items() if isinstance(given, dict) else given):
                if entry.message_type is not None:
                    _fill(target[k], v)
                else:
                    target[k] = _proto_input(entry, v)
        elif _repeated(field):
            for item in given:
                if field.message_type is not None:
                    _fill(target.add(), item)
                else:
                    target.append(_proto_input(field, item))
        elif field.message_type is not None:
            _fill(target, given)
        else:
            setattr(message, field.name, _proto_input(field, given))


class JsonCodec:
    def __init__(self, client: RegistryClient, reader: dict[str, Any]) -> None:
        self.reader_id = reader["id"]
        self.schema = json.loads(reader["schema"])

    def spark_type(self) -> DataType:
        return _json_type(self.schema, self.schema, 0)

    def decode(self, schema_id: int, indexes: list[int], payload: memoryview) -> Any:
        return json.loads(bytes(payload))

    def encode(self, value: Any) -> bytes:
        return frame(self.reader_id, json.dumps(_drop_nulls(value), separators=(",", ":")).encode())


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _json_type(schema: Any, root: Any, depth: int) -> DataType:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return StringType()
    if "$ref" in schema and schema["$ref"].startswith("#/"):
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return _json_type(target, root, depth + 1)
    kinds = schema.get("type")
    kinds = [k for k in ([kinds] if isinstance(kinds, str) else kinds or []) if k != "null"]
    kind = kinds[0] if len(kinds) == 1 else ("object" if "properties" in schema else None)
    if kind == "object" and "properties" in schema:
        return StructType([StructField(name, _json_type(sub, root, depth + 1))
                           for name, sub in schema["properties"].items()])
    if kind == "array":
        return ArrayType(_json_type(schema.get("items", {}), root, depth + 1))
    return {"integer": LongType(), "number": DoubleType(), "boolean": BooleanType(),
            "string": StringType()}.get(kind or "", StringType())


CODECS = {"avro": AvroCodec, "protobuf": ProtobufCodec, "json": JsonCodec}

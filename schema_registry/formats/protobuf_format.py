"""Protobuf: a schema is ``.proto`` text (compiled by protoc from the ``grpcio-tools`` package) or a base64
``FileDescriptorProto`` (what confluent-kafka's Python serializer registers). Either way it becomes a
``FileDescriptorProto``, compared by the differences Confluent's registry refuses (its other differences, such as
a field added or removed, a message added or moved, any enum change, are compatible):

PACKAGE_CHANGED, MESSAGE_REMOVED, FIELD_KIND_CHANGED (scalar / message / enum), FIELD_SCALAR_KIND_CHANGED
(outside the wire-compatible groups), FIELD_NAMED_TYPE_CHANGED, FIELD_NUMERIC_LABEL_CHANGED (repeated <->
singular for a numeric field), REQUIRED_FIELD_ADDED / _REMOVED (proto2), ONEOF_FIELD_REMOVED,
MULTIPLE_FIELDS_MOVED_TO_ONEOF, FIELD_MOVED_TO_EXISTING_ONEOF.

Protobuf's rules are symmetric in practice, so "reader" and "writer" are Confluent's update and original.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from . import Dependencies, InvalidSchema

F = descriptor_pb2.FieldDescriptorProto
_LENGTH_DELIMITED = {F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE}
_SCALAR_GROUPS = [{F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
                  {F.TYPE_SINT32, F.TYPE_SINT64}, {F.TYPE_FIXED32, F.TYPE_SFIXED32},
                  {F.TYPE_FIXED64, F.TYPE_SFIXED64}, {F.TYPE_STRING, F.TYPE_BYTES}]


@dataclass(frozen=True)
class ProtobufSchema:
    schema_type = "PROTOBUF"
    canonical: str
    descriptor: descriptor_pb2.FileDescriptorProto

    def serialized(self) -> str:
        """The base64 FileDescriptorProto (``?format=serialized``)."""
        return base64.b64encode(self.descriptor.SerializeToString(deterministic=True)).decode("ascii")

    def reader_errors(self, writer: Any) -> list[str]:
        if not isinstance(writer, ProtobufSchema):
            return ["Incompatible because of different schema type"]
        return [f"Found incompatible change: {d}" for d in differences(writer.descriptor, self.descriptor)]


def _kind(field: F) -> str:
    return {F.TYPE_MESSAGE: "message", F.TYPE_GROUP: "message", F.TYPE_ENUM: "enum"}.get(field.type, "scalar")


def _messages(prefix: str, types: Any) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
    for message in types:
        name = f"{prefix}{message.name}"
        if not message.options.map_entry:
            yield name, message
        yield from _messages(name + ".", message.nested_type)


def differences(original: descriptor_pb2.FileDescriptorProto, update: descriptor_pb2.FileDescriptorProto
                ) -> list[str]:
    found = []
    if original.package != update.package:
        found.append("PACKAGE_CHANGED")
    updated = dict(_messages("", update.message_type))
    for name, message in _messages("", original.message_type):
        if name not in updated:
            found.append(f"MESSAGE_REMOVED #/{name}")
        else:
            found.extend(f"{d} #/{name}" for d in _message_differences(message, updated[name]))
    return found


def _oneof_of(message: descriptor_pb2.DescriptorProto, field: F) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return message.oneof_decl[field.oneof_index].name


def _message_differences(original: descriptor_pb2.DescriptorProto, update: descriptor_pb2.DescriptorProto
                         ) -> list[str]:
    found = []
    before = {f.number: f for f in original.field}
    after = {f.number: f for f in update.field}
    old_oneofs = {_oneof_of(original, f) for f in original.field} - {None}
    moved_into: dict[str, int] = {}
    for number in sorted(set(before) | set(after)):
        old, new = before.get(number), after.get(number)
        where = f"field {number}"
        if new is None:
            if old.label == F.LABEL_REQUIRED:
                found.append(f"REQUIRED_FIELD_REMOVED {where}")
            if _oneof_of(original, old) is not None:
                found.append(f"ONEOF_FIELD_REMOVED {where}")
            continue
        if old is None:
            if new.label == F.LABEL_REQUIRED:
                found.append(f"REQUIRED_FIELD_ADDED {where}")
            continue
        found.extend(f"{d} {where}" for d in _field_differences(old, new))
        old_oneof, new_oneof = _oneof_of(original, old), _oneof_of(update, new)
        if old_oneof is None and new_oneof is not None:
            if new_oneof in old_oneofs:
                found.append(f"FIELD_MOVED_TO_EXISTING_ONEOF {where}")
            moved_into[new_oneof] = moved_into.get(new_oneof, 0) + 1
    found.extend(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF {name}" for name, count in moved_into.items() if count > 1)
    return found


def _field_differences(old: F, new: F) -> list[str]:
    if _kind(old) != _kind(new):
        return ["FIELD_KIND_CHANGED"]
    found = []
    if _kind(old) == "scalar":
        if old.type != new.type and not any(old.type in g and new.type in g for g in _SCALAR_GROUPS):
            found.append("FIELD_SCALAR_KIND_CHANGED")
    elif old.type_name.rsplit(".", 1)[-1] != new.type_name.rsplit(".", 1)[-1]:
        found.append("FIELD_NAMED_TYPE_CHANGED")
    if (old.label == F.LABEL_REPEATED) != (new.label == F.LABEL_REPEATED) and old.type not in _LENGTH_DELIMITED:
        found.append("FIELD_NUMERIC_LABEL_CHANGED")
    if (old.label == F.LABEL_REQUIRED) != (new.label == F.LABEL_REQUIRED):
        found.append("REQUIRED_FIELD_ADDED" if new.label == F.LABEL_REQUIRED else "REQUIRED_FIELD_REMOVED")
    return found


def _from_base64(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    stripped = "".join(text.split())
    if not stripped or "{" in stripped or ";" in stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
        descriptor = descriptor_pb2.FileDescriptorProto()
        descriptor.ParseFromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return descriptor


def _well_known_dir() -> str:
    import grpc_tools
    return str(Path(grpc_tools.__file__).parent / "_proto")


@functools.lru_cache(maxsize=1024)
def _compile(text: str, dependencies: tuple[tuple[str, str], ...]) -> descriptor_pb2.FileDescriptorProto:
    """``.proto`` text -> its FileDescriptorProto, by protoc in a child process (its errors go to stderr)."""
    with tempfile.TemporaryDirectory(prefix="odradek-proto-") as tmp:
        root = Path(tmp) / "src"
        given = descriptor_pb2.FileDescriptorSet()
        for name, dep in dependencies:
            descriptor = _from_base64(dep)
            if descriptor is not None:
                descriptor.name = name
                given.file.append(descriptor)
            else:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(dep)
        main = root / "__registered__.proto"
        main.parent.mkdir(parents=True, exist_ok=True)
        main.write_text(text)
        out = Path(tmp) / "out.pb"
        args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"-I{_well_known_dir()}",
                f"--descriptor_set_out={out}", main.name]
        if given.file:
            (Path(tmp) / "deps.pb").write_bytes(given.SerializeToString())
            args.insert(3, f"--descriptor_set_in={Path(tmp) / 'deps.pb'}")
        done = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if done.returncode:
            raise InvalidSchema((done.stderr or done.stdout).strip().replace(str(root) + "/", ""))
        result = descriptor_pb2.FileDescriptorSet()
        result.ParseFromString(out.read_bytes())
    descriptor = result.file[-1]
    descriptor.name = ""
    return descriptor


def parse(schema: str, dependencies: Dependencies = ()) -> ProtobufSchema:
    descriptor = _from_base64(schema)
    if descriptor is None:
        descriptor = descriptor_pb2.FileDescriptorProto()
        descriptor.CopyFrom(_compile(schema, tuple(dependencies)))
    return ProtobufSchema(schema.strip(), descriptor)

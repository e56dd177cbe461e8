"""Each compatibility level accepting and refusing the evolutions Confluent's documentation says it should, for
Avro, Protobuf and JSON Schema: a history is registered under NONE, the level set, then the next schema
registered (the service on an in-memory state; the REST path is the same code, checked in test_rest_api)."""

from __future__ import annotations

import asyncio
import json

import pytest

from odradek.schema_registry.errors import RestError
from odradek.schema_registry.service import SchemaService
from odradek.schema_registry.state import RegistryState


def avro(*fields: tuple) -> str:
    """A record with fields given as (name, type) or (name, type, default)."""
    return json.dumps({"type": "record", "name": "R", "fields": [
        {"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2 else {})} for f in fields]})


def proto(body: str, package: str = "p") -> str:
    return f'syntax = "proto3";\npackage {package};\n{body}\n'


def proto2(body: str) -> str:
    return f'syntax = "proto2";\npackage p;\n{body}\n'


def json_schema(properties: dict, required: list | None = None, additional: bool | None = None, **more) -> str:
    schema: dict = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = required
    if additional is not None:
        schema["additionalProperties"] = additional
    return json.dumps(schema)


S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}

# (format, level, history, new schema, accepted)
CASES = [
    # Avro: the table of Confluent's "Compatibility types" page
    ("AVRO", "BACKWARD", [avro(("a", "int"), ("b", "string"))], avro(("a", "int")), True),  # delete a field
    ("AVRO", "BACKWARD", [avro(("a", "int"))], avro(("a", "int"), ("b", "string", "x")), True),  # add optional
    ("AVRO", "BACKWARD", [avro(("a", "int"))], avro(("a", "int"), ("b", "string")), False),  # add, no default
    ("AVRO", "BACKWARD", [avro(("a", "int"))], avro(("a", "long")), True),  # int promoted to long
    ("AVRO", "BACKWARD", [avro(("a", "long"))], avro(("a", "int")), False),
    ("AVRO", "FORWARD", [avro(("a", "int"))], avro(("a", "int"), ("b", "string")), True),  # add a field
    ("AVRO", "FORWARD", [avro(("a", "int"), ("b", "string", "x"))], avro(("a", "int")), True),  # delete optional
    ("AVRO", "FORWARD", [avro(("a", "int"), ("b", "string"))], avro(("a", "int")), False),  # delete, no default
    ("AVRO", "FULL", [avro(("a", "int"))], avro(("a", "int"), ("b", "string", "x")), True),
    ("AVRO", "FULL", [avro(("a", "int"), ("b", "string", "x"))], avro(("a", "int")), True),
    ("AVRO", "FULL", [avro(("a", "int"))], avro(("a", "int"), ("b", "string")), False),
    ("AVRO", "FULL", [avro(("a", "int"), ("b", "string"))], avro(("a", "int")), False),
    ("AVRO", "NONE", [avro(("a", "int"))], avro(("a", "string")), True),
    # transitive: the new schema reads the latest version but not the first
    ("AVRO", "BACKWARD", [avro(("f", "int")), avro()], avro(("f", "string", "x")), True),
    ("AVRO", "BACKWARD_TRANSITIVE", [avro(("f", "int")), avro()], avro(("f", "string", "x")), False),
    ("AVRO", "FORWARD", [avro(("f", "string", "x")), avro()], avro(("f", "int")), True),
    ("AVRO", "FORWARD_TRANSITIVE", [avro(("f", "string", "x")), avro()], avro(("f", "int")), False),
    ("AVRO", "FULL", [avro(("f", "string", "x")), avro()], avro(("f", "int", 0)), True),
    ("AVRO", "FULL_TRANSITIVE", [avro(("f", "string", "x")), avro()], avro(("f", "int", 0)), False),
    ("AVRO", "FULL_TRANSITIVE", [avro(("f", "string", "x")), avro()], avro(("g", "int", 0)), True),
    # Protobuf: Confluent's incompatible differences, for both directions
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")], proto("message M { int32 a = 1; string b = 2; }"),
     True),  # field added
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; string b = 2; }")], proto("message M { int32 a = 1; }"),
     True),  # field removed
    ("PROTOBUF", "FULL", [proto("message M { int32 a = 1; }")], proto("message M { int32 renamed = 1; }"), True),
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")], proto("message M { int64 a = 1; }"), True),
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")], proto("message M { string a = 1; }"), False),
    ("PROTOBUF", "FORWARD", [proto("message M { int32 a = 1; }")], proto("message M { string a = 1; }"), False),
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }\nmessage N { int32 b = 1; }")],
     proto("message M { int32 a = 1; }"), False),  # message removed
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")],
     proto("message M { int32 a = 1; }\nmessage N { int32 b = 1; }"), True),  # message added
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")], proto("message M { int32 a = 1; }", "q"),
     False),  # package changed
    ("PROTOBUF", "BACKWARD", [proto("message M { N a = 1; }\nmessage N {}\nmessage O {}")],
     proto("message M { O a = 1; }\nmessage N {}\nmessage O {}"), False),  # named type changed
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; int32 b = 2; }")],
     proto("message M { oneof c { int32 a = 1; int32 b = 2; } }"), False),  # fields moved into a oneof
    ("PROTOBUF", "BACKWARD", [proto("message M { int32 a = 1; }")],
     proto("message M { oneof c { int32 a = 1; } }"), True),  # one field moved into a new oneof
    ("PROTOBUF", "BACKWARD", [proto2("message M { optional int32 a = 1; }")],
     proto2("message M { optional int32 a = 1; required int32 b = 2; }"), False),  # required field added
    ("PROTOBUF", "BACKWARD", [proto("enum E { A = 0; B = 1; }\nmessage M { E e = 1; }")],
     proto("enum E { A = 0; }\nmessage M { E e = 1; }"), True),  # enum changes are compatible
    ("PROTOBUF", "NONE", [proto("message M { int32 a = 1; }")], proto("message M { string a = 1; }"), True),
    # JSON Schema: content models, required, types, enums, limits
    ("JSON", "BACKWARD", [json_schema({"a": S})], json_schema({"a": S, "b": S}), False),  # added to open model
    ("JSON", "BACKWARD", [json_schema({"a": S}, additional=False)], json_schema({"a": S, "b": S}, additional=False),
     True),  # optional property added to a closed model
    ("JSON", "BACKWARD", [json_schema({"a": S, "b": S})], json_schema({"a": S}), True),  # removed from open model
    ("JSON", "BACKWARD", [json_schema({"a": S, "b": S}, additional=False)], json_schema({"a": S}, additional=False),
     False),  # removed from a closed model
    ("JSON", "FORWARD", [json_schema({"a": S})], json_schema({"a": S, "b": S}), True),
    ("JSON", "FORWARD", [json_schema({"a": S, "b": S})], json_schema({"a": S}), False),
    ("JSON", "BACKWARD", [json_schema({"a": S}, additional=False)],
     json_schema({"a": S, "b": S}, required=["b"], additional=False), False),  # required property added
    ("JSON", "BACKWARD", [json_schema({"a": I})], json_schema({"a": N}), True),  # integer widened to number
    ("JSON", "BACKWARD", [json_schema({"a": N})], json_schema({"a": I}), False),
    ("JSON", "FULL", [json_schema({"a": I})], json_schema({"a": N}), False),
    ("JSON", "BACKWARD", [json_schema({"a": {"enum": ["x", "y"]}})], json_schema({"a": {"enum": ["x", "y", "z"]}}),
     True),
    ("JSON", "BACKWARD", [json_schema({"a": {"enum": ["x", "y"]}})], json_schema({"a": {"enum": ["x"]}}), False),
    ("JSON", "BACKWARD", [json_schema({"a": {"type": "string", "maxLength": 10}})],
     json_schema({"a": {"type": "string", "maxLength": 5}}), False),
    ("JSON", "BACKWARD", [json_schema({"a": {"type": "string", "maxLength": 5}})],
     json_schema({"a": {"type": "string", "maxLength": 10}}), True),
    ("JSON", "BACKWARD_TRANSITIVE", [json_schema({"a": N}, additional=False), json_schema({}, additional=False)],
     json_schema({"a": I}, additional=False), False),
    ("JSON", "BACKWARD", [json_schema({"a": N}, additional=False), json_schema({}, additional=False)],
     json_schema({"a": I}, additional=False), True),
    ("JSON", "NONE", [json_schema({"a": S})], json_schema({"a": I}), True),
]


def _service() -> SchemaService:
    state = RegistryState()

    async def append(records):
        for record in records:
            state.apply(record)
    return SchemaService(state, append)


@pytest.mark.parametrize("schema_type,level,history,new,accepted", CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_level_accepts_or_refuses(schema_type, level, history, new, accepted):
    service = _service()

    async def scenario():
        await service.set_config(None, {"compatibility": "NONE"})
        for schema in history:
            await service.register("s", {"schema": schema, "schemaType": schema_type})
        await service.set_config("s", {"compatibility": level})
        check = service.check("s", "latest", {"schema": new, "schemaType": schema_type}, verbose=True)
        try:
            await service.register("s", {"schema": new, "schemaType": schema_type})
        except RestError as error:
            assert (error.status, error.code) == (409, 409)
            return False, check
        return True, check

    registered, check = asyncio.run(scenario())
    assert registered is accepted
    assert check["is_compatible"] is accepted, check["messages"]
    assert bool(check["messages"]) is not accepted

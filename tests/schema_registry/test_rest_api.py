"""The REST API's answers as Confluent's: bodies, error codes and messages, content type, config and mode,
references, schemas by id, soft and hard deletes."""

from __future__ import annotations

import json

import pytest

from .conftest import CONTENT_TYPE, call

def compact(value) -> str:
    """A schema as the registry stores and shows Avro: compact JSON."""
    return json.dumps(value, separators=(",", ":"))


RECORD = compact({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
RECORD_B = compact({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                                 {"name": "b", "type": "string", "default": ""}]})


@pytest.fixture(scope="module")
def api(registry):
    return registry.url


def test_register_then_read_back_every_way(api):
    status, body, kind = call(f"{api}/subjects/rest-a/versions", "POST", {"schema": RECORD})
    assert status == 200 and kind.startswith(CONTENT_TYPE)
    schema_id = body["id"]
    assert call(f"{api}/subjects/rest-a/versions/1")[1] == {"subject": "rest-a", "version": 1, "id": schema_id,
                                                            "schema": RECORD}
    assert call(f"{api}/subjects/rest-a/versions/latest/schema")[1] == json.loads(RECORD)
    assert call(f"{api}/schemas/ids/{schema_id}")[1] == {"schema": RECORD}
    assert call(f"{api}/schemas/ids/{schema_id}/subjects")[1] == ["rest-a"]
    assert call(f"{api}/schemas/ids/{schema_id}/versions")[1] == [{"subject": "rest-a", "version": 1}]
    assert call(f"{api}/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]
    # the same schema under another subject keeps its id
    assert call(f"{api}/subjects/rest-a2/versions", "POST", {"schema": RECORD})[1] == {"id": schema_id}
    assert call(f"{api}/schemas/ids/{schema_id}/subjects")[1] == ["rest-a", "rest-a2"]
    assert call(f"{api}/subjects/rest-a", "POST", {"schema": RECORD})[1]["version"] == 1


@pytest.mark.parametrize("method,path,body,status,code,message", [
    ("GET", "/subjects/rest-none/versions", None, 404, 40401, "Subject 'rest-none' not found."),
    ("GET", "/subjects/rest-e/versions/7", None, 404, 40402, "Version 7 not found."),
    ("GET", "/schemas/ids/987654", None, 404, 40403, "Schema 987654 not found"),
    ("POST", "/subjects/rest-e", {"schema": RECORD_B}, 404, 40403, "Schema not found"),
    ("GET", "/subjects/rest-e/versions/0", None, 422, 42202, None),
    ("GET", "/subjects/rest-e/versions/x", None, 422, 42202, None),
    ("POST", "/subjects/rest-e/versions", {"schema": "{\"type\": \"recrod\"}"}, 422, 42201, None),
    ("POST", "/subjects/rest-e/versions", {"schema": "{}", "schemaType": "XML"}, 422, 42201, None),
    ("PUT", "/config/rest-e", {"compatibility": "SIDEWAYS"}, 422, 42203,
     "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, "
     "forward_transitive, and full_transitive"),
    ("PUT", "/mode/rest-e", {"mode": "SOMETIMES"}, 422, 42204,
     "Invalid mode. Valid values are READWRITE, READONLY, and IMPORT."),
    ("GET", "/config/rest-e", None, 404, 40408, "Subject 'rest-e' does not have subject-level compatibility "
                                                "configured"),
    ("DELETE", "/subjects/rest-never", None, 404, 40401, "Subject 'rest-never' not found."),
])
def test_errors(api, method, path, body, status, code, message):
    call(f"{api}/subjects/rest-e/versions", "POST", {"schema": RECORD})
    got_status, got, kind = call(api + path, method, body)
    assert kind.startswith(CONTENT_TYPE)
    assert (got_status, got["error_code"]) == (status, code), got
    if message is not None:
        assert got["message"] == message


def test_incompatible_schema_is_409_with_details(api):
    call(f"{api}/subjects/rest-i/versions", "POST", {"schema": RECORD})
    breaking = RECORD.replace('"int"', '"string"')
    status, body, _ = call(f"{api}/subjects/rest-i/versions", "POST", {"schema": breaking})
    assert (status, body["error_code"]) == (409, 409)
    assert body["message"].startswith('Schema being registered is incompatible with an earlier schema for subject '
                                      '"rest-i"')
    assert call(f"{api}/compatibility/subjects/rest-i/versions/latest", "POST", {"schema": breaking})[1] == \
        {"is_compatible": False}
    verbose = call(f"{api}/compatibility/subjects/rest-i/versions/1?verbose=true", "POST", {"schema": RECORD_B})[1]
    assert verbose == {"is_compatible": True, "messages": []}


def test_config_global_and_per_subject(api):
    assert call(f"{api}/config")[1] == {"compatibilityLevel": "BACKWARD"}
    assert call(f"{api}/config/rest-c", "PUT", {"compatibility": "full_transitive"})[1] == \
        {"compatibility": "FULL_TRANSITIVE"}
    assert call(f"{api}/config/rest-c")[1] == {"compatibilityLevel": "FULL_TRANSITIVE"}
    assert call(f"{api}/config/rest-other?defaultToGlobal=true")[1] == {"compatibilityLevel": "BACKWARD"}
    assert call(f"{api}/config/rest-c", "DELETE")[1] == {"compatibilityLevel": "FULL_TRANSITIVE"}
    assert call(f"{api}/config/rest-c")[1]["error_code"] == 40408


def test_modes(api):
    call(f"{api}/subjects/rest-m/versions", "POST", {"schema": RECORD})
    assert call(f"{api}/mode")[1] == {"mode": "READWRITE"}
    assert call(f"{api}/mode/rest-m", "PUT", {"mode": "READONLY"})[1] == {"mode": "READONLY"}
    status, body, _ = call(f"{api}/subjects/rest-m/versions", "POST", {"schema": RECORD_B})
    assert (status, body["error_code"]) == (422, 42205)
    assert call(f"{api}/mode/rest-m", "PUT", {"mode": "IMPORT"})[1]["error_code"] == 42205  # has versions
    assert call(f"{api}/mode/rest-m", "DELETE")[1] == {"mode": "READONLY"}
    # IMPORT keeps the ids and versions given (a migration from another registry)
    assert call(f"{api}/mode/rest-imp", "PUT", {"mode": "IMPORT"})[1] == {"mode": "IMPORT"}
    status, body, _ = call(f"{api}/subjects/rest-imp/versions", "POST", {"schema": RECORD_B, "id": 5000, "version": 3})
    assert (status, body) == (200, {"id": 5000})
    assert call(f"{api}/subjects/rest-imp/versions")[1] == [3]
    assert call(f"{api}/subjects/rest-x/versions", "POST", {"schema": RECORD, "id": 5001})[1]["error_code"] == 42205


def test_soft_then_hard_delete(api):
    for schema in (RECORD, RECORD_B):
        call(f"{api}/subjects/rest-d/versions", "POST", {"schema": schema})
    assert call(f"{api}/subjects/rest-d/versions/1?permanent=true", "DELETE")[1]["error_code"] == 40407
    assert call(f"{api}/subjects/rest-d/versions/1", "DELETE")[1] == 1
    assert call(f"{api}/subjects/rest-d/versions/1", "DELETE")[1]["error_code"] == 40406
    assert call(f"{api}/subjects/rest-d/versions")[1] == [2]
    assert call(f"{api}/subjects/rest-d/versions?deleted=true")[1] == [1, 2]
    assert call(f"{api}/subjects/rest-d?permanent=true", "DELETE")[1]["error_code"] == 40405
    assert call(f"{api}/subjects/rest-d", "DELETE")[1] == [2]
    assert "rest-d" not in call(f"{api}/subjects")[1]
    assert "rest-d" in call(f"{api}/subjects?deleted=true")[1]
    assert call(f"{api}/subjects/rest-d", "DELETE")[1]["error_code"] == 40404
    # a new registration continues the version numbers
    assert call(f"{api}/subjects/rest-d/versions", "POST", {"schema": RECORD})[0] == 200
    assert call(f"{api}/subjects/rest-d/versions")[1] == [3]
    call(f"{api}/subjects/rest-d", "DELETE")
    assert call(f"{api}/subjects/rest-d?permanent=true", "DELETE")[1] == [1, 2, 3]
    assert call(f"{api}/subjects?deleted=true")[1].count("rest-d") == 0


def test_references(api):
    address = compact({"type": "record", "name": "Address", "namespace": "t",
                          "fields": [{"name": "city", "type": "string"}]})
    call(f"{api}/subjects/rest-address/versions", "POST", {"schema": address})
    person = compact({"type": "record", "name": "Person", "namespace": "t",
                         "fields": [{"name": "home", "type": "t.Address"}]})
    refs = [{"name": "t.Address", "subject": "rest-address", "version": 1}]
    status, body, _ = call(f"{api}/subjects/rest-person/versions", "POST", {"schema": person, "references": refs})
    assert status == 200, body
    assert call(f"{api}/schemas/ids/{body['id']}")[1] == {"references": refs, "schema": person}
    assert call(f"{api}/subjects/rest-address/versions/1/referencedby")[1] == [body["id"]]
    assert call(f"{api}/subjects/rest-address/versions/1", "DELETE")[1]["error_code"] == 42206
    missing = [{"name": "t.Address", "subject": "rest-nothing", "version": 1}]
    assert call(f"{api}/subjects/rest-p2/versions", "POST", {"schema": person, "references": missing})[1][
        "error_code"] == 42201


def test_protobuf_serialized_format(api):
    text = 'syntax = "proto3";\npackage t;\nmessage M { string s = 1; }\n'
    schema_id = call(f"{api}/subjects/rest-proto/versions", "POST", {"schema": text, "schemaType": "PROTOBUF"})[1]["id"]
    assert call(f"{api}/schemas/ids/{schema_id}")[1] == {"schemaType": "PROTOBUF", "schema": text.strip()}
    from google.protobuf import descriptor_pb2
    import base64
    serialized = call(f"{api}/schemas/ids/{schema_id}?format=serialized")[1]["schema"]
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert (descriptor.package, descriptor.message_type[0].name) == ("t", "M")

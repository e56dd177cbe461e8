"""The `_schemas` records in Confluent's JSON formats: what we write, and a topic as Confluent's registry writes
it (keys with ``magic``, AVRO without ``schemaType``, DELETE_SUBJECT, tombstones) read into the same state."""

from __future__ import annotations

import json

from odradek.schema_registry.records import (Record, SchemaValue, config_record, delete_subject_record, mode_record,
                                             schema_record)
from odradek.schema_registry.state import RegistryState


def confluent(key: dict, value: dict | None) -> Record:
    decoded = Record.decode(json.dumps(key).encode(), None if value is None else json.dumps(value).encode())
    assert decoded is not None
    return decoded


def test_records_we_write_are_confluents_formats():
    key, value = schema_record(SchemaValue("s", 2, 7, '"string"')).encode()
    assert json.loads(key) == {"keytype": "SCHEMA", "subject": "s", "version": 2, "magic": 1}
    assert json.loads(value) == {"subject": "s", "version": 2, "id": 7, "schema": '"string"', "deleted": False}
    key, value = schema_record(SchemaValue("p", 1, 8, "x", "PROTOBUF", (("dep.proto", "d", 3),))).encode()
    assert json.loads(value)["schemaType"] == "PROTOBUF"
    assert json.loads(value)["references"] == [{"name": "dep.proto", "subject": "d", "version": 3}]
    assert [json.loads(part) for part in config_record(None, "FULL").encode()] == \
        [{"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "FULL"}]
    assert [json.loads(part) for part in mode_record("s", "READONLY").encode()] == \
        [{"keytype": "MODE", "subject": "s", "magic": 0}, {"mode": "READONLY"}]
    assert [json.loads(part) for part in delete_subject_record("s", 3).encode()] == \
        [{"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}, {"subject": "s", "version": 3}]


def test_a_confluent_topic_builds_the_state():
    state = RegistryState()
    for record in [
        confluent({"keytype": "SCHEMA", "subject": "a", "version": 1, "magic": 1},
                  {"subject": "a", "version": 1, "id": 1, "schema": '"string"', "deleted": False}),
        confluent({"keytype": "SCHEMA", "subject": "a", "version": 2, "magic": 1},
                  {"subject": "a", "version": 2, "id": 5, "schema": '"long"', "deleted": False}),
        confluent({"keytype": "SCHEMA", "subject": "b", "version": 1, "magic": 1},
                  {"subject": "b", "version": 1, "id": 1, "schema": '"string"', "deleted": False}),
        confluent({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "FULL"}),
        confluent({"keytype": "CONFIG", "subject": "a", "magic": 0}, {"compatibilityLevel": "NONE"}),
        confluent({"keytype": "MODE", "subject": "b", "magic": 0}, {"mode": "READONLY"}),
        confluent({"keytype": "DELETE_SUBJECT", "subject": "b", "magic": 0}, {"subject": "b", "version": 1}),
        confluent({"keytype": "NOOP", "magic": 0}, None),
        confluent({"keytype": "SCHEMA", "subject": "a", "version": 1, "magic": 1}, None),  # hard delete
    ]:
        state.apply(record)
    assert [v.version for v in state.versions("a")] == [2]
    assert state.versions("b") == [] and [v.deleted for v in state.versions("b", deleted=True)] == [True]
    assert state.max_id == 5 and state.next_version("a") == 3
    assert state.contents[1].schema == '"string"'  # still named by b's (soft-deleted) version
    assert (state.compatibility("a"), state.compatibility("b"), state.mode("b"), state.mode("a")) == \
        ("NONE", "FULL", "READONLY", "READWRITE")
    assert Record.decode(b"not json", b"{}") is None and Record.decode(None, b"{}") is None


def test_a_later_write_reuses_the_key_bytes_the_topic_has():
    """An older registry's key (other field order) is tombstoned with its own bytes, or compaction keeps it."""
    import asyncio

    from odradek.schema_registry.kafka_store import KafkaStore
    from odradek.schema_registry.records import schema_tombstone

    old_key = b'{"subject":"a","version":1,"magic":1,"keytype":"SCHEMA"}'
    value = b'{"subject":"a","version":1,"id":1,"schema":"\\"string\\"","deleted":true}'

    class Fetched:
        def __init__(self, records):
            self.error_code, self.records = 0, records

    class Raw:
        def __init__(self, offset, key, value):
            self.offset, self.key, self.value = offset, key, value

    class FakeClient:
        def __init__(self):
            self.log = [Raw(0, old_key, value)]

        async def fetch(self, topic, partition, offset, max_wait_ms):
            found = [r for r in self.log if r.offset >= offset]
            if not found:
                await asyncio.sleep(0.01)
            return Fetched(found)

        async def produce(self, topic, partition, records, acks):
            base = len(self.log)
            self.log += [Raw(base + i, k, v) for i, (k, v) in enumerate(records)]
            return type("Result", (), {"error_code": 0, "base_offset": base})()

    async def scenario():
        client = FakeClient()
        store = KafkaStore(client, client, RegistryState())
        reader = asyncio.create_task(store._read_loop())
        await store.wait_for(0)
        await store.append([schema_tombstone("a", 1)])
        reader.cancel()
        return client.log[-1], store.state

    written, state = asyncio.run(scenario())
    assert (written.key, written.value) == (old_key, None)
    assert state.versions("a", deleted=True) == []

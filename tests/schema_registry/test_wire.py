"""Confluent's wire format as ours writes and reads it, checked against confluent-kafka's own encoder and
decoder of Protobuf message indexes."""

from __future__ import annotations

import io

import pytest

from odradek.schema_registry.wire import WireFormatError, frame, unframe

serde = pytest.importorskip("confluent_kafka.schema_registry.common.serde")


def test_avro_and_json_frames_are_magic_id_payload():
    data = frame(258, b"payload")
    assert data == b"\x00\x00\x00\x01\x02payload"
    schema_id, indexes, payload = unframe(data)
    assert (schema_id, indexes, bytes(payload)) == (258, [], b"payload")


@pytest.mark.parametrize("indexes", [[0], [1], [2, 0], [0, 5, 300]])
def test_protobuf_message_indexes_match_confluent_kafka(indexes):
    data = frame(7, b"body", indexes)
    theirs = io.BytesIO()
    serde.SchemaId._encode_varints(theirs, indexes)  # count, then the indexes; [0] as the one byte 0
    assert data[5:-4] == theirs.getvalue()
    assert serde.SchemaId._read_index_array(io.BytesIO(data[5:])) == indexes
    schema_id, read, payload = unframe(data, protobuf=True)
    assert (schema_id, read, bytes(payload)) == (7, indexes, b"body")


def test_a_record_without_the_magic_byte_is_refused():
    with pytest.raises(WireFormatError):
        unframe(b"\x01\x00\x00\x00\x01x")
    with pytest.raises(WireFormatError):
        unframe(b"\x00\x00")

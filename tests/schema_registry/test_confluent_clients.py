"""confluent-kafka's SchemaRegistryClient and its Avro, Protobuf and JSON Schema serializers against our
registry, records round-tripping through a topic of the cluster."""

from __future__ import annotations

import pytest

pytest.importorskip("confluent_kafka.schema_registry.avro")

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

AVRO_USER = ('{"type":"record","name":"User","namespace":"odradek.test","fields":'
             '[{"name":"name","type":"string"},{"name":"age","type":"int"}]}')
JSON_USER = '{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}}'


def _protobuf_user_class():
    """A generated-style message class for `message User { string name = 1; int32 age = 2; }`."""
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="odradek_user.proto", package="odradek.test", syntax="proto3")
    message = proto.message_type.add(name="User")
    message.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(name="age", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("odradek.test.User"))


def _round_trip(bootstrap: str, topic: str, values: list, serialize, deserialize) -> list:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=serialize(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(values):
            message = consumer.poll(30)
            assert message is not None, f"no record from {topic} within 30 s; got {got}"
            assert message.error() is None, message.error()
            assert message.value()[0] == 0, "Confluent's framing starts with magic byte 0"
            got.append(deserialize(message.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    return got


@pytest.fixture(scope="module")
def client(registry):
    return SchemaRegistryClient({"url": registry.url})


def test_avro_records_round_trip(single_broker_cluster, client):
    values = [{"name": "ada", "age": 36}, {"name": "alan", "age": 41}]
    got = _round_trip(single_broker_cluster.bootstrap_servers, "sr-avro-users", values,
                      AvroSerializer(client, AVRO_USER), AvroDeserializer(client))
    assert got == values
    latest = client.get_latest_version("sr-avro-users-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"
    assert client.get_schema(latest.schema_id).schema_str == latest.schema.schema_str


def test_protobuf_records_round_trip(single_broker_cluster, client):
    user = _protobuf_user_class()
    config = {"use.deprecated.format": False}
    got = _round_trip(single_broker_cluster.bootstrap_servers, "sr-proto-users",
                      [user(name="ada", age=36), user(name="alan", age=41)],
                      ProtobufSerializer(user, client, config), ProtobufDeserializer(user, config))
    assert [(m.name, m.age) for m in got] == [("ada", 36), ("alan", 41)]
    assert client.get_latest_version("sr-proto-users-value").schema.schema_type == "PROTOBUF"


def test_json_records_round_trip(single_broker_cluster, client):
    values = [{"name": "ada", "age": 36}, {"name": "alan"}]
    got = _round_trip(single_broker_cluster.bootstrap_servers, "sr-json-users", values,
                      JSONSerializer(JSON_USER, client), JSONDeserializer(None, schema_registry_client=client))
    assert got == values
    assert client.get_latest_version("sr-json-users-value").schema.schema_type == "JSON"


def test_client_calls_subjects_config_lookup_and_deletes(client):
    subject = "sr-client-calls"
    first = client.register_schema(subject, Schema(AVRO_USER, "AVRO"))
    again = client.register_schema(subject, Schema(AVRO_USER, "AVRO"))
    assert first == again
    assert subject in client.get_subjects()
    assert client.get_versions(subject) == [1]
    found = client.lookup_schema(subject, Schema(AVRO_USER, "AVRO"))
    assert (found.schema_id, found.version) == (first, 1)
    assert client.get_compatibility() == "BACKWARD"
    client.set_compatibility(subject, "FULL")
    assert client.get_compatibility(subject) == "FULL"
    evolved = AVRO_USER.replace('"int"}', '"int"},{"name":"email","type":"string"}')
    assert client.test_compatibility(subject, Schema(evolved, "AVRO")) is False  # no default: not FULL
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(evolved, "AVRO"))
    assert refused.value.http_status_code == 409
    assert client.delete_subject(subject) == [1]
    assert subject not in client.get_subjects()
    assert client.delete_subject(subject, permanent=True) == [1]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_versions(subject)
    assert gone.value.error_code == 40401

"""The source's typed columns through the schema registry (valueFormat avro / protobuf / json): records of a
topic whose schema evolved mid-topic decode into the reader (latest) schema's columns; the sink encodes a struct
column with the subject's latest schema, readable by confluent-kafka's deserializers."""

from __future__ import annotations

import pytest

pytest.importorskip("confluent_kafka.schema_registry.avro")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from odradek.clients import Consumer, TopicPartition  # noqa: E402
from tests.schema_registry.conftest import start_registry  # noqa: E402
from tests.spark.helpers import create_topic, produce  # noqa: E402

USER_V1 = ('{"type":"record","name":"User","fields":[{"name":"name","type":"string"},'
           '{"name":"age","type":"int"}]}')
USER_V2 = ('{"type":"record","name":"User","fields":[{"name":"name","type":"string"},'
           '{"name":"age","type":"long"},{"name":"email","type":"string","default":"none"}]}')


@pytest.fixture(scope="module")
def servers(single_broker_cluster):
    return single_broker_cluster.bootstrap_servers


@pytest.fixture(scope="module")
def registry(servers, tmp_path_factory):
    process = start_registry(servers, tmp_path_factory.mktemp("spark-registry") / "registry.log")
    yield process
    process.stop()


def produce_serialized(servers, topic, serializer, values):
    context = SerializationContext(topic, MessageField.VALUE)
    produce(servers, topic, [(0, None, serializer(v, context)) for v in values])


def read_typed(spark, servers, registry, topic, fmt):
    return (spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
            .option("valueFormat", fmt).option("schemaRegistryUrl", registry.url).load())


def proto_user(with_email: bool):
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="spark_user.proto", package="spark.test", syntax="proto3")
    message = proto.message_type.add(name="User")
    message.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(name="age", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    if with_email:
        message.field.add(name="email", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("spark.test.User"))


def test_avro_records_of_two_schema_versions_decode_into_the_latest(spark, servers, registry):
    create_topic(servers, "spark-avro", 1)
    client = SchemaRegistryClient({"url": registry.url})
    produce_serialized(servers, "spark-avro", AvroSerializer(client, USER_V1), [{"name": "ada", "age": 36}])
    produce_serialized(servers, "spark-avro", AvroSerializer(client, USER_V2),
                       [{"name": "alan", "age": 41, "email": "alan@example.com"}])
    df = read_typed(spark, servers, registry, "spark-avro", "avro")
    assert df.schema["value"].dataType.simpleString() == "struct<name:string,age:bigint,email:string>"
    rows = df.orderBy("offset").select("value.name", "value.age", "value.email", "offset").collect()
    assert [tuple(r)[:3] for r in rows] == [("ada", 36, "none"), ("alan", 41, "alan@example.com")]


def test_protobuf_records_of_two_schema_versions_decode_into_the_latest(spark, servers, registry):
    create_topic(servers, "spark-proto", 1)
    client = SchemaRegistryClient({"url": registry.url})
    config = {"use.deprecated.format": False}
    v1, v2 = proto_user(False), proto_user(True)
    produce_serialized(servers, "spark-proto", ProtobufSerializer(v1, client, config), [v1(name="ada", age=36)])
    produce_serialized(servers, "spark-proto", ProtobufSerializer(v2, client, config),
                       [v2(name="alan", age=41, email="alan@example.com")])
    df = read_typed(spark, servers, registry, "spark-proto", "protobuf")
    assert df.schema["value"].dataType.simpleString() == "struct<name:string,age:int,email:string>"
    rows = df.orderBy("offset").select("value.name", "value.age", "value.email").collect()
    assert [tuple(r) for r in rows] == [("ada", 36, ""), ("alan", 41, "alan@example.com")]


def test_json_keys_and_values_decode_into_columns(spark, servers, registry):
    create_topic(servers, "spark-json", 1)
    client = SchemaRegistryClient({"url": registry.url})
    schema = '{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}}'
    key_schema = '{"type":"object","properties":{"id":{"type":"integer"}}}'
    serialize, serialize_key = JSONSerializer(schema, client), JSONSerializer(key_schema, client)
    value_context = SerializationContext("spark-json", MessageField.VALUE)
    key_context = SerializationContext("spark-json", MessageField.KEY)
    produce(servers, "spark-json", [(0, serialize_key({"id": n}, key_context), serialize(value, value_context))
                                    for n, value in enumerate([{"name": "ada", "age": 36}, {"name": "x"}])])
    df = (spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", "spark-json")
          .option("valueFormat", "json").option("keyFormat", "json").option("schemaRegistryUrl", registry.url).load())
    rows = df.orderBy("offset").select("key.id", "value.*").collect()
    assert [tuple(r) for r in rows] == [(0, "ada", 36), (1, "x", None)]


def test_sink_encodes_a_struct_column_with_the_latest_schema(spark, servers, registry):
    create_topic(servers, "spark-avro-out", 1)
    client = SchemaRegistryClient({"url": registry.url})
    client.register_schema("spark-avro-out-value", __import__(
        "confluent_kafka.schema_registry", fromlist=["Schema"]).Schema(USER_V2, "AVRO"))
    df = spark.createDataFrame([("ada", 36, "ada@example.com"), ("alan", 41, "none")], "name string, age long, "
                               "email string").selectExpr("struct(name, age, email) AS value")
    (df.write.format("odradek").option("kafka.bootstrap.servers", servers).option("topic", "spark-avro-out")
     .option("valueFormat", "avro").option("schemaRegistryUrl", registry.url).mode("append").save())
    consumer = Consumer(bootstrap_servers=servers, group_id=None, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("spark-avro-out", 0)])
    values = []
    while len(values) < 2:
        for records in consumer.poll(timeout_ms=10000).values():
            values += [r.value for r in records]
    consumer.close()
    deserialize = AvroDeserializer(client)
    context = SerializationContext("spark-avro-out", MessageField.VALUE)
    assert sorted((deserialize(v, context) for v in values), key=lambda d: d["name"]) == \
        [{"name": "ada", "age": 36, "email": "ada@example.com"}, {"name": "alan", "age": 41, "email": "none"}]

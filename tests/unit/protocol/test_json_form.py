"""protocol/json_form.py: messages in Kafka's JSON form (the generated JsonConverter.write with
serializeRecords=false), as the request log prints them."""

from __future__ import annotations

import uuid

from odradek.protocol.json_form import camel_case, message_json
from odradek.protocol.messages import FetchRequest, FetchResponse, MetadataResponse, ProduceRequest, SaslAuthenticateRequest


def test_names_are_lower_camel_case():
    assert camel_case("partition_index") == "partitionIndex"
    assert camel_case("acks") == "acks"
    assert camel_case("isr_nodes") == "isrNodes"


def test_produce_request_shows_the_records_size_not_the_records():
    partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=2, records=memoryview(b"x" * 70))
    body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000,
                          topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[partition])])
    assert message_json(body, 8) == {"transactionalId": None, "acks": -1, "timeoutMs": 30000, "topicData": [
        {"name": "t", "partitionData": [{"index": 2, "recordsSizeInBytes": 70}]}]}
    assert "transactionalId" not in message_json(body, 2)  # a field the version does not carry is left out


def test_tagged_fields_only_when_not_their_default():
    body = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, topics=[], forgotten_topics_data=[])
    assert "clusterId" not in message_json(body, 12)
    body.cluster_id = "c1"
    assert message_json(body, 12)["clusterId"] == "c1"
    partition = FetchResponse.FetchableTopicResponse.PartitionData(partition_index=0, records=None)
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])])
    [entry] = message_json(response, 12)["responses"][0]["partitions"]
    assert "currentLeader" not in entry and entry["records"] is None
    partition.current_leader.leader_id = 3
    [entry] = message_json(response, 12)["responses"][0]["partitions"]
    assert entry["currentLeader"] == {"leaderId": 3, "leaderEpoch": -1}


def test_bytes_are_base64_and_uuids_kafka_uuid_strings():
    assert message_json(SaslAuthenticateRequest(auth_bytes=b"\x00user\x00pw"), 1) == {"authBytes": "AHVzZXIAcHc="}
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    topic = MetadataResponse.MetadataResponseTopic(name="t", topic_id=topic_id, partitions=[])
    [shown] = message_json(MetadataResponse(brokers=[], topics=[topic]), 10)["topics"]
    assert shown["topicId"] == "AAECAwQFBgcICQoLDA0ODw"  # URL-safe base64 without padding, as Uuid.toString

"""The Kafka 2.8.2 helper: real Apache Kafka brokers start, register, serve our clients, stop and restart."""

from __future__ import annotations

import pytest

from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
from odradek.protocol.messages import ApiVersionsRequest
from tests.kafka import kafka_cluster
from tests.kafka.kafka_cluster import KafkaJarsMissing

pytestmark = pytest.mark.jvm


def test_both_brokers_registered_with_a_controller(kafka_two_brokers):
    metadata = kafka_two_brokers.metadata()
    assert sorted(metadata.brokers) == [0, 1]
    assert metadata.controller_id in (0, 1)


def test_kafka_advertises_the_versions_we_claim(kafka_two_brokers):
    """Our KAFKA_2_8_VERSIONS are Kafka 2.8.2's ranges for every key we serve."""
    with kafka_two_brokers.client() as client:
        response = client.send(0, ApiVersionsRequest(client_software_name="odradek-test",
                                                     client_software_version="1"), version=3)
    theirs = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
    assert {key: theirs.get(key) for key in KAFKA_2_8_VERSIONS} == dict(KAFKA_2_8_VERSIONS)


def test_replicated_topic_serves_our_client_across_a_restart(kafka_two_brokers):
    with kafka_two_brokers.client() as client:
        assert client.create_topics({"helper-topic": (1, 2)}) == {"helper-topic": 0}
        client.wait_for_leaders("helper-topic")
        first = client.produce("helper-topic", 0, [(b"k", b"before")], acks=-1)
    kafka_two_brokers.restart_broker(0)
    with kafka_two_brokers.client() as client:
        client.wait_for_leaders("helper-topic")
        client.produce("helper-topic", 0, [(b"k", b"after")], acks=-1)
        fetched = client.fetch("helper-topic", 0, first.base_offset)
    assert [r.value for r in fetched.records] == [b"before", b"after"]


def test_missing_jars_are_named_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(kafka_cluster, "CLASSPATH_FILE", tmp_path / "absent.txt")
    with pytest.raises(KafkaJarsMissing) as raised:
        kafka_cluster.kafka_classpath(build=False)
    assert "absent.txt" in str(raised.value) and "\n" not in str(raised.value)

"""Unit tests of the connector's pure parts: option parsing (Spark's messages), range splitting, rate limiting."""

from __future__ import annotations

import json
import logging

import pytest

from odradek.clients import TopicPartition
from odradek.spark_connector.options import parse_sink_options, parse_source_options
from odradek.spark_connector.ranges import plan_ranges
from odradek.spark_connector.stream_reader import rate_limit

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_source_options_are_case_insensitive_and_pass_kafka_settings():
    opts = parse_source_options({**BASE, "SUBSCRIBE": "a, b", "kafka.fetch.max.wait.ms": "50",
                                 "kafka.isolation.level": "read_committed", "includeHeaders": "TRUE",
                                 "kafka.metric.reporters": "x"}, streaming=True)
    assert opts.topics == ("a", "b") and opts.read_committed and opts.include_headers
    assert opts.consumer_params == {"fetch_max_wait_ms": 50}  # a setting our consumer lacks is dropped
    assert opts.starting.kind == "latest"  # streaming default, as Spark
    assert parse_source_options({**BASE, "subscribe": "a"}, streaming=False).starting.kind == "earliest"


def test_kafka_security_options_become_the_clients_security_keywords(tmp_path, caplog):
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pw";'
    secured = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
               "kafka.sasl.jaas.config": jaas, "kafka.ssl.truststore.type": "PEM",
               "kafka.ssl.truststore.location": "/ca.pem", "kafka.ssl.endpoint.identification.algorithm": ""}
    source = parse_source_options({**BASE, "subscribe": "a", **secured}, streaming=False)
    sink = parse_sink_options({**BASE, **secured})
    expected = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
                "sasl_plain_password": "pw", "ssl_cafile": "/ca.pem", "ssl_password": None, "ssl_check_hostname": False}
    assert source.consumer_params == expected and sink.producer_params == expected
    with caplog.at_level(logging.WARNING):  # a security option the client does not read is never taken silently
        parse_sink_options({**BASE, **secured, "kafka.sasl.login.class": "com.example.Login"})
    assert "ignoring option 'kafka.sasl.login.class'" in caplog.text and "truststore" not in caplog.text
    with pytest.raises(ValueError, match="kafka.ssl.truststore.type"):
        parse_source_options({**BASE, "subscribe": "a", **secured, "kafka.ssl.truststore.type": "JKS"}, streaming=False)
    with pytest.raises(ValueError, match="kafka.ssl.truststore.location"):
        parse_sink_options({**BASE, "kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "PEM",
                            "kafka.ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"})


@pytest.mark.parametrize("options, streaming, message", [
    ({"subscribe": "a"}, False, None),
    ({"subscribe": "a", "endingOffsets": "latest"}, True, "ending offset not valid in streaming queries"),
    ({"subscribePattern": ""}, False, "Pattern to subscribe is empty"),
    ({"assign": "{}"}, False, "No topicpartitions to assign"),
    ({"subscribe": " , "}, False, "No topics to subscribe to"),
    ({"subscribe": "a", "startingOffsets": json.dumps({"a": {"0": -1}})}, False,
     "startingOffsets for a-0 can't be latest for batch queries"),
    ({"subscribe": "a", "endingOffsets": json.dumps({"a": {"0": -2}})}, False,
     "endingOffsets for a-0 can't be earliest for batch queries"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "-3"}, True, "maxOffsetsPerTrigger"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "6"}, True, "minOffsetPerTrigger"),
    ({"subscribe": "a", "maxTriggerDelay": "soon"}, True, "maxTriggerDelay"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, True, "failOnDataLoss"),
    ({"subscribe": "a", "kafka.isolation.level": "dirty"}, True, "kafka.isolation.level"),
    ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, True, "enable.auto.commit"),
    ({"subscribe": "a", "startingOffsets": "{not json"}, True, "startingOffsets"),
])
def test_source_option_errors_name_the_option(options, streaming, message):
    if message is None:
        parse_source_options({**BASE, **options}, streaming)
        with pytest.raises(ValueError, match="kafka.bootstrap.servers"):
            parse_source_options(options, streaming)
        return
    with pytest.raises(ValueError, match=message):
        parse_source_options({**BASE, **options}, streaming)


def test_sink_options():
    opts = parse_sink_options({**BASE, "topic": "out", "kafka.linger.ms": "5", "kafka.acks": "all"})
    assert opts.topic == "out" and opts.exactly_once and opts.producer_params == {"linger_ms": 5, "acks": "all"}
    with pytest.raises(ValueError, match="value.serializer"):
        parse_sink_options({**BASE, "kafka.value.serializer": "x"})
    with pytest.raises(ValueError, match="exactlyOnce"):
        parse_sink_options({**BASE, "kafka.enable.idempotence": "false"})
    assert not parse_sink_options({**BASE, "exactlyOnce": "false", "kafka.enable.idempotence": "false"}).exactly_once


def test_min_partitions_splits_in_proportion_and_covers_every_offset():
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    planned = plan_ranges({a: 0, b: 100}, {a: 90, b: 110}, min_partitions=5)
    assert len(planned) >= 5
    for tp, start, end in ((a, 0, 90), (b, 100, 110)):
        parts = sorted((p.start, p.end) for p in planned if p.partition == tp.partition)
        assert parts[0][0] == start and parts[-1][1] == end
        assert all(parts[i][1] == parts[i + 1][0] for i in range(len(parts) - 1))
    assert [(p.start, p.end) for p in plan_ranges({a: 5}, {a: 5}, None)] == []


def test_rate_limit_never_exceeds_the_cap_and_shares_by_backlog():
    a, b, c = (TopicPartition("t", p) for p in range(3))
    starts, latest = {a: 0, b: 10, c: 7}, {a: 100, b: 20, c: 7}
    end = rate_limit(starts, latest, 11)
    assert sum(end[tp] - starts[tp] for tp in end) == 11
    assert end[a] - starts[a] == 10 and end[b] - starts[b] == 1 and end[c] == 7
    assert rate_limit(starts, latest, 1000) == latest

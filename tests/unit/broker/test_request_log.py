"""broker/metrics/request_log.py: the request log line Kafka 2.8 writes (``Completed request:`` and a JSON
object), secrets in it hidden. A fake connection stands in for the network layer."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from odradek.broker.metrics.request_log import describe_request, describe_response, log_completed
from odradek.broker.network.request_channel import Request
from odradek.broker.security.principal import KafkaPrincipal
from odradek.protocol.header import RequestHeader
from odradek.protocol.messages import (
    AlterUserScramCredentialsRequest, ControlledShutdownRequest, IncrementalAlterConfigsRequest, ProduceRequest,
    ProduceResponse,
)

TIMES = (("TotalTimeMs", 3.5), ("RequestQueueTimeMs", 0.25), ("LocalTimeMs", 1.0), ("RemoteTimeMs", 2.0),
         ("ThrottleTimeMs", 0.0), ("ResponseQueueTimeMs", 0.0), ("ResponseSendTimeMs", 0.25))


def request_of(api_key: int, version: int, body, client_id: str | None = "app") -> Request:
    connection = SimpleNamespace(id="127.0.0.1:9092-127.0.0.1:5000-0", listener="PLAINTEXT",
                                 principal=KafkaPrincipal("User", "ANONYMOUS"), security=None,
                                 client_software=("librdkafka", "2.0.2"))
    return Request(RequestHeader(api_key, version, 7, client_id), body, connection)  # type: ignore[arg-type]


def logged(request: Request, caplog) -> dict:
    with caplog.at_level(logging.DEBUG, logger="kafka.request.logger"):
        log_completed(request, TIMES)
    [line] = [r.getMessage() for r in caplog.records if r.name == "kafka.request.logger"]
    prefix = "Completed request:"
    assert line.startswith(prefix)
    return json.loads(line[len(prefix):])


def test_a_produce_is_logged_with_its_header_bodies_and_times(caplog):
    partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=memoryview(b"r" * 61))
    body = ProduceRequest(acks=-1, timeout_ms=1500, topic_data=[ProduceRequest.TopicProduceData(
        name="events", partition_data=[partition])])
    request = request_of(0, 8, body)
    request.log_entry = describe_request(request)
    answer = ProduceResponse.TopicProduceResponse.PartitionProduceResponse(index=0, error_code=0, base_offset=41)
    describe_response(request, ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
        name="events", partition_responses=[answer])]))
    entry = logged(request, caplog)
    assert entry["requestHeader"] == {"requestApiKey": 0, "requestApiVersion": 8, "correlationId": 7,
                                      "clientId": "app", "requestApiKeyName": "PRODUCE"}
    assert entry["request"]["topicData"] == [{"name": "events", "partitionData": [{"index": 0,
                                                                                  "recordsSizeInBytes": 61}]}]
    assert entry["response"]["responses"][0]["partitionResponses"][0]["baseOffset"] == 41
    assert (entry["totalTimeMs"], entry["localTimeMs"], entry["remoteTimeMs"], entry["throttleTimeMs"]) == (
        3.5, 1.0, 2.0, 0)
    assert entry["connection"] == "127.0.0.1:9092-127.0.0.1:5000-0" and entry["isForwarded"] is False
    assert (entry["securityProtocol"], entry["principal"], entry["listener"]) == (
        "PLAINTEXT", "User:ANONYMOUS", "PLAINTEXT")
    assert entry["clientInformation"] == {"softwareName": "librdkafka", "softwareVersion": "2.0.2"}


def test_an_unanswered_request_logs_an_empty_response_and_header_v0_no_client_id(caplog):
    request = request_of(7, 0, ControlledShutdownRequest(broker_id=2), client_id=None)  # header v0
    request.log_entry = describe_request(request)
    entry = logged(request, caplog)
    assert entry["requestHeader"] == {"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 7,
                                      "requestApiKeyName": "CONTROLLED_SHUTDOWN"}
    assert entry["request"] == {"brokerId": 2} and entry["response"] == ""


def test_nothing_is_written_for_a_request_taken_while_the_log_was_off(caplog):
    request = request_of(0, 8, ProduceRequest(acks=1, timeout_ms=1, topic_data=[]))
    with caplog.at_level(logging.DEBUG, logger="kafka.request.logger"):
        log_completed(request, TIMES)
    assert not [r for r in caplog.records if r.name == "kafka.request.logger"]


@pytest.mark.parametrize("resource_type, name, shown", [
    (4, "log.cleaner.threads", True),           # a broker key that is no secret
    (4, "ssl.keystore.password", False),        # a broker password
    (4, "listener.name.sasl.plain.sasl.jaas.config", False),
    (4, "no.such.key", False),                  # a broker key of unknown type
    (2, "retention.ms", True),                  # a topic key
    (2, "not.a.topic.key", False),              # a topic key Kafka does not know
    (8, "kafka.request.logger", True),          # a broker logger's level
])
def test_config_values_that_may_be_secrets_are_hidden(resource_type, name, shown):
    cls = IncrementalAlterConfigsRequest.AlterConfigsResource
    body = IncrementalAlterConfigsRequest(validate_only=False, resources=[cls(
        resource_type=resource_type, resource_name="0", configs=[cls.AlterableConfig(
            name=name, config_operation=0, value="s3cret")])])
    [config] = describe_request(request_of(44, 1, body))["request"]["resources"][0]["configs"]
    assert config["value"] == ("s3cret" if shown else "[hidden]")
    assert body.resources[0].configs[0].value == "s3cret"  # the request itself is untouched


def test_scram_salts_and_salted_passwords_are_hidden():
    upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name="alice", mechanism=1, iterations=4096, salt=b"salt", salted_password=b"secret")
    entry = describe_request(request_of(51, 0, AlterUserScramCredentialsRequest(deletions=[],
                                                                               upsertions=[upsertion])))
    assert entry["request"]["upsertions"] == [{"name": "alice", "mechanism": 1, "iterations": 4096,
                                               "salt": "[hidden]", "saltedPassword": "[hidden]"}]


def test_a_body_that_cannot_be_put_in_json_form_is_a_note_not_a_failure():
    request = request_of(0, 8, ProduceRequest(acks=1, timeout_ms=1, topic_data=[object()]))
    assert describe_request(request)["request"] == "<not loggable: AttributeError>"

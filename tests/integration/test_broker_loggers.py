"""Broker loggers as a config resource (BROKER_LOGGER, KIP-412) on a real broker: DescribeConfigs lists the
loggers and their levels, IncrementalAlterConfigs changes a level at run time (the request log turned on
and off while the broker serves), and what Kafka 2.8 refuses is refused with its messages. Driven by
kafka-python's admin client (confluent-kafka has no BROKER_LOGGER type) and ours."""

from __future__ import annotations

import pytest

from odradek.clients.admin.client import Admin, AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigResourceType
from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.errors import InvalidRequestError  # type: ignore[attr-defined]
from odradek.protocol.messages import DescribeConfigsRequest
from tests.integration.helpers import request_log, wait_until

kafka_admin = pytest.importorskip("kafka.admin")
confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(180)
REQUEST_LOGGER = "kafka.request.logger"
DYNAMIC_BROKER_LOGGER_CONFIG = 6


@pytest.fixture
def admin(single_broker_cluster):
    with Admin(single_broker_cluster.bootstrap_servers) as client:
        yield client


def loggers_of(admin: Admin) -> dict:
    resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0")
    return admin.describe_configs([resource])[resource]


def logged_requests(cluster) -> list[dict]:
    return request_log(cluster.broker_log(0).read_text(errors="replace"))


def test_describe_lists_every_logger_with_its_level(admin):
    entries = loggers_of(admin)
    assert {"root", REQUEST_LOGGER, "odradek.server"} <= set(entries)
    root = entries["root"]
    assert root.value == "INFO" and root.source == DYNAMIC_BROKER_LOGGER_CONFIG
    assert not root.is_sensitive and not root.read_only
    assert entries[REQUEST_LOGGER].value == "INFO"  # no level of its own: the level it logs at


def test_the_request_log_is_turned_on_and_off_at_run_time(single_broker_cluster, admin):
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=single_broker_cluster.bootstrap_servers)
    resource = kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.BROKER_LOGGER, "0",
                                          configs={REQUEST_LOGGER: "DEBUG"})
    try:
        client.alter_configs([resource], incremental=True)
    finally:
        client.close()
    assert loggers_of(admin)[REQUEST_LOGGER].value == "DEBUG"
    producer = confluent_kafka.Producer({"bootstrap.servers": single_broker_cluster.bootstrap_servers,
                                         "linger.ms": 0})
    producer.produce("logged-topic", b"0123456789", key=b"k")
    assert producer.flush(30) == 0

    def produce_logged() -> list[dict]:
        return [e for e in logged_requests(single_broker_cluster)
                if e["requestHeader"]["requestApiKeyName"] == "PRODUCE"]
    [entry] = wait_until(produce_logged, what="the Produce in the request log")
    [topic] = entry["request"]["topicData"]
    assert topic["name"] == "logged-topic" and topic["partitionData"][0]["recordsSizeInBytes"] > 10
    [answer] = entry["response"]["responses"]
    assert answer["partitionResponses"][0]["errorCode"] == 0 and answer["partitionResponses"][0]["baseOffset"] == 0
    assert entry["clientInformation"]["softwareName"] != "unknown"  # librdkafka sends ApiVersions v3
    assert entry["principal"] == "User:ANONYMOUS" and entry["securityProtocol"] == "PLAINTEXT"

    admin.incremental_alter_configs({ConfigResource(ConfigResourceType.BROKER_LOGGER, "0"): [
        AlterConfigOp(REQUEST_LOGGER, op_type=AlterConfigOpType.DELETE)]})
    assert loggers_of(admin)[REQUEST_LOGGER].value == "INFO"
    count = len(logged_requests(single_broker_cluster))
    assert loggers_of(admin)["root"].value == "INFO"  # a DescribeConfigs answered after the level went back
    assert len(logged_requests(single_broker_cluster)) == count


@pytest.mark.parametrize("name, op, value, message", [
    ("no.such.logger", AlterConfigOpType.SET, "DEBUG", "Logger no.such.logger does not exist!"),
    (REQUEST_LOGGER, AlterConfigOpType.SET, "LOUD", "Cannot set the log level of kafka.request.logger to LOUD"),
    ("root", AlterConfigOpType.DELETE, None, "Removing the log level of the root logger is not allowed"),
    (REQUEST_LOGGER, AlterConfigOpType.APPEND, "DEBUG", "APPEND operation is not allowed"),
])
def test_what_kafka_refuses_is_refused_and_changes_nothing(admin, name, op, value, message):
    resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0")
    [error] = admin.incremental_alter_configs({resource: [AlterConfigOp(name, value, op)]},
                                              raise_errors=False).values()
    assert isinstance(error, InvalidRequestError) and message in str(error)
    assert loggers_of(admin)[REQUEST_LOGGER].value == "INFO"


@pytest.mark.parametrize("name, message", [
    ("7", "Unexpected broker id, expected 0 but received 7"), ("", "Broker id must not be empty"),
    ("zero", "Broker id must be an integer, but it is: zero"),
])
def test_describe_names_this_brokers_id(single_broker_cluster, name, message):
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=int(ConfigResourceType.BROKER_LOGGER), resource_name=name, configuration_keys=None)])
    with SyncSimpleClient(single_broker_cluster.bootstrap_servers) as client:
        [result] = client.send(0, request).results  # to broker 0 whatever the name: the client would route it
    assert (result.error_code, result.error_message, result.configs) == (InvalidRequestError.code, message, [])


def test_the_legacy_alter_configs_is_refused(admin):
    [error] = admin.alter_configs({ConfigResource(ConfigResourceType.BROKER_LOGGER, "0"): {REQUEST_LOGGER: "DEBUG"}},
                                  raise_errors=False).values()
    assert isinstance(error, InvalidRequestError) and "does not support the resource type BROKER_LOGGER" in str(error)
    assert loggers_of(admin)[REQUEST_LOGGER].value == "INFO"

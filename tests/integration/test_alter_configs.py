"""AlterConfigs (33) / IncrementalAlterConfigs (44) on a real 3-broker cluster with confluent-kafka's and
kafka-python's admin clients: every broker describes the new value as DYNAMIC_TOPIC_CONFIG, the logs
apply it live (segments roll and go without a restart), invalid or validate-only changes change nothing,
and dynamic broker configs (per broker and cluster default) reach the logs' defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.messages import (
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
)
from tests.conftest import module_cluster
from tests.integration.helpers import wait_until

pytestmark = pytest.mark.timeout(240)

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 5
INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION = 40, 42, 3
# A retention check every second, so "takes effect live" shows within a test.
OVERRIDES = {"log.retention.check.interval.ms": "1000"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("alter-configs"), 3, OVERRIDES)


@pytest.fixture(scope="module")
def client(cluster):
    with SyncSimpleClient(cluster.bootstrap_servers) as simple:
        simple.wait_for_brokers(3)
        yield simple


@pytest.fixture(scope="module")
def confluent_admin(cluster):
    admin_module = pytest.importorskip("confluent_kafka.admin")
    return admin_module.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create_topic(confluent_admin, client, name: str, partitions: int = 1, rf: int = 3, config=None) -> None:
    from confluent_kafka.admin import NewTopic
    futures = confluent_admin.create_topics([NewTopic(name, partitions, rf, config=config or {})])
    futures[name].result(30)
    client.wait_for_leaders(name)
    # DescribeConfigs answers from each broker's metadata cache (as Kafka's): wait until every broker's
    # UpdateMetadata has the topic, not only the one wait_for_leaders asked
    for node in range(3):
        client.wait_until_broker_knows(node, name)


def describe(client, node_id: int | None, resource_type: int, name: str, keys=None, version: int = 1) -> dict:
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=True)
    result = client.send(node_id, request, version=version).results[0]
    assert result.error_code == 0, result.error_message
    return {c.name: c for c in result.configs}


def value_and_source(client, node_id: int, topic: str, key: str) -> tuple:
    entry = describe(client, node_id, TOPIC, topic, [key])[key]
    return entry.value, entry.config_source


def partition_dir(cluster, broker_id: int, topic: str, partition: int = 0) -> Path:
    return cluster.data_dir / f"broker-{broker_id}" / f"{topic}-{partition}"


def segments(cluster, broker_id: int, topic: str) -> list[str]:
    return sorted(p.name for p in partition_dir(cluster, broker_id, topic).glob("*.log"))


def test_confluent_alter_configs_shows_everywhere_and_applies_live(cluster, client, confluent_admin):
    from confluent_kafka import Producer
    from confluent_kafka.admin import ConfigResource
    create_topic(confluent_admin, client, "ac-live")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(20):
        producer.produce("ac-live", value=b"x" * 200, key=str(i).encode())
        producer.flush(10)
    assert all(len(segments(cluster, b, "ac-live")) == 1 for b in range(3))

    resource = ConfigResource("topic", "ac-live", set_config={"segment.bytes": "1000", "retention.ms": "86400000"})
    confluent_admin.alter_configs([resource])[resource].result(30)
    for broker in range(3):
        assert value_and_source(client, broker, "ac-live", "segment.bytes") == ("1000", DYNAMIC_TOPIC_CONFIG)
        assert value_and_source(client, broker, "ac-live", "retention.ms") == ("86400000", DYNAMIC_TOPIC_CONFIG)
    stored = json.loads(client_zk_data(cluster, "/config/topics/ac-live"))
    assert stored == {"version": 1, "config": {"retention.ms": "86400000", "segment.bytes": "1000"}}

    # segment.bytes=1000 live: every broker's log rolls on the next appends, without a restart.
    for i in range(10):
        producer.produce("ac-live", value=b"y" * 300)
        producer.flush(10)
    for broker in range(3):
        wait_until(lambda: len(segments(cluster, broker, "ac-live")) >= 3, what=f"broker {broker} rolling segments")

    # retention.ms lowered live: the old segments go at the next retention check on every broker.
    resource = ConfigResource("topic", "ac-live", set_config={"segment.bytes": "1000", "retention.ms": "1"})
    confluent_admin.alter_configs([resource])[resource].result(30)
    for broker in range(3):
        wait_until(lambda: len(segments(cluster, broker, "ac-live")) == 1, what=f"broker {broker} deleting segments")

    # AlterConfigs replaces the whole set: a key left out goes back to the broker's default.
    resource = ConfigResource("topic", "ac-live", set_config={"cleanup.policy": "compact"})
    confluent_admin.alter_configs([resource])[resource].result(30)
    entries = describe(client, 1, TOPIC, "ac-live")
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].config_source) == ("compact", DYNAMIC_TOPIC_CONFIG)
    assert entries["retention.ms"].config_source != DYNAMIC_TOPIC_CONFIG
    assert entries["segment.bytes"].value == "1073741824"


def client_zk_data(cluster, path: str) -> bytes:
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:
        return zk.get(path)[0]
    finally:
        zk.stop()
        zk.close()


def test_confluent_incremental_alter_configs_ops(client, confluent_admin):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    create_topic(confluent_admin, client, "ac-incremental", config={"retention.ms": "500000"})

    def incremental(*entries):
        resource = ConfigResource("topic", "ac-incremental", incremental_configs=list(entries))
        confluent_admin.incremental_alter_configs([resource])[resource].result(30)

    incremental(ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    entries = describe(client, 2, TOPIC, "ac-incremental")
    assert entries["retention.ms"].value == "500000"  # kept: incremental
    assert (entries["min.insync.replicas"].value, entries["min.insync.replicas"].config_source) == \
        ("2", DYNAMIC_TOPIC_CONFIG)
    assert entries["cleanup.policy"].value == "delete,compact"  # appended to the default

    incremental(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
                ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    entries = describe(client, 0, TOPIC, "ac-incremental")
    assert entries["cleanup.policy"].value == "compact"
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == ("604800000", DEFAULT_CONFIG)

    # APPEND to a key that is not a list: INVALID_REQUEST, as Kafka.
    with pytest.raises(Exception) as raised:
        incremental(ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND))
    assert raised.value.args[0].code() == INVALID_REQUEST
    assert "append is not allowed" in raised.value.args[0].str()


def test_invalid_and_validate_only_change_nothing(client, confluent_admin):
    from confluent_kafka.admin import ConfigResource
    create_topic(confluent_admin, client, "ac-invalid", config={"retention.ms": "777777"})
    bad_value = ConfigResource("topic", "ac-invalid", set_config={"retention.ms": "soon"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([bad_value])[bad_value].result(30)
    error = raised.value.args[0]
    assert error.code() == INVALID_REQUEST  # Kafka 2.8: a bad value is INVALID_REQUEST, an unknown key INVALID_CONFIG
    assert "retention.ms" in error.str() and "integer" in error.str()

    bad_policy = ConfigResource("topic", "ac-invalid", set_config={"cleanup.policy": "shred"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([bad_policy])[bad_policy].result(30)
    assert raised.value.args[0].code() == INVALID_REQUEST and "compact, delete" in raised.value.args[0].str()

    unknown_key = ConfigResource("topic", "ac-invalid", set_config={"retention.msec": "1"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([unknown_key])[unknown_key].result(30)
    assert raised.value.args[0].code() == INVALID_CONFIG and "retention.msec" in raised.value.args[0].str()

    dry_run = ConfigResource("topic", "ac-invalid", set_config={"retention.ms": "1000"})
    confluent_admin.alter_configs([dry_run], validate_only=True)[dry_run].result(30)
    for broker in range(3):
        assert value_and_source(client, broker, "ac-invalid", "retention.ms") == ("777777", DYNAMIC_TOPIC_CONFIG)

    missing = ConfigResource("topic", "ac-no-such-topic", set_config={"retention.ms": "1000"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([missing])[missing].result(30)
    assert raised.value.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION


def test_kafka_python_alter_configs(cluster, client, confluent_admin):
    kafka_admin = pytest.importorskip("kafka.admin")
    create_topic(confluent_admin, client, "ac-kafka-python")
    admin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        for incremental in (False, True):
            value = "123456" if incremental else "654321"
            resource = kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC, "ac-kafka-python",
                                                  configs={"retention.ms": value})
            admin.alter_configs([resource], incremental=incremental)
            for broker in range(3):
                assert value_and_source(client, broker, "ac-kafka-python", "retention.ms") == \
                    (value, DYNAMIC_TOPIC_CONFIG)
    finally:
        admin.close()


def test_api_versions_advertise_kafka_2_8_ranges(client):
    from odradek.protocol.messages import ApiVersionsRequest
    answer = client.send(1, ApiVersionsRequest(), version=0)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert (ranges[21], ranges[33], ranges[44]) == ((0, 2), (0, 2), (0, 1))


def test_raw_requests_errors_per_resource(client):
    """Null values, duplicate keys, an unknown operation and other resource types, per resource."""
    Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = Resource.AlterableConfig
    request = IncrementalAlterConfigsRequest(resources=[
        Resource(resource_type=TOPIC, resource_name="", configs=[Config(name="retention.ms", config_operation=0,
                                                                        value="1")]),
        Resource(resource_type=TOPIC, resource_name="x", configs=[
            Config(name="retention.ms", config_operation=0, value="1"),
            Config(name="retention.ms", config_operation=1, value=None)]),
        Resource(resource_type=TOPIC, resource_name="y", configs=[Config(name="retention.ms", config_operation=0,
                                                                         value=None)]),
        Resource(resource_type=3, resource_name="group", configs=[]),
    ], validate_only=False)
    answer = client.send(0, request, version=1).responses
    assert [r.error_code for r in answer] == [INVALID_REQUEST] * 4
    assert answer[0].error_message == "Default topic resources are not allowed."
    assert answer[1].error_message == "Error due to duplicate config keys : retention.ms"
    assert answer[2].error_message == "Null value not supported for : SET:retention.ms"

    Legacy = AlterConfigsRequest.AlterConfigsResource
    legacy = AlterConfigsRequest(resources=[Legacy(resource_type=BROKER, resource_name="1", configs=[
        Legacy.AlterableConfig(name="log.retention.ms", value="1000")])], validate_only=True)
    answer = client.send(0, legacy, version=0).responses[0]
    assert answer.error_code == INVALID_REQUEST
    assert answer.error_message == "Unexpected broker id, expected 0, but received 1"

    # As Kafka 2.8: a null value or a BROKER_LOGGER resource fails every resource of the request.
    topic_entry = Legacy(resource_type=TOPIC, resource_name="x", configs=[])
    null_value = Legacy(resource_type=TOPIC, resource_name="y", configs=[
        Legacy.AlterableConfig(name="retention.ms", value=None)])
    answer = client.send(0, AlterConfigsRequest(resources=[topic_entry, null_value], validate_only=True),
                         version=1).responses
    assert [(r.error_code, r.error_message) for r in answer] == [(-1, None)] * 2
    answer = client.send(0, AlterConfigsRequest(resources=[topic_entry, Legacy(
        resource_type=8, resource_name="0", configs=[])], validate_only=True), version=1).responses
    assert [r.error_code for r in answer] == [INVALID_REQUEST] * 2
    assert answer[0].error_message == "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER"


def test_dynamic_broker_configs(cluster, client, confluent_admin):
    from confluent_kafka.admin import ConfigResource
    create_topic(confluent_admin, client, "ac-broker-defaults")
    static = ConfigResource("broker", "0", set_config={"log.dirs": "/elsewhere"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([static])[static].result(30)
    assert raised.value.args[0].code() == INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(log.dirs)" in raised.value.args[0].str()
    # Passwords (SSL stores, JAAS entries of a listener) are never stored by AlterConfigs, nor echoed or logged.
    secret = ConfigResource("broker", "0", set_config={"listener.name.plaintext.ssl.key.password": "alter-secret"})
    with pytest.raises(Exception) as raised:
        confluent_admin.alter_configs([secret])[secret].result(30)
    assert raised.value.args[0].code() == INVALID_REQUEST
    assert "Set(listener.name.plaintext.ssl.key.password)" in raised.value.args[0].str()
    assert "alter-secret" not in raised.value.args[0].str() and "alter-secret" not in cluster.broker_log(0).read_text()

    # Per broker: this broker's log.segment.bytes, shown with its source and inherited by topics there.
    per_broker = ConfigResource("broker", "1", set_config={"log.segment.bytes": "2000000"})
    confluent_admin.alter_configs([per_broker])[per_broker].result(30)
    entries = describe(client, 1, BROKER, "1", ["log.segment.bytes", "log.dirs"])
    assert (entries["log.segment.bytes"].value, entries["log.segment.bytes"].config_source) == \
        ("2000000", DYNAMIC_BROKER_CONFIG)
    assert entries["log.segment.bytes"].read_only is False and entries["log.dirs"].read_only is True
    segment = describe(client, 1, TOPIC, "ac-broker-defaults", ["segment.bytes"])["segment.bytes"]
    assert segment.value == "2000000" and segment.synonyms[0].source == DYNAMIC_BROKER_CONFIG
    assert describe(client, 0, TOPIC, "ac-broker-defaults", ["segment.bytes"])["segment.bytes"].value == "1073741824"

    # Cluster default: every broker takes it (through the notification), the per-broker value still wins on 1.
    # (librdkafka refuses an empty broker name: a raw AlterConfigs, as kafka-configs --entity-default sends)
    assert alter_broker_raw(client, "", {"log.segment.bytes": "3000000"}) == (0, None)
    wait_until(lambda: getattr(describe(client, 2, BROKER, "").get("log.segment.bytes"), "config_source", None)
               == DYNAMIC_DEFAULT_BROKER_CONFIG, what="broker 2 describing the cluster default")
    for broker, expected in ((0, "3000000"), (2, "3000000"), (1, "2000000")):
        wait_until(lambda: describe(client, broker, TOPIC, "ac-broker-defaults", ["segment.bytes"])
                   ["segment.bytes"].value == expected, what=f"broker {broker} taking the cluster default")
    # Clean up for other tests in the module.
    assert alter_broker_raw(client, "", {}) == (0, None)
    resource = ConfigResource("broker", "1", set_config={})
    confluent_admin.alter_configs([resource])[resource].result(30)
    wait_until(lambda: describe(client, 1, TOPIC, "ac-broker-defaults", ["segment.bytes"])
               ["segment.bytes"].value == "1073741824", what="broker 1 back to the static default")


def alter_broker_raw(client, name: str, configs: dict) -> tuple:
    Legacy = AlterConfigsRequest.AlterConfigsResource
    request = AlterConfigsRequest(resources=[Legacy(resource_type=BROKER, resource_name=name, configs=[
        Legacy.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=False)
    answer = client.send(None, request, version=1).responses[0]
    return answer.error_code, answer.error_message

"""Admin / AIOAdmin against real brokers and ZooKeeper, and kafka-python's KafkaAdminClient against our cluster."""

from __future__ import annotations

import asyncio

import pytest

from odradek.clients.admin.client import AIOAdmin, Admin, ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import (  # type: ignore[attr-defined]
    InvalidPartitionsError, InvalidReplicaAssignmentError, InvalidReplicationFactorError, NotControllerError,
    TopicAlreadyExistsError, UnknownTopicOrPartitionError,
)
from odradek.protocol.messages import CreatePartitionsRequest
from tests.integration.helpers import known_by_every_broker, run, wait_until

pytestmark = pytest.mark.timeout(180)


def described_with(admin, topic: str, partitions: int):
    """The description once the broker asked has the controller's news of ``partitions`` partitions."""
    return wait_until(lambda: next((d for d in admin.describe_topics([topic]) if len(d.partitions) == partitions),
                                   None), what=f"{topic} with {partitions} partitions in the metadata")


def field(entry: dict, *names: str):
    return next(entry[name] for name in names if name in entry)


@pytest.fixture(scope="module")
def admin(three_broker_cluster):
    with Admin(bootstrap_servers=three_broker_cluster.bootstrap_servers) as client:
        yield client


def test_describe_cluster_lists_every_broker_and_the_controller(admin):
    cluster = admin.describe_cluster()
    assert len({b.node_id for b in cluster.brokers}) == 3
    assert cluster.controller_id in {b.node_id for b in cluster.brokers}
    assert cluster.cluster_id
    assert all(b.port > 0 and b.host for b in cluster.brokers)


def test_create_describe_delete_topic(admin):
    result = admin.create_topics([NewTopic("admin-events", num_partitions=3, replication_factor=3)])
    assert result == {"admin-events": None}
    # Other brokers learn of the topic through the controller's UpdateMetadata a moment later (as in Kafka).
    wait_until(lambda: "admin-events" in admin.list_topics(), what="the new topic in the topic list")
    [description] = admin.describe_topics(["admin-events"])
    assert description.topic == "admin-events" and not description.is_internal
    assert description.topic_id.int != 0
    assert len(description.topic_id_string) == 22  # Kafka's unpadded URL-safe base64 of 16 bytes
    assert [p.partition for p in description.partitions] == [0, 1, 2]
    brokers = {b.node_id for b in admin.describe_cluster().brokers}
    for p in description.partitions:
        assert sorted(p.replicas) == sorted(brokers)
        assert p.leader in p.replicas
        assert set(p.isr) <= set(p.replicas) and p.leader in p.isr
    # Round-robin placement spreads the first replicas (the preferred leaders) over the brokers.
    assert len({p.replicas[0] for p in description.partitions}) == 3

    assert admin.delete_topics(["admin-events"]) == {"admin-events": None}
    wait_until(lambda: "admin-events" not in admin.list_topics(), what="the deleted topic leaving the topic list")
    def unknown() -> bool:
        try:
            admin.describe_topics(["admin-events"])
        except UnknownTopicOrPartitionError:
            return True
        return False
    wait_until(unknown, what="describing the deleted topic failing with UNKNOWN_TOPIC_OR_PARTITION")


def test_create_with_configs_and_broker_defaults(admin):
    admin.create_topics([NewTopic("admin-defaults"),
                         NewTopic("admin-compact", 2, 1, topic_configs={"cleanup.policy": "compact"})])
    by_name = {d.topic: d for d in admin.describe_topics(["admin-defaults", "admin-compact"])}
    assert len(by_name["admin-defaults"].partitions) == 1  # num.partitions and default.replication.factor: 1
    assert len(by_name["admin-defaults"].partitions[0].replicas) == 1
    assert [len(p.replicas) for p in by_name["admin-compact"].partitions] == [1, 1]


def test_errors_carry_the_code_and_the_brokers_message(admin):
    admin.create_topics([NewTopic("admin-twice", 1, 1)])
    with pytest.raises(TopicAlreadyExistsError) as caught:
        admin.create_topics([NewTopic("admin-twice", 1, 1)])
    assert "admin-twice" in str(caught.value)
    results = admin.create_topics([NewTopic("admin-twice", 1, 1), NewTopic("admin-once", 1, 1)],
                                  raise_errors=False)
    assert isinstance(results["admin-twice"], TopicAlreadyExistsError)
    assert results["admin-once"] is None
    with pytest.raises(InvalidReplicationFactorError) as caught:
        admin.create_topics([NewTopic("admin-too-wide", 1, 4)])
    assert "4" in str(caught.value)
    wait_until(lambda: "admin-once" in admin.list_topics(), what="the new topic in the topic list")
    assert "admin-too-wide" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["admin-never-created"])


def test_validate_only_creates_nothing(three_broker_cluster):
    async def main():
        async with AIOAdmin(three_broker_cluster.bootstrap_servers) as aio:
            assert await aio.create_topics([NewTopic("admin-dry", 4, 2)], validate_only=True) == {"admin-dry": None}
            assert "admin-dry" not in await aio.list_topics()
            with pytest.raises(InvalidReplicationFactorError):
                await aio.create_topics([NewTopic("admin-dry", 4, 5)], validate_only=True)
    asyncio.run(asyncio.wait_for(main(), 120))


def test_kafka_python_admin_client_creates_describes_deletes(three_broker_cluster, admin):
    kafka_admin = pytest.importorskip("kafka.admin")
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=three_broker_cluster.bootstrap_servers,
                                          client_id="kafka-python-admin", request_timeout_ms=30000)
    try:
        client.create_topics([kafka_admin.NewTopic("kp-admin", num_partitions=2, replication_factor=2)])
        # kafka-python asks any broker: wait until the one it picks has the controller's metadata.
        [described] = wait_until(lambda: [t for t in client.describe_topics(["kp-admin"]) if t["error_code"] == 0],
                                 what="kafka-python describing its topic")
        # list_topics goes to the least loaded broker, which may not be the one that answered describe_topics.
        wait_until(lambda: "kp-admin" in client.list_topics(), what="kafka-python listing its topic")
        # kafka-python 2.x names the fields topic/partition/replicas, 3.x as the protocol does.
        assert field(described, "name", "topic") == "kp-admin" and described["error_code"] == 0
        replicas = {field(p, "partition_index", "partition"): sorted(field(p, "replica_nodes", "replicas"))
                    for p in described["partitions"]}
        assert sorted(replicas) == [0, 1] and all(len(r) == 2 for r in replicas.values())
        # kafka-python 3.0.12's describe_cluster breaks on a DescribeCluster v0 answer, Kafka 2.8's only version
        # (it pops endpoint_type, a v1 field): it fails against Kafka 2.8 as against us
        with pytest.raises(KeyError, match="endpoint_type"):
            client.describe_cluster()
        # What kafka-python created is what our Admin sees.
        [ours] = admin.describe_topics(["kp-admin"])
        assert {p.partition: sorted(p.replicas) for p in ours.partitions} == replicas
        client.delete_topics(["kp-admin"])
        wait_until(lambda: "kp-admin" not in admin.list_topics(), what="kafka-python's delete")
    finally:
        client.close()


def test_create_partitions_grows_a_topic_that_then_takes_records(admin, three_broker_cluster):
    admin.create_topics([NewTopic("admin-grow", 2, 2)])
    assert admin.create_partitions({"admin-grow": NewPartitions(total_count=5)}) == {"admin-grow": None}
    description = described_with(admin, "admin-grow", 5)
    assert [p.partition for p in description.partitions] == [0, 1, 2, 3, 4]
    brokers = {b.node_id for b in admin.describe_cluster().brokers}
    for p in description.partitions:
        assert len(p.replicas) == 2 and set(p.replicas) <= brokers and p.leader in p.replicas
    with SyncSimpleClient(three_broker_cluster.bootstrap_servers) as client:
        result = client.produce("admin-grow", 4, [(b"k", b"in a new partition")], acks=-1)
        assert (result.error_code, result.base_offset) == (0, 0)
        assert [r.value for r in client.fetch("admin-grow", 4, 0).records] == [b"in a new partition"]


def test_create_partitions_checks(admin):
    admin.create_topics([NewTopic("admin-grow-checks", 2, 1)])
    with pytest.raises(InvalidPartitionsError) as caught:
        admin.create_partitions({"admin-grow-checks": NewPartitions(2)})
    assert "can only be increased" in str(caught.value)
    assert admin.create_partitions({"admin-grow-checks": NewPartitions(4)}, validate_only=True) == {
        "admin-grow-checks": None}
    assert len(admin.describe_topics(["admin-grow-checks"])[0].partitions) == 2
    with pytest.raises(InvalidReplicaAssignmentError):  # one assignment for two new partitions
        admin.create_partitions({"admin-grow-checks": NewPartitions(4, [[0]])})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.create_partitions({"admin-never-grown": NewPartitions(3)})
    results = admin.create_partitions({"admin-grow-checks": NewPartitions(3, [[2]]),
                                       "admin-never-grown": NewPartitions(3)}, raise_errors=False)
    assert results["admin-grow-checks"] is None
    assert isinstance(results["admin-never-grown"], UnknownTopicOrPartitionError)
    assert described_with(admin, "admin-grow-checks", 3).partitions[2].replicas == [2]


def test_create_partitions_elsewhere_than_the_controller_is_not_controller(admin):
    cluster = admin.describe_cluster()
    other = next(b for b in cluster.brokers if b.node_id != cluster.controller_id)

    async def main():
        conn = await BrokerConnection.connect(other.host, other.port)
        try:
            assert conn.version_for(ApiKey.CREATE_PARTITIONS) == 3
            request = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
                name="admin-anything", count=3, assignments=None)], timeout_ms=1000, validate_only=False)
            response = await conn.send(request)
        finally:
            await conn.close()
        return [(r.name, r.error_code) for r in response.results]
    assert asyncio.run(asyncio.wait_for(main(), 60)) == [("admin-anything", NotControllerError.code)]


def test_kafka_python_create_partitions(three_broker_cluster, admin):
    kafka_admin = pytest.importorskip("kafka.admin")
    admin.create_topics([NewTopic("kp-grow", 1, 3)])
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=three_broker_cluster.bootstrap_servers)
    try:
        client.create_partitions({"kp-grow": kafka_admin.NewPartitions(total_count=3)})
    finally:
        client.close()
    assert [len(p.replicas) for p in described_with(admin, "kp-grow", 3).partitions] == [3, 3, 3]


def test_describe_configs_of_a_topic(admin, three_broker_cluster):
    admin.create_topics([NewTopic("admin-configs", 1, 1, topic_configs={"retention.ms": "1234"})])
    resource = ConfigResource(ConfigResourceType.TOPIC, "admin-configs")
    entries = admin.describe_configs([resource], include_synonyms=True)[resource]
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == ("1234", 1, False)
    # The topic override only: Kafka 2.8.2 drops the broker synonyms before log.retention.ms itself, and only
    # log.retention.hours has a value (its default), so none is left (tests/differential compares it with Kafka)
    assert retention.synonyms == [("retention.ms", "1234", 1)]
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.is_default, policy.read_only) == ("delete", 5, True, False)
    assert set(entries) >= {"segment.bytes", "min.insync.replicas", "compression.type"}
    only = ConfigResource(ConfigResourceType.TOPIC, "admin-configs", ["retention.ms"])
    assert list(admin.describe_configs([only])[only]) == ["retention.ms"]
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-no-such-topic")])


def test_describe_configs_of_a_broker(admin):
    broker = admin.describe_cluster().brokers[0]
    resource = ConfigResource(ConfigResourceType.BROKER, str(broker.node_id))
    entries = admin.describe_configs([resource], include_synonyms=True)[resource]
    assert entries["broker.id"].value == str(broker.node_id) and entries["broker.id"].source == 4
    # The test clusters set zookeeper.session.timeout.ms in the brokers' properties: a static setting.
    session = entries["zookeeper.session.timeout.ms"]
    assert (session.value, session.source) == ("6000", 4)
    assert session.synonyms == [("zookeeper.session.timeout.ms", "6000", 4),
                                ("zookeeper.session.timeout.ms", "18000", 5)]
    queued = entries["queued.max.requests"]  # not in the properties: Kafka's default
    assert (queued.value, queued.source, queued.is_default, queued.read_only) == ("500", 5, True, True)


def test_kafka_python_describe_configs(three_broker_cluster, admin):
    kafka_admin = pytest.importorskip("kafka.admin")
    admin.create_topics([NewTopic("kp-configs", 1, 1, topic_configs={"cleanup.policy": "compact"})])
    # a broker that does not know the topic yet answers UNKNOWN_TOPIC_OR_PARTITION, which kafka-python
    # 3.0.12 turns into an empty description
    wait_until(lambda: run(known_by_every_broker(three_broker_cluster.bootstrap_servers, "kp-configs")),
               what="every broker's metadata of kp-configs")
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=three_broker_cluster.bootstrap_servers)
    try:
        answer = client.describe_configs([kafka_admin.ConfigResource(kafka_admin.ConfigResourceType.TOPIC,
                                                                     "kp-configs")])
    finally:
        client.close()
    text = repr(answer)
    assert "cleanup.policy" in text and "compact" in text

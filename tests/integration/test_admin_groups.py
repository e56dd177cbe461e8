"""Admin's consumer-group operations, config changes and DeleteRecords against a real broker, with groups
formed by kafka-python and confluent-kafka consumers; kafka-python's and aiokafka's admin clients list and
describe the same groups."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
aiokafka = pytest.importorskip("aiokafka")
aiokafka_admin = pytest.importorskip("aiokafka.admin")

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer  # noqa: E402
from kafka import TopicPartition as KafkaTopicPartition  # noqa: E402
from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata  # noqa: E402

from odradek.clients.admin.client import (  # noqa: E402
    EARLIEST, LATEST, Admin, AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigResourceType, NewTopic,
)
from odradek.clients.types import OffsetAndMetadata, TopicPartition  # noqa: E402
from odradek.protocol.errors import (  # noqa: E402
    GroupIdNotFoundError, GroupSubscribedToTopicError, NonEmptyGroupError, UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from tests.conftest import new_cluster  # noqa: E402
from tests.integration.helpers import kafka_python_group_consumer  # noqa: E402

pytestmark = pytest.mark.timeout(300)
GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    running = new_cluster(tmp_path_factory.mktemp("admin-groups"), zookeeper, 1, GROUP_OVERRIDES)
    try:
        yield running.start()
    finally:
        running.stop(timeout=15.0)


@pytest.fixture
def admin(cluster):
    with Admin(cluster.bootstrap_servers) as client:
        yield client


def new_topic(admin: Admin, bootstrap: str, partitions: int, records: int) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, partitions, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(records):
        producer.send(topic, value=b"v%d" % i, partition=i % partitions)
    producer.flush()
    producer.close()
    return topic


def commit_as_simple_consumer(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({KafkaTopicPartition(t, p): KafkaOffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close(autocommit=False)


def committed(bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: consumer.committed(KafkaTopicPartition(topic, p)) for p in partitions}
    finally:
        consumer.close(autocommit=False)


def joined_kafka_python_consumer(bootstrap: str, topic: str, group: str, client_id: str) -> KafkaConsumer:
    consumer = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                                           auto_offset_reset="earliest", enable_auto_commit=False)
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the kafka-python consumer never got an assignment"
        consumer.poll(200)
    return consumer


def test_groups_of_kafka_python_consumers_are_listed_described_altered_and_deleted(cluster, admin):
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(admin, bootstrap, 2, 6)
    active, idle = f"active-{uuid.uuid4().hex[:6]}", f"idle-{uuid.uuid4().hex[:6]}"
    commit_as_simple_consumer(bootstrap, idle, {(topic, 0): 1, (topic, 1): 2})
    consumer = joined_kafka_python_consumer(bootstrap, topic, active, "member-client")
    try:
        listed = {g.group_id: g for g in admin.list_consumer_groups()}
        assert listed[active].protocol_type == "consumer" and listed[active].state == "Stable"
        assert listed[idle].is_simple_consumer_group and listed[idle].state == "Empty"
        assert [g.group_id for g in admin.list_consumer_groups(states=["Empty"])].count(active) == 0

        described_active, described_idle = admin.describe_consumer_groups([active, idle])
        assert (described_active.state, described_active.partition_assignor) == ("Stable", "range")
        [member] = described_active.members
        assert member.client_id == "member-client" and member.host.startswith("/")
        assert member.assignment == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        assert described_active.coordinator.node_id == 0
        assert (described_idle.state, described_idle.members) == ("Empty", [])

        assert admin.list_consumer_group_offsets(idle) == {
            TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1), TopicPartition(topic, 1): OffsetAndMetadata(2, "", -1)}
        assert admin.list_consumer_group_offsets(idle, [TopicPartition(topic, 1)]) == {
            TopicPartition(topic, 1): OffsetAndMetadata(2, "", -1)}

        # Altering works on the empty group only (generation -1 and no member id, as Kafka's Admin).
        assert admin.alter_consumer_group_offsets(idle, {TopicPartition(topic, 0): 3,
                                                         TopicPartition(topic, 1): OffsetAndMetadata(0, "m")}) == {
            TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
        assert committed(bootstrap, idle, topic, [0, 1]) == {0: 3, 1: 0}
        with pytest.raises(UnknownMemberIdError):
            admin.alter_consumer_group_offsets(active, {TopicPartition(topic, 0): 1})

        # Offsets of a subscribed topic cannot be deleted; the empty group's can.
        with pytest.raises(GroupSubscribedToTopicError):
            admin.delete_consumer_group_offsets(active, [TopicPartition(topic, 0)])
        assert admin.delete_consumer_group_offsets(idle, [TopicPartition(topic, 0)]) == {TopicPartition(topic, 0): None}
        assert committed(bootstrap, idle, topic, [0, 1]) == {0: None, 1: 0}

        results = admin.delete_consumer_groups([active, idle], raise_errors=False)
        assert isinstance(results[active], NonEmptyGroupError) and results[idle] is None
        with pytest.raises(GroupIdNotFoundError):
            admin.delete_consumer_groups([idle])
        [dead] = admin.describe_consumer_groups([idle])
        assert (dead.state, dead.members) == ("Dead", [])
        assert idle not in {g.group_id for g in admin.list_consumer_groups()}
    finally:
        consumer.close(autocommit=False)


def test_a_confluent_kafka_group_is_described_with_its_assignment(cluster, admin):
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(admin, bootstrap, 3, 3)
    group = f"ck-{uuid.uuid4().hex[:6]}"
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "ck-client",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 3:
            assert time.monotonic() < deadline, "confluent-kafka never got its assignment"
            consumer.poll(0.2)
        [described] = admin.describe_consumer_groups([group])
        assert described.state == "Stable" and described.protocol_type == "consumer"
        [member] = described.members
        assert member.client_id == "ck-client"
        assert member.assignment == [TopicPartition(topic, p) for p in range(3)]
    finally:
        consumer.close()


def test_kafka_python_and_aiokafka_admins_list_and_describe_our_groups(cluster, admin):
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(admin, bootstrap, 1, 1)
    group = f"kp-{uuid.uuid4().hex[:6]}"
    consumer = joined_kafka_python_consumer(bootstrap, topic, group, "kp-client")
    kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert group in {g["group_id"] for g in kp_admin.list_groups()}
        described = kp_admin.describe_groups([group])[group]
        assert described["group_state"] == "Stable"
        assert [m["client_id"] for m in described["members"]] == ["kp-client"]

        async def with_aiokafka():
            client = aiokafka_admin.AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await client.start()
            try:
                listed = await client.list_consumer_groups()
                descriptions = await client.describe_consumer_groups([group])
            finally:
                await client.close()
            return listed, descriptions

        listed, descriptions = asyncio.run(with_aiokafka())
        assert (group, "consumer") in [tuple(g[:2]) for g in listed]
        [response] = descriptions
        [answer] = response.groups
        assert answer[1] == group and answer[2] == "Stable"
    finally:
        consumer.close(autocommit=False)
        kp_admin.close()


def _serves(admin: Admin, api_key: int) -> bool:
    conn = admin._thread.run(admin._client._client._any_connection())
    return api_key in conn.api_versions


def test_incremental_alter_configs_and_alter_configs_change_a_topic(cluster, admin):
    if not _serves(admin, 44):
        pytest.skip("the broker does not serve IncrementalAlterConfigs yet")
    topic = new_topic(admin, cluster.bootstrap_servers, 1, 0)
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    admin.incremental_alter_configs({resource: [AlterConfigOp("retention.ms", "3600000"),
                                                AlterConfigOp("cleanup.policy", "compact")]})
    entries = admin.describe_configs([resource])[resource]
    assert entries["retention.ms"].value == "3600000" and entries["cleanup.policy"].value == "compact"
    admin.incremental_alter_configs({resource: [AlterConfigOp("cleanup.policy", "delete", AlterConfigOpType.APPEND),
                                                AlterConfigOp("retention.ms", op_type=AlterConfigOpType.DELETE)]})
    entries = admin.describe_configs([resource])[resource]
    assert entries["cleanup.policy"].value == "compact,delete" and entries["retention.ms"].is_default
    # The legacy AlterConfigs replaces the whole set: cleanup.policy goes back to its default.
    admin.alter_configs({resource: {"segment.ms": "600000"}})
    entries = admin.describe_configs([resource])[resource]
    assert entries["segment.ms"].value == "600000" and entries["cleanup.policy"].is_default


def test_delete_records_moves_the_low_watermark(cluster, admin):
    if not _serves(admin, 21):
        pytest.skip("the broker does not serve DeleteRecords yet")
    topic = new_topic(admin, cluster.bootstrap_servers, 2, 10)
    assert admin.delete_records({TopicPartition(topic, 0): 3, TopicPartition(topic, 1): -1}) == {
        TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 5}
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        starts = consumer.beginning_offsets([KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 1)])
    finally:
        consumer.close()
    assert {tp.partition: offset for tp, offset in starts.items()} == {0: 3, 1: 5}
    assert admin.list_offsets({TopicPartition(topic, 0): EARLIEST, TopicPartition(topic, 1): LATEST}) == {
        TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 5}


def test_delete_records_of_an_unknown_topic_or_partition_is_that_error(cluster, admin):
    # Kafka 2.8's deleteRecords fails such a partition at once; before, ours retried to its deadline
    # and raised AdminTimeoutError
    if not _serves(admin, 21):
        pytest.skip("the broker does not serve DeleteRecords yet")
    topic = new_topic(admin, cluster.bootstrap_servers, 1, 2)
    for tp in (TopicPartition(f"no-such-{uuid.uuid4().hex[:8]}", 0), TopicPartition(topic, 7)):
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_records({tp: 1}, timeout_ms=120_000)
    assert admin.delete_records({TopicPartition(topic, 0): 1}) == {TopicPartition(topic, 0): 1}

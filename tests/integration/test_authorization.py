"""The ACL authorizer on a real broker with unmodified clients (confluent-kafka, kafka-python, ours).

Until authentication exists every connection, the broker's own included, is User:ANONYMOUS, so this
module runs ``allow.everyone.if.no.acl.found=true``: a resource without ACLs is open (the broker keeps
working), and ACLs put on a resource make ANONYMOUS subject to them. So: with only Read on a topic
ANONYMOUS cannot produce to it or delete it, cannot read a topic or join a group whose ACLs name
someone else, and transactional and idempotent producers need their ACLs. Each test removes the ACLs
it added.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from odradek.clients.admin import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, Admin, NewTopic, PatternType,
    ResourcePattern, ResourcePatternFilter, ResourceType,
)
from odradek.clients.simple_client import SyncSimpleClient
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import SecurityDisabledError, TopicAuthorizationFailedError

from ..conftest import new_cluster

pytestmark = pytest.mark.timeout(240)

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}
ANONYMOUS = "User:ANONYMOUS"
O, ALLOW, DENY = AclOperation, AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID


def acl(principal, operation, resource_type=TOPIC, name="t", permission=ALLOW, pattern_type=PatternType.LITERAL):
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, "*", operation, permission))


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    running = new_cluster(tmp_path_factory.mktemp("authorization"), zookeeper, 1, AUTHORIZER)
    try:
        yield running.start()
    finally:
        running.stop(timeout=15.0)


@pytest.fixture(scope="module")
def admin(cluster):
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as client:
        yield client


@contextlib.contextmanager
def acls(admin, *bindings):
    assert admin.create_acls(list(bindings))["failed"] == []
    try:
        yield
    finally:
        admin.delete_acls([AclBindingFilter(b.pattern.to_filter(), b.entry.to_filter()) for b in bindings])


def new_topic(admin, cluster, records: int = 3) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, 1)])
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(records):
        producer.produce(name, value=f"v{i}".encode())
    assert producer.flush(30) == 0
    return name


def produce_errors(cluster, topic: str, **config) -> list:
    """The delivery error of one record (None: delivered)."""
    from confluent_kafka import Producer
    errors = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 10000, **config})
    producer.produce(topic, value=b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    return errors


def idempotent_produce(cluster, topic: str):
    """0 once an idempotent confluent-kafka producer flushed one record, or the fatal KafkaError flush
    raised (no delivery callback: confluent-kafka would call it with that exception pending)."""
    from confluent_kafka import KafkaException, Producer
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                         "message.timeout.ms": 10000})
    producer.produce(topic, value=b"x")
    try:
        return producer.flush(30)
    except KafkaException as exc:
        return exc.args[0]


def consumer_error(cluster, topic: str, group: str, timeout: float = 30.0):
    """The first message or error a confluent-kafka consumer of ``group`` subscribed to ``topic`` sees."""
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None:
                return msg.error(), msg.value()
        raise AssertionError(f"nothing consumed from {topic} within {timeout} s")
    finally:
        consumer.close()


def test_a_principal_with_only_read_on_a_topic_can_read_it_and_nothing_else(cluster, admin):
    from confluent_kafka import KafkaError
    from kafka.admin import KafkaAdminClient
    readable, secret = new_topic(admin, cluster), new_topic(admin, cluster)
    with acls(admin, acl(ANONYMOUS, O.READ, name=readable), acl("User:alice", O.READ, name=secret),
              acl("User:alice", O.READ, GROUP, "alice-group")):
        # reads its topic, with a group that has no ACLs (allow.everyone.if.no.acl.found)
        error, value = consumer_error(cluster, readable, "free-group")
        assert error is None and value == b"v0"
        # may not write it
        [error] = produce_errors(cluster, readable)
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        # may not delete it (kafka-python's admin), and it is still there
        kafka_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            result = kafka_admin.delete_topics([readable], raise_errors=False)
            assert result["topics"][0]["error_code"] == TopicAuthorizationFailedError.code
        finally:
            kafka_admin.close()
        assert readable in admin.list_topics()
        # may not read (or even see) the other topic
        error, _ = consumer_error(cluster, secret, "free-group-2")
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        with SyncSimpleClient(cluster.bootstrap_servers) as client:
            assert secret not in {t.name for t in client.metadata_response(None).topics}
            [named] = client.metadata_response([secret]).topics
            assert named.error_code == TopicAuthorizationFailedError.code and not named.partitions
        # may not join a group whose ACLs name someone else
        error, _ = consumer_error(cluster, readable, "alice-group")
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    # the ACLs are gone: the topic is open again
    assert produce_errors(cluster, readable) == [None]


def test_a_transactional_producer_needs_write_on_its_transactional_id(cluster, admin):
    from confluent_kafka import KafkaException, Producer
    topic = new_topic(admin, cluster, records=0)
    config = {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "tx-orders"}
    with acls(admin, acl("User:alice", O.WRITE, TXN, "tx-", pattern_type=PatternType.PREFIXED)):
        producer = Producer(config)
        with pytest.raises(KafkaException) as refused:
            producer.init_transactions(30)
        assert refused.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
        with acls(admin, acl(ANONYMOUS, O.WRITE, TXN, "tx-orders")):
            producer = Producer(config)
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.produce(topic, value=b"in a transaction")
            producer.commit_transaction(30)


def test_an_idempotent_producer_needs_idempotent_write_or_write_on_some_topic(cluster, admin):
    from confluent_kafka import KafkaError
    topic = new_topic(admin, cluster, records=0)
    # The broker is ANONYMOUS too: it keeps the cluster actions it needs (All on the cluster).
    with acls(admin, acl(ANONYMOUS, O.ALL, CLUSTER, "kafka-cluster"),
              acl(ANONYMOUS, O.IDEMPOTENT_WRITE, CLUSTER, "kafka-cluster", DENY)):
        # No Write on any topic (an ACL on "*" also ends allow.everyone for topics: Describe is granted).
        with acls(admin, acl(ANONYMOUS, O.WRITE, name="*", permission=DENY), acl(ANONYMOUS, O.DESCRIBE, name="*")):
            fatal = idempotent_produce(cluster, topic)
            assert fatal.fatal() and fatal.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        # Write on some topic is enough (here every topic without ACLs: allow.everyone.if.no.acl.found)
        assert idempotent_produce(cluster, topic) == 0
    assert admin.list_offsets({TopicPartition(topic, 0): -1})[TopicPartition(topic, 0)] == 1


def test_acls_round_trip_through_kafka_python_and_confluent_kafka(cluster, admin):
    from confluent_kafka.admin import AclBindingFilter as CfFilter, AdminClient
    from confluent_kafka.admin import AclOperation as CfOp, AclPermissionType as CfPerm
    from confluent_kafka.admin import ResourcePatternType, ResourceType as CfType
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             KafkaAdminClient, ResourcePattern as KpPattern, ResourcePatternFilter as KpFilter,
                             ResourceType as KpType)
    kafka_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        created = kafka_admin.create_acls([ACL("User:kp", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                               KpPattern(KpType.TOPIC, "kp-", ACLResourcePatternType.PREFIXED))])
        assert len(created["succeeded"]) == 1 and not created["failed"]
        found = admin.describe_acls(AclBindingFilter(ResourcePatternFilter(TOPIC, "kp-topic", PatternType.MATCH)))
        assert found == [acl("User:kp", O.READ, name="kp-", pattern_type=PatternType.PREFIXED)]
        confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        listed = confluent.describe_acls(CfFilter(CfType.TOPIC, None, ResourcePatternType.ANY, "User:kp", None,
                                                  CfOp.ANY, CfPerm.ANY)).result(30)
        assert [(b.name, b.resource_pattern_type, b.operation) for b in listed] == \
            [("kp-", ResourcePatternType.PREFIXED, CfOp.READ)]
        [(_, deleted, error)] = kafka_admin.delete_acls([ACLFilter("User:kp", None, ACLOperation.ANY,
                                                                   ACLPermissionType.ANY,
                                                                   KpFilter(KpType.ANY, None,
                                                                            ACLResourcePatternType.ANY))])
        assert len(deleted) == 1 and error.errno == 0
        assert admin.describe_acls() == []
    finally:
        kafka_admin.close()


def test_authorized_operations_are_reported_when_asked(cluster, admin):
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation as CfOp, AdminClient
    topic = new_topic(admin, cluster, records=0)
    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    with acls(admin, acl(ANONYMOUS, O.READ, name=topic)):
        description = confluent.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[
            topic].result(30)
        assert set(description.authorized_operations) == {CfOp.READ, CfOp.DESCRIBE}
    cluster_description = confluent.describe_cluster(include_authorized_operations=True).result(30)
    # No ACL on the cluster: allow.everyone.if.no.acl.found gives every cluster operation.
    assert set(cluster_description.authorized_operations) == {
        CfOp.CREATE, CfOp.CLUSTER_ACTION, CfOp.DESCRIBE_CONFIGS, CfOp.ALTER_CONFIGS, CfOp.IDEMPOTENT_WRITE,
        CfOp.ALTER, CfOp.DESCRIBE}


def test_acl_apis_without_an_authorizer_answer_security_disabled(zookeeper, tmp_path):
    plain = new_cluster(tmp_path / "plain", zookeeper, 1).start()
    try:
        with Admin(bootstrap_servers=plain.bootstrap_servers) as client:
            with pytest.raises(SecurityDisabledError):
                client.describe_acls()
            [(_, failure)] = client.create_acls([acl(ANONYMOUS, O.READ)])["failed"]
            assert isinstance(failure, SecurityDisabledError)
    finally:
        plain.stop(timeout=15.0)

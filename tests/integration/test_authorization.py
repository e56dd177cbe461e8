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
import uuid

import pytest

from odradek.clients.admin.client import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, Admin, NewTopic, PatternType,
    ResourcePattern, ResourcePatternFilter, ResourceType,
)
from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.acl import operations_from_bitfield
from odradek.protocol.messages import ListGroupsRequest, MetadataRequest
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import SecurityDisabledError, TopicAuthorizationFailedError

from ..conftest import module_cluster
from .helpers import delivery_errors, first_consumed, run, send_from

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
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("authorization"), 1, AUTHORIZER)


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
    return delivery_errors({"bootstrap.servers": cluster.bootstrap_servers, **config}, topic)


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


def consumer_error(cluster, topic: str, group: str):
    return first_consumed({"bootstrap.servers": cluster.bootstrap_servers}, topic, group)


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
    # kafka-python's describe_groups (DescribeGroups v3+, include_authorized_operations), a group with a Read ACL
    from confluent_kafka import Consumer, TopicPartition as CfTopicPartition
    from kafka.admin import KafkaAdminClient
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ops-group"})
    consumer.commit(offsets=[CfTopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()
    kafka_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        with acls(admin, acl(ANONYMOUS, O.READ, GROUP, "ops-group")):
            group = kafka_admin.describe_groups(["ops-group"])["ops-group"]
            assert sorted(group["authorized_operations"]) == ["DESCRIBE", "READ"]
    finally:
        kafka_admin.close()
    # The cluster's field, in Metadata v10 and in confluent-kafka's describe_cluster (DescribeCluster): no
    # ACL on the cluster, so allow.everyone.if.no.acl.found gives them all.
    every_cluster_operation = {O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE,
                               O.ALTER, O.DESCRIBE}
    asked = MetadataRequest(topics=[], include_cluster_authorized_operations=True)
    answer = run(send_from("127.0.0.1", cluster.broker_ports[0], asked, 10))
    assert operations_from_bitfield(answer.cluster_authorized_operations) == every_cluster_operation
    described = confluent.describe_cluster(include_authorized_operations=True).result(30)
    assert {op.name for op in described.authorized_operations} == {op.name for op in every_cluster_operation}


def test_acl_apis_without_an_authorizer_answer_security_disabled(odradek_cluster_factory):
    plain = odradek_cluster_factory(1)
    with Admin(bootstrap_servers=plain.bootstrap_servers) as client:
        with pytest.raises(SecurityDisabledError):
            client.describe_acls()
        [(_, failure)] = client.create_acls([acl(ANONYMOUS, O.READ)])["failed"]
        assert isinstance(failure, SecurityDisabledError)


# -- every API, from an address the ACLs give nothing -------------------------------------------------
#
# ANONYMOUS from 127.0.0.1 (the broker itself, and this test's setup) gets All on the cluster and on
# every "locked*" topic, group and transactional id; ANONYMOUS from 127.0.0.2 matches none of those ACLs.

LOCAL_ONLY = [AclBinding(ResourcePattern(resource_type, name, pattern_type),
                         AccessControlEntry(ANONYMOUS, "127.0.0.1", O.ALL, ALLOW))
              for resource_type, name, pattern_type in (
                  (CLUSTER, "kafka-cluster", PatternType.LITERAL), (TOPIC, "locked", PatternType.PREFIXED),
                  (GROUP, "locked", PatternType.PREFIXED), (TXN, "locked", PatternType.PREFIXED))]
T, G, X = "locked-t", "locked-g", "locked-tx"
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53


def _api_cases():
    """(what, version, request, what to read from the response, the expected error code)."""
    from odradek.clients.simple_client import build_batch
    from odradek.protocol import messages as m
    batch = build_batch([(None, b"x")])
    commit = m.OffsetCommitRequest
    commit_topic = [commit.OffsetCommitRequestTopic(name=T, partitions=[
        commit.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]
    txn_commit = m.TxnOffsetCommitRequest
    fetch = m.FetchRequest
    fetch_topics = [fetch.FetchTopic(topic=T, partitions=[fetch.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1024)])]
    config, alter, incremental = m.DescribeConfigsRequest, m.AlterConfigsRequest, m.IncrementalAlterConfigsRequest

    def partition_codes(topics, partitions="partitions"):
        return {p.error_code for t in topics for p in getattr(t, partitions)}

    return [
        ("Metadata named", 9, m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=T)]),
         lambda r: r.topics[0].error_code, TOPIC_DENIED),
        ("Metadata cluster operations", 10, m.MetadataRequest(topics=[], include_cluster_authorized_operations=True),
         lambda r: r.cluster_authorized_operations, 0),
        ("Produce", 8, m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[m.ProduceRequest.TopicProduceData(
            name=T, partition_data=[m.ProduceRequest.PartitionProduceData(index=0, records=batch)])]),
         lambda r: partition_codes(r.responses, "partition_responses"), {TOPIC_DENIED}),
        ("Fetch", 12, fetch(replica_id=-1, max_wait_ms=0, topics=fetch_topics),
         lambda r: partition_codes(r.responses), {TOPIC_DENIED}),
        ("Fetch as a follower", 12, fetch(replica_id=0, max_wait_ms=0, topics=fetch_topics),
         lambda r: partition_codes(r.responses), {TOPIC_DENIED}),
        ("ListOffsets", 5, m.ListOffsetsRequest(replica_id=-1, topics=[m.ListOffsetsRequest.ListOffsetsTopic(
            name=T, partitions=[m.ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]),
         lambda r: partition_codes(r.topics), {TOPIC_DENIED}),
        ("OffsetForLeaderEpoch", 4, m.OffsetForLeaderEpochRequest(replica_id=-1, topics=[
            m.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=T, partitions=[
                m.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])]),
         lambda r: partition_codes(r.topics), {TOPIC_DENIED}),
        ("CreateTopics", 5, m.CreateTopicsRequest(timeout_ms=5000, topics=[m.CreateTopicsRequest.CreatableTopic(
            name="locked-new", num_partitions=1, replication_factor=1)]), lambda r: r.topics[0].error_code,
         TOPIC_DENIED),
        ("DeleteTopics", 5, m.DeleteTopicsRequest(topic_names=[T], timeout_ms=5000),
         lambda r: r.responses[0].error_code, TOPIC_DENIED),
        ("DeleteRecords", 2, m.DeleteRecordsRequest(timeout_ms=5000, topics=[m.DeleteRecordsRequest.DeleteRecordsTopic(
            name=T, partitions=[m.DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])]),
         lambda r: partition_codes(r.topics), {TOPIC_DENIED}),
        ("CreatePartitions", 3, m.CreatePartitionsRequest(timeout_ms=5000, topics=[
            m.CreatePartitionsRequest.CreatePartitionsTopic(name=T, count=2)]), lambda r: r.results[0].error_code,
         TOPIC_DENIED),
        ("DescribeConfigs topic", 4, config(resources=[config.DescribeConfigsResource(resource_type=2,
                                                                                      resource_name=T)]),
         lambda r: r.results[0].error_code, TOPIC_DENIED),
        ("DescribeConfigs broker", 4, config(resources=[config.DescribeConfigsResource(resource_type=4,
                                                                                       resource_name="0")]),
         lambda r: r.results[0].error_code, CLUSTER_DENIED),
        ("AlterConfigs topic", 2, alter(resources=[alter.AlterConfigsResource(resource_type=2, resource_name=T)]),
         lambda r: r.responses[0].error_code, TOPIC_DENIED),
        ("AlterConfigs broker", 2, alter(resources=[alter.AlterConfigsResource(resource_type=4, resource_name="0")]),
         lambda r: r.responses[0].error_code, CLUSTER_DENIED),
        ("IncrementalAlterConfigs topic", 1, incremental(resources=[incremental.AlterConfigsResource(
            resource_type=2, resource_name=T)]), lambda r: r.responses[0].error_code, TOPIC_DENIED),
        ("OffsetCommit group", 8, commit(group_id=G, topics=commit_topic), lambda r: partition_codes(r.topics),
         {GROUP_DENIED}),
        ("OffsetCommit topic", 8, commit(group_id="open-g", topics=commit_topic), lambda r: partition_codes(r.topics),
         {TOPIC_DENIED}),
        ("OffsetFetch group", 7, m.OffsetFetchRequest(group_id=G, topics=None), lambda r: r.error_code, GROUP_DENIED),
        ("OffsetFetch topic", 7, m.OffsetFetchRequest(group_id="open-g", topics=[
            m.OffsetFetchRequest.OffsetFetchRequestTopic(name=T, partition_indexes=[0])]),
         lambda r: partition_codes(r.topics), {TOPIC_DENIED}),
        ("OffsetDelete", 0, m.OffsetDeleteRequest(group_id=G, topics=[]), lambda r: r.error_code, GROUP_DENIED),
        ("FindCoordinator group", 3, m.FindCoordinatorRequest(key=G, key_type=0), lambda r: r.error_code,
         GROUP_DENIED),
        ("FindCoordinator transaction", 3, m.FindCoordinatorRequest(key=X, key_type=1), lambda r: r.error_code,
         TXN_DENIED),
        ("JoinGroup", 7, m.JoinGroupRequest(group_id=G, session_timeout_ms=10000, protocol_type="consumer"),
         lambda r: (r.error_code, r.member_id), (GROUP_DENIED, "")),
        # v5+ names the protocol: without it Kafka answers INCONSISTENT_GROUP_PROTOCOL before authorizing
        ("SyncGroup", 5, m.SyncGroupRequest(group_id=G, member_id="m", protocol_type="consumer",
                                            protocol_name="range"), lambda r: r.error_code, GROUP_DENIED),
        ("Heartbeat", 4, m.HeartbeatRequest(group_id=G, member_id="m"), lambda r: r.error_code, GROUP_DENIED),
        ("LeaveGroup", 4, m.LeaveGroupRequest(group_id=G, members=[]), lambda r: r.error_code, GROUP_DENIED),
        ("DescribeGroups", 5, m.DescribeGroupsRequest(groups=[G]), lambda r: r.groups[0].error_code, GROUP_DENIED),
        ("ListGroups", 4, m.ListGroupsRequest(), lambda r: (r.error_code, G in [g.group_id for g in r.groups]),
         (0, False)),
        ("DeleteGroups", 2, m.DeleteGroupsRequest(groups_names=[G]), lambda r: r.results[0].error_code, GROUP_DENIED),
        ("InitProducerId", 4, m.InitProducerIdRequest(transactional_id=X, transaction_timeout_ms=10000),
         lambda r: r.error_code, TXN_DENIED),
        ("AddPartitionsToTxn", 3, m.AddPartitionsToTxnRequest(transactional_id=X, topics=[
            m.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=T, partitions=[0])]),
         lambda r: partition_codes(r.results, "results"), {TXN_DENIED}),
        ("AddOffsetsToTxn", 3, m.AddOffsetsToTxnRequest(transactional_id=X, group_id=G), lambda r: r.error_code,
         TXN_DENIED),
        ("EndTxn", 3, m.EndTxnRequest(transactional_id=X), lambda r: r.error_code, TXN_DENIED),
        ("TxnOffsetCommit", 3, txn_commit(transactional_id=X, group_id=G, topics=[txn_commit.TxnOffsetCommitRequestTopic(
            name=T, partitions=[txn_commit.TxnOffsetCommitRequestPartition(partition_index=0)])]),
         lambda r: partition_codes(r.topics), {TXN_DENIED}),
        ("ElectLeaders", 2, m.ElectLeadersRequest(topic_partitions=None, timeout_ms=5000), lambda r: r.error_code,
         CLUSTER_DENIED),
        ("AlterPartitionReassignments", 0, m.AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[
            m.AlterPartitionReassignmentsRequest.ReassignableTopic(name=T, partitions=[
                m.AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(partition_index=0,
                                                                                            replicas=[0])])]),
         lambda r: (r.error_code, partition_codes(r.responses)), (CLUSTER_DENIED, {CLUSTER_DENIED})),
        ("ListPartitionReassignments", 0, m.ListPartitionReassignmentsRequest(timeout_ms=5000),
         lambda r: r.error_code, CLUSTER_DENIED),
        ("DescribeCluster", 0, m.DescribeClusterRequest(include_cluster_authorized_operations=True),
         lambda r: r.cluster_authorized_operations, 0),
        ("DescribeProducers", 0, m.DescribeProducersRequest(topics=[m.DescribeProducersRequest.TopicRequest(
            name=T, partition_indexes=[0])]), lambda r: partition_codes(r.topics), {TOPIC_DENIED}),
        ("DescribeClientQuotas", 1, m.DescribeClientQuotasRequest(components=[], strict=False),
         lambda r: r.error_code, CLUSTER_DENIED),
        ("AlterClientQuotas", 1, m.AlterClientQuotasRequest(entries=[m.AlterClientQuotasRequest.EntryData(
            entity=[m.AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name="u")], ops=[])]),
         lambda r: r.entries[0].error_code, CLUSTER_DENIED),
        ("DescribeUserScramCredentials", 0, m.DescribeUserScramCredentialsRequest(users=None),
         lambda r: r.error_code, CLUSTER_DENIED),
        ("AlterUserScramCredentials", 0, m.AlterUserScramCredentialsRequest(upsertions=[], deletions=[
            m.AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="alice", mechanism=1)]),
         lambda r: r.results[0].error_code, CLUSTER_DENIED),
        ("DescribeLogDirs", 2, m.DescribeLogDirsRequest(topics=None), lambda r: r.results, []),
        ("DescribeAcls", 2, m.DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                  permission_type=1), lambda r: r.error_code, CLUSTER_DENIED),
        ("CreateAcls", 2, m.CreateAclsRequest(creations=[m.CreateAclsRequest.AclCreation(
            resource_type=2, resource_name="x", principal=ANONYMOUS, host="*", operation=2, permission_type=3)]),
         lambda r: r.results[0].error_code, CLUSTER_DENIED),
        ("DeleteAcls", 2, m.DeleteAclsRequest(filters=[m.DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1)]),
         lambda r: r.filter_results[0].error_code, CLUSTER_DENIED),
    ]


def test_every_api_refuses_a_principal_without_acls_as_kafka_does(cluster, admin):
    from confluent_kafka import Consumer, TopicPartition as CfTopicPartition
    admin.create_topics([NewTopic(T, 1, 1)])
    with acls(admin, *LOCAL_ONLY):
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": G})  # from 127.0.0.1
        consumer.commit(offsets=[CfTopicPartition(T, 0, 0)], asynchronous=False)  # the group exists
        consumer.close()
        port = cluster.broker_ports[0]

        async def send_all():
            return [(what, read(await send_from("127.0.0.2", port, body, version)), expected)
                    for what, version, body, read, expected in _api_cases()]

        answers = run(send_all())
        assert [(what, got) for what, got, expected in answers if got != expected] == []
        # The same from 127.0.0.1, which the ACLs do cover, gets through.
        metadata = run(send_from("127.0.0.1", port, _api_cases()[0][2], 9))
        assert metadata.topics[0].error_code == 0
        groups = run(send_from("127.0.0.1", port, ListGroupsRequest(), 4))
        assert G in [g.group_id for g in groups.groups]

"""ACLs on a real 3-broker cluster: odradek-acls round trips, every broker enforces a change within
moments (ZooKeeper change notifications), and forged controller requests change nothing.

Every connection is User:ANONYMOUS until authentication exists, so the forged requests come from
another address: the cluster's ACLs give ANONYMOUS everything on the cluster from 127.0.0.1 (where the
brokers connect from) only, and the forger connects from 127.0.0.2. Its StopReplica (delete, with a
higher controller epoch), LeaderAndIsr (higher controller and leader epochs), WriteTxnMarkers and
follower Fetch are refused with CLUSTER_AUTHORIZATION_FAILED (TOPIC_AUTHORIZATION_FAILED for the
fetch, as Kafka), and the partition keeps its data, leader and replicas; an UpdateMetadata from
127.0.0.1 gets past the check (and is refused for its stale epoch), so the address is what decides.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from odradek.clients.admin.client import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, Admin, NewTopic,
    ResourcePattern, ResourceType,
)
from odradek.clients.simple_client import SyncSimpleClient
from odradek.controller.zk_client import KafkaZkClient
from odradek.protocol.errors import ClusterAuthorizationFailedError, StaleControllerEpochError
from odradek.protocol.errors import TopicAuthorizationFailedError
from odradek.protocol.messages import (
    DescribeAclsRequest, FetchRequest, LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest, WriteTxnMarkersRequest,
)
from odradek.protocol.types import ZERO_UUID

from ..conftest import module_cluster
from .helpers import console_tool, read_all, run, send_from, wait_until

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_ACTION_FOR_BROKERS = AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
                                        AccessControlEntry(ANONYMOUS, "127.0.0.1", AclOperation.ALL,
                                                           AclPermissionType.ALLOW))


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("acls-cluster"), 3, AUTHORIZER)


def metadata_error(cluster, broker_id: int, topic: str) -> int:
    """The error one broker (asked alone) answers for ``topic`` in Metadata."""
    port = cluster.broker_ports[broker_id]
    with SyncSimpleClient(f"127.0.0.1:{port}", retries=0) as client:
        [answer] = client.metadata_response([topic]).topics
        return answer.error_code


def acls_tool(cluster, *args: str, broker: int = 0) -> str:
    return console_tool("acls", "--bootstrap-server", f"127.0.0.1:{cluster.broker_ports[broker]}", *args).stdout


def every_broker_answers(cluster, topic: str, code: int, what: str) -> float:
    """Seconds until all three brokers answer ``code`` for ``topic``."""
    start = time.monotonic()
    wait_until(lambda: all(metadata_error(cluster, b, topic) == code for b in range(3)), timeout=30, what=what)
    return time.monotonic() - start


def test_acls_tool_round_trips_and_every_broker_enforces_a_change(cluster):
    topic = f"shared-{uuid.uuid4().hex[:6]}"
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)])
    every_broker_answers(cluster, topic, 0, "the new topic on every broker")
    resource = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    alice_read = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"

    out = acls_tool(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic)
    assert f"Adding ACLs for resource `{resource}`: \n \t{alice_read} \n" in out
    assert f"Current ACLs for resource `{resource}`: \n \t{alice_read} \n" in out
    # ANONYMOUS is not alice: once the topic has an ACL, no broker shows it to ANONYMOUS any more.
    seconds = every_broker_answers(cluster, topic, TopicAuthorizationFailedError.code, "the ACL on every broker")
    print(f"ACL enforced by all 3 brokers {seconds:.2f} s after odradek-acls --add returned")

    assert alice_read in acls_tool(cluster, "--list", "--topic", topic, broker=2)
    by_principal = acls_tool(cluster, "--list", "--principal", "User:alice", broker=1)
    assert by_principal.startswith("ACLs for principal `User:alice`\n") and alice_read in by_principal
    # Straight from ZooKeeper, as kafka-acls.sh --authorizer-properties reads Kafka's own znodes.
    zk_listing = console_tool("acls", "--authorizer-properties", f"zookeeper.connect={cluster.zookeeper_connect}",
                              "--list", "--topic", topic).stdout
    assert zk_listing == acls_tool(cluster, "--list", "--topic", topic)

    # A prefixed Describe for ANONYMOUS, written into ZooKeeper by the tool: the brokers follow.
    console_tool("acls", "--authorizer-properties", f"zookeeper.connect={cluster.zookeeper_connect}", "--add",
                 "--allow-principal", ANONYMOUS, "--operation", "Describe", "--topic", topic[:7],
                 "--resource-pattern-type", "prefixed")
    seconds = every_broker_answers(cluster, topic, 0, "the prefixed ACL on every broker")
    print(f"ZooKeeper-written ACL enforced by all 3 brokers within {seconds:.2f} s")

    acls_tool(cluster, "--remove", "--force", "--topic", topic)
    out = acls_tool(cluster, "--remove", "--force", "--topic", topic[:7], "--resource-pattern-type", "prefixed")
    assert "Current ACLs" not in out
    assert acls_tool(cluster, "--list") == ""


def test_remove_asks_before_deleting_and_a_no_keeps_the_acls(cluster):
    topic = f"asked-{uuid.uuid4().hex[:6]}"
    acls_tool(cluster, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1", "--operation",
              "Write", "--topic", topic)
    done = console_tool("acls", "--bootstrap-server", cluster.bootstrap_servers, "--remove", "--topic", topic,
                        stdin="n\n")
    assert f"Are you sure you want to delete all ACLs for resource filter `ResourcePattern(resourceType=TOPIC, " \
           f"name={topic}, patternType=LITERAL)`? (y/n)" in done.stdout
    assert "(principal=User:mallory, host=10.0.0.1, operation=WRITE, permissionType=DENY)" in done.stdout
    console_tool("acls", "--bootstrap-server", cluster.bootstrap_servers, "--remove", "--topic", topic, stdin="y\n")
    assert acls_tool(cluster, "--list", "--topic", topic) == ""


def test_usage_mistakes_are_one_line_errors():
    for args, message in ((["--list"], 'Missing required argument "[authorizer-properties]"'),
                          (["--bootstrap-server", "h:1", "--add", "--list"], "exactly one action"),
                          (["--bootstrap-server", "h:1", "--add", "--topic", "t"], "--allow-principal, --deny-principal"),
                          (["--bootstrap-server", "h:1", "--add", "--allow-principal", "User:a", "--operation",
                            "IdempotentWrite", "--topic", "t"], "ResourceType TOPIC only supports operations"),
                          (["--bootstrap-server", "h:1", "--add", "--allow-principal", "alice", "--topic", "t"],
                           "principalType:principalName"),
                          (["--bootstrap-server", "h:1", "--producer", "--add", "--allow-principal", "User:a"],
                           "With --producer you must specify a --topic")):
        done = console_tool("acls", *args, check=False)
        assert done.returncode == 1 and message in done.stderr and done.stderr.count("\n") == 1, done


@contextlib.contextmanager
def cluster_acls_for_brokers_only(cluster):
    """The cluster ACL, once every broker has it: until a broker has followed the change notification,
    the cluster has no ACL there and allow.everyone.if.no.acl.found would let anyone in."""
    describe_acls = DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1)

    def refused_everywhere() -> bool:
        answers = [run(send_from("127.0.0.2", port, describe_acls, 2)) for port in cluster.broker_ports]
        return all(a.error_code == ClusterAuthorizationFailedError.code for a in answers)

    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        assert admin.create_acls([CLUSTER_ACTION_FOR_BROKERS])["failed"] == []
        try:
            wait_until(refused_everywhere, timeout=30, what="the cluster ACL on every broker")
            yield admin
        finally:
            admin.delete_acls([AclBindingFilter(CLUSTER_ACTION_FOR_BROKERS.pattern.to_filter(),
                                                CLUSTER_ACTION_FOR_BROKERS.entry.to_filter())])


def test_forged_controller_requests_are_refused_and_change_nothing(cluster):
    topic = f"precious-{uuid.uuid4().hex[:6]}"
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)])
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        client.wait_for_leaders(topic)
        for i in range(10):
            client.produce(topic, 0, [(None, f"record-{i}".encode())], acks=-1)
        [before] = client.metadata_response([topic]).topics
    partition = before.partitions[0]
    leader, epoch = partition.leader_id, partition.leader_epoch
    victim = next(r for r in partition.replica_nodes if r != leader)
    zk = KafkaZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        controller_epoch, _ = zk.get_controller_epoch()
    finally:
        zk.close()
    forged_epoch = controller_epoch + 1
    stop = StopReplicaRequest(controller_id=victim, controller_epoch=forged_epoch, topic_states=[
        StopReplicaRequest.StopReplicaTopicState(topic_name=topic, partition_states=[
            StopReplicaRequest.StopReplicaTopicState.StopReplicaPartitionState(
                partition_index=0, leader_epoch=epoch + 5, delete_partition=True)])])
    state = LeaderAndIsrRequest.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
        partition_index=0, controller_epoch=forged_epoch, leader=victim, leader_epoch=epoch + 10, isr=[victim],
        partition_epoch=99, replicas=list(partition.replica_nodes))
    leader_and_isr = LeaderAndIsrRequest(controller_id=victim, controller_epoch=forged_epoch, type=0, topic_states=[
        LeaderAndIsrRequest.LeaderAndIsrTopicState(topic_name=topic, topic_id=before.topic_id,
                                                   partition_states=[state])], live_leaders=[])
    marker = WriteTxnMarkersRequest.WritableTxnMarker
    markers = WriteTxnMarkersRequest(markers=[marker(producer_id=4242, producer_epoch=0, transaction_result=False,
                                                     coordinator_epoch=0, topics=[marker.WritableTxnMarkerTopic(
                                                         name=topic, partition_indexes=[0])])])
    fetch_topic = FetchRequest.FetchTopic
    follower_fetch = FetchRequest(replica_id=victim, max_wait_ms=0, min_bytes=0, isolation_level=0, topics=[
        fetch_topic(topic=topic, partitions=[fetch_topic.FetchPartition(partition=0, fetch_offset=0,
                                                                        partition_max_bytes=1 << 20)])])
    stale_metadata = UpdateMetadataRequest(controller_id=victim, controller_epoch=0, topic_states=[], live_brokers=[])
    leader_port, victim_port = cluster.broker_ports[leader], cluster.broker_ports[victim]

    async def forge():
        return (await send_from("127.0.0.2", victim_port, stop, 3),
                await send_from("127.0.0.2", victim_port, leader_and_isr, 5),
                await send_from("127.0.0.2", leader_port, markers, 1),
                await send_from("127.0.0.2", leader_port, follower_fetch, 12),
                await send_from("127.0.0.1", victim_port, stale_metadata, 7))

    with cluster_acls_for_brokers_only(cluster) as admin:
        stopped, led, marked, fetched, from_broker_address = run(forge())
        assert stopped.error_code == ClusterAuthorizationFailedError.code
        assert [p.error_code for p in stopped.partition_errors] == [ClusterAuthorizationFailedError.code]
        assert led.error_code == ClusterAuthorizationFailedError.code
        assert [p.error_code for t in marked.markers for tr in t.topics for p in tr.partitions] == \
            [ClusterAuthorizationFailedError.code]
        assert [p.error_code for t in fetched.responses for p in t.partitions] == [TopicAuthorizationFailedError.code]
        assert from_broker_address.error_code == StaleControllerEpochError.code
        # Nothing moved: same leader and epoch, every replica still holds its log and in-sync.
        with SyncSimpleClient(cluster.bootstrap_servers) as client:
            [after] = client.metadata_response([topic]).topics
        assert (after.partitions[0].leader_id, after.partitions[0].leader_epoch) == (leader, epoch)
        assert sorted(after.partitions[0].isr_nodes) == sorted(partition.replica_nodes)
        dirs = admin.describe_log_dirs([topic])
        assert all(any(tp.topic == topic for d in by_dir.values() for tp in d.replicas) for by_dir in dirs.values())
    records = run(read_all(cluster.bootstrap_servers, topic, 1))[0]
    assert [r.value for r in records] == [f"record-{i}".encode() for i in range(10)]
    assert after.topic_id != ZERO_UUID

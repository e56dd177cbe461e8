"""The controller's requests need ClusterAction: KafkaApis with the real inter-broker handlers, an
AclAuthorizer whose super user is the brokers' principal, and requests from two principals. A forged
StopReplica(delete) or LeaderAndIsr with a higher controller epoch from User:mallory is answered
CLUSTER_AUTHORIZATION_FAILED for the request and every partition, and never reaches the replica
manager; the same requests from User:broker do. AlterIsr likewise, and its answer carries what the
controller wrote, grouped by topic. (Against real brokers, with the principal told apart
by address until authentication exists: tests/integration/test_acls_cluster.py.)"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from odradek.broker.apis import alter_isr, controlled_shutdown, inter_broker, write_txn_markers
from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.network.request_channel import Request, Response
from odradek.broker.security.acl_authorizer import AclAuthorizer
from odradek.broker.security.principal import KafkaPrincipal
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import ClusterAuthorizationFailedError
from odradek.protocol.header import RequestHeader, decode_response
from odradek.controller.alter_isr import IsrRequest, IsrResult
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch
from odradek.protocol.messages import (
    AlterIsrRequest, ControlledShutdownRequest, LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest,
    WriteTxnMarkersRequest,
)

CLUSTER_AUTHORIZATION_FAILED = ClusterAuthorizationFailedError.code


class RecordingReplicaManager:
    """Records what reaches it; a real one would delete logs and change leaders."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.state_change_lock = asyncio.Lock()

    def stop_replicas(self, controller_epoch, partitions):
        self.calls.append("stop_replicas")
        return {(t, p): 0 for t, p, _, _ in partitions}

    def online_partition(self, topic, partition):
        return object()

    def become_leader_or_follower(self, controller_epoch, states, configs, leaders):
        self.calls.append("become_leader_or_follower")
        return {(t, s.partition_index): 0 for t, s in states}

    async def apply_leader_and_isr(self, controller_epoch, states, configs, leaders):
        return self.become_leader_or_follower(controller_epoch, states, configs, leaders)

    def check_controller_epoch(self, epoch, what):
        self.calls.append("check_controller_epoch")


class Transport:
    def get_extra_info(self, name):
        return ("10.1.2.3", 40000) if name == "peername" else None


def connection(principal: str) -> SimpleNamespace:
    principal_type, name = principal.split(":", 1)
    return SimpleNamespace(id="c", listener="PLAINTEXT", transport=Transport(),
                           principal=KafkaPrincipal(principal_type, name))


@pytest.fixture
def broker():
    replica_manager = RecordingReplicaManager()
    services = SimpleNamespace(broker_id=1, replica_manager=replica_manager, broker_epoch=lambda: 100, zk=None,
                               controller=None,
                               metadata_cache=SimpleNamespace(update=lambda body, version: []),
                               config={"request.timeout.ms": 1000}, group_coordinator=None,
                               auth=AuthHelper(AclAuthorizer(None, frozenset({"User:broker"}))))

    async def in_executor(fn, *args):
        return fn(*args)
    services.in_executor = in_executor
    apis = KafkaApis()
    for module in (inter_broker, controlled_shutdown, write_txn_markers):
        module.register(apis, services)
    return apis, replica_manager


def send(apis: KafkaApis, principal: str, api_key: int, version: int, body):
    request = Request(RequestHeader(api_key, version, 9, "forger"), body, connection(principal))
    response = asyncio.run(apis.handle(request))
    assert response.kind == Response.SEND
    data = b"".join(bytes(p) for p in response.parts)
    return decode_response(data[4:], api_key, version)[1]


def stop_replica(controller_epoch: int) -> StopReplicaRequest:
    partition = StopReplicaRequest.StopReplicaTopicState.StopReplicaPartitionState
    return StopReplicaRequest(controller_id=1, controller_epoch=controller_epoch, broker_epoch=-1, topic_states=[
        StopReplicaRequest.StopReplicaTopicState(topic_name="precious", partition_states=[
            partition(partition_index=0, leader_epoch=50, delete_partition=True)])])


def leader_and_isr(controller_epoch: int) -> LeaderAndIsrRequest:
    topic = LeaderAndIsrRequest.LeaderAndIsrTopicState
    state = topic.LeaderAndIsrPartitionState(partition_index=0, controller_epoch=controller_epoch, leader=1,
                                             leader_epoch=50, isr=[1], partition_epoch=9, replicas=[1, 2])
    return LeaderAndIsrRequest(controller_id=1, controller_epoch=controller_epoch, broker_epoch=-1, type=0,
                               topic_states=[topic(topic_name="precious", partition_states=[state])], live_leaders=[])


def test_a_forged_stop_replica_is_refused_before_it_reaches_the_replica_manager(broker):
    apis, replica_manager = broker
    answer = send(apis, "User:mallory", ApiKey.STOP_REPLICA, 3, stop_replica(controller_epoch=1_000))
    assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED
    assert [(p.topic_name, p.error_code) for p in answer.partition_errors] == [("precious", CLUSTER_AUTHORIZATION_FAILED)]
    assert replica_manager.calls == []
    assert send(apis, "User:broker", ApiKey.STOP_REPLICA, 3, stop_replica(1_000)).error_code == 0
    assert replica_manager.calls == ["check_controller_epoch", "stop_replicas"]  # the epoch first, as Kafka 2.8


def test_a_forged_leader_and_isr_with_a_higher_controller_epoch_is_refused(broker):
    apis, replica_manager = broker
    answer = send(apis, "User:mallory", ApiKey.LEADER_AND_ISR, 4, leader_and_isr(controller_epoch=1_000))
    assert answer.error_code == CLUSTER_AUTHORIZATION_FAILED
    assert [p.error_code for p in answer.partition_errors] == [CLUSTER_AUTHORIZATION_FAILED]
    assert replica_manager.calls == []
    assert send(apis, "User:broker", ApiKey.LEADER_AND_ISR, 4, leader_and_isr(1_000)).error_code == 0
    # (the controller epoch is checked first: nothing is read from ZooKeeper for a stale request)
    assert replica_manager.calls == ["check_controller_epoch", "become_leader_or_follower"]


def test_update_metadata_controlled_shutdown_and_markers_need_cluster_action_too(broker):
    apis, replica_manager = broker
    update = UpdateMetadataRequest(controller_id=1, controller_epoch=1_000, topic_states=[], live_brokers=[])
    assert send(apis, "User:mallory", ApiKey.UPDATE_METADATA, 7, update).error_code == CLUSTER_AUTHORIZATION_FAILED
    shutdown = ControlledShutdownRequest(broker_id=1, broker_epoch=5)
    assert send(apis, "User:mallory", ApiKey.CONTROLLED_SHUTDOWN, 3, shutdown).error_code == \
        CLUSTER_AUTHORIZATION_FAILED
    marker = WriteTxnMarkersRequest.WritableTxnMarker
    markers = WriteTxnMarkersRequest(markers=[marker(producer_id=1, producer_epoch=0, transaction_result=True,
                                                     coordinator_epoch=0, topics=[marker.WritableTxnMarkerTopic(
                                                         name="precious", partition_indexes=[0])])])
    answer = send(apis, "User:mallory", ApiKey.WRITE_TXN_MARKERS, 1, markers)
    assert [p.error_code for m in answer.markers for t in m.topics for p in t.partitions] == \
        [CLUSTER_AUTHORIZATION_FAILED]
    assert replica_manager.calls == []
    assert send(apis, "User:broker", ApiKey.UPDATE_METADATA, 7, update).error_code == 0
    assert replica_manager.calls == ["check_controller_epoch"]


class RecordingController:
    """The active controller's AlterIsr: records what it was asked, answers t-0 written and t-1 fenced."""

    def __init__(self) -> None:
        self.asked: list = []

    async def alter_isr(self, broker_id, broker_epoch, requests):
        self.asked.append((broker_id, broker_epoch, requests))
        return {("t", 0): IsrResult(0, LeaderIsrAndControllerEpoch(1, 4, [1, 2], 3), 8), ("t", 1): IsrResult(74)}


def test_alter_isr_needs_cluster_action_and_answers_what_the_controller_wrote(broker):
    apis, _ = broker
    controller = RecordingController()
    authorizer = AclAuthorizer(None, frozenset({"User:broker"}))
    alter_isr.register(apis, SimpleNamespace(auth=AuthHelper(authorizer), controller=controller))
    partition = AlterIsrRequest.PartitionData
    request = AlterIsrRequest(broker_id=1, broker_epoch=7, topics=[AlterIsrRequest.TopicData(name="t", partitions=[
        partition(partition_index=0, leader_epoch=4, new_isr=[1, 2], current_isr_version=7),
        partition(partition_index=1, leader_epoch=2, new_isr=[1], current_isr_version=3)])])
    refused = send(apis, "User:mallory", ApiKey.ALTER_ISR, 0, request)
    assert (refused.error_code, refused.topics) == (CLUSTER_AUTHORIZATION_FAILED, []) and controller.asked == []
    answer = send(apis, "User:broker", ApiKey.ALTER_ISR, 0, request)
    assert controller.asked == [(1, 7, {("t", 0): IsrRequest(4, (1, 2), 7), ("t", 1): IsrRequest(2, (1,), 3)})]
    assert answer.error_code == 0 and [t.name for t in answer.topics] == ["t"]
    assert [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.isr, p.current_isr_version)
            for p in answer.topics[0].partitions] == [(0, 0, 1, 4, [1, 2], 8), (1, 74, 0, 0, [], 0)]

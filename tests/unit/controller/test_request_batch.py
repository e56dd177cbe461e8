"""ControllerBrokerRequestBatch: one request of each kind per broker, at every version the brokers may speak."""

import uuid

import pytest

from odradek.controller.channel_manager import ControllerBrokerRequestBatch
from odradek.controller.controller_context import ControllerContext
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch as S, TopicAssignment
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.header import decode_request, encode_request

TOPIC_ID = uuid.UUID(int=42)


class RecordingChannel:
    """Records what the batch queues instead of sending it (the sender is tested with real sockets)."""
    listener_name = "INTERNAL"

    def __init__(self):
        self.sent = []

    def send(self, broker_id, api_key, build, callback=None):
        self.sent.append((broker_id, int(api_key), build))
        return True

    def of(self, api_key):
        return {b: build for b, k, build in self.sent if k == api_key}


def context() -> ControllerContext:
    ctx = ControllerContext()
    protocols = {"PLAINTEXT": "PLAINTEXT", "INTERNAL": "SASL_PLAINTEXT"}
    for b in (1, 2, 3):
        ctx.add_live_broker(BrokerInfo(b, [("PLAINTEXT", "client", 9000 + b), ("INTERNAL", f"10.0.0.{b}", 19000 + b)],
                                       rack=f"r{b}", security_protocol_map=protocols), 500 + b)
    ctx.add_topic("t", TopicAssignment({0: [1, 2], 1: [2, 3]}, TOPIC_ID))
    ctx.add_topic("gone", TopicAssignment({0: [3, 1]}))
    ctx.put_leadership(("t", 0), S(1, 4, [1, 2], 7), 9)
    ctx.put_leadership(("t", 1), S(2, 0, [2, 3], 8), 0)
    ctx.put_leadership(("gone", 0), S(3, 2, [3, 1], 8), 3)
    ctx.epoch = 9
    return ctx


def roundtrip(body, version):
    """Encode at ``version`` and decode back, as the broker would see it."""
    _, decoded = decode_request(encode_request(body, version, 1, "controller-0")[4:])
    return decoded


def all_versions(api_key):
    low, high = KAFKA_2_8_VERSIONS[api_key]
    return range(low, high + 1)


def test_leader_and_isr_goes_to_replicas_with_update_metadata_to_everyone():
    ctx, channel = context(), RecordingChannel()
    batch = ControllerBrokerRequestBatch(ctx, channel, controller_id=0)
    batch.add_leader_and_isr([1, 2], ("t", 0), is_new=True)
    batch.add_leader_and_isr([2, 3], ("t", 1))
    batch.add_leader_and_isr([2], ("t", 0))  # a second add keeps is_new
    batch.send(controller_epoch=9)
    assert batch.is_empty()
    kinds = [(b, k) for b, k, _ in channel.sent]
    assert kinds == [(1, 4), (2, 4), (3, 4), (1, 6), (2, 6), (3, 6)]  # LeaderAndIsr first, one per broker
    request = roundtrip(channel.of(4)[2](5), 5)
    assert (request.controller_id, request.controller_epoch, request.broker_epoch) == (0, 9, 502)
    (topic,) = request.topic_states
    assert topic.topic_name == "t" and topic.topic_id == TOPIC_ID
    states = {s.partition_index: s for s in topic.partition_states}
    assert (states[0].leader, states[0].leader_epoch, states[0].isr, states[0].partition_epoch,
            states[0].replicas, states[0].is_new, states[0].controller_epoch) == (1, 4, [1, 2], 9, [1, 2], True, 7)
    assert states[1].is_new is False
    # live leaders: the leaders' inter-broker endpoints
    assert [(l.broker_id, l.host_name, l.port) for l in request.live_leaders] == \
        [(1, "10.0.0.1", 19001), (2, "10.0.0.2", 19002)]
    assert [s.partition_index for s in roundtrip(channel.of(4)[3](5), 5).topic_states[0].partition_states] == [1]


@pytest.mark.parametrize("version", all_versions(ApiKey.LEADER_AND_ISR))
def test_leader_and_isr_encodes_at_every_version(version):
    ctx, channel = context(), RecordingChannel()
    batch = ControllerBrokerRequestBatch(ctx, channel, controller_id=0)
    batch.add_leader_and_isr([2], ("t", 0), is_new=True)
    batch.add_leader_and_isr([2], ("gone", 0))
    batch.send(9)
    request = roundtrip(channel.of(4)[2](version), version)
    states = request.ungrouped_partition_states if version < 2 else \
        [s for t in request.topic_states for s in t.partition_states]
    assert sorted((s.partition_index, s.leader, s.leader_epoch) for s in states) == [(0, 1, 4), (0, 3, 2)]
    if version >= 2:
        assert [t.topic_name for t in request.topic_states] == ["t", "gone"]
        assert request.broker_epoch == 502
    if version >= 1:
        assert {s.is_new for s in states} == {True, False}


@pytest.mark.parametrize("version", all_versions(ApiKey.UPDATE_METADATA))
def test_update_metadata_carries_every_live_broker_and_the_partitions(version):
    ctx, channel = context(), RecordingChannel()
    ctx.queue_topic_deletion(["gone"])
    ctx.remove_live_brokers([3])
    batch = ControllerBrokerRequestBatch(ctx, channel, controller_id=0)
    batch.add_update_metadata(ctx.live_broker_ids, ctx.partitions_with_leaders())
    batch.send(9)
    assert sorted(channel.of(6)) == [1, 2]
    request = roundtrip(channel.of(6)[1](version), version)
    assert [b.id for b in request.live_brokers] == [1, 2]
    if version == 0:
        assert (request.live_brokers[0].v0_host, request.live_brokers[0].v0_port) == ("client", 9001)
    else:
        endpoints = [(e.host, e.port, e.security_protocol) for e in request.live_brokers[1].endpoints]
        assert endpoints == [("client", 9002, 0), ("10.0.0.2", 19002, 2)]
        if version >= 3:
            assert [e.listener for e in request.live_brokers[1].endpoints] == ["PLAINTEXT", "INTERNAL"]
        if version >= 2:
            assert request.live_brokers[1].rack == "r2"
    states = request.ungrouped_partition_states if version < 5 else \
        [s for t in request.topic_states for s in t.partition_states]
    assert len(states) == 3
    deleted = [s for s in states if s.leader == -2]
    assert len(deleted) == 1 and deleted[0].leader_epoch == 0  # the topic being deleted: LeaderDuringDelete
    t1 = next(s for s in states if s.leader == 2)
    assert (t1.isr, t1.replicas, t1.zk_version) == ([2, 3], [2, 3], 0)
    if version >= 4:
        assert t1.offline_replicas == [3]
    if version >= 7:
        assert {t.topic_name: t.topic_id for t in request.topic_states}["t"] == TOPIC_ID


@pytest.mark.parametrize("version", all_versions(ApiKey.STOP_REPLICA))
def test_stop_replica_one_request_from_v3_split_by_delete_flag_below(version):
    ctx, channel = context(), RecordingChannel()
    ctx.queue_topic_deletion(["gone"])
    batch = ControllerBrokerRequestBatch(ctx, channel, controller_id=0)
    batch.add_stop_replica([1], ("gone", 0), delete=True)
    batch.add_stop_replica([1], ("t", 0), delete=False)
    batch.add_stop_replica([1], ("t", 0), delete=False)
    batch.send(9)
    (build,) = channel.of(5).values()
    built = build(version)
    if version >= 3:
        request = roundtrip(built, version)
        states = {(t.topic_name, s.partition_index): (s.leader_epoch, s.delete_partition)
                  for t in request.topic_states for s in t.partition_states}
        assert states == {("gone", 0): (-2, True), ("t", 0): (4, False)}
        return
    deleting, keeping = (roundtrip(b, version) for b in built)
    assert (deleting.delete_partitions, keeping.delete_partitions) == (True, False)
    if version == 0:
        assert [(p.topic_name, p.partition_index) for p in deleting.ungrouped_partitions] == [("gone", 0)]
    else:
        assert [(t.name, t.partition_indexes) for t in keeping.topics] == [("t", [0])]


def test_requests_to_brokers_that_are_not_live_are_not_queued():
    ctx, channel = context(), RecordingChannel()
    batch = ControllerBrokerRequestBatch(ctx, channel, controller_id=0)
    batch.add_leader_and_isr([1, 2], ("t", 0))
    ctx.remove_live_brokers([2])
    batch.send(9)
    assert sorted((b, k) for b, k, _ in channel.sent) == [(1, 4), (1, 6), (3, 6)]

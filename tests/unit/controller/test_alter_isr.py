"""AlterIsr (KIP-497) on the controller, as Kafka 2.8's processAlterIsr: the broker epoch check, the
per-partition checks, the conditional state znode write (a fake KafkaZkClient), the answer, the
UpdateMetadata it queues and the reassignment check it leaves for after the answer; and the wire layout of
the request and response."""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.alter_isr import IsrAlterations, IsrRequest, IsrResult
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch as S
from odradek.protocol.api_keys import ApiKey, KAFKA_2_8_VERSIONS
from odradek.protocol.errors import (FencedLeaderEpochError, InvalidUpdateVersionError,  # type: ignore[attr-defined]
                                     StaleBrokerEpochError, UnknownTopicOrPartitionError)
from odradek.protocol.messages import REQUESTS, RESPONSES
from tests.unit.controller.test_state_machines import EPOCH, run, setup

LEADER = 1
LEADER_EPOCH = 101  # setup() registers broker b at broker epoch 100 + b


def alterations():
    """t-0 on [1, 2, 3] led by 1 at leader epoch 4, t-1 on [2, 3] led by 2; both state znodes at version 3."""
    ctx, zk, batch, _, _ = setup({0: [1, 2, 3], 1: [2, 3]}, {0: S(1, 4, [1, 2, 3], 2), 1: S(2, 0, [2, 3], 2)})
    ctx.epoch_zk_version = 7
    reassignment_checks: list = []
    isr = IsrAlterations(ctx, zk, run, 1, lambda: batch, reassignment_checks.append)
    return ctx, zk, batch, isr, reassignment_checks


def update_metadata(batch):
    """(brokers sent UpdateMetadata, the partitions it names)."""
    sent = batch.channel.of(ApiKey.UPDATE_METADATA)
    named = set()
    for build in sent.values():
        named |= {(t.topic_name, p.partition_index) for t in build(7).topic_states for p in t.partition_states}
    return sorted(sent), sorted(named)


def alter(isr, requests, broker=LEADER, broker_epoch=LEADER_EPOCH):
    return asyncio.run(isr.alter(broker, broker_epoch, requests))


def test_a_shrink_is_written_conditionally_and_answered_with_the_new_isr_and_znode_version():
    ctx, zk, batch, isr, checks = alterations()
    results = alter(isr, {("t", 0): IsrRequest(4, (1, 2), 3)})
    written = S(1, 4, [1, 2], EPOCH)  # the leader's epoch kept, the controller's epoch stamped
    assert results == {("t", 0): IsrResult(0, written, 4)}
    assert zk.writes == [(("t", 0), written, 3)] and zk.znodes[("t", 0)] == (written, 4)
    assert ctx.leadership(("t", 0)).state == written and ctx.leadership(("t", 0)).zk_version == 4
    assert update_metadata(batch) == ([1, 2, 3], [("t", 0)])
    assert batch.channel.of(ApiKey.LEADER_AND_ISR) == {}  # the leader knows already: no LeaderAndIsr
    assert checks == []  # not being reassigned


def test_the_whole_request_is_refused_for_a_stale_or_unknown_broker_epoch():
    ctx, zk, _, isr, _ = alterations()
    for broker, epoch in ((LEADER, LEADER_EPOCH - 1), (LEADER, LEADER_EPOCH + 1), (9, 109)):
        with pytest.raises(StaleBrokerEpochError):
            alter(isr, {("t", 0): IsrRequest(4, (1, 2), 3)}, broker, epoch)
    assert zk.writes == []


def test_per_partition_errors_unknown_fenced_and_bad_version():
    ctx, zk, batch, isr, _ = alterations()
    results = alter(isr, {("t", 0): IsrRequest(3, (1, 2), 3),       # an older leader epoch
                          ("t", 1): IsrRequest(0, (2,), 1),          # read at znode version 1, it is 3 now
                          ("t", 7): IsrRequest(0, (1,), 0),          # no such partition
                          ("nope", 0): IsrRequest(0, (1,), 0)})
    assert results == {("t", 0): IsrResult(FencedLeaderEpochError.code),
                       ("t", 1): IsrResult(InvalidUpdateVersionError.code),
                       ("t", 7): IsrResult(UnknownTopicOrPartitionError.code),
                       ("nope", 0): IsrResult(UnknownTopicOrPartitionError.code)}
    assert [w[0] for w in zk.writes] == [("t", 1)]  # only the version mismatch reached ZooKeeper
    assert ctx.leadership(("t", 1)).state == S(2, 0, [2, 3], 2)
    # Kafka 2.8 sends UpdateMetadata for every partition named that it knows
    assert update_metadata(batch) == ([1, 2, 3], [("t", 0), ("t", 1)])


def test_an_isr_already_in_place_is_answered_without_a_write():
    _, zk, _, isr, _ = alterations()
    assert alter(isr, {("t", 0): IsrRequest(4, (1, 2, 3), 0)}) == {("t", 0): IsrResult(0, S(1, 4, [1, 2, 3], 2), 3)}
    assert zk.writes == []


def test_a_conflicting_write_meanwhile_is_invalid_update_version():
    ctx, zk, _, isr, _ = alterations()
    zk.conflict[("t", 0)] = S(2, 5, [2, 3], EPOCH)  # an election lands between the leader's read and its write
    assert alter(isr, {("t", 0): IsrRequest(4, (1, 2), 3)}) == {("t", 0): IsrResult(InvalidUpdateVersionError.code)}


def test_an_expansion_of_a_reassigning_partition_leaves_a_reassignment_check_for_after_the_answer():
    ctx, _, _, isr, checks = alterations()
    ctx.reassigning[("t", 0)] = ((3,), ())
    ctx.put_leadership(("t", 0), S(1, 4, [1, 2], 2), 3)
    assert alter(isr, {("t", 0): IsrRequest(4, (1, 2, 3), 3)})[("t", 0)].error_code == 0
    assert checks == [("t", 0)]


def test_alter_isr_v0_layout_round_trips_as_kafka_2_8_declares_it():
    assert KAFKA_2_8_VERSIONS[ApiKey.ALTER_ISR] == (0, 0)
    request_cls, response_cls = REQUESTS[ApiKey.ALTER_ISR].cls, RESPONSES[ApiKey.ALTER_ISR].cls
    request = request_cls(broker_id=1, broker_epoch=101, topics=[request_cls.TopicData(name="t", partitions=[
        request_cls.PartitionData(partition_index=0, leader_epoch=4, new_isr=[1, 2], current_isr_version=3)])])
    encoded = REQUESTS[ApiKey.ALTER_ISR].encode(request, 0)
    # flexible from v0: compact string and arrays, tagged fields; broker id, broker epoch first
    assert bytes(encoded[:12]) == b"\x00\x00\x00\x01" + (101).to_bytes(8, "big")
    assert REQUESTS[ApiKey.ALTER_ISR].decode(encoded, 0) == request
    response = response_cls(throttle_time_ms=0, error_code=0, topics=[response_cls.TopicData(name="t", partitions=[
        response_cls.PartitionData(partition_index=0, error_code=0, leader_id=1, leader_epoch=4, isr=[1, 2],
                                   current_isr_version=4)])])
    assert RESPONSES[ApiKey.ALTER_ISR].decode(RESPONSES[ApiKey.ALTER_ISR].encode(response, 0), 0) == response

"""Preferred replica election on its own: the classification of the asked partitions, the election through
the partition state machine (fake ZooKeeper of test_state_machines) and the request znode's handling."""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.partition_state_machine import PartitionState
from odradek.controller.preferred_election import PreferredReplicaElector, plan_preferred_election
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch as S, TopicAssignment
from odradek.protocol.errors import (ElectionNotNeededError, InvalidTopicError, PreferredLeaderNotAvailableError,
                                     UnknownTopicOrPartitionError)
from odradek.protocol.api_keys import ApiKey
from tests.unit.controller.test_state_machines import EPOCH, FakeZk, run, setup


class RequestZk(FakeZk):
    """Partition states plus the /admin/preferred_replica_election znode."""

    def __init__(self, request=None):
        super().__init__()
        self.request = request
        self.deleted_with = []

    def get_preferred_replica_election(self):
        if isinstance(self.request, Exception):
            raise self.request
        return self.request

    def delete_preferred_replica_election(self, epoch_zk_version=None):
        self.request = None
        self.deleted_with.append(epoch_zk_version)


def elector(request=None, live=(1, 2, 3)):
    # p0: 2 leads, preferred 1 in the ISR; p1: 3 leads, preferred 2 not in the ISR; p2: preferred 3 leads;
    # p3: never elected (no state)
    states = {0: S(2, 4, [2, 1], 1), 1: S(3, 1, [3], 1), 2: S(3, 0, [3, 1], 1)}
    ctx, fake, batch, psm, _ = setup({0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}, states, live=live)
    zk = RequestZk(request)
    zk.znodes = fake.znodes
    psm.writer.zk = zk
    ctx.epoch_zk_version = 7
    return ctx, zk, batch, psm, PreferredReplicaElector(ctx, psm, zk, run, 1, lambda: batch)


def test_plan_sorts_partitions_as_kafka_does():
    ctx, _, _, _, _ = elector()
    ctx.add_topic("gone", TopicAssignment({0: [1]}))
    ctx.queue_topic_deletion(["gone"])
    plan = plan_preferred_election(ctx, [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("gone", 0), ("t", 9), ("t", 0)])
    assert plan.electable == [("t", 0), ("t", 1)]
    assert plan.already_preferred == [("t", 2)]
    assert plan.without_state == [("t", 3)]
    assert plan.being_deleted == [("gone", 0)]
    assert plan.unknown == [("t", 9)]


def test_elect_moves_leadership_to_an_in_sync_preferred_replica_only():
    ctx, zk, batch, psm, elect = elector()
    results = asyncio.run(elect.elect([("t", 0), ("t", 1), ("t", 2), ("t", 3), ("x", 0)], "test"))
    assert results[("t", 0)] == 1
    assert zk.znodes[("t", 0)] == (S(1, 5, [2, 1], EPOCH), 4)  # ISR unchanged, leader epoch + 1
    assert zk.znodes[("t", 1)] == (S(3, 1, [3], 1), 3)        # 2 is not in the ISR: unchanged
    assert isinstance(results[("t", 1)], PreferredLeaderNotAvailableError)
    assert isinstance(results[("t", 2)], ElectionNotNeededError)
    assert isinstance(results[("t", 3)], PreferredLeaderNotAvailableError)
    assert isinstance(results[("x", 0)], UnknownTopicOrPartitionError)
    assert psm.state(("t", 0)) == PartitionState.ONLINE
    sent = {(broker, api_key) for broker, api_key, _ in batch.channel.sent}  # the batch was sent
    assert {b for b, k in sent if k == ApiKey.LEADER_AND_ISR} == {1, 2}
    assert {b for b, k in sent if k == ApiKey.UPDATE_METADATA} == {1, 2, 3}  # everyone hears of the new leader
    (build,) = [build for b, k, build in batch.channel.sent if b == 1 and k == ApiKey.LEADER_AND_ISR]
    (state,) = [s for t in build(5).topic_states for s in t.partition_states]
    assert (state.partition_index, state.leader, state.leader_epoch, state.isr) == (0, 1, 5, [2, 1])


def test_a_dead_preferred_replica_is_not_elected():
    ctx, zk, _, _, elect = elector(live=(2, 3))
    results = asyncio.run(elect.elect([("t", 0)], "test"))
    assert isinstance(results[("t", 0)], PreferredLeaderNotAvailableError)
    assert zk.znodes[("t", 0)] == (S(2, 4, [2, 1], 1), 3)


def test_topic_being_deleted_is_skipped():
    ctx, zk, _, _, elect = elector()
    ctx.queue_topic_deletion(["t"])
    results = asyncio.run(elect.elect([("t", 0)], "test"))
    assert isinstance(results[("t", 0)], InvalidTopicError) and zk.znodes[("t", 0)][0].leader == 2


def test_process_znode_elects_then_deletes_the_request_fenced_by_the_epoch_version():
    ctx, zk, _, _, elect = elector(request=[("t", 0), ("t", 2)])
    results = asyncio.run(elect.process_znode())
    assert results[("t", 0)] == 1 and isinstance(results[("t", 2)], ElectionNotNeededError)
    assert zk.request is None and zk.deleted_with == [7]


def test_process_znode_without_a_request_does_nothing():
    ctx, zk, batch, _, elect = elector()
    assert asyncio.run(elect.process_znode()) is None
    assert zk.deleted_with == [] and batch.is_empty()


def test_a_malformed_request_is_deleted():
    ctx, zk, _, _, elect = elector(request=ValueError("not a partition list"))
    assert asyncio.run(elect.process_znode()) is None
    assert zk.deleted_with == [7]


def test_a_failing_election_still_deletes_the_request():
    ctx, zk, _, psm, elect = elector(request=[("t", 0)])

    async def broken(*args, **kwargs):
        raise RuntimeError("bug")
    psm.handle_state_changes = broken
    with pytest.raises(RuntimeError):
        asyncio.run(elect.process_znode())
    assert zk.deleted_with == [7]

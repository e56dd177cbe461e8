"""Partition reassignment on its own: Kafka's ReplicaAssignment arithmetic, the context rebuilt from a topic
znode in mid-reassignment, and PartitionReassigner's steps over the real state machines with a fake
ZooKeeper (the znodes in dicts) and a channel that records what would be sent; plus the auto rebalance's
choice of partitions and the unclean election's classification."""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.auto_rebalance import partitions_to_rebalance
from odradek.controller.controller_context import ControllerContext, ReplicaAssignment
from odradek.controller.election_requests import UNCLEAN, LeaderElectionRequests
from odradek.controller.reassignment import PartitionReassigner
from odradek.controller.replica_state_machine import ReplicaState
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch as S, TopicAssignment
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import (ElectionNotNeededError, InvalidReplicaAssignmentError,  # type: ignore
                                     NoReassignmentInProgressError, UnknownTopicOrPartitionError)
from tests.unit.controller.test_state_machines import EPOCH, FakeZk, run, setup


# --- ReplicaAssignment ---------------------------------------------------------------------------------

def test_reassign_to_puts_targets_first_and_names_adding_and_removing():
    moving = ReplicaAssignment((1, 2, 3)).reassign_to([4, 5, 1])
    assert moving == ReplicaAssignment((4, 5, 1, 2, 3), adding=(4, 5), removing=(2, 3))
    assert moving.is_being_reassigned and moving.target_replicas == [4, 5, 1] and moving.origin_replicas == [1, 2, 3]
    # a second reassignment starts from the original replicas, not from RS
    assert moving.reassign_to([6, 1]) == ReplicaAssignment((6, 1, 2, 3), adding=(6,), removing=(2, 3))
    assert moving.revert() == ReplicaAssignment((1, 2, 3))
    assert not ReplicaAssignment((1, 2)).reassign_to([1, 2]).is_being_reassigned


def test_context_rebuilds_reassignments_from_the_topic_znode():
    ctx = ControllerContext()
    ctx.add_topic("t", TopicAssignment({0: [3, 1, 2], 1: [1, 2]}, adding_replicas={0: [3]}, removing_replicas={0: [2]}))
    assert ctx.partitions_being_reassigned() == [("t", 0)]
    assert ctx.full_assignment(("t", 0)) == ReplicaAssignment((3, 1, 2), (3,), (2,))
    ctx.set_full_assignment(("t", 0), ReplicaAssignment((3, 1)))
    assert ctx.partitions_being_reassigned() == [] and ctx.replicas(("t", 0)) == [3, 1]


# --- PartitionReassigner -------------------------------------------------------------------------------

class ReassignZk(FakeZk):
    def __init__(self, znodes):
        super().__init__()
        self.znodes = znodes
        self.topic_writes = []
        self.request = None
        self.watched = []
        self.marked_for_deletion = []  # /admin/delete_topics

    def set_topic_assignment(self, topic, assignment, expected_version=-1, epoch_zk_version=None):
        self.topic_writes.append(assignment)
        return 1

    def get_partition_reassignment(self):
        return self.request

    def set_partition_reassignment(self, reassignment, epoch_zk_version=None):
        self.request = reassignment or None

    def get_topics_marked_for_deletion(self):
        return list(self.marked_for_deletion)

    def watch_data(self, path, callback):
        self.watched.append(path)
        return lambda: self.watched.remove(path)


def reassigner_parts(live=(1, 2, 3, 4), zk_type=None):
    """t-0 on [1, 2] led by 1, t-1 on [2, 3] led by 2, all in sync; a reassigner over a ``zk_type``
    (ReassignZk) fake. Returns (ctx, zk, batch, psm, rsm, reassigner, events it enqueued)."""
    ctx, fake, batch, psm, rsm = setup({0: [1, 2], 1: [2, 3]}, {0: S(1, 0, [1, 2], 1), 1: S(2, 0, [2, 3], 1)},
                                       live=live)
    zk = (zk_type or ReassignZk)(fake.znodes)
    psm.writer.zk = zk
    ctx.epoch_zk_version = 7
    events: list = []
    reassigner = PartitionReassigner(ctx, rsm, psm, psm.writer, zk, run, 1, lambda: batch, events.append)
    return ctx, zk, batch, psm, rsm, reassigner, events


def reassigner(live=(1, 2, 3, 4)):
    ctx, zk, batch, _, rsm, r, _ = reassigner_parts(live)
    return ctx, zk, batch, rsm, r


def sent(batch, api_key):
    return batch.channel.of(api_key)


def test_a_reassignment_waits_for_its_new_replicas_then_moves_the_leader_and_deletes_the_old_ones():
    ctx, zk, batch, rsm, r = reassigner()
    assert asyncio.run(r.alter({("t", 0): [3, 4]})) == {("t", 0): None}
    # U1: RS, AR, RR in the topic znode; A1: leader epoch bumped, LeaderAndIsr to RS; A2: new replicas NewReplica
    written = zk.topic_writes[-1]
    assert (written.partitions[0], written.adding_replicas, written.removing_replicas) == ([3, 4, 1, 2], {0: [3, 4]},
                                                                                         {0: [1, 2]})
    assert zk.znodes[("t", 0)][0] == S(1, 1, [1, 2], EPOCH)
    assert sorted(sent(batch, ApiKey.LEADER_AND_ISR)) == [1, 2, 3, 4]
    assert rsm.state((("t", 0), 3)) == ReplicaState.NEW
    assert zk.watched == ["/brokers/topics/t/partitions/0/state"]
    assert r.list(None) == {("t", 0): ReplicaAssignment((3, 4, 1, 2), (3, 4), (1, 2))}

    asyncio.run(r.maybe_complete(("t", 0)))  # the new replicas are not in the ISR yet: nothing moves
    assert ctx.partitions_being_reassigned() == [("t", 0)]

    state, version = zk.znodes[("t", 0)]
    zk.znodes[("t", 0)] = (S(1, 1, [1, 2, 3, 4], 1), version + 1)  # the leader added them to the ISR
    batch.channel.sent.clear()
    asyncio.run(r.maybe_complete(("t", 0)))
    final = zk.znodes[("t", 0)][0]
    assert final.leader == 3 and final.isr == [3, 4], final  # B3 elected from TRS, B4 removed 1 and 2 from the ISR
    assert ctx.replicas(("t", 0)) == [3, 4] and not ctx.partitions_being_reassigned()
    assert zk.topic_writes[-1].partitions[0] == [3, 4] and not zk.topic_writes[-1].adding_replicas  # B6, last
    assert sorted(sent(batch, ApiKey.STOP_REPLICA)) == [1, 2]  # B5: deleted
    assert rsm.state((("t", 0), 1)) == ReplicaState.NON_EXISTENT
    assert rsm.state((("t", 0), 3)) == ReplicaState.ONLINE
    assert zk.watched == []


def test_cancel_reverts_to_the_original_replicas_and_deletes_the_added_ones():
    ctx, zk, batch, rsm, r = reassigner()
    asyncio.run(r.alter({("t", 0): [1, 3]}))
    assert ctx.full_assignment(("t", 0)) == ReplicaAssignment((1, 3, 2), (3,), (2,))
    batch.channel.sent.clear()
    assert asyncio.run(r.alter({("t", 0): None})) == {("t", 0): None}
    assert ctx.full_assignment(("t", 0)) == ReplicaAssignment((1, 2))
    assert zk.topic_writes[-1].partitions[0] == [1, 2] and not zk.topic_writes[-1].removing_replicas
    assert sorted(sent(batch, ApiKey.STOP_REPLICA)) == [3]
    # cancelling again: nothing is in progress
    assert isinstance(asyncio.run(r.alter({("t", 0): None}))[("t", 0)], NoReassignmentInProgressError)


def test_bad_targets_get_kafkas_errors():
    ctx, zk, batch, rsm, r = reassigner(live=(1, 2, 3))
    results = asyncio.run(r.alter({("t", 0): [], ("t", 1): [2, 2], ("t", 2): [1], ("x", 0): [1]}))
    assert isinstance(results[("t", 0)], InvalidReplicaAssignmentError)
    assert isinstance(results[("t", 1)], InvalidReplicaAssignmentError)
    assert isinstance(results[("t", 2)], UnknownTopicOrPartitionError)
    assert isinstance(results[("x", 0)], UnknownTopicOrPartitionError)
    dead = asyncio.run(r.alter({("t", 1): [2, 9]}))[("t", 1)]
    assert isinstance(dead, InvalidReplicaAssignmentError) and "not alive" in str(dead)


def test_the_zk_request_is_started_and_dropped_from_the_znode_once_done():
    ctx, zk, batch, rsm, r = reassigner()
    zk.request = {("t", 1): [2, 3, 4], ("t", 0): [1]}  # RF 2 -> 3 for t-1; t-0 shrinks to [1]
    assert asyncio.run(r.process_zk_request()) == {("t", 0), ("t", 1)}
    # t-0 is complete at once (1 is in the ISR): done and removed from the request; t-1 waits for 4
    assert ctx.replicas(("t", 0)) == [1] and zk.request == {("t", 1): [2, 3, 4]}
    state, version = zk.znodes[("t", 1)]
    zk.znodes[("t", 1)] = (S(2, state.leader_epoch, [2, 3, 4], 1), version + 1)
    asyncio.run(r.maybe_complete(("t", 1)))
    assert ctx.replicas(("t", 1)) == [2, 3, 4] and zk.request is None


# --- auto rebalance and unclean elections --------------------------------------------------------------

def context_with(states, assignment, live=(1, 2, 3)):
    ctx = ControllerContext()
    for b in live:
        ctx.add_live_broker(BrokerInfo(b, [("PLAINTEXT", "h", 9000 + b)]), 100 + b)
    ctx.add_topic("t", TopicAssignment(assignment))
    for p, state in states.items():
        ctx.put_leadership(("t", p), state, 0)
    return ctx


def test_auto_rebalance_picks_partitions_of_imbalanced_brokers_whose_preferred_replica_can_lead():
    assignment = {0: [1, 2], 1: [1, 3], 2: [2, 1], 3: [3, 1]}
    # broker 1 prefers t-0 and t-1 and leads neither (100 %); 1 is in t-0's ISR only
    states = {0: S(2, 1, [2, 1], 1), 1: S(3, 1, [3], 1), 2: S(2, 0, [2, 1], 1), 3: S(3, 0, [3, 1], 1)}
    ctx = context_with(states, assignment)
    assert partitions_to_rebalance(ctx, 10) == [("t", 0)]
    ctx.put_leadership(("t", 1), S(1, 2, [1, 3], 1), 1)  # now 50 % for broker 1
    assert partitions_to_rebalance(ctx, 50) == []
    assert partitions_to_rebalance(ctx, 49) == [("t", 0)]
    ctx.set_full_assignment(("t", 3), ReplicaAssignment((3, 1)).reassign_to([2]))
    assert partitions_to_rebalance(ctx, 10) == []  # nothing moves during a reassignment


def test_unclean_election_classifies_partitions_as_kafka():
    ctx = context_with({0: S(1, 0, [1], 1), 1: S(-1, 1, [4], 1)}, {0: [1, 2], 1: [4, 2], 2: [2]})
    elections = LeaderElectionRequests(ctx, None, None, 1, lambda: None)
    results = asyncio.run(elections.elect_unclean([("t", 0), ("t", 9)], "test"))
    assert isinstance(results[("t", 0)], ElectionNotNeededError)
    assert isinstance(results[("t", 9)], UnknownTopicOrPartitionError)


def test_unclean_election_elects_a_live_replica_out_of_the_isr():
    ctx, fake, batch, psm, _ = setup({0: [4, 2]}, {0: S(-1, 3, [4], 1)}, live=(1, 2, 3))
    elections = LeaderElectionRequests(ctx, psm, None, 1, lambda: batch)
    assert asyncio.run(elections.elect(UNCLEAN, [("t", 0)])) == {("t", 0): 2}
    assert fake.znodes[("t", 0)][0] == S(2, 4, [2], EPOCH)


@pytest.mark.parametrize("target", [[-1, 2], [1, 2, 1]])
def test_validate_refuses_negative_and_repeated_ids(target):
    _, _, _, _, r = reassigner()
    assert isinstance(r.validate(("t", 0), target), InvalidReplicaAssignmentError)

"""The replica and partition state machines: valid and invalid transitions, elections by strategy, the
ZooKeeper writes they make (through a fake KafkaZkClient) and the requests they queue."""

from __future__ import annotations

import asyncio
import logging

import pytest

from odradek.controller.channel_manager import ControllerBrokerRequestBatch
from odradek.controller.controller_context import ControllerContext
from odradek.controller.leader_and_isr_writer import LeaderAndIsrWriter
from odradek.controller.partition_state_machine import (CONTROLLED_SHUTDOWN_ELECTION, PREFERRED_ELECTION,
                                                        ElectionKind, ElectionStrategy, PartitionState,
                                                        PartitionStateMachine)
from odradek.controller.replica_state_machine import VALID_PREVIOUS_STATES, ReplicaState, ReplicaStateMachine
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch as S, TopicAssignment
from odradek.protocol.api_keys import ApiKey
from tests.fakes.zookeeper import FakeZk
from tests.unit.controller.test_request_batch import RecordingChannel

EPOCH = 5


async def run(fn, *args):
    return fn(*args)


def setup(assignment, states=None, live=(1, 2, 3)):
    ctx = ControllerContext()
    ctx.epoch = EPOCH
    for b in live:
        ctx.add_live_broker(BrokerInfo(b, [("PLAINTEXT", "h", 9000 + b)]), 100 + b)
    ctx.add_topic("t", TopicAssignment(assignment))
    zk = FakeZk()
    for p, state in (states or {}).items():
        ctx.put_leadership(("t", p), state, 3)
        zk.znodes[("t", p)] = (state, 3)
    writer = LeaderAndIsrWriter(ctx, zk, run, 1)
    channel = RecordingChannel()
    channel.listener_name = "PLAINTEXT"
    batch = ControllerBrokerRequestBatch(ctx, channel, 1)
    partitions = PartitionStateMachine(ctx, writer, 1)
    replicas = ReplicaStateMachine(ctx, writer, 1)
    partitions.initialize()
    replicas.initialize()
    return ctx, zk, batch, partitions, replicas


def leader_and_isr_targets(batch):
    return {b: sorted(states) for b, states in batch.leader_and_isr.items()}


# --- partitions ----------------------------------------------------------------------------------------

def test_initial_partition_states_follow_the_leader():
    ctx, _, _, psm, _ = setup({0: [1, 2], 1: [2, 3], 2: [3, 1]}, {0: S(1, 0, [1, 2], 1), 1: S(4, 0, [4], 1)})
    assert [psm.state(("t", p)) for p in range(3)] == [PartitionState.ONLINE, PartitionState.OFFLINE,
                                                      PartitionState.NEW]


def test_invalid_partition_transition_is_logged_and_changes_nothing(caplog):
    ctx, zk, batch, psm, _ = setup({0: [1, 2]})
    caplog.set_level(logging.INFO, logger="odradek.state.change")
    moved, failed = asyncio.run(psm.handle_state_changes([("t", 0)], PartitionState.NON_EXISTENT, batch))
    assert (moved, failed) == ([], []) and psm.state(("t", 0)) == PartitionState.NEW
    assert "from NewPartition to NonExistentPartition failed" in caplog.text
    assert batch.is_empty() and zk.znodes == {}


def test_new_partition_goes_online_with_first_live_replica_and_is_new_leader_and_isr():
    ctx, zk, batch, psm, _ = setup({0: [4, 2, 3]})
    moved, failed = asyncio.run(psm.handle_state_changes([("t", 0)], PartitionState.ONLINE, batch))
    assert moved == [("t", 0)] and failed == []
    assert zk.znodes[("t", 0)] == (S(2, 0, [2, 3], EPOCH), 0)
    assert psm.state(("t", 0)) == PartitionState.ONLINE
    assert leader_and_isr_targets(batch) == {2: [("t", 0)], 3: [("t", 0)]}
    assert batch.leader_and_isr[2][("t", 0)].is_new


def test_new_partition_without_live_replica_stays_new():
    ctx, zk, batch, psm, _ = setup({0: [7, 8]})
    assert asyncio.run(psm.handle_state_changes([("t", 0)], PartitionState.ONLINE, batch)) == ([], [("t", 0)])
    assert psm.state(("t", 0)) == PartitionState.NEW and zk.znodes == {}


def test_offline_election_clean_and_unclean():
    ctx, zk, batch, psm, _ = setup({0: [4, 2, 3], 1: [4, 3]}, {0: S(4, 2, [4, 3], 1), 1: S(4, 2, [4], 1)})
    assert psm.state(("t", 0)) == PartitionState.OFFLINE
    elected = asyncio.run(psm.trigger_online_partition_state_change(batch))
    assert elected == [("t", 0)]
    assert zk.znodes[("t", 0)] == (S(3, 3, [3], EPOCH), 4)
    assert zk.znodes[("t", 1)] == (S(4, 2, [4], 1), 3)  # nobody in the ISR is live: unchanged, still offline
    assert psm.state(("t", 1)) == PartitionState.OFFLINE
    psm.unclean_leader_election = True
    assert asyncio.run(psm.trigger_online_partition_state_change(batch)) == [("t", 1)]
    assert zk.znodes[("t", 1)] == (S(3, 3, [3], EPOCH), 4)


def test_offline_election_follows_each_topics_unclean_override():
    """Kafka 2.8 reads unclean.leader.election.enable per topic: its override, else the broker default."""
    ctx, zk, batch, psm, _ = setup({0: [4, 3]}, {0: S(4, 2, [4], 1)})
    zk.topic_configs["t"] = {"unclean.leader.election.enable": "true"}
    assert asyncio.run(psm.trigger_online_partition_state_change(batch)) == [("t", 0)]
    assert zk.znodes[("t", 0)] == (S(3, 3, [3], EPOCH), 4)

    ctx, zk, batch, psm, _ = setup({0: [4, 3]}, {0: S(4, 2, [4], 1)})
    psm.unclean_leader_election = True
    zk.topic_configs["t"] = {"unclean.leader.election.enable": "false"}
    assert asyncio.run(psm.trigger_online_partition_state_change(batch)) == []
    assert zk.znodes[("t", 0)] == (S(4, 2, [4], 1), 3) and psm.state(("t", 0)) == PartitionState.OFFLINE


def test_controlled_shutdown_election_moves_leader_and_drops_the_broker_from_the_isr():
    ctx, zk, batch, psm, _ = setup({0: [1, 2, 3], 1: [1, 2]}, {0: S(1, 0, [1, 2, 3], 1), 1: S(1, 0, [1], 1)})
    ctx.shutting_down_broker_ids.add(1)
    moved, failed = asyncio.run(psm.handle_state_changes([("t", 0), ("t", 1)], PartitionState.ONLINE, batch,
                                                         CONTROLLED_SHUTDOWN_ELECTION))
    assert moved == [("t", 0)] and failed == [("t", 1)]
    assert zk.znodes[("t", 0)][0] == S(2, 1, [2, 3], EPOCH)
    # the shutting-down broker hears it too (it becomes a follower at once)
    assert leader_and_isr_targets(batch) == {1: [("t", 0)], 2: [("t", 0)], 3: [("t", 0)]}


def test_preferred_and_reassign_elections():
    ctx, zk, batch, psm, _ = setup({0: [1, 2], 1: [1, 2]}, {0: S(2, 4, [2, 1], 1), 1: S(1, 0, [1, 2], 1)})
    moved, failed = asyncio.run(psm.handle_state_changes([("t", 0), ("t", 1)], PartitionState.ONLINE, batch,
                                                         PREFERRED_ELECTION))
    assert moved == [("t", 0)] and failed == [("t", 1)]  # t-1 already has its preferred leader
    assert zk.znodes[("t", 0)][0] == S(1, 5, [2, 1], EPOCH)
    reassign = ElectionStrategy(ElectionKind.REASSIGN, targets={("t", 1): [3, 2]})
    moved, _ = asyncio.run(psm.handle_state_changes([("t", 1)], PartitionState.ONLINE, batch, reassign))
    assert moved == [("t", 1)] and zk.znodes[("t", 1)][0] == S(2, 1, [1, 2], EPOCH)


def test_election_rereads_after_a_version_conflict():
    ctx, zk, batch, psm, _ = setup({0: [4, 2, 3]}, {0: S(4, 2, [4, 2, 3], 1)})
    zk.conflict[("t", 0)] = S(4, 2, [4, 3], 1)  # the leader shrank the ISR just before
    asyncio.run(psm.trigger_online_partition_state_change(batch))
    assert zk.znodes[("t", 0)] == (S(3, 3, [3], EPOCH), 5)
    assert ctx.leadership(("t", 0)).zk_version == 5


# --- replicas ------------------------------------------------------------------------------------------

def test_replica_valid_previous_states_are_kafkas():
    assert VALID_PREVIOUS_STATES[ReplicaState.NEW] == {ReplicaState.NON_EXISTENT}
    assert VALID_PREVIOUS_STATES[ReplicaState.DELETION_STARTED] == {ReplicaState.OFFLINE}
    assert VALID_PREVIOUS_STATES[ReplicaState.NON_EXISTENT] == {ReplicaState.DELETION_SUCCESSFUL}


def test_initial_replica_states():
    _, _, _, _, rsm = setup({0: [1, 4]}, {0: S(1, 0, [1], 1)})
    assert rsm.state((("t", 0), 1)) == ReplicaState.ONLINE
    assert rsm.state((("t", 0), 4)) == ReplicaState.DELETION_INELIGIBLE
    assert rsm.state((("t", 9), 1)) == ReplicaState.NON_EXISTENT


@pytest.mark.parametrize("start,target,ok", [
    (ReplicaState.ONLINE, ReplicaState.NEW, False),
    (ReplicaState.ONLINE, ReplicaState.DELETION_STARTED, False),
    (ReplicaState.ONLINE, ReplicaState.NON_EXISTENT, False),
    (ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED, True),
    (ReplicaState.DELETION_STARTED, ReplicaState.DELETION_SUCCESSFUL, True),
    (ReplicaState.DELETION_SUCCESSFUL, ReplicaState.NON_EXISTENT, True),
    (ReplicaState.DELETION_INELIGIBLE, ReplicaState.ONLINE, True),
])
def test_replica_transitions(start, target, ok, caplog):
    _, _, batch, _, rsm = setup({0: [1, 2]})
    replica = (("t", 0), 2)
    rsm.states[replica] = start
    moved = asyncio.run(rsm.handle_state_changes([replica], target, batch))
    assert (moved == [replica]) == ok
    expected = (ReplicaState.NON_EXISTENT if target == ReplicaState.NON_EXISTENT else target) if ok else start
    assert rsm.state(replica) == expected
    assert ("failed: not a valid transition" in caplog.text) == (not ok)


def test_new_replica_that_leads_is_refused():
    _, _, batch, _, rsm = setup({0: [1, 2]}, {0: S(2, 0, [2], 1)})
    rsm.states.clear()
    assert asyncio.run(rsm.handle_state_changes([(("t", 0), 2)], ReplicaState.NEW, batch)) == []
    assert asyncio.run(rsm.handle_state_changes([(("t", 0), 1)], ReplicaState.NEW, batch)) == [(("t", 0), 1)]
    assert leader_and_isr_targets(batch) == {1: [("t", 0)]}


def test_offline_replica_stops_and_leaves_the_isr():
    ctx, zk, batch, _, rsm = setup({0: [1, 2, 3], 1: [2, 3], 2: [3, 1]},
                                   {0: S(1, 0, [1, 2, 3], 1), 1: S(2, 0, [2], 1), 2: S(3, 0, [3], 1)})
    moved = asyncio.run(rsm.handle_state_changes([(("t", 0), 2), (("t", 1), 2), (("t", 2), 1)],
                                                 ReplicaState.OFFLINE, batch))
    assert len(moved) == 3 and all(rsm.state(r) == ReplicaState.OFFLINE for r in moved)
    assert zk.znodes[("t", 0)][0] == S(1, 1, [1, 3], EPOCH)        # a follower leaves the ISR
    assert zk.znodes[("t", 1)][0] == S(-1, 1, [2], EPOCH)          # the last ISR member stays, leaderless
    assert zk.znodes[("t", 2)] == (S(3, 0, [3], 1), 3)              # not in the ISR: nothing written
    assert batch.stop_replica == {2: {("t", 0): (0, False), ("t", 1): (0, False)}, 1: {("t", 2): (0, False)}}
    assert leader_and_isr_targets(batch) == {1: [("t", 0)], 3: [("t", 0), ("t", 1)]}


def test_deletion_started_sends_stop_replica_with_delete():
    _, _, batch, _, rsm = setup({0: [1, 2]}, {0: S(1, 0, [1, 2], 1)})
    replica = (("t", 0), 2)
    asyncio.run(rsm.handle_state_changes([replica], ReplicaState.OFFLINE, batch))
    asyncio.run(rsm.handle_state_changes([replica], ReplicaState.DELETION_STARTED, batch))
    assert batch.stop_replica[2] == {("t", 0): (1, True)}
    assert rsm.set_states([replica], ReplicaState.DELETION_SUCCESSFUL) == [replica]
    assert rsm.set_states([replica], ReplicaState.NON_EXISTENT) == [replica]
    assert replica not in rsm.states
    assert batch.send(EPOCH) is None and ApiKey.STOP_REPLICA in {k for _, k, _ in batch.channel.sent}

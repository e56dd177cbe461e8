"""The controller's watches of new partitions, /admin/preferred_replica_election and
/admin/reassign_partitions, against a real ZooKeeper with tests/fakes/controller_brokers' FakeBrokers (real sockets,
real KafkaControllers, recording the controller's requests)."""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.replica_assignment import assign_replicas_to_brokers
from odradek.controller.zk_client import ZkNodeExistsError
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch as S, PreferredReplicaElectionZNode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import (InvalidPartitionsError, InvalidReplicaAssignmentError, InvalidTopicError,
                                     UnknownTopicOrPartitionError)
from tests.fakes.controller_brokers import Cluster, FakeBroker, eventually, run


@pytest.fixture
def cluster(zk_client_factory, zk_chroot) -> Cluster:
    return Cluster(zk_client_factory, zk_chroot)


def leader_and_isr(broker: FakeBroker, topic: str) -> dict[int, list]:
    """partition -> every LeaderAndIsr partition state the broker received for it, in order."""
    out: dict[int, list] = {}
    for _, state in broker.partition_states(ApiKey.LEADER_AND_ISR, topic):
        out.setdefault(state.partition_index, []).append(state)
    return out


def znode_exists(cluster: Cluster, path: str) -> bool:
    return cluster.observer.get_data(path)[1] is not None


# --- new partitions ------------------------------------------------------------------------------------

def test_added_partitions_are_elected_and_every_broker_hears_of_them(cluster):
    async def main(cluster):
        await cluster.start((1, 2, 3))
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "grow", None, None, {}, {0: [2, 3], 1: [3, 1]})
        await eventually(lambda: len(cluster.states("grow", 2)) == 2, "states of grow")
        topic_id = cluster.observer.get_topic_assignments(["grow"])["grow"].topic_id

        assignment = await asyncio.to_thread(admin.add_partitions, "grow", 5)
        # existing partitions kept; new ones continue Kafka's round-robin from partition 0's preferred
        # replica (broker 2, index 1 of the live brokers) at partition id 2
        expected = {0: [2, 3], 1: [3, 1], **assign_replicas_to_brokers([1, 2, 3], 3, 2, fixed_start_index=1,
                                                                      start_partition_id=2)}
        assert assignment == expected
        stored = cluster.observer.get_topic_assignments(["grow"])["grow"]
        assert stored.partitions == expected and stored.topic_id == topic_id
        states = await eventually(lambda: (s := cluster.states("grow", 5)) and len(s) == 5 and s, "new states")
        for p in (2, 3, 4):
            assert states[p] == S(expected[p][0], 0, expected[p], 1)
        assert states[0] == S(2, 0, [2, 3], 1)  # untouched
        for broker in cluster.brokers.values():
            mine = {p for p in (2, 3, 4) if broker.broker_id in expected[p]}
            await eventually(lambda b=broker, m=mine: set(leader_and_isr(b, "grow")) >= m,
                             f"LeaderAndIsr of the new partitions for broker {broker.broker_id}")
            for p in mine:
                (state,) = leader_and_isr(broker, "grow")[p]
                assert (state.leader, state.isr, state.is_new) == (expected[p][0], expected[p], True)
            await eventually(lambda b=broker: {s.partition_index for _, s in
                                               b.partition_states(ApiKey.UPDATE_METADATA, "grow")} == set(range(5)),
                             f"UpdateMetadata of all five partitions for broker {broker.broker_id}")

        # an explicit assignment of the new partitions, in partition order as CreatePartitions gives it
        assignment = await asyncio.to_thread(admin.add_partitions, "grow", 6, [[1, 2]])
        assert assignment[5] == [1, 2]
        await eventually(lambda: cluster.states("grow", 6).get(5) == S(1, 0, [1, 2], 1), "partition 5 elected")

    run(cluster, main)


def test_add_partitions_validation(zk_client_factory, zk_chroot):
    cluster = Cluster(zk_client_factory, zk_chroot)
    admin = cluster.admin()
    for broker_id in (1, 2):  # registrations only: validation needs live brokers, not a controller
        cluster.factory().register_broker(BrokerInfo(broker_id, [("PLAINTEXT", "127.0.0.1", 9000 + broker_id)]))
    admin.create_topic("v", None, None, {}, {0: [1, 2], 1: [2, 1]})
    before = cluster.observer.get_data("/brokers/topics/v")

    with pytest.raises(InvalidPartitionsError, match="can only be increased"):
        admin.add_partitions("v", 2)
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.add_partitions("missing", 3)
    with pytest.raises(InvalidReplicaAssignmentError, match="Unknown broker"):
        admin.add_partitions("v", 3, [[1, 7]])
    with pytest.raises(InvalidReplicaAssignmentError, match="but 2 assignments"):
        admin.add_partitions("v", 3, [[1, 2], [2, 1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="Inconsistent replication factor"):
        admin.add_partitions("v", 3, [[1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate brokers"):
        admin.add_partitions("v", 3, {2: [1, 1]})
    assert admin.add_partitions("v", 4, validate_only=True).keys() == {0, 1, 2, 3}
    assert cluster.observer.get_data("/brokers/topics/v") == before  # nothing written so far
    cluster.observer.mark_topic_for_deletion(["v"])
    with pytest.raises(InvalidTopicError, match="queued for deletion"):
        admin.add_partitions("v", 3)


def test_partitions_added_while_the_topic_is_deleted_are_refused(cluster):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        victim, other = [x for x in (1, 2, 3) if x != controller.broker_id]
        admin = cluster.admin()
        # the victim holds a replica and dies: the deletion waits for it, so the topic stays queued
        await asyncio.to_thread(admin.create_topic, "doomed", None, None, {}, {0: [other, victim]})
        await eventually(lambda: cluster.states("doomed", 1), "state of doomed")
        await cluster.kill(victim)
        await asyncio.to_thread(admin.delete_topic, "doomed")
        await eventually(lambda: controller.controller.context.is_topic_queued_for_deletion("doomed"), "queued")

        # an old tool (or a race with the deletion) writes a second partition into the assignment
        assignment, version = cluster.observer.get_topic_assignments_with_versions(["doomed"])["doomed"]
        assignment.partitions[1] = [controller.broker_id, other]
        await asyncio.to_thread(cluster.observer.set_topic_assignment, "doomed", assignment, version)
        await eventually(lambda: cluster.observer.get_topic_assignments(["doomed"])["doomed"].partitions ==
                         {0: [other, victim]}, "assignment restored without the new partition")
        assert cluster.observer.get_topic_assignments(["doomed"])["doomed"].topic_id == assignment.topic_id
        assert ("doomed", 1) not in controller.controller.context.assignments.get("doomed", {})
        assert 1 not in cluster.states("doomed", 2)

    run(cluster, main)


# --- preferred replica election ------------------------------------------------------------------------

def test_preferred_replica_election_moves_leadership_only_to_an_in_sync_preferred_replica(cluster):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        a, b = [x for x in (1, 2, 3) if x != controller.broker_id]
        c = controller.broker_id
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "pref", None, None, {}, {0: [a, b], 1: [b, a]})
        await eventually(lambda: len(cluster.states("pref", 2)) == 2, "states of pref")
        await cluster.kill(a)
        await eventually(lambda: cluster.states("pref", 2)[0] == S(b, 1, [b], 1), "b leads p0 after a died")
        back = await cluster.start_broker(a)

        # a is back but not in the ISR: the election is refused, the request deleted all the same
        await asyncio.to_thread(cluster.observer.create_preferred_replica_election, [("pref", 0)])
        await eventually(lambda: not znode_exists(cluster, PreferredReplicaElectionZNode.path), "request handled")
        assert cluster.states("pref", 2)[0] == S(b, 1, [b], 1)

        # b (the leader) takes a back into the ISR, as its replica manager would, and tells the controller
        _, version = cluster.observer.get_partition_states([("pref", 0)])[("pref", 0)]
        await asyncio.to_thread(cluster.observer.update_partition_state, "pref", 0, S(b, 1, [b, a], 1), version)
        await asyncio.to_thread(cluster.observer.propagate_isr_changes, [("pref", 0)])
        ctx = controller.controller.context
        await eventually(lambda: ctx.leadership(("pref", 0)).state.isr == [b, a], "controller saw the new ISR")

        # p1 already has its preferred leader, "nope" does not exist: both are skipped
        await asyncio.to_thread(cluster.observer.create_preferred_replica_election,
                                [("pref", 0), ("pref", 1), ("nope", 0)])
        await eventually(lambda: not znode_exists(cluster, PreferredReplicaElectionZNode.path), "request handled")
        states = cluster.states("pref", 2)
        assert states[0] == S(a, 2, [b, a], 1)  # ISR unchanged, leader epoch + 1
        assert states[1] == S(b, 1, [b], 1)  # untouched since a left its ISR
        for broker in (back, cluster.brokers[b]):
            await eventually(lambda x=broker: any(s.leader == a and s.leader_epoch == 2 and s.isr == [b, a]
                                                  for s in leader_and_isr(x, "pref").get(0, [])),
                             f"LeaderAndIsr making {a} leader reaches broker {broker.broker_id}")
        await eventually(lambda: any(s.partition_index == 0 and s.leader == a for _, s in
                                     cluster.brokers[c].partition_states(ApiKey.UPDATE_METADATA, "pref")),
                         "UpdateMetadata with the new leader reaches the broker without a replica")
        assert all(s.leader_epoch < 2 for s in leader_and_isr(back, "pref").get(1, []))  # p1 not touched

    run(cluster, main)


def test_a_pending_preferred_election_is_run_by_the_next_controller(cluster):
    async def main(cluster):
        # a stand-in holds /controller while the stage is set, so no broker is controller yet
        await asyncio.to_thread(cluster.observer.create_top_level_paths)
        await asyncio.to_thread(cluster.observer.register_controller_and_increment_epoch, 99)
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "later", None, None, {}, {0: [1, 2]})
        # as a former controller left it: 2 leads, 1 (preferred) is in sync
        await asyncio.to_thread(cluster.observer.create_partition_states, {("later", 0): S(2, 3, [1, 2], 1)})
        await asyncio.to_thread(cluster.observer.create_preferred_replica_election, [("later", 0)])
        for broker_id in (1, 2):
            await cluster.start_broker(broker_id)
        with pytest.raises(ZkNodeExistsError):  # still pending: nobody handled it
            await asyncio.to_thread(cluster.observer.create_preferred_replica_election, [("later", 0)])

        await asyncio.to_thread(cluster.observer.delete_controller)
        await cluster.active_controller(epoch=2)
        await eventually(lambda: not znode_exists(cluster, PreferredReplicaElectionZNode.path), "request handled")
        assert cluster.states("later", 1)[0] == S(1, 4, [1, 2], 2)

    run(cluster, main)


# --- reassignment --------------------------------------------------------------------------------------

def test_reassignment_request_through_the_znode_is_carried_out(cluster):
    async def main(cluster):
        await cluster.start((1, 2))
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "r", None, None, {}, {0: [1, 2]})
        await eventually(lambda: cluster.states("r", 1), "state of r")
        # the same replicas in another order: already in the ISR, so the move completes at once
        await asyncio.to_thread(cluster.observer.create_partition_reassignment, {("r", 0): [2, 1]})
        await eventually(lambda: cluster.observer.get_topic_assignments(["r"])["r"].partitions == {0: [2, 1]},
                         "the new assignment written")
        await eventually(lambda: not cluster.observer.get_partition_reassignment(), "the request removed")
        # the controller carries on with other work
        await asyncio.to_thread(admin.create_topic, "after", 1, 1)
        await eventually(lambda: cluster.states("after", 1), "a topic created afterwards is elected")

    run(cluster, main)

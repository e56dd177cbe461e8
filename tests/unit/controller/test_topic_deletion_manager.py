"""TopicDeletionManager with the PartitionReassigner: a topic marked for deletion while one of its partitions is
being reassigned is held (not queued, still served) until the reassignment completes or is cancelled; the
reassigner then raises a TopicDeletion event and the deletion starts. Real state machines, ZooKeeper faked
with dicts (tests/unit/controller/test_reassignment.py's ReassignZk), requests recorded instead of sent."""

from __future__ import annotations

import asyncio

from odradek.controller.event_manager import TopicDeletion
from odradek.controller.replica_state_machine import ReplicaState
from odradek.controller.topic_deletion_manager import TopicDeletionManager
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch as S
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import UnknownTopicOrPartitionError  # type: ignore[attr-defined]
from tests.unit.controller.test_reassignment import ReassignZk, reassigner_parts
from tests.unit.controller.test_state_machines import run


class DeletionZk(ReassignZk):
    def __init__(self, znodes):
        super().__init__(znodes)
        self.deleted_topics = []

    def delete_topic_deletion_markers(self, topics, epoch_zk_version=None):
        self.marked_for_deletion = [t for t in self.marked_for_deletion if t not in topics]

    def delete_topic_znodes(self, topic, epoch_zk_version=None):
        self.deleted_topics.append(topic)
        self.marked_for_deletion.remove(topic)


def controller(live=(1, 2, 3, 4)):
    """test_reassignment's reassigner and a deletion manager sharing its context."""
    ctx, zk, batch, psm, rsm, reassigner, events = reassigner_parts(live, DeletionZk)
    deletion = TopicDeletionManager(ctx, rsm, psm, zk, run, 1, True, lambda: batch)
    return ctx, zk, batch, rsm, reassigner, deletion, events


async def mark_for_deletion(zk, deletion, topic):
    """What DeleteTopics and the controller's TopicDeletion event do."""
    zk.marked_for_deletion.append(topic)
    if await deletion.process_markers(set(zk.marked_for_deletion)):
        await deletion.resume(retry_failed=True)


def deletion_requests(batch):
    """StopReplica requests and UpdateMetadata partitions telling brokers the topic is being deleted (leader -2)."""
    stops = batch.channel.of(ApiKey.STOP_REPLICA)
    dropped = {(p.topic_name, p.partition_index) for _, key, build in batch.channel.sent
               if key == ApiKey.UPDATE_METADATA for p in build(4).ungrouped_partition_states if p.leader == -2}
    return stops, dropped


def ready_isr(zk, tp, isr):
    state, version = zk.znodes[tp]
    zk.znodes[tp] = (S(state.leader, state.leader_epoch, isr, state.controller_epoch), version + 1)


def test_deletion_waits_for_the_reassignment_to_complete_then_runs():
    async def scenario():
        ctx, zk, batch, rsm, reassigner, deletion, events = controller()
        assert await reassigner.alter({("t", 0): [3, 4]}) == {("t", 0): None}
        batch.channel.sent.clear()

        await mark_for_deletion(zk, deletion, "t")
        # held: not queued, the marker stays, nothing tells brokers to drop or delete anything
        assert deletion.held == {"t"} and not ctx.is_topic_queued_for_deletion("t")
        assert zk.marked_for_deletion == ["t"] and zk.deleted_topics == []
        assert deletion_requests(batch) == ({}, set())
        # a new move of the held topic is refused as Kafka refuses one for a queued topic
        refused = await reassigner.alter({("t", 1): [3, 4]})
        assert isinstance(refused[("t", 1)], UnknownTopicOrPartitionError)
        assert ctx.partitions_being_reassigned() == [("t", 0)]

        ready_isr(zk, ("t", 0), [1, 2, 3, 4])  # the new replicas caught up
        await reassigner.maybe_complete(("t", 0))
        assert ctx.replicas(("t", 0)) == [3, 4] and not ctx.partitions_being_reassigned()
        assert events == [TopicDeletion()]  # the reassigner asks the controller to look at the markers again
        batch.channel.sent.clear()

        assert await deletion.process_markers(set(zk.marked_for_deletion))
        await deletion.resume(retry_failed=True)
        assert deletion.held == set() and ctx.is_topic_queued_for_deletion("t")
        stops, dropped = deletion_requests(batch)
        assert sorted(stops) == [2, 3, 4]  # StopReplica(delete) to the replicas after the move: t-0 [3, 4], t-1 [2, 3]
        assert dropped == {("t", 0), ("t", 1)}
        # every replica answers: the topic is gone
        for broker in (2, 3, 4):
            errors = tuple(("t", p, 0) for p in (0, 1) if broker in ctx.replicas(("t", p)))
            await deletion.on_stop_replica_response(broker, errors, 0)
        assert zk.deleted_topics == ["t"] and "t" not in ctx.all_topics

    asyncio.run(scenario())


def test_cancelling_the_reassignment_of_a_held_topic_resumes_its_deletion():
    async def scenario():
        ctx, zk, batch, rsm, reassigner, deletion, events = controller()
        await reassigner.alter({("t", 0): [1, 4]})
        await mark_for_deletion(zk, deletion, "t")
        assert deletion.held == {"t"}
        # cancelling is allowed (Kafka would refuse it for a queued topic, so a stuck move would block the deletion)
        assert await reassigner.alter({("t", 0): None}) == {("t", 0): None}
        assert ctx.replicas(("t", 0)) == [1, 2] and events == [TopicDeletion()]
        assert rsm.state((("t", 0), 4)) == ReplicaState.NON_EXISTENT
        assert await deletion.process_markers(set(zk.marked_for_deletion))
        assert ctx.is_topic_queued_for_deletion("t") and deletion.held == set()

    asyncio.run(scenario())


def test_a_topic_with_two_moving_partitions_waits_for_both():
    async def scenario():
        ctx, zk, batch, rsm, reassigner, deletion, events = controller()
        await reassigner.alter({("t", 0): [1, 4], ("t", 1): [2, 4]})
        await mark_for_deletion(zk, deletion, "t")
        ready_isr(zk, ("t", 0), [1, 2, 4])
        await reassigner.maybe_complete(("t", 0))
        assert ctx.partitions_being_reassigned() == [("t", 1)] and events == []
        assert not await deletion.process_markers(set(zk.marked_for_deletion))
        assert deletion.held == {"t"}
        ready_isr(zk, ("t", 1), [2, 3, 4])
        await reassigner.maybe_complete(("t", 1))
        assert events == [TopicDeletion()]
        assert await deletion.process_markers(set(zk.marked_for_deletion))

    asyncio.run(scenario())


def test_a_topic_not_being_reassigned_is_queued_at_once():
    async def scenario():
        ctx, zk, batch, rsm, reassigner, deletion, events = controller()
        await mark_for_deletion(zk, deletion, "t")
        assert ctx.is_topic_queued_for_deletion("t") and deletion.held == set()
        assert sorted(batch.channel.of(ApiKey.STOP_REPLICA)) == [1, 2, 3]

    asyncio.run(scenario())

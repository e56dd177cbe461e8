"""PartitionModificationsWatcher on its own, with a fake ZooKeeper: which watch firings become events, and
what an event does with the assignment it reads (new partitions, nothing new, deleted or deleting topic)."""

from __future__ import annotations

import asyncio
import uuid

from odradek.controller.controller_context import ControllerContext
from odradek.controller.event_manager import PartitionModifications
from odradek.controller.partition_modifications import PartitionModificationsWatcher
from odradek.controller.zk_data import TopicAssignment
from tests.fakes.zookeeper import FakeZk

TOPIC_ID = uuid.UUID(int=7)


async def run(fn, *args):
    return fn(*args)


def watcher(partitions):
    ctx = ControllerContext()
    ctx.epoch_zk_version = 11
    ctx.add_topic("t", TopicAssignment({0: [1, 2], 1: [2, 1]}, TOPIC_ID))
    zk = FakeZk(assignments={"t": TopicAssignment(partitions, TOPIC_ID)})
    events, created = [], []

    async def on_new_partitions(tps):
        created.append(tps)
    w = PartitionModificationsWatcher(ctx, zk, run, 1, events.append, on_new_partitions)
    asyncio.run(w.watch({"t": 3}))
    return ctx, zk, w, events, created


def test_only_a_changed_or_deleted_assignment_is_an_event():
    _, zk, w, events, _ = watcher({0: [1, 2], 1: [2, 1]})
    fire = zk.watches["/brokers/topics/t"]
    fire(b"{}", 3)         # the firing as the watch is set: the version we read
    assert events == []
    fire(b"{}", 4)
    fire(None, None)       # deleted
    assert events == [PartitionModifications("t"), PartitionModifications("t")]
    assert w.watched_topics == {"t"}


def test_new_partitions_join_the_context_and_are_created():
    ctx, _, w, _, created = watcher({0: [1, 2], 1: [2, 1], 2: [1, 3], 3: [3, 2]})
    asyncio.run(w.process("t"))
    assert created == [[("t", 2), ("t", 3)]]
    assert ctx.assignments["t"] == {0: [1, 2], 1: [2, 1], 2: [1, 3], 3: [3, 2]}


def test_nothing_new_does_nothing():
    ctx, zk, w, _, created = watcher({0: [1, 2], 1: [2, 1]})
    asyncio.run(w.process("t"))
    assert created == [] and zk.assignment_writes == []


def test_a_topic_the_controller_forgot_is_unwatched():
    ctx, zk, w, _, created = watcher({0: [1, 2], 1: [2, 1], 2: [1, 2]})
    ctx.remove_topic("t")
    asyncio.run(w.process("t"))
    assert created == [] and zk.unwatched == ["/brokers/topics/t"] and w.watched_topics == set()


def test_partitions_added_during_deletion_are_written_out_again():
    ctx, zk, w, _, created = watcher({0: [3, 3], 1: [2, 1], 2: [1, 3]})
    zk.partition_ids["t"] = [0, 1]
    ctx.queue_topic_deletion(["t"])
    asyncio.run(w.process("t"))
    assert created == [] and 2 not in ctx.assignments["t"]
    (topic, assignment, version, epoch_zk_version), = zk.assignment_writes
    # the partitions with znodes, with the replicas the controller knows; fenced by the controller epoch
    assert (topic, assignment.partitions, assignment.topic_id, epoch_zk_version) == \
        ("t", {0: [1, 2], 1: [2, 1]}, TOPIC_ID, 11)


def test_unwatch_all_on_resignation():
    _, zk, w, _, _ = watcher({0: [1, 2]})
    asyncio.run(w.watch({"u": 0}))
    w.unwatch_all()
    assert sorted(zk.unwatched) == ["/brokers/topics/t", "/brokers/topics/u"] and w.watched_topics == set()

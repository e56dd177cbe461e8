"""ControllerContext: live brokers, topics, leadership and the partitions that need an election."""

import uuid

from odradek.controller.controller_context import ControllerContext
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch as S, TopicAssignment


def context() -> ControllerContext:
    ctx = ControllerContext()
    for broker_id in (1, 2, 3):
        ctx.add_live_broker(BrokerInfo(broker_id, [("PLAINTEXT", "h", 9000 + broker_id)]), 100 + broker_id)
    ctx.add_topic("a", TopicAssignment({0: [1, 2], 1: [2, 3]}, uuid.UUID(int=7)))
    ctx.add_topic("b", TopicAssignment({0: [3]}))
    return ctx


def test_brokers_and_epochs():
    ctx = context()
    assert ctx.live_broker_ids == {1, 2, 3} and ctx.broker_epoch(2) == 102
    ctx.remove_live_brokers([2])
    assert ctx.live_broker_ids == {1, 3} and ctx.broker_epoch(2) == -1
    assert not ctx.is_replica_online(2, ("a", 0)) and ctx.is_replica_online(1, ("a", 0))


def test_topics_and_partitions():
    ctx = context()
    assert ctx.all_topics == {"a", "b"} and ctx.topic_ids == {"a": uuid.UUID(int=7)}
    assert ctx.all_partitions() == [("a", 0), ("a", 1), ("b", 0)]
    assert ctx.replicas(("a", 1)) == [2, 3] and ctx.replicas(("zz", 0)) == []
    assert ctx.partitions_on_brokers([1]) == [("a", 0)]
    assert ctx.partitions_on_brokers([3]) == [("a", 1), ("b", 0)]


def test_partitions_needing_election_are_new_or_leaderless_and_not_being_deleted():
    ctx = context()
    ctx.put_leadership(("a", 0), S(1, 0, [1, 2], 1), 0)
    ctx.put_leadership(("a", 1), S(2, 0, [2, 3], 1), 0)
    assert ctx.partitions_needing_election() == [("b", 0)]  # no state yet
    ctx.remove_live_brokers([2])
    assert ctx.partitions_needing_election() == [("a", 1), ("b", 0)]
    assert ctx.partitions_with_replicas_in_isr_of([2]) == [("a", 0), ("a", 1)]
    ctx.queue_topic_deletion(["b", "unknown"])
    assert ctx.topics_to_be_deleted == {"b"} and ctx.partitions_needing_election() == [("a", 1)]


def test_remove_topic_forgets_everything_about_it():
    ctx = context()
    ctx.put_leadership(("a", 0), S(1, 0, [1, 2], 1), 3)
    ctx.queue_topic_deletion(["a"])
    ctx.remove_topic("a")
    assert ctx.all_topics == {"b"} and ctx.leadership(("a", 0)) is None
    assert "a" not in ctx.topic_ids and not ctx.is_topic_queued_for_deletion("a")


def test_reset_keeps_only_the_epoch():
    ctx = context()
    ctx.epoch, ctx.epoch_zk_version = 4, 3
    ctx.reset()
    assert (ctx.epoch, ctx.epoch_zk_version) == (4, 3)
    assert ctx.live_broker_ids == set() and ctx.all_topics == set()


def test_a_replica_on_an_offline_log_dir_is_offline_until_its_broker_restarts():
    ctx = context()
    ctx.replicas_on_offline_dirs[1] = {("a", 0)}
    assert not ctx.is_replica_online(1, ("a", 0)) and ctx.is_replica_online(1)
    assert ctx.brokers_with_offline_replica(("a", 0)) == {1} and ctx.brokers_with_offline_replica(("a", 1)) == set()
    ctx.add_live_broker(BrokerInfo(1, [("PLAINTEXT", "h", 9001)]), 200)  # registered again: asked again
    assert ctx.is_replica_online(1, ("a", 0))
    assert ctx.topic_name(uuid.UUID(int=7)) == "a" and ctx.topic_name(uuid.UUID(int=8)) is None

"""Deleting a topic while one of its partitions is being reassigned (Kafka 2.8's TopicDeletionManager: a topic
under reassignment is ineligible for deletion until the move completes or is cancelled).

Three real brokers; the reassignments cannot finish because their new replica's broker is SIGSTOPped (it stays
registered: a 30 s ZooKeeper session). DeleteTopics succeeds (timeout 0: the marker is written), a topic without
a reassignment deleted after them disappears, but the two moving topics stay listed, served and marked. Cancelling
one reassignment lets its topic's deletion run at once; the other goes once the stopped broker runs again and
the move completes. At the end neither topic is in the metadata, /admin/delete_topics or any broker's log dirs.
"""

from __future__ import annotations

import signal

from odradek.clients.admin.client import Admin, NewTopic
from odradek.clients.simple_client import SyncSimpleClient
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import UnknownTopicOrPartitionError  # type: ignore[attr-defined]
from tests.integration.helpers import partition_dirs, wait_until

WAIT_S = 90.0  # upper bound for the cluster to converge; never a speed assertion


def on_disk(cluster, topic: str) -> list[str]:
    return [f"broker {b.broker_id}: {name}" for b in cluster.brokers for name in partition_dirs(b, topic)]


def test_a_topic_being_reassigned_is_deleted_only_after_its_move_completes_or_is_cancelled(
        odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=3, overrides={"zookeeper.session.timeout.ms": "30000"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    controller = wait_until(lambda: (zk.get_controller_id(),) if zk.get_controller_id() is not None else None,
                            WAIT_S, what="a controller")[0]
    # the stopped broker is not the controller: the admin requests go to the controller
    stopped = next(b for b in (2, 1, 0) if b != controller)
    a, b = [x for x in range(3) if x != stopped]
    # clients talk only to the running brokers (the stopped one would hold their requests)
    running = ",".join(f"{cluster.host}:{cluster.brokers[x].port}" for x in (a, b))
    with Admin(running) as admin:
        admin.create_topics([NewTopic("moving", replica_assignments={0: [a, b]}),
                             NewTopic("cancelled", replica_assignments={0: [b, a]}),
                             NewTopic("plain", replica_assignments={0: [a, b]})], timeout_ms=30000)
    with cluster.client() as client:
        for topic in ("moving", "cancelled", "plain"):
            assert client.produce(topic, 0, [(None, b"before")], acks=-1).error_code == 0

    cluster.brokers[stopped].process.send(signal.SIGSTOP)
    try:
        with Admin(running) as admin, SyncSimpleClient(running) as client:
            started = admin.alter_partition_reassignments({TopicPartition("moving", 0): [a, stopped],
                                                           TopicPartition("cancelled", 0): [b, stopped]})
            assert started == {TopicPartition("moving", 0): None, TopicPartition("cancelled", 0): None}
            # DeleteTopics' timeout 0: the answer does not wait for the deletion (Kafka's too). Sent by the
            # SimpleClient: the Admin's timeout_ms is its whole call's deadline, as Kafka's Admin's.
            assert client.delete_topics(["moving", "cancelled"], timeout_ms=0) == {"moving": 0, "cancelled": 0}
            assert client.delete_topics(["plain"], timeout_ms=0) == {"plain": 0}
            # the controller handled the markers in order: once "plain" is gone it has seen the other two
            wait_until(lambda: "plain" not in admin.list_topics(), WAIT_S, what="plain deleted")
            wait_until(lambda: not on_disk(cluster, "plain"), WAIT_S, what="plain's replicas deleted")
            topics = admin.list_topics()
            assert "moving" in topics and "cancelled" in topics, topics
            assert sorted(zk.get_topics_marked_for_deletion()) == ["cancelled", "moving"]
            # still served by its leader
            with cluster.client() as client:
                assert client.produce("moving", 0, [(None, b"held")], acks=1).error_code == 0
            # a new move of a topic waiting for deletion is refused, as Kafka refuses it for a queued topic
            refused = admin.alter_partition_reassignments({TopicPartition("moving", 0): [b, stopped]})
            assert isinstance(refused[TopicPartition("moving", 0)], UnknownTopicOrPartitionError), refused

            # cancelling lets the deletion of "cancelled" run while the broker is still stopped
            assert admin.alter_partition_reassignments({TopicPartition("cancelled", 0): None}) == {
                TopicPartition("cancelled", 0): None}
            wait_until(lambda: "cancelled" not in admin.list_topics(), WAIT_S, what="cancelled deleted")
            assert "moving" in admin.list_topics()
            # the marker goes last, after the topic has left the metadata (Kafka's order)
            wait_until(lambda: zk.get_topics_marked_for_deletion() == ["moving"], WAIT_S,
                       what="cancelled's deletion marker removed")
            assert set(admin.list_partition_reassignments()) == {TopicPartition("moving", 0)}
    finally:
        cluster.brokers[stopped].process.send(signal.SIGCONT)

    # the move completes, then the deletion runs
    with Admin(cluster.bootstrap_servers) as admin:
        wait_until(lambda: "moving" not in admin.list_topics(), WAIT_S, what="moving deleted after its move")
        assert admin.list_partition_reassignments() == {}
    wait_until(lambda: zk.get_topics_marked_for_deletion() == [], WAIT_S, what="the markers removed")
    assert zk.get_topic_assignments(["moving", "cancelled"]) == {}
    for topic in ("moving", "cancelled", "plain"):
        wait_until(lambda: not on_disk(cluster, topic), WAIT_S, what=f"{topic}'s replicas deleted on every broker")

"""The controller against a real ZooKeeper, talking to real broker reactors over real sockets.

The brokers are tests/fakes/controller_brokers' FakeBrokers: a real SocketServer + KafkaApis recording the
controller's requests, registered in ZooKeeper with a session and a KafkaController of their own.
"""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.admin_zk import AdminZkClient
from odradek.controller.zk_client import KafkaZkClient
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicZNode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import (InvalidConfigError, InvalidReplicaAssignmentError, InvalidReplicationFactorError,
                                     InvalidRequestError, InvalidTopicError, TopicAlreadyExistsError,
                                     TopicDeletionDisabledError, UnknownTopicOrPartitionError)
from tests.fakes.controller_brokers import Cluster, FakeBroker, config, eventually, run


@pytest.fixture
def cluster(zk_client_factory, zk_chroot) -> Cluster:
    return Cluster(zk_client_factory, zk_chroot)


def test_one_controller_then_failover_bumps_the_epoch(cluster):
    async def main(cluster):
        first = await cluster.start((1, 2, 3))
        assert cluster.observer.get_controller_id() == first.broker_id
        assert cluster.observer.get_controller_epoch()[0] == 1
        assert [b for b in cluster.brokers.values() if b.controller.is_active] == [first]
        # every broker learns about every other one, from the controller, with the controller's epoch
        for broker in cluster.brokers.values():
            await eventually(lambda b=broker: any({x.id for x in r.live_brokers} == {1, 2, 3} and
                                                  r.controller_id == first.broker_id and r.controller_epoch == 1
                                                  for r in b.requests(ApiKey.UPDATE_METADATA)),
                             f"broker {broker.broker_id} told about all brokers")

        await cluster.kill(first.broker_id)
        survivors = list(cluster.brokers.values())
        second = await cluster.active_controller(epoch=2)
        assert second is not first and cluster.observer.get_controller_epoch()[0] == 2
        for broker in survivors:
            await eventually(lambda b=broker: any(r.controller_epoch == 2 and r.controller_id == second.broker_id and
                                                  sorted(x.id for x in r.live_brokers) == sorted(cluster.brokers)
                                                  for r in b.requests(ApiKey.UPDATE_METADATA)),
                             f"broker {broker.broker_id} told by the new controller")

    run(cluster, main)


def test_new_topic_gets_states_and_brokers_hear_about_it(cluster):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        admin = cluster.admin()
        assignment = await asyncio.to_thread(admin.create_topic, "orders", 6, 2, {"retention.ms": "60000"})
        assert len(assignment) == 6 and all(len(r) == 2 for r in assignment.values())
        states = await eventually(lambda: (s := cluster.states("orders", 6)) and len(s) == 6 and s,
                                  "partition states of orders")
        for p, replicas in assignment.items():
            assert states[p] == LeaderIsrAndControllerEpoch(replicas[0], 0, replicas, 1)
        assert cluster.observer.get_entity_config("topics", "orders") == {"retention.ms": "60000"}
        # each replica gets LeaderAndIsr (is_new) for its partitions, with its own broker epoch
        for broker in cluster.brokers.values():
            mine = {p for p, r in assignment.items() if broker.broker_id in r}
            await eventually(lambda b=broker, m=mine: {s.partition_index for _, s in
                                                       b.partition_states(ApiKey.LEADER_AND_ISR, "orders")} == m,
                             f"LeaderAndIsr for broker {broker.broker_id}")
            for request, state in broker.partition_states(ApiKey.LEADER_AND_ISR, "orders"):
                replicas = assignment[state.partition_index]
                assert (state.leader, state.isr, state.replicas, state.is_new, state.leader_epoch) == \
                    (replicas[0], replicas, replicas, True, 0)
                assert request.broker_epoch == broker.broker_epoch and request.controller_epoch == 1
                leaders = {(x.broker_id, x.port) for x in request.live_leaders}
                assert (replicas[0], cluster.brokers[replicas[0]].server.port()) in leaders
            # and every broker gets UpdateMetadata with all six partitions and their leaders
            await eventually(lambda b=broker: {s.partition_index: s.leader for _, s in
                                               b.partition_states(ApiKey.UPDATE_METADATA, "orders")} ==
                             {p: r[0] for p, r in assignment.items()},
                             f"UpdateMetadata for broker {broker.broker_id}")

    run(cluster, main)


def test_broker_failure_moves_leadership_and_its_return_restores_it(cluster):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        victim, other = [b for b in (1, 2, 3) if b != controller.broker_id]
        c = controller.broker_id
        # t-0: the victim leads, t-1: it follows, t-2: it is not involved; solo-0: it is alone (goes offline)
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "t", None, None, {},
                                {0: [victim, other], 1: [other, victim], 2: [c, other]})
        await asyncio.to_thread(admin.create_topic, "solo", None, None, {}, {0: [victim]})
        await eventually(lambda: len(cluster.states("t", 3)) == 3 and cluster.states("solo", 1), "states")

        await cluster.kill(victim)
        expected = {0: LeaderIsrAndControllerEpoch(other, 1, [other], 1),
                    1: LeaderIsrAndControllerEpoch(other, 1, [other], 1),
                    2: LeaderIsrAndControllerEpoch(c, 0, [c, other], 1)}
        await eventually(lambda: cluster.states("t", 3) == expected, "re-election after the failure")
        # nobody can lead solo-0: leader -1, and Kafka keeps the last ISR member
        assert cluster.states("solo", 1) == {0: LeaderIsrAndControllerEpoch(-1, 1, [victim], 1)}
        survivor = cluster.brokers[other]
        await eventually(lambda: any(s.partition_index == 0 and s.leader == other and s.leader_epoch == 1
                                     for _, s in survivor.partition_states(ApiKey.LEADER_AND_ISR, "t")),
                         "LeaderAndIsr making the survivor leader of t-0")
        live = sorted([c, other])
        for broker in cluster.brokers.values():
            def told(b=broker):
                latest = {}
                for topic in ("t", "solo"):
                    for _, s in b.partition_states(ApiKey.UPDATE_METADATA, topic):
                        latest[topic, s.partition_index] = (s.leader, s.isr)
                last = b.requests(ApiKey.UPDATE_METADATA)[-1]
                return sorted(x.id for x in last.live_brokers) == live and latest == {
                    ("t", 0): (other, [other]), ("t", 1): (other, [other]), ("t", 2): (c, [c, other]),
                    ("solo", 0): (-1, [victim])}
            await eventually(told, f"UpdateMetadata after the failure to broker {broker.broker_id}")

        # the victim comes back (a new session, a new broker epoch): its lone partition is led again
        returned = await cluster.start_broker(victim)
        await eventually(lambda: cluster.states("solo", 1) == {0: LeaderIsrAndControllerEpoch(victim, 2, [victim], 1)},
                         "the returning broker leads its lone partition again")
        await eventually(lambda: {s.partition_index for _, s in returned.partition_states(ApiKey.LEADER_AND_ISR, "t")}
                         == {0, 1}, "LeaderAndIsr for the returning broker's replicas")
        await eventually(lambda: {s.partition_index for _, s in returned.partition_states(ApiKey.UPDATE_METADATA, "t")}
                         == {0, 1, 2}, "full UpdateMetadata to the returning broker")
        assert not returned.controller.is_active and controller.controller.is_active

    run(cluster, main)


def test_topic_deletion_stops_replicas_and_removes_znodes(cluster):
    async def main(cluster):
        controller = await cluster.start((1, 2))
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "doomed", 2, 2, {"cleanup.policy": "compact"})
        await asyncio.to_thread(admin.create_topic, "kept", 1, 1)
        await eventually(lambda: len(cluster.states("doomed", 2)) == 2 and cluster.states("kept", 1), "states")

        await asyncio.to_thread(admin.delete_topic, "doomed")
        # Kafka's order: the topic znode, then its config, then the deletion marker last
        await eventually(lambda: not cluster.observer.topic_exists("doomed")
                         and cluster.observer.get_topics_marked_for_deletion() == [], "topic znode and marker removed")
        assert cluster.observer.get_entity_config("topics", "doomed") == {}
        assert cluster.observer.get_all_topics() == ["kept"]
        for broker in cluster.brokers.values():
            deleted = [s for _, s in broker.partition_states(ApiKey.UPDATE_METADATA, "doomed") if s.leader == -2]
            assert {s.partition_index for s in deleted} == {0, 1}
            stops = {(t.topic_name, s.partition_index): (s.delete_partition, s.leader_epoch)
                     for r in broker.requests(ApiKey.STOP_REPLICA) for t in r.topic_states for s in t.partition_states}
            assert stops == {("doomed", 0): (True, -2), ("doomed", 1): (True, -2)}
        with pytest.raises(UnknownTopicOrPartitionError):
            await asyncio.to_thread(admin.delete_topic, "doomed")
        # the name can be used again
        await asyncio.to_thread(admin.create_topic, "doomed", 1, 1)
        await eventually(lambda: cluster.states("doomed", 1), "recreated topic has a state")

    run(cluster, main)


def test_deletion_disabled_removes_the_marker_and_keeps_the_topic(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1,))
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "stays", 1, 1)
        with pytest.raises(TopicDeletionDisabledError):
            await asyncio.to_thread(admin.delete_topic, "stays")
        await asyncio.to_thread(cluster.observer.mark_topic_for_deletion, ["stays"])  # as an old tool would
        await eventually(lambda: cluster.observer.get_topics_marked_for_deletion() == [], "marker removed")
        assert cluster.observer.topic_exists("stays")
        assert controller.requests(ApiKey.STOP_REPLICA) == []

    run(Cluster(zk_client_factory, zk_chroot, delete_topic_enable=False), main)


def test_a_new_controller_resends_existing_state_and_elects_offline_partitions(cluster):
    async def main(cluster):
        first = await cluster.start((1, 2, 3))
        rest = [b for b in (1, 2, 3) if b != first.broker_id]
        admin = cluster.admin()
        # the controller leads p0, so its death leaves p0 to be elected by the next controller
        await asyncio.to_thread(admin.create_topic, "t", None, None, {},
                                {0: [first.broker_id, rest[0]], 1: [rest[0], rest[1]]})
        await eventually(lambda: len(cluster.states("t", 2)) == 2, "states")
        await cluster.kill(first.broker_id)
        await cluster.active_controller(epoch=2)
        await eventually(lambda: cluster.states("t", 2) == {
            0: LeaderIsrAndControllerEpoch(rest[0], 1, [rest[0]], 2),
            1: LeaderIsrAndControllerEpoch(rest[0], 0, [rest[0], rest[1]], 1)}, "p0 elected by the new controller")
        for broker_id in rest:
            broker = cluster.brokers[broker_id]
            await eventually(lambda b=broker: any(r.controller_epoch == 2 for r in b.requests(ApiKey.LEADER_AND_ISR)),
                             "LeaderAndIsr from the new controller")

    run(cluster, main)


def test_controller_znode_deleted_under_the_controller_triggers_a_new_election(cluster):
    async def main(cluster):
        first = await cluster.start((1, 2, 3))
        await asyncio.to_thread(cluster.observer.delete_controller)  # every broker sees /controller vanish
        second = await cluster.active_controller(epoch=2)
        assert cluster.observer.get_controller_id() == second.broker_id
        for broker in cluster.brokers.values():
            if broker is not second:  # those that did not win hold nothing of a controller
                await eventually(lambda b=broker: b.controller.channel is None and not b.controller._watches,
                                 f"broker {broker.broker_id} holds no controller state")
        if first is not second:
            sent_before = len(cluster.brokers[second.broker_id].received)
            await asyncio.to_thread(cluster.admin().create_topic, "after", 1, 1)
            await eventually(lambda: cluster.states("after", 1), "the new controller handles topics")
            assert all(r.controller_epoch == 2 for _, _, r in cluster.brokers[second.broker_id].received[sent_before:])

    run(cluster, main)


def test_controller_whose_session_expires_resigns(cluster):
    async def main(cluster):
        first = await cluster.start((1, 2, 3))
        from kazoo.client import KazooClient  # test-only: expire a session the way ZooKeeper does

        def expire_session(client: KafkaZkClient) -> None:
            twin = KazooClient(hosts=client.connect, client_id=client._zk.client_id)
            twin.start()
            twin.stop()  # closing the twin ends the shared session: the controller's client sees it expire
            twin.close()

        await asyncio.to_thread(expire_session, first.zk)

        def settled():
            epoch = cluster.observer.get_controller_epoch()[0]
            active = [b for b in cluster.brokers.values() if b.controller.is_active]
            return epoch >= 2 and len(active) == 1 and active[0].controller.epoch == epoch and \
                cluster.observer.get_controller_id() == active[0].broker_id and active[0]

        winner = await eventually(settled, "one controller with a new epoch after the expiry")
        if winner is not first:
            assert first.controller.channel is None and not first.controller._watches

    run(cluster, main)


def test_channel_manager_waits_for_a_broker_and_reconnects_in_order(zk_chroot):
    from odradek.tools.local_zookeeper import free_port
    from odradek.controller.channel_manager import ControllerChannelManager
    from odradek.protocol.messages import UpdateMetadataRequest

    async def main():
        port = free_port()
        cfg = config(7, zk_chroot, listeners=f"PLAINTEXT://127.0.0.1:{port}")
        channel = ControllerChannelManager(0, "PLAINTEXT", socket_timeout_ms=5000, backoff_ms=10, max_backoff_ms=50)
        channel.add_broker(BrokerInfo(7, [("PLAINTEXT", "127.0.0.1", port)]))
        answers: list[int] = []

        def request(n: int):  # the controller epoch numbers the requests
            return lambda version: UpdateMetadataRequest(controller_id=0, controller_epoch=n)

        for n in range(3):  # queued while nothing listens: the sender keeps retrying
            channel.send(7, ApiKey.UPDATE_METADATA, request(n), lambda b, k, r: answers.append(b))
        await asyncio.sleep(0.2)
        assert answers == []
        broker = FakeBroker(7, None, cfg)  # only its reactor: no ZooKeeper here
        await broker.server.start()
        await eventually(lambda: len(answers) == 3, "queued requests delivered once the broker listens")
        await broker.server.stop(timeout=0.5)  # the connection drops ...
        for n in range(3, 6):
            channel.send(7, ApiKey.UPDATE_METADATA, request(n), lambda b, k, r: answers.append(b))
        restarted = FakeBroker(7, None, cfg)
        await restarted.server.start()  # ... and comes back on the same port
        await eventually(lambda: len(answers) == 6, "requests delivered after a reconnect")
        epochs = [b.controller_epoch for b in broker.requests(ApiKey.UPDATE_METADATA) +
                  restarted.requests(ApiKey.UPDATE_METADATA)]
        assert epochs == list(range(6)) and answers == [7] * 6
        await channel.shutdown()
        assert channel.broker_ids == set() and not channel.send(7, ApiKey.UPDATE_METADATA, request(9))
        await restarted.server.stop(timeout=0.5)

    asyncio.run(asyncio.wait_for(main(), 60))


# --- AdminZkClient's validation (nothing reaches ZooKeeper when it fails) --------------------------------

def test_admin_validation(zk_client_factory, zk_chroot):
    zk = zk_client_factory()
    zk.create_top_level_paths()
    for broker_id in (1, 2):
        zk.register_broker(BrokerInfo(broker_id, [("PLAINTEXT", "127.0.0.1", 9000 + broker_id)]))
    admin = AdminZkClient(zk, config(1, zk_chroot, num_partitions=3, default_replication_factor=2))
    for bad in ("", ".", "..", "a" * 250, "bad/name", "spaß"):
        with pytest.raises(InvalidTopicError):
            admin.create_topic(bad, 1, 1)
    (replicas,) = admin.create_topic("a" * 249, 1, 1, validate_only=True).values()
    assert replicas in ([1], [2])
    assert sorted(admin.create_topic("defaults", -1, None)) == [0, 1, 2]
    assert all(len(r) == 2 for r in zk.get_topic_assignments(["defaults"])["defaults"].partitions.values())
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 2"):
        admin.create_topic("big", 1, 3)
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topic("defaults", 1, 1)
    admin.create_topic("a.b", 1, 1)
    with pytest.raises(InvalidTopicError, match="collides"):
        admin.create_topic("a_b", 1, 1)
    with pytest.raises(InvalidConfigError):
        admin.create_topic("c", 1, 1, {"retention.ms": "soon"})
    with pytest.raises(InvalidConfigError):
        admin.create_topic("c", 1, 1, {"no.such.config": "1"})
    with pytest.raises(InvalidRequestError):
        admin.create_topic("c", 1, 1, {"retention.ms": None})
    with pytest.raises(InvalidRequestError):
        admin.create_topic("c", 2, -1, replica_assignment={0: [1]})
    with pytest.raises(InvalidReplicaAssignmentError):
        admin.create_topic("c", None, None, replica_assignment={0: [1, 1]})
    assert admin.create_topic("c", None, None, {"retention.ms": "1"}, {0: [2, 1], 1: [1, 2]},
                              validate_only=True) == {0: [2, 1], 1: [1, 2]}
    assert not zk.topic_exists("c") and not zk.topic_exists("a" * 249)
    admin.create_topic("c", None, None, {}, {0: [2, 1], 1: [1, 2]})
    assignment = zk.get_topic_assignments(["c"])["c"]
    assert assignment.partitions == {0: [2, 1], 1: [1, 2]} and assignment.topic_id is not None
    admin.delete_topic("c")
    admin.delete_topic("c")  # already marked: fine, as in Kafka
    # Kafka 2.8's CreateTopics first asks whether the topic exists (its znode stays until the controller has
    # deleted it), then AdminZkClient's validateTopicCreate finds the deletion marker.
    with pytest.raises(TopicAlreadyExistsError, match="already exists"):
        admin.create_topic("c", 1, 1)
    zk.delete_path(TopicZNode.path("c") + "/partitions")
    zk.delete_path(TopicZNode.path("c"))  # the controller's first step; the marker goes last
    with pytest.raises(TopicAlreadyExistsError, match="marked for deletion"):
        admin.create_topic("c", 1, 1)
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topic("never")

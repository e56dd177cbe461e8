"""KafkaZkClient against a real ZooKeeper server (one chroot per test)."""

from __future__ import annotations

import queue
import threading
import time
import uuid

import pytest

from odradek.controller.zk_client import (ControllerMovedError, KafkaZkClient, TopicExistsError,
                                          ZkConnectionError, ZkNodeExistsError)
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment


def broker(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(broker_id, [("PLAINTEXT", "127.0.0.1", port + broker_id)], rack="r1")


def wait_for(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout}s")


def next_event(events: queue.Queue, predicate, timeout: float = 10.0):
    """The first event from a watch callback that satisfies ``predicate``."""
    deadline = time.monotonic() + timeout
    while True:
        value = events.get(timeout=max(0.01, deadline - time.monotonic()))
        if predicate(value):
            return value


def test_start_creates_chroot_and_top_level_paths(zookeeper, zk_chroot, zk_client_factory):
    client = zk_client_factory()
    client.create_top_level_paths()
    root = zk_client_factory(zookeeper.connect_string)
    chroot = zk_chroot.partition("/")[2]
    assert chroot in root.get_children("/")
    assert {"brokers", "config", "admin", "isr_change_notification"} <= set(root.get_children(f"/{chroot}"))
    # made with its first block only: Kafka 2.8 cannot read an empty one (tests/kafka/test_mixed_cluster.py)
    assert "latest_producer_id_block" not in root.get_children(f"/{chroot}")
    assert root.get_children(f"/{chroot}/brokers") == ["ids", "seqid", "topics"]
    assert "brokers" not in root.get_children("/")  # nothing leaked outside the chroot


def test_connect_failure_is_a_zk_connection_error(tmp_path):
    from odradek.tools.local_zookeeper import free_port
    client = KafkaZkClient(f"127.0.0.1:{free_port()}", connection_timeout_ms=500)
    with pytest.raises(ZkConnectionError):
        client.start()
    client.close()


def test_cluster_id_is_stable_across_clients(zk_client_factory):
    first = zk_client_factory().get_or_create_cluster_id()
    assert len(first) == 22
    assert zk_client_factory().get_or_create_cluster_id() == first
    assert zk_client_factory().get_data("/cluster/id")[0].decode() == f'{{"version":"1","id":"{first}"}}'


def test_broker_registration_is_ephemeral(zk_client_factory):
    watcher = zk_client_factory()
    brokers = [zk_client_factory(), zk_client_factory()]
    for broker_id, client in enumerate(brokers, start=1):
        client.create_top_level_paths()
        client.register_broker(broker(broker_id))
    live = watcher.get_all_brokers()
    assert sorted(live) == [1, 2]
    assert live[1].endpoints == [("PLAINTEXT", "127.0.0.1", 9093)] and live[1].rack == "r1"
    assert watcher.get_broker(2).endpoint("PLAINTEXT") == ("127.0.0.1", 9094)
    brokers[0].close()
    wait_for(lambda: sorted(watcher.get_all_brokers()) == [2])
    assert watcher.get_broker(1) is None


def test_same_broker_id_from_another_session_is_refused(zk_client_factory):
    first, second = zk_client_factory(), zk_client_factory()
    first.register_broker(broker(1))
    with pytest.raises(ZkNodeExistsError):
        second.register_broker(broker(1))
    assert first.register_broker(broker(1)) > 0  # our own node: a retried registration succeeds


def test_broker_epoch_is_czxid_and_grows_on_reregistration(zk_client_factory):
    observer = zk_client_factory()
    client = zk_client_factory()
    epoch1 = client.register_broker(broker(1))
    assert observer.get_all_brokers_with_epochs()[1][1] == epoch1
    client.close()
    wait_for(lambda: not observer.get_all_brokers())
    epoch2 = zk_client_factory().register_broker(broker(1))
    assert epoch2 > epoch1
    assert observer.get_all_brokers_with_epochs()[1][1] == epoch2


def test_generate_broker_id_above_reserved_max(zk_client_factory):
    a, b = zk_client_factory(), zk_client_factory()
    ids = [a.generate_broker_id(1000), b.generate_broker_id(1000), a.generate_broker_id(1000)]
    assert ids == [1001, 1002, 1003]


def test_controller_election(zk_client_factory):
    one, two, three = zk_client_factory(), zk_client_factory(), zk_client_factory()
    assert one.get_controller_id() is None and one.get_controller_epoch() is None
    epoch, version = one.register_controller_and_increment_epoch(1)
    assert (epoch, version) == (1, 1)
    assert three.get_controller_id() == 1 and three.get_controller_epoch() == (1, 1)
    with pytest.raises(ControllerMovedError):
        two.register_controller_and_increment_epoch(2)
    assert three.get_controller_epoch() == (1, 1)  # the loser did not bump the epoch

    one.close()
    wait_for(lambda: three.get_controller_id() is None)
    assert two.register_controller_and_increment_epoch(2) == (2, 2)
    assert three.get_controller_id() == 2

    two.delete_controller(epoch_zk_version=2)
    assert three.register_controller_and_increment_epoch(3) == (3, 3)
    with pytest.raises(ControllerMovedError):  # a deposed controller is fenced by the epoch version
        two.delete_controller(epoch_zk_version=2)
    assert three.get_controller_id() == 3


def test_concurrent_election_has_one_winner(zk_client_factory):
    clients = [zk_client_factory() for _ in range(5)]
    results: dict[int, object] = {}
    barrier = threading.Barrier(len(clients))

    def contend(broker_id: int, client: KafkaZkClient) -> None:
        barrier.wait()
        try:
            results[broker_id] = client.register_controller_and_increment_epoch(broker_id)
        except ControllerMovedError as e:
            results[broker_id] = e

    threads = [threading.Thread(target=contend, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in results.items() if isinstance(r, tuple)]
    assert len(winners) == 1 and results[winners[0]] == (1, 1)
    assert clients[0].get_controller_id() == winners[0]


def test_watch_controller(zk_client_factory):
    events: queue.Queue = queue.Queue()
    watcher, contender = zk_client_factory(), zk_client_factory()
    watcher.watch_controller(events.put)
    assert events.get(timeout=5) is None
    contender.register_controller_and_increment_epoch(7)
    assert next_event(events, lambda v: v is not None) == 7
    contender.close()
    assert next_event(events, lambda v: v is None) is None


def test_partition_state_updates_are_conditional(zk_client_factory):
    controller, other = zk_client_factory(), zk_client_factory()
    epoch, epoch_version = controller.register_controller_and_increment_epoch(1)
    states = {("t", 0): LeaderIsrAndControllerEpoch(1, 0, [1, 2], epoch),
              ("t", 1): LeaderIsrAndControllerEpoch(2, 0, [2, 1], epoch)}
    assert controller.create_partition_states(states) == {("t", 0): True, ("t", 1): True}
    assert controller.create_partition_states({("t", 0): states[("t", 0)]}) == {("t", 0): False}
    read = other.get_partition_states([("t", 0), ("t", 1), ("t", 2)])
    assert read == {("t", 0): (states[("t", 0)], 0), ("t", 1): (states[("t", 1)], 0)}

    shrunk = LeaderIsrAndControllerEpoch(1, 0, [1], epoch)
    assert controller.update_partition_state("t", 0, shrunk, expected_version=0) == 1
    # a writer holding the old version is refused and must re-read
    assert other.update_partition_state("t", 0, LeaderIsrAndControllerEpoch(2, 1, [2], epoch), 0) is None
    assert other.get_partition_states([("t", 0)])[("t", 0)] == (shrunk, 1)
    # writes fenced by the controller epoch's znode version
    assert controller.update_partition_state("t", 0, shrunk, 1, epoch_zk_version=epoch_version) == 2
    with pytest.raises(ControllerMovedError):
        controller.update_partition_state("t", 0, shrunk, 2, epoch_zk_version=epoch_version - 1)
    with pytest.raises(ControllerMovedError):
        controller.create_partition_states({("t", 5): shrunk}, epoch_zk_version=epoch_version + 1)


def test_pipelined_partition_state_updates(zk_client_factory):
    controller = zk_client_factory()
    epoch, epoch_version = controller.register_controller_and_increment_epoch(1)
    states = {("t", p): LeaderIsrAndControllerEpoch(1, 0, [1, 2], epoch) for p in range(50)}
    controller.create_partition_states(states)
    moved = {tp: LeaderIsrAndControllerEpoch(2, 1, [2], epoch) for tp in states}
    stale = {("t", 3), ("t", 7)}
    controller.update_partition_state("t", 3, states[("t", 3)], 0)  # someone wrote these two meanwhile
    controller.update_partition_state("t", 7, states[("t", 7)], 0)
    updates = {tp: (state, 0) for tp, state in moved.items()}
    updates[("t", 99)] = (moved[("t", 0)], 0)  # no such znode
    written = controller.update_partition_states(updates)
    assert {tp for tp, v in written.items() if v is None} == stale | {("t", 99)}
    assert all(v == 1 for tp, v in written.items() if v is not None)
    # fenced on the controller epoch, at the versions just written
    again = {tp: (state, 1) for tp, state in moved.items()}
    assert set(controller.update_partition_states(again, epoch_zk_version=epoch_version).values()) == {2}
    read = controller.get_partition_states(list(states))
    assert read[("t", 0)] == (moved[("t", 0)], 2) and read[("t", 3)] == (moved[("t", 3)], 2)
    with pytest.raises(ControllerMovedError):
        controller.update_partition_states({("t", 0): (moved[("t", 0)], 2)}, epoch_zk_version=epoch_version + 1)
    assert controller.get_partition_states([("t", 0)])[("t", 0)][1] == 2  # the fenced write did nothing


def test_thousands_of_partition_states_in_bulk(zk_client_factory):
    """Creates, conditional writes and reads of more partitions than one multi or multiRead carries: a conflict
    fails only its own partition, a missing znode only its own read, and the epoch fence holds for every chunk."""
    controller, other = zk_client_factory(), zk_client_factory()
    epoch, epoch_version = controller.register_controller_and_increment_epoch(1)
    count = 1300
    states = {(f"t{p % 3}", p): LeaderIsrAndControllerEpoch(1, 0, [1, 2], epoch) for p in range(count)}
    early = {("t0", 0), ("t1", 700)}  # another writer got there first: created, not ours
    assert other.create_partition_states({tp: states[tp] for tp in early}) == {tp: True for tp in early}
    created = controller.create_partition_states(states, epoch_zk_version=epoch_version)
    assert {tp for tp, made in created.items() if not made} == early and len(created) == count
    stale = {("t2", 5), ("t0", 600), ("t2", 1298)}
    for tp in stale:
        other.update_partition_state(*tp, states[tp], 0)
    moved = LeaderIsrAndControllerEpoch(2, 1, [2], epoch)
    written = controller.update_partition_states({tp: (moved, 0) for tp in states}, epoch_zk_version=epoch_version)
    assert {tp for tp, version in written.items() if version is None} == stale
    assert {version for version in written.values() if version is not None} == {1}
    read = other.get_partition_states(list(states) + [("t0", count + 1), ("nope", 0)])
    assert len(read) == count
    assert all(read[tp] == ((states[tp], 1) if tp in stale else (moved, 1)) for tp in states)
    with pytest.raises(ControllerMovedError):
        controller.update_partition_states({tp: (moved, 1) for tp in states}, epoch_zk_version=epoch_version + 1)
    assert other.get_partition_states([("t1", 1)])[("t1", 1)] == (moved, 1)


def test_topic_create_exists_delete(zk_client_factory):
    client, other = zk_client_factory(), zk_client_factory()
    client.create_top_level_paths()
    topic_id = uuid.uuid4()
    assignment = TopicAssignment({0: [1, 2], 1: [2, 1]}, topic_id)
    client.create_topic_assignment("orders", assignment, {"retention.ms": "1000"})
    with pytest.raises(TopicExistsError):
        other.create_topic_assignment("orders", TopicAssignment({0: [3]}), {})
    assert other.topic_exists("orders") and other.get_all_topics() == ["orders"]
    assert other.get_topic_assignments() == {"orders": assignment}
    assert other.get_topic_assignments(["orders", "missing"]) == {"orders": assignment}
    assert other.get_entity_config("topics", "orders") == {"retention.ms": "1000"}

    (read, version), = other.get_topic_assignments_with_versions(["orders"]).values()
    grown = TopicAssignment({0: [1, 2], 1: [2, 1], 2: [1, 2]}, topic_id)
    assert client.set_topic_assignment("orders", grown, version) == version + 1
    assert other.set_topic_assignment("orders", assignment, version) is None
    assert other.get_topic_assignments(["orders"])["orders"] == grown

    client.create_partition_states({("orders", 0): LeaderIsrAndControllerEpoch(1, 0, [1, 2], 1)})
    other.mark_topic_for_deletion(["orders", "ghost"])
    other.mark_topic_for_deletion(["orders"])  # marking twice is fine
    assert client.get_topics_marked_for_deletion() == ["ghost", "orders"]
    client.delete_topic_znodes("orders")
    assert not other.topic_exists("orders") and other.get_all_topics() == []
    assert other.get_entity_config("topics", "orders") == {}
    assert other.get_partition_states([("orders", 0)]) == {}
    assert other.get_topics_marked_for_deletion() == ["ghost"]
    client.delete_topic_znodes("ghost")  # nothing but the marker exists
    assert other.get_topics_marked_for_deletion() == []


def test_producer_id_blocks_are_unique_across_concurrent_clients(zk_client_factory):
    clients = [zk_client_factory(), zk_client_factory()]
    blocks = []
    lock = threading.Lock()

    def allocate(broker_id: int, client: KafkaZkClient) -> None:
        for _ in range(15):
            block = client.allocate_producer_id_block(broker_id)
            with lock:
                blocks.append(block)

    threads = [threading.Thread(target=allocate, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    starts = sorted(b.block_start for b in blocks)
    assert starts == [i * 1000 for i in range(30)]
    assert all(b.size == 1000 for b in blocks)
    assert {b.broker_id for b in blocks} == {0, 1}


def test_children_watch_sees_brokers_join_and_leave(zk_client_factory):
    events: queue.Queue = queue.Queue()
    watcher = zk_client_factory()
    watcher.create_top_level_paths()
    watcher.watch_children("/brokers/ids", events.put)
    assert events.get(timeout=5) == []
    one, two = zk_client_factory(), zk_client_factory()
    one.register_broker(broker(1))
    assert next_event(events, lambda c: c == ["1"])
    two.register_broker(broker(2))
    assert next_event(events, lambda c: c == ["1", "2"])
    one.close()
    assert next_event(events, lambda c: c == ["2"])


def test_watch_data_sees_create_change_delete(zk_client_factory):
    events: queue.Queue = queue.Queue()
    watcher, writer = zk_client_factory(), zk_client_factory()
    watcher.watch_data("/admin/reassign_partitions", lambda data, version: events.put((data, version)))
    assert events.get(timeout=5) == (None, None)
    writer.set_entity_config("brokers", "1", {"a": "b"})  # unrelated write: no event
    writer._zk.create("/admin/reassign_partitions", b"x", makepath=True)
    assert next_event(events, lambda e: e[0] is not None) == (b"x", 0)
    writer._zk.delete("/admin/reassign_partitions")
    assert next_event(events, lambda e: e[0] is None) == (None, None)


def test_unwatch_stops_children_and_data_callbacks(zk_client_factory):
    children: queue.Queue = queue.Queue()
    data: queue.Queue = queue.Queue()
    watcher, writer = zk_client_factory(), zk_client_factory()
    watcher.create_top_level_paths()
    unwatch_children = watcher.watch_children("/admin/delete_topics", children.put)
    unwatch_data = watcher.watch_data("/admin/x", lambda d, v: data.put(d))
    assert children.get(timeout=5) == [] and data.get(timeout=5) is None
    writer.mark_topic_for_deletion(["a"])
    assert next_event(children, lambda c: c == ["a"])
    unwatch_children()
    unwatch_data()
    writer.mark_topic_for_deletion(["b"])
    writer._zk.create("/admin/x", b"1")
    # a later watch on the same paths still sees the changes, the cancelled ones never do
    later: queue.Queue = queue.Queue()
    watcher.watch_children("/admin/delete_topics", later.put)
    assert next_event(later, lambda c: c == ["a", "b"])
    writer.delete_topic_deletion_markers(["a", "b"])
    assert next_event(later, lambda c: c == []) == []
    assert children.empty() and data.empty()


def test_fenced_topic_deletion(zk_client_factory):
    controller, other = zk_client_factory(), zk_client_factory()
    controller.create_top_level_paths()
    _, version = controller.register_controller_and_increment_epoch(1)
    controller.create_topic_assignment("t", TopicAssignment({0: [1]}), {})
    controller.mark_topic_for_deletion(["t", "u"])
    with pytest.raises(ControllerMovedError):
        controller.delete_topic_deletion_markers(["u"], epoch_zk_version=version + 1)
    controller.delete_topic_deletion_markers(["u"], epoch_zk_version=version)
    assert other.get_topics_marked_for_deletion() == ["t"]
    controller.close()
    other.register_controller_and_increment_epoch(2)  # a new controller bumps the epoch znode
    zombie = zk_client_factory()
    with pytest.raises(ControllerMovedError):
        zombie.delete_topic_znodes("t", epoch_zk_version=version)
    assert other.topic_exists("t")
    other.delete_topic_znodes("t", epoch_zk_version=version + 1)
    assert not other.topic_exists("t") and other.get_topics_marked_for_deletion() == []


def test_isr_change_notifications(zk_client_factory):
    broker_client, controller = zk_client_factory(), zk_client_factory()
    events: queue.Queue = queue.Queue()
    controller.watch_children("/isr_change_notification", events.put)
    assert events.get(timeout=5) == []
    first = broker_client.propagate_isr_changes([("t", 0), ("t", 1)])
    second = broker_client.propagate_isr_changes([("u", 3)])
    assert first.startswith("isr_change_") and second > first
    assert next_event(events, lambda c: len(c) == 2) == [first, second]
    assert controller.get_isr_change_notifications() == {first: [("t", 0), ("t", 1)], second: [("u", 3)]}
    controller.delete_isr_change_notifications([first])
    assert list(controller.get_isr_change_notifications()) == [second]
    controller.delete_isr_change_notifications()
    assert controller.get_isr_change_notifications() == {}


def test_entity_config_and_change_notifications(zk_client_factory):
    admin, broker_client = zk_client_factory(), zk_client_factory()
    assert broker_client.get_entity_config("topics", "t") == {}
    admin.set_entity_config("topics", "t", {"cleanup.policy": "compact", "segment.ms": 100})
    admin.set_entity_config("brokers", "1", {"log.cleaner.threads": "2"})
    assert broker_client.get_entity_config("topics", "t") == {"cleanup.policy": "compact", "segment.ms": "100"}
    changes = broker_client.get_config_change_notifications()
    assert list(changes.values()) == [("topics", "t"), ("brokers", "1")]
    assert all(name.startswith("config_change_") for name in changes)


def test_session_events_reach_the_callback(zk_chroot):
    events: queue.Queue = queue.Queue()
    client = KafkaZkClient(zk_chroot, on_event=lambda kind, payload: events.put((kind, payload)))
    client.start()
    try:
        assert events.get(timeout=5) == ("session", "connected")
        assert client.session_id
    finally:
        client.close()
    assert events.empty()  # closing on purpose is not reported as an expiry


def test_local_zookeeper_without_an_installation_says_how_to_install(tmp_path, monkeypatch):
    from odradek.tools import local_zookeeper
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    monkeypatch.setattr(local_zookeeper, "DEBIAN_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(local_zookeeper.ZooKeeperNotFoundError) as raised:
        local_zookeeper.LocalZooKeeper(tmp_path).start()
    assert "sudo apt-get update && sudo apt-get install -y zookeeper" in str(raised.value)
    assert "ZOOKEEPER_HOME" in str(raised.value)


def test_local_zookeeper_answers_four_letter_words(zookeeper):
    assert zookeeper.running and "Mode: standalone" in zookeeper.srvr()

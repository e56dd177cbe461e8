"""Admin calls that outlive the broker they were talking to, as Kafka's AdminClient's do (clients/admin/calls.py):
a paused broker's calls go on at another, controller and group calls follow the new controller and
coordinator after a SIGKILL, a call to one broker waits for that broker, and a call no broker answers
ends at its deadline naming why. Real brokers on a real ZooKeeper (6 s sessions, TEST_BROKER_OVERRIDES)."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from odradek.clients.admin.client import (
    Admin, AdminTimeoutError, ConfigResource, ConfigResourceType, NewPartitions, NewTopic,
)
from odradek.clients.types import TopicPartition
from tests.conftest import module_cluster
from tests.integration.helpers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("admin-failover"), 3)


def address(cluster, broker_id: int) -> str:
    broker = cluster.brokers[broker_id]
    return f"{broker.host}:{broker.port}"


def all_registered(admin) -> bool:
    return len(admin.describe_cluster().brokers) == 3


def test_calls_to_any_broker_go_on_at_another_when_the_one_in_use_stops_answering(cluster):
    with Admin(cluster.bootstrap_servers) as setup:
        controller = setup.describe_cluster().controller_id
        setup.create_topics([NewTopic("failover-any", 1, 3, topic_configs={"retention.ms": "4321"})])
        paused = next(b for b in range(3) if b != controller)  # the controller stays: no failover meanwhile
    # Its only connection is to ``paused`` (the bootstrap server): every any-broker call goes there first.
    with Admin(address(cluster, paused), request_timeout_ms=2000, default_api_timeout_ms=30000) as admin:
        assert len(admin.describe_cluster().brokers) == 3
        cluster.kill_broker(paused, signal.SIGSTOP)
        try:
            started = time.monotonic()
            described = admin.describe_cluster()  # no answer in 2 s: the connection is dropped, another asked
            took = time.monotonic() - started
            assert 2.0 <= took < 30, took
            assert described.controller_id == controller
            assert "failover-any" in admin.list_topics()
            resource = ConfigResource(ConfigResourceType.TOPIC, "failover-any")
            assert admin.describe_configs([resource])[resource]["retention.ms"].value == "4321"
            [topic] = admin.describe_topics(["failover-any"])
            assert len(topic.partitions[0].replicas) == 3
        finally:
            cluster.kill_broker(paused, signal.SIGCONT)
        wait_until(lambda: all_registered(admin), what="the paused broker back in the cluster")


def test_controller_calls_follow_the_new_controller_after_the_old_one_is_killed(cluster):
    with Admin(cluster.bootstrap_servers) as admin:
        controller = admin.describe_cluster().controller_id
        assert admin.create_topics([NewTopic("before-the-kill", 1, 3)]) == {"before-the-kill": None}
        cluster.kill_broker(controller)  # SIGKILL: its registration lasts until its ZooKeeper session expires
        try:
            # The controller's connection is gone; tries go on (looking the controller up again) until a
            # new one is elected and known, well within the 60 s default deadline.
            assert admin.create_topics([NewTopic("after-the-kill", 2, 2)]) == {"after-the-kill": None}
            assert admin.create_partitions({"after-the-kill": NewPartitions(3)}) == {"after-the-kill": None}
            wait_until(lambda: admin.describe_cluster().controller_id not in (controller, -1),
                       what="the new controller in the metadata")
            created = wait_until(lambda: admin.describe_topics(["after-the-kill"]), what="the new topic described")
            assert all(controller not in p.replicas for p in created[0].partitions)  # placed on live brokers
        finally:
            cluster.start_broker(controller)
        wait_until(lambda: all_registered(admin), what="the killed controller back in the cluster")


def test_group_calls_find_the_new_coordinator_after_the_old_one_is_killed(cluster):
    group, tp = "failover-group", TopicPartition("failover-group-topic", 0)
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(tp.topic, 1, 3)])
        wait_until(lambda: admin.describe_topics([tp.topic])[0].partitions[0].leader >= 0, what="a leader")
        assert admin.alter_consumer_group_offsets(group, {tp: 42}) == {tp: None}  # a group with no members
        coordinator = admin.find_coordinator(group).node_id
        cluster.kill_broker(coordinator)
        try:
            committed = admin.list_consumer_group_offsets(group)  # at the new coordinator, once it has loaded
            assert {p: o.offset for p, o in committed.items()} == {tp: 42}
            assert admin.find_coordinator(group).node_id != coordinator
            [described] = admin.describe_consumer_groups([group])
            assert described.state == "Empty" and described.coordinator.node_id != coordinator
        finally:
            cluster.start_broker(coordinator)
        wait_until(lambda: all_registered(admin), what="the killed coordinator back in the cluster")


def test_calls_to_one_broker_wait_for_that_broker(cluster):
    with Admin(cluster.bootstrap_servers) as admin:
        controller = admin.describe_cluster().controller_id
        target = next(b for b in range(3) if b != controller)
        resource = ConfigResource(ConfigResourceType.BROKER, str(target))
        cluster.kill_broker(target)
        with ThreadPoolExecutor(2) as pool:
            # No other broker may answer for it: both calls keep trying ``target`` until it is back.
            configs = pool.submit(admin.describe_configs, [resource])
            log_dirs = pool.submit(admin.describe_log_dirs, None, [target])
            cluster.start_broker(target)
            entries = configs.result(timeout=120)[resource]
            dirs = log_dirs.result(timeout=120)
        assert entries["broker.id"].value == str(target)
        assert list(dirs) == [target] and str(cluster.brokers[target].log_dirs) in dirs[target]


def test_a_call_no_broker_answers_fails_at_its_deadline_naming_the_cause(odradek_cluster_factory):
    single = odradek_cluster_factory(1)
    port = single.brokers[0].port
    with Admin(single.bootstrap_servers, request_timeout_ms=1000, default_api_timeout_ms=3000) as admin:
        admin.describe_cluster()
        single.kill_broker(0, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(AdminTimeoutError) as paused:
                admin.describe_cluster()
            took = time.monotonic() - started
        finally:
            single.kill_broker(0, signal.SIGCONT)
        assert 2.8 <= took < 10, took
        text = str(paused.value)
        assert "describeCluster timed out after" in text and "deadline of 3000 ms passed" in text, text
        assert f"last error: TimeoutError: api key 60 v0 to 127.0.0.1:{port} got no response within 1.0 s" in text
        assert isinstance(paused.value.__cause__, TimeoutError)

        single.kill_broker(0)  # SIGKILL: now every try is refused
        started = time.monotonic()
        with pytest.raises(AdminTimeoutError) as killed:
            admin.create_topics([NewTopic("never", 1, 1)])
        took = time.monotonic() - started
        assert 2.8 <= took < 10, took
        text = str(killed.value)
        assert "createTopics timed out after" in text and f"cannot connect to 127.0.0.1:{port}" in text, text
        assert isinstance(killed.value.__cause__, ConnectionError)

"""Partition reassignment with real ZooKeeper and broker processes (issue 8, seed 000's walkthroughs).

- every partition of a topic moves to other brokers while an acks=all idempotent producer (confluent-kafka)
  keeps writing: every acknowledged record is read back exactly once, ``--verify`` says complete, the old
  brokers deleted their replicas;
- a reassignment that raises the replication factor, then ``--list`` and ``--cancel`` of one that cannot
  finish (its new broker is SIGSTOPped), which reverts to the original replicas;
- a controller SIGKILLed mid-reassignment (the new replica's broker SIGSTOPped so it cannot finish): the new
  controller resumes it from the topic znode and finishes it once the broker runs again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time


from odradek.clients.admin.client import Admin, NewTopic
from odradek.clients.types import TopicPartition
from tests.integration.helpers import IdempotentProducerLoad
from tests.integration.log_inspection import duplicates_on_disk
from tests.integration.helpers import partition_dirs, wait_until

WAIT_S = 90.0  # upper bound for the cluster to converge; never a speed assertion


def tool(cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """odradek-reassign-partitions as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "odradek.tools.reassign_partitions",
                           "--bootstrap-server", cluster.bootstrap_servers, *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def write_plan(tmp_path, name: str, plan: dict[tuple[str, int], list[int]]):
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(plan.items())]}))
    return path


def states(zk, topic: str, partitions: int):
    return {p: s for (_, p), (s, _) in zk.get_partition_states([(topic, p) for p in range(partitions)]).items()}


def assignment_is(zk, topic: str, wanted: dict[int, list[int]]) -> bool:
    """The topic znode holds exactly ``wanted`` with no reassignment left, and each target is in the ISR."""
    assignment = zk.get_topic_assignments([topic])[topic]
    if assignment.partitions != wanted or assignment.adding_replicas or assignment.removing_replicas:
        return False
    current = states(zk, topic, len(wanted))
    return all(set(wanted[p]) <= set(current[p].isr) and current[p].leader in wanted[p] for p in wanted)


def create_topic(cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments=assignment)], timeout_ms=30000)


def read_all(bootstrap: str, topic: str, partitions: int, where: bool = False) -> list:
    """Every record of the topic, read to the end of each partition (confluent-kafka's consumer)."""
    from confluent_kafka import Consumer, TopicPartition as CTP
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(CTP(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([CTP(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        positions = {p: 0 for p in range(partitions)}
        deadline = time.monotonic() + WAIT_S
        while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1.0):
                if msg.error() is None:
                    values.append((msg.value(), msg.partition(), msg.offset()) if where else msg.value())
                    positions[msg.partition()] = msg.offset() + 1
        assert all(positions[p] >= ends[p] for p in positions), (positions, ends)
        return values
    finally:
        consumer.close()


def test_all_partitions_move_to_other_brokers_under_idempotent_load(odradek_cluster_factory, zk_client_factory,
                                                                     tmp_path):
    cluster = odradek_cluster_factory(brokers=4, overrides={"min.insync.replicas": "1"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    topic, partitions = "moving", 8
    create_topic(cluster, topic, {p: [p % 2, 1 - p % 2] for p in range(partitions)})  # brokers 0 and 1
    target = {p: [2 + p % 2, 3 - p % 2] for p in range(partitions)}                    # brokers 2 and 3
    plan = write_plan(tmp_path, "plan.json", {(topic, p): r for p, r in target.items()})

    with IdempotentProducerLoad(cluster.bootstrap_servers, topic, partitions) as load:
        wait_until(lambda: len(load.acked) > 500, WAIT_S, "the producer to get going")
        started = tool(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert "Current partition replica assignment" in started.stdout
        assert f"Successfully started partition reassignments for {topic}-0" in started.stdout
        wait_until(lambda: assignment_is(zk, topic, target), WAIT_S, "every partition to reach brokers 2 and 3")
        acked_during = len(load.acked)
        wait_until(lambda: len(load.acked) > acked_during + 500, WAIT_S, "records acknowledged after the move")

    assert not load.failed, load.failed[:5]
    verify = tool(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert "Status of partition reassignment:" in verify.stdout
    for p in range(partitions):
        assert f"Reassignment of partition {topic}-{p} is complete." in verify.stdout
    assert zk.get_data("/admin/reassign_partitions") == (None, None)
    values = read_all(cluster.bootstrap_servers, topic, partitions)
    # The broker's part of exactly-once: a retry in the same producer epoch is never appended twice. A
    # copy under a bumped epoch is librdkafka's re-send after a leader move (see log_inspection.py).
    same_epoch, cross_epoch = duplicates_on_disk(cluster, topic, partitions)
    assert not same_epoch, "a retried batch was appended twice:\n" + "\n".join(same_epoch[:20])
    if cross_epoch:
        print(f"{len(cross_epoch)} records re-sent by librdkafka under a bumped epoch:\n" + "\n".join(cross_epoch[:20]))
    assert load.acked <= set(values), f"{len(load.acked - set(values))} acknowledged records lost"
    # the old replicas were deleted (StopReplica with delete)
    for broker_id in (0, 1):
        wait_until(lambda: not partition_dirs(cluster.brokers[broker_id], topic), WAIT_S,
                   f"broker {broker_id} to delete its replicas")


def test_replication_factor_change_list_and_cancel(odradek_cluster_factory, zk_client_factory, tmp_path):
    # a long session: the SIGSTOPped broker must stay registered (live) while the tool runs a few times
    cluster = odradek_cluster_factory(brokers=4, overrides={"zookeeper.session.timeout.ms": "30000"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    create_topic(cluster, "grow", {0: [0, 1], 1: [1, 2]})
    create_topic(cluster, "stuck", {0: [0, 1]})
    with cluster.client() as client:
        for p in (0, 1):
            assert client.produce("grow", p, [(None, b"x")], acks=-1).error_code == 0
        assert client.produce("stuck", 0, [(None, b"y")], acks=-1).error_code == 0

    grow = write_plan(tmp_path, "grow.json", {("grow", 0): [0, 1, 3], ("grow", 1): [2]})  # RF 2 -> 3 and 2 -> 1
    tool(cluster, "--execute", "--reassignment-json-file", str(grow))
    wait_until(lambda: assignment_is(zk, "grow", {0: [0, 1, 3], 1: [2]}), WAIT_S, "RF 3 for grow-0, RF 1 for grow-1")
    assert "is complete" in tool(cluster, "--verify", "--reassignment-json-file", str(grow)).stdout

    # --generate: the current assignment and a proposal on the brokers given, same partitions and RF
    topics = tmp_path / "topics.json"
    topics.write_text('{"version": 1, "topics": [{"topic": "grow"}]}')
    generated = tool(cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,3")
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment" and lines[3] == "Proposed partition reassignment configuration"
    assert json.loads(lines[1])["partitions"][0] == {"topic": "grow", "partition": 0, "replicas": [0, 1, 3],
                                                     "log_dirs": ["any", "any", "any"]}
    proposal = json.loads(lines[4])["partitions"]
    assert [(e["partition"], len(e["replicas"])) for e in proposal] == [(0, 3), (1, 3)]  # RF of the first partition
    assert all(set(e["replicas"]) <= {1, 2, 3} for e in proposal)

    # the legacy way: /admin/reassign_partitions, deleted by the controller once done
    zk.create_partition_reassignment({("grow", 1): [3]})
    wait_until(lambda: assignment_is(zk, "grow", {0: [0, 1, 3], 1: [3]}), WAIT_S, "grow-1 moved through ZooKeeper")
    wait_until(lambda: zk.get_data("/admin/reassign_partitions") == (None, None), WAIT_S, "the request deleted")

    # a new replica cannot catch up while its broker is stopped: the reassignment stays in progress, then
    # is cancelled. Not the controller's broker: the tool's requests go to the controller.
    target = next(b for b in (3, 2) if b != zk.get_controller_id())
    cluster.brokers[target].process.send(signal.SIGSTOP)
    try:
        stuck = write_plan(tmp_path, "stuck.json", {("stuck", 0): [0, target]})
        tool(cluster, "--execute", "--reassignment-json-file", str(stuck))
        listed = tool(cluster, "--list").stdout
        assert f"stuck-0: replicas: 0,{target},1. adding: {target}. removing: 1." in listed, listed
        assert "is still in progress" in tool(cluster, "--verify", "--reassignment-json-file", str(stuck)).stdout
        cancelled = tool(cluster, "--cancel", "--reassignment-json-file", str(stuck))
        assert "Successfully cancelled partition reassignment for: stuck-0" in cancelled.stdout
        wait_until(lambda: assignment_is(zk, "stuck", {0: [0, 1]}), WAIT_S, "stuck-0 back on brokers 0 and 1")
        assert "No partition reassignments found." in tool(cluster, "--list").stdout
    finally:
        cluster.brokers[target].process.send(signal.SIGCONT)


def test_new_controller_finishes_a_reassignment_after_sigkill(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=4)
    zk = zk_client_factory(cluster.zookeeper_connect)
    controller = wait_until(lambda: (zk.get_controller_id(),) if zk.get_controller_id() is not None else None,
                            WAIT_S, "a controller")[0]
    others = [b for b in range(4) if b != controller]
    source, (new_replica, third) = others[:1], others[1:]
    topic = "failover"
    create_topic(cluster, topic, {0: [controller, source[0]], 1: [source[0], controller]})
    with cluster.client() as client:
        for p in (0, 1):
            assert client.produce(topic, p, [(None, b"before")], acks=-1).error_code == 0
    target = {0: [source[0], new_replica], 1: [new_replica, third]}
    cluster.brokers[new_replica].process.send(signal.SIGSTOP)
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            results = admin.alter_partition_reassignments({TopicPartition(topic, p): r for p, r in target.items()})
            assert results == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
        # in progress, written to the topic znode (what a new controller resumes from)
        written = zk.get_topic_assignments([topic])[topic]
        assert written.adding_replicas == {0: [new_replica], 1: [new_replica, third]}
        cluster.kill_broker(controller, signal.SIGKILL)
        wait_until(lambda: zk.get_controller_id() not in (None, controller), WAIT_S, "a new controller")
    finally:
        cluster.brokers[new_replica].process.send(signal.SIGCONT)
    wait_until(lambda: assignment_is(zk, topic, target), WAIT_S, "the new controller to finish the reassignment")
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.list_partition_reassignments() == {}
    with cluster.client(retries=8) as client:
        for p in (0, 1):
            leader_fetch = client.fetch(topic, p, 0, max_wait_ms=100)
            assert [r.value for r in leader_fetch.records][:1] == [b"before"]

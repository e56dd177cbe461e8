"""Replication throttling with real brokers: a reassignment adding a replica under ``--throttle``.

Three brokers; a topic on brokers 0 and 1 holding ~6 MB gets broker 2 as a new replica through
odradek-reassign-partitions with ``--throttle 500000``. While the throttle holds, the new replica's log on
disk stays well below the leader's (unthrottled on localhost the copy takes a fraction of a second); an
acks=-1 produce meanwhile succeeds (the ISR follower is not throttled). Raising the rate by re-running
``--execute --additional --throttle`` lets the move complete, and ``--verify`` then clears the broker and
topic throttle configs. Sizes are asserted, never speeds; the observed copy rate is printed.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from odradek.clients.simple_client import SimpleClient
from tests.integration.helpers import console_tool, run, wait_until

pytestmark = pytest.mark.timeout(300)

WAIT_S = 120.0  # upper bound for the cluster to converge; never a speed assertion
TOPIC = "throttled"
THROTTLE = 500_000  # bytes/s
BATCHES, RECORDS_PER_BATCH, VALUE_BYTES = 30, 20, 10_000  # ~6 MB, incompressible


def log_bytes(cluster, broker_id: int) -> int:
    return sum(f.stat().st_size for f in cluster.brokers[broker_id].log_dirs.glob(f"{TOPIC}-0/*.log"))


def reassign(cluster, *args: str) -> str:
    return console_tool("reassign-partitions", "--bootstrap-server", cluster.bootstrap_servers, *args).stdout


def moved(zk) -> bool:
    assignment = zk.get_topic_assignments([TOPIC])[TOPIC]
    if assignment.partitions != {0: [0, 1, 2]} or assignment.adding_replicas:
        return False
    [(state, _)] = zk.get_partition_states([(TOPIC, 0)]).values()
    return 2 in state.isr


async def fill(servers: str) -> None:
    async with SimpleClient(servers) as client:
        assert (await client.create_topics({TOPIC: {0: [0, 1]}}))[TOPIC] == 0
        await client.wait_for_leaders(TOPIC)
        for _ in range(BATCHES):
            result = await client.produce(TOPIC, 0, [(None, os.urandom(VALUE_BYTES)) for _ in range(RECORDS_PER_BATCH)],
                                          acks=-1)
            assert result.error_code == 0


async def produce_one(servers: str) -> int:
    async with SimpleClient(servers) as client:
        return (await client.produce(TOPIC, 0, [(None, b"during the throttle")], acks=-1)).error_code


def test_throttled_reassignment_copies_slowly_then_completes(odradek_cluster_factory, zk_client_factory, tmp_path):
    # Smaller follower fetches than the default 1 MB make the throttle's steps finer (Kafka advises
    # throttles above 1 MB/s for accuracy for the same reason).
    cluster = odradek_cluster_factory(brokers=3, overrides={"replica.fetch.max.bytes": "131072"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    run(fill(cluster.bootstrap_servers))
    leader = zk.get_partition_states([(TOPIC, 0)])[(TOPIC, 0)][0].leader
    total = wait_until(lambda: log_bytes(cluster, leader) if log_bytes(cluster, leader) > 5_000_000 else None,
                       WAIT_S, "the leader's log to hold the records")

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0,
                                                              "replicas": [0, 1, 2]}]}))
    started = reassign(cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", str(THROTTLE))
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in started
    assert zk.get_entity_config("brokers", "2")["follower.replication.throttled.rate"] == str(THROTTLE)
    assert zk.get_entity_config("topics", TOPIC)["follower.replication.throttled.replicas"] == "0:2"

    wait_until(lambda: log_bytes(cluster, 2) > 0, WAIT_S, "the new replica to start copying")
    first_at, first_size = time.monotonic(), log_bytes(cluster, 2)
    time.sleep(4)  # unthrottled, the whole copy takes well under a second on localhost
    held_at, held_size = time.monotonic(), log_bytes(cluster, 2)
    print(f"\nthrottle {THROTTLE} B/s: new replica at {held_size} of {total} bytes; observed copy rate "
          f"{(held_size - first_size) / (held_at - first_at):,.0f} B/s")
    assert held_size < 0.7 * total, f"the throttled copy already holds {held_size} of {total} bytes"
    assert not moved(zk)
    assert run(produce_one(cluster.bootstrap_servers)) == 0  # the ISR follower keeps up: acks=-1 still works

    # A bigger rate, as Kafka's tool does it: the same reassignment again with --additional --throttle.
    raised = reassign(cluster, "--execute", "--additional", "--reassignment-json-file", str(plan),
                      "--throttle", "1000000000")
    assert "The inter-broker throttle limit was set to 1000000000 B/s" in raised
    wait_until(lambda: moved(zk), WAIT_S, "the new replica to catch up and join the ISR")
    assert log_bytes(cluster, 2) >= total

    verify = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert f"Reassignment of partition {TOPIC}-0 is complete." in verify
    assert "Clearing broker-level throttles on brokers 0,1,2" in verify
    for broker in ("0", "1", "2"):
        config = zk.get_entity_config("brokers", broker)
        assert "leader.replication.throttled.rate" not in config and "follower.replication.throttled.rate" not in config
    topic_config = zk.get_entity_config("topics", TOPIC)
    assert "leader.replication.throttled.replicas" not in topic_config
    assert "follower.replication.throttled.replicas" not in topic_config


def test_raising_a_throttled_rate_dynamically_lets_the_copy_finish(odradek_cluster_factory, zk_client_factory):
    """The throttle set by hand (AlterConfigs on the follower broker and the topic), as an operator does
    without the tool: only the follower side is throttled here."""
    from odradek.clients.admin.client import Admin, AlterConfigOp, ConfigResource, ConfigResourceType
    cluster = odradek_cluster_factory(brokers=3, overrides={"replica.fetch.max.bytes": "131072"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    run(fill(cluster.bootstrap_servers))
    leader = zk.get_partition_states([(TOPIC, 0)])[(TOPIC, 0)][0].leader
    total = log_bytes(cluster, leader)
    with Admin(cluster.bootstrap_servers) as admin:
        admin.incremental_alter_configs({
            ConfigResource(ConfigResourceType.BROKER, "2"): [AlterConfigOp("follower.replication.throttled.rate",
                                                                           str(THROTTLE))],
            ConfigResource(ConfigResourceType.TOPIC, TOPIC): [AlterConfigOp("follower.replication.throttled.replicas",
                                                                            "*")]})
        admin.alter_partition_reassignments({_tp(): [0, 1, 2]})
        wait_until(lambda: log_bytes(cluster, 2) > 0, WAIT_S, "the new replica to start copying")
        time.sleep(4)
        held = log_bytes(cluster, 2)
        print(f"\nfollower-only throttle {THROTTLE} B/s: new replica at {held} of {total} bytes after ~4 s")
        assert held < 0.7 * total and not moved(zk)
        admin.incremental_alter_configs({ConfigResource(ConfigResourceType.BROKER, "2"): [
            AlterConfigOp("follower.replication.throttled.rate", "1000000000")]})
        wait_until(lambda: moved(zk), WAIT_S, "the new replica to catch up once the rate is raised")


def _tp():
    from odradek.clients.types import TopicPartition
    return TopicPartition(TOPIC, 0)

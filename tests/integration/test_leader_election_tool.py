"""Leader elections with real ZooKeeper and broker processes (issue 8, seed 000's walkthrough).

- An 8-partition RF-3 topic on 4 brokers (auto rebalance off): a broker stopped and restarted leads nothing
  until ``odradek-leader-election --election-type preferred --all-topic-partitions`` moves every partition
  back to its preferred replica; asked again, the tool says the valid replica is already elected.
- The same through confluent-kafka's ``AdminClient.elect_leaders`` and kafka-python's ``KafkaAdminClient``.
- Unclean election: a partition whose only ISR member is down gets no leader from the restarted out-of-sync
  replica (unclean.leader.election.enable=false) until the tool asks for an unclean election.
- The tool's flag checks (no cluster needed).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from odradek.clients.admin.client import Admin, ElectionType, NewTopic
from odradek.tools.leader_election import main as tool_main
from odradek.tools.leader_election import parse_partitions_json
from odradek.tools.common import UsageError
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import ElectionNotNeededError  # type: ignore[attr-defined]
from tests.integration.helpers import wait_until

WAIT_S = 90.0  # upper bound for the cluster to converge; never a speed assertion
NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}


def tool(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odradek.tools.leader_election",
                           "--bootstrap-server", cluster.bootstrap_servers, *args],
                          capture_output=True, text=True, timeout=120)


def leaders(zk, topic: str, partitions: int) -> dict[int, int]:
    return {p: s.leader for (_, p), (s, _) in zk.get_partition_states([(topic, p) for p in range(partitions)]).items()}


def preferred(zk, topic: str) -> dict[int, int]:
    return {p: replicas[0] for p, replicas in zk.get_topic_assignments([topic])[topic].partitions.items()}


def all_in_sync(cluster, topic: str, partitions: int, replicas: int) -> bool:
    """Every ISR full as the brokers' metadata shows it: what the controller knows (after the ISR change
    notifications), which is what its elections go by; an operator checks the same with --describe."""
    with Admin(cluster.bootstrap_servers) as admin:
        [description] = admin.describe_topics([topic])
    return len(description.partitions) == partitions and all(len(p.isr) == replicas for p in description.partitions)


def unbalance(cluster, zk, topic: str, partitions: int, broker_id: int) -> list[int]:
    """Stop and restart ``broker_id``; returns the partitions it prefers, led by others once it is back."""
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, 3)], timeout_ms=30000)
    wait_until(lambda: all_in_sync(cluster, topic, partitions, 3), WAIT_S, "every replica in sync")
    mine = sorted(p for p, b in preferred(zk, topic).items() if b == broker_id)
    assert mine, "the broker should be preferred leader of some partitions"
    cluster.stop_broker(broker_id)
    wait_until(lambda: all(leaders(zk, topic, partitions)[p] != broker_id for p in mine), WAIT_S,
               "leadership to move off the stopped broker")
    cluster.start_broker(broker_id)
    wait_until(lambda: all_in_sync(cluster, topic, partitions, 3), WAIT_S, "the restarted broker back in every ISR")
    return mine


def test_preferred_election_tool_rebalances_leaders(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=4, overrides=NO_AUTO_REBALANCE)
    zk = zk_client_factory(cluster.zookeeper_connect)
    topic, partitions = "walkthrough", 8
    mine = unbalance(cluster, zk, topic, partitions, 1)
    current = leaders(zk, topic, partitions)
    assert all(current[p] != 1 for p in mine), "without auto rebalance the restarted broker leads nothing"

    done = tool(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert done.returncode == 0, (done.stdout, done.stderr)
    moved = ", ".join(f"{topic}-{p}" for p in mine)
    assert f"Successfully completed leader election (PREFERRED) for partitions {moved}" in done.stdout, done.stdout
    assert leaders(zk, topic, partitions) == preferred(zk, topic)

    again = tool(cluster, "--election-type", "PREFERRED", "--topic", topic, "--partition", str(mine[0]))
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert again.stdout.strip() == f"Valid replica already elected for partitions {topic}-{mine[0]}"


def test_elect_leaders_through_confluent_and_kafka_python(odradek_cluster_factory, zk_client_factory):
    from confluent_kafka import TopicPartition as CTP
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import ElectionType as CElectionType
    from kafka.admin import KafkaAdminClient

    cluster = odradek_cluster_factory(brokers=4, overrides=NO_AUTO_REBALANCE)
    zk = zk_client_factory(cluster.zookeeper_connect)
    topic, partitions = "clients", 8
    mine = unbalance(cluster, zk, topic, partitions, 2)
    first, rest = mine[:1], mine[1:]

    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    results = confluent.elect_leaders(CElectionType.PREFERRED, [CTP(topic, p) for p in first]).result(60)
    assert {(tp.topic, tp.partition): error for tp, error in results.items()} == {(topic, first[0]): None}
    assert leaders(zk, topic, partitions)[first[0]] == 2

    if rest:
        kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            response = kafka_python.elect_leaders(0, {topic: rest})
        finally:
            kafka_python.close()
        codes = {(t.topic, p.partition_id): p.error_code for t in response.replica_election_results
                 for p in t.partition_result}
        assert set(codes.values()) == {0}, codes
    assert leaders(zk, topic, partitions) == preferred(zk, topic)

    with Admin(cluster.bootstrap_servers) as admin:  # ours: nothing left to elect
        answer = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, first[0])])
        assert isinstance(answer[TopicPartition(topic, first[0])], ElectionNotNeededError)
        assert admin.elect_leaders(ElectionType.PREFERRED) == {}


def test_unclean_election_elects_an_out_of_sync_replica(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=3, overrides={**NO_AUTO_REBALANCE,
                                                            "unclean.leader.election.enable": "false"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    topic = "lossy"
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [0, 1]})], timeout_ms=30000)
    with cluster.client() as client:
        assert client.produce(topic, 0, [(None, b"early")], acks=-1).error_code == 0
    cluster.stop_broker(1)  # the follower leaves the ISR ...
    wait_until(lambda: zk.get_partition_states([(topic, 0)])[(topic, 0)][0].isr == [0], WAIT_S, "ISR [0]")
    cluster.stop_broker(0)  # ... then the leader goes: nobody in sync is left
    wait_until(lambda: zk.get_partition_states([(topic, 0)])[(topic, 0)][0].leader == -1, WAIT_S, "no leader")
    cluster.start_broker(1)
    assert zk.get_partition_states([(topic, 0)])[(topic, 0)][0].leader == -1, "an unclean election happened by itself"

    preferred_try = tool(cluster, "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert preferred_try.returncode == 1
    assert f"Error completing leader election (PREFERRED) for partition: {topic}-0" in preferred_try.stdout

    done = tool(cluster, "--election-type", "unclean", "--topic", topic, "--partition", "0")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"Successfully completed leader election (UNCLEAN) for partitions {topic}-0" in done.stdout
    state = zk.get_partition_states([(topic, 0)])[(topic, 0)][0]
    assert (state.leader, state.isr) == (1, [1])
    with cluster.client(retries=8) as client:
        assert client.produce(topic, 0, [(None, b"after")], acks=-1).error_code == 0


@pytest.mark.parametrize("argv, message", [
    (["--all-topic-partitions"], "Missing required option(s): --bootstrap-server, --election-type"),
    (["--bootstrap-server", "h:1", "--election-type", "dirty", "--all-topic-partitions"],
     "--election-type: 'dirty' is not a valid election type; accepted: preferred, unclean"),
    (["--bootstrap-server", "h:1", "--election-type", "preferred"],
     "One and only one of the following options is required: --topic, --all-topic-partitions, --path-to-json-file"),
    (["--bootstrap-server", "h:1", "--election-type", "preferred", "--topic", "t", "--all-topic-partitions"],
     "Only one of the following options is required: --topic, --all-topic-partitions, --path-to-json-file"),
    (["--bootstrap-server", "h:1", "--election-type", "preferred", "--topic", "t"],
     "Missing required option(s): --partition"),
])
def test_usage_errors_are_one_line(argv, message, capsys):
    assert tool_main(argv) == 1
    assert capsys.readouterr().err.strip() == message


def test_partitions_json():
    assert parse_partitions_json('{"partitions": [{"topic": "a", "partition": 1}]}') == [TopicPartition("a", 1)]
    with pytest.raises(UsageError, match="duplicate partitions: a-1"):
        parse_partitions_json('{"partitions": [{"topic": "a", "partition": 1}, {"topic": "a", "partition": 1}]}')

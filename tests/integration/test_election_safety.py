"""Leader election safety with real broker processes (issue 4, "Verified by").

A topic with replication factor 3 on three brokers, broker 0 its preferred leader. The followers stop (one
SIGKILLed, one frozen with SIGSTOP past its ZooKeeper session), the leader drops them from the ISR and takes
more writes alone, then dies. Without unclean election a lagging follower that comes back never leads (the
partition stays leaderless) and nothing acknowledged is lost once the old leader is back; with
``unclean.leader.election.enable=true`` the lagging replica does lead, and the old leader's extra records
are truncated away so the replicas agree again. Also: acks=all with two of three replicas frozen.
"""

from __future__ import annotations

import signal

import pytest

from odradek.clients.cluster_metadata import PartitionInfo
from odradek.controller.zk_client import KafkaZkClient
from tests.integration.helpers import wait_until
from tests.integration.test_replication import log_bytes

TOPIC = "replicated"  # log_bytes' default topic
ASSIGNMENT = {0: [0, 1, 2]}  # broker 0 is the preferred, hence the first, leader
LAG_MS = 1500
OVERRIDES = {"replica.lag.time.max.ms": str(LAG_MS), "min.insync.replicas": "1", "replica.fetch.backoff.ms": "200"}
SESSION_S = 6.0  # tests/conftest.py's zookeeper.session.timeout.ms
WAIT_S = 60.0  # upper bound for the cluster to converge; never a speed assertion
LEADER_NOT_AVAILABLE = 5
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


def partition_state(zk: KafkaZkClient, topic: str = TOPIC):
    return zk.get_partition_states([(topic, 0)])[(topic, 0)][0]


def create_topic(cluster, topic: str = TOPIC, assignment=None, configs=None) -> None:
    with cluster.client() as client:
        assert client.create_topics({topic: assignment or ASSIGNMENT}, configs=configs) == {topic: 0}
        client.wait_for_leaders(topic, timeout=WAIT_S)


def produce(cluster, values: list[bytes], acks: int, retries: int = 8, timeout_ms: int = 10000) -> list[int]:
    """One batch per value to partition 0; the error code of each."""
    with cluster.client(retries=retries) as client:
        return [client.produce(TOPIC, 0, [(None, v)], acks=acks, timeout_ms=timeout_ms).error_code for v in values]


def read_all(cluster) -> list[bytes]:
    """Every record a consumer sees (below the high watermark), from offset 0."""
    with cluster.client(retries=8) as client:
        values, offset = [], 0
        while records := client.fetch(TOPIC, 0, offset, max_wait_ms=100).records:
            values += [r.value for r in records]
            offset = records[-1].offset + 1
        return values


def partition_metadata(cluster) -> PartitionInfo:
    with cluster.client() as client:
        return client.metadata([TOPIC]).partition(TOPIC, 0)


def controller_barrier(cluster, name: str) -> None:
    """Create a one-partition topic and wait for its leader: the controller handles events one at a time in
    order, so once this is done every event queued before it (a broker's start-up, say) has been handled."""
    create_topic(cluster, name, {0: [next(b.broker_id for b in cluster.brokers if b.alive())]})


def wait_replicas_identical(cluster, what: str) -> bytes:
    def identical():
        logs = [log_bytes(cluster, b) for b in range(3)]
        return logs[0] if logs[0] and logs[0] == logs[1] == logs[2] else None
    return wait_until(identical, WAIT_S, what)


def lose_leader_behind_lagging_followers(cluster, zk: KafkaZkClient, topic_configs=None
                                         ) -> tuple[list[bytes], list[bytes]]:
    """Leave broker 0 the only in-sync replica with records the others lack, kill it, and bring broker 2 (a
    lagging follower) back. Returns (records every replica had, records acknowledged by broker 0 alone)."""
    create_topic(cluster, configs=topic_configs)
    in_sync = [b"in-sync-%02d" % i for i in range(20)]
    assert produce(cluster, in_sync, acks=-1) == [0] * len(in_sync)
    assert partition_state(zk).leader == 0 and sorted(partition_state(zk).isr) == [0, 1, 2]

    cluster.kill_broker(1, signal.SIGKILL)
    cluster.kill_broker(2, signal.SIGSTOP)
    wait_until(lambda: partition_state(zk).isr == [0], WAIT_S, "the leader to shrink the ISR to itself")
    leader_only = [b"leader-only-%02d" % i for i in range(20)]
    assert produce(cluster, leader_only, acks=1) == [0] * len(leader_only)
    # the frozen follower's session expires, so it comes back as a new incarnation of broker 2
    wait_until(lambda: not {1, 2} & set(zk.get_all_brokers()), WAIT_S, "the stopped brokers' sessions to end")

    cluster.kill_broker(0, signal.SIGKILL)
    cluster.kill_broker(2, signal.SIGCONT)
    wait_until(lambda: 2 in zk.get_all_brokers() and 0 not in zk.get_all_brokers() and zk.get_controller_id() == 2,
               WAIT_S, "broker 2 re-registered and the only controller candidate elected")
    return in_sync, leader_only


def test_lagging_replica_never_leads_without_unclean_election(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=3, overrides=OVERRIDES)
    zk = zk_client_factory(cluster.zookeeper_connect)
    in_sync, leader_only = lose_leader_behind_lagging_followers(cluster, zk)

    # Broker 2 is live and controller, but out of the ISR: the partition stays offline (Kafka's
    # OfflinePartitionLeaderElectionStrategy without unclean election), its last in-sync replica remembered.
    for returning in (None, 1):  # then the other lagging follower comes back too: still no leader
        if returning is not None:
            cluster.start_broker(returning)
        controller_barrier(cluster, f"barrier-{returning}")
        state = partition_state(zk)
        assert state.leader in (-1, 0) and state.isr == [0], state
        info = partition_metadata(cluster)
        assert (info.leader, info.error_code) == (-1, LEADER_NOT_AVAILABLE), info
        assert produce(cluster, [b"refused"], acks=1, retries=2) == [LEADER_NOT_AVAILABLE]

    # The old leader returns, leads again, and still has everything it acknowledged.
    cluster.start_broker(0)
    with cluster.client() as client:
        client.wait_for_leaders(TOPIC, timeout=WAIT_S)
    assert partition_metadata(cluster).leader == 0
    assert read_all(cluster) == in_sync + leader_only
    log = wait_replicas_identical(cluster, "the lagging followers to catch up with broker 0 byte for byte")
    assert b"refused" not in log


UNCLEAN = {"unclean.leader.election.enable": "true"}


# Kafka 2.8 reads the setting per topic (the topic's override, else the broker default) when it elects.
@pytest.mark.parametrize("where", ["broker default", "topic override"])
def test_unclean_election_lets_the_lagging_replica_lead(odradek_cluster_factory, zk_client_factory, where):
    broker_default = where == "broker default"
    cluster = odradek_cluster_factory(brokers=3, overrides={**OVERRIDES, **(UNCLEAN if broker_default else {})})
    zk = zk_client_factory(cluster.zookeeper_connect)
    in_sync, leader_only = lose_leader_behind_lagging_followers(cluster, zk, None if broker_default else UNCLEAN)

    # Any live replica may lead: broker 2 does, alone in its ISR, without the records only broker 0 had.
    # Broker 2 may win the controller before broker 0's session ends; the barrier makes sure the controller
    # has handled broker 0's failure (and so run the election) before the state is read.
    controller_barrier(cluster, "barrier-unclean")
    with cluster.client() as client:
        client.wait_for_leaders(TOPIC, timeout=WAIT_S)
    state = partition_state(zk)
    assert (state.leader, state.isr) == (2, [2]), state
    assert partition_metadata(cluster).leader == 2
    assert read_all(cluster) == in_sync  # the price of an unclean election
    later = [b"after-unclean-%02d" % i for i in range(10)]
    assert produce(cluster, later, acks=1) == [0] * len(later)

    # The old leader comes back as a follower and truncates its divergent suffix (leader epochs): the
    # replicas agree again and the new leader's history wins.
    cluster.start_broker(0)
    cluster.start_broker(1)
    log = wait_replicas_identical(cluster, "every replica to hold broker 2's log")
    assert not any(value in log for value in leader_only)
    assert partition_metadata(cluster).leader == 2
    assert read_all(cluster) == in_sync + later


def test_acks_all_with_two_of_three_replicas_frozen(odradek_cluster_factory, zk_client_factory):
    """Beyond test_replication's NOT_ENOUGH_REPLICAS with two SIGKILLed brokers: a write in flight when the
    followers freeze, the refusal before appending, and no loss (and no refused record) after they return."""
    cluster = odradek_cluster_factory(brokers=3, overrides={**OVERRIDES, "min.insync.replicas": "2"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    create_topic(cluster)
    first = [b"first-%02d" % i for i in range(20)]
    assert produce(cluster, first, acks=-1) == [0] * len(first)

    cluster.kill_broker(1, signal.SIGSTOP)
    cluster.kill_broker(2, signal.SIGSTOP)
    try:
        # Appended while the ISR still names the frozen followers; once the leader shrinks the ISR to itself
        # the high watermark passes it and the DelayedProduce completes with NOT_ENOUGH_REPLICAS_AFTER_APPEND
        # (Kafka's Partition.checkEnoughReplicasReachOffset). The record stays in the log, as in Kafka.
        assert produce(cluster, [b"in-flight"], acks=-1, retries=0, timeout_ms=30000) == \
            [NOT_ENOUGH_REPLICAS_AFTER_APPEND]
        wait_until(lambda: partition_state(zk).isr == [0], WAIT_S, "the shrunk ISR in ZooKeeper")
        # Now refused before the append: this record must never appear anywhere.
        assert produce(cluster, [b"refused"], acks=-1, retries=0) == [NOT_ENOUGH_REPLICAS]
    finally:
        for broker in (1, 2):
            cluster.kill_broker(broker, signal.SIGCONT)

    wait_until(lambda: sorted(partition_state(zk).isr) == [0, 1, 2], WAIT_S, "the followers to rejoin the ISR")
    last = [b"last-%02d" % i for i in range(10)]
    assert produce(cluster, last, acks=-1) == [0] * len(last)
    assert read_all(cluster) == first + [b"in-flight"] + last
    log = wait_replicas_identical(cluster, "the returned followers to hold the leader's log byte for byte")
    assert b"refused" not in log


def test_a_replica_whose_last_epoch_holds_nothing_rejoins_the_isr(odradek_cluster_factory, zk_client_factory):
    """Broker 1 leads an epoch in which nothing is written, then freezes past its ZooKeeper session; broker 0
    leads a newer epoch and takes writes. Broker 1 goes on with the empty epoch last in its cache (a restart
    would have dropped it in recovery). The leader says the older epoch ends at broker 1's log end, so
    truncating there removes no record, but it must drop the empty epoch (Kafka's Log.truncateTo): otherwise
    every fetch diverges again and broker 1 never rejoins the ISR."""
    cluster = odradek_cluster_factory(brokers=2, overrides=OVERRIDES)
    zk = zk_client_factory(cluster.zookeeper_connect)
    create_topic(cluster, assignment={0: [0, 1]})
    first = [b"first-%02d" % i for i in range(10)]
    assert produce(cluster, first, acks=-1) == [0] * len(first)

    cluster.stop_broker(0)  # controlled shutdown: broker 1 leads a new epoch, and nothing is written in it
    wait_until(lambda: partition_state(zk).leader == 1, WAIT_S, "broker 1 to lead")
    cluster.start_broker(0)
    wait_until(lambda: sorted(partition_state(zk).isr) == [0, 1], WAIT_S, "broker 0 to rejoin the ISR")
    cluster.kill_broker(1, signal.SIGSTOP)
    try:
        wait_until(lambda: partition_state(zk).leader == 0 and 1 not in zk.get_all_brokers(), WAIT_S,
                   "broker 0 to lead once broker 1's session ended")
        second = [b"second-%02d" % i for i in range(10)]
        assert produce(cluster, second, acks=1) == [0] * len(second)
    finally:
        cluster.kill_broker(1, signal.SIGCONT)
    wait_until(lambda: sorted(partition_state(zk).isr) == [0, 1], WAIT_S, "broker 1 to rejoin the ISR")
    assert read_all(cluster) == first + second
    wait_until(lambda: log_bytes(cluster, 0) == log_bytes(cluster, 1), WAIT_S, "the replicas to agree byte for byte")

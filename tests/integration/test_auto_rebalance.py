"""Automatic leader rebalance with real ZooKeeper and broker processes (issue 8, seed 000's walkthrough).

An 8-partition RF-3 topic on 4 brokers with auto.leader.rebalance.enable and a 2 s
leader.imbalance.check.interval.seconds: a broker stopped and restarted gets its preferred leaderships
back by itself, once it is in the ISRs again (test_leader_election_tool shows that without the
rebalance they stay with the other brokers).
"""

from __future__ import annotations

from tests.integration.test_leader_election_tool import leaders, preferred, unbalance
from tests.integration.helpers import wait_until

WAIT_S = 90.0  # upper bound for the cluster to converge; never a speed assertion


def test_auto_rebalance_moves_leadership_back_to_preferred_replicas(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=4, overrides={"auto.leader.rebalance.enable": "true",
                                                            "leader.imbalance.check.interval.seconds": "2",
                                                            "leader.imbalance.per.broker.percentage": "10"})
    zk = zk_client_factory(cluster.zookeeper_connect)
    topic, partitions = "rebalanced", 8
    mine = unbalance(cluster, zk, topic, partitions, 3)
    wait_until(lambda: leaders(zk, topic, partitions) == preferred(zk, topic), WAIT_S,
               "every partition led by its preferred replica again")
    assert all(leaders(zk, topic, partitions)[p] == 3 for p in mine)

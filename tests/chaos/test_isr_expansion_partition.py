"""A replica being added to the ISR counts for the high watermark before the leader hears back from ZooKeeper
(issue 19; Kafka 2.8's "maximal ISR", KIP-497), with real brokers in network namespaces.

Topic t, one partition, replicas [L, F2, F1] (F1 the controller), min.insync.replicas 2. F2 is paused until
the leader drops it from the ISR; then the leader stops hearing from ZooKeeper (a one-way cut: its requests
arrive, the answers vanish) and F2 resumes and catches up, so the leader's write adding F2 to the ISR is
applied in ZooKeeper but never answered. F2 is then cut from the leader, and acks=all writes go to the leader.
They must not be acknowledged: ZooKeeper lists F2 in the ISR, and F2 does not have them. (Before the fix the
leader counted its high watermark over [L, F1] alone and, once the lost answer became a connection error,
gave the ISR change up: the writes were acknowledged.) The leader then shuts down, the controller elects F2,
(its answers from ZooKeeper back), the controller elects F2, and the checker confirms that nothing
acknowledged is lost.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from odradek.tools.local_cluster import log_tail
from tests.chaos.partitions import netlab
from tests.chaos.partitions.checker import check
from tests.chaos.partitions.history import History
from tests.chaos.partitions.lab_cluster import LabCluster, node
from tests.chaos.partitions.scenario import PinnedProducer, observe
from tests.integration.helpers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(netlab.available() is not None, reason=str(netlab.available()))]
TOPIC = "t"
# A session long enough that the leader's ZooKeeper client notices the lost answers only seconds later
# (kazoo gives up a connection after 2/3 of the session timeout) while F2 catches up.
OVERRIDES = {"zookeeper.session.timeout.ms": "10000", "replica.lag.time.max.ms": "2000"}


def isr(lc: LabCluster) -> list[int]:
    return lc.partition_state(TOPIC, 0)[2]


def test_acks_all_writes_wait_for_a_replica_zookeeper_lists_in_the_isr(tmp_path):
    with LabCluster(tmp_path, overrides=OVERRIDES) as lc:
        controller = lc.controller()
        leader, f2 = [b for b in lc.broker_ids if b != controller]
        f1 = controller
        with lc.cluster.client() as client:
            assert client.create_topics({TOPIC: {0: [leader, f2, f1]}},
                                        configs={"min.insync.replicas": "2"}) == {TOPIC: 0}
            client.wait_for_leaders(TOPIC, timeout=60)
        wait_until(lambda: sorted(isr(lc)) == sorted(lc.broker_ids), 60, "the full ISR")
        history = History()
        address = lc.cluster.brokers[leader]
        producer = PinnedProducer(history, 10, address.host, address.port, TOPIC, acks=-1).start()
        try:
            wait_until(lambda: sum(s.outcome == "ok" for s in history.sends.values()) >= 5, 30, "first writes")
            lc.cluster.kill_broker(f2, signal.SIGSTOP)  # shorter than its session: F2 stays registered
            wait_until(lambda: isr(lc) == [leader, f1], 8, "the leader to drop F2 from the ISR")
            lc.lab.drop("zk", node(leader))
            lc.cluster.kill_broker(f2, signal.SIGCONT)
            wait_until(lambda: f2 in isr(lc), 5, "F2 back in the ISR in ZooKeeper (the answer lost)")
            lc.lab.cut([node(f2)], [node(leader)])
            cut_at = time.time()
            # Until the leader's ZooKeeper client gives the connection up (2/3 of the session) and the ISR write
            # fails with a connection error, then two more writes: both halves of the old bug had their chance.
            log_path, offset = lc.cluster.brokers[leader].log_path, lc.cluster.brokers[leader].log_offset
            wait_until(lambda: re.search(r"Cannot write the ISR|outcome of writing ISR",
                                         log_tail(log_path, 200, since=offset)), 20, "the ISR write's connection error")
            failed_at = time.time()
            wait_until(lambda: sum(s.invoked >= failed_at and s.outcome != "pending"
                                   for s in history.sends.values()) >= 2, 20, "two writes after it")
            during = [s for s in history.sends.values() if s.invoked >= cut_at and s.outcome == "ok"]
            lc.lab.restore("zk", node(leader))  # so that the leader can shut down cleanly
            lc.cluster.stop_broker(leader, timeout=20)  # controlled shutdown: F2 is the next in line
            wait_until(lambda: lc.partition_state(TOPIC, 0)[0] == f2, 30, "F2 elected")
        finally:
            producer.stop()
            lc.lab.heal()
        lc.cluster.start_broker(leader, timeout=90)
        observations, problems = observe(lc, history, TOPIC, 1, "expansion-final")
        report = check(observations)
        print(f"acks=all writes acknowledged while F2 was cut off: {len(during)}")
        print(report.render())
        assert not problems, problems
        assert not during, f"acknowledged without F2, which ZooKeeper lists in the ISR: {[s.value for s in during]}"
        assert not report.anomalies(), report.render()

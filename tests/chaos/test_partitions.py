"""Network partitions (issue 19): a Jepsen-style nemesis run and its negative control, on ZooKeeper and three
brokers each in a network namespace of its own (tests/chaos/partitions/).

- The nemesis run: confluent-kafka's idempotent producer, ours, and confluent-kafka's transactional producer
  write unique values to a 3-partition topic (RF 3, min.insync.replicas 2, no unclean election) while a
  read_committed consumer reads; every fault kind plays once, in an order drawn from the seed: the leader
  isolated, the leader cut from ZooKeeper only, a follower isolated, a majority/minority split, a one-way cut,
  SIGKILL, SIGSTOP past the session, controlled shutdown. The checker must find nothing: no acknowledged write
  lost, no duplicate, no reordering, no phantom, no read later contradicted, no replica divergence, no aborted
  value visible, no torn transaction.
- The negative control: acks=1 writes to a leader cut from ZooKeeper and its followers are acknowledged and
  then truncated away; the same checker must report them lost. acks=all writes sent to that leader meanwhile
  (aphyr's 2013 case) must not be acknowledged.

ODRADEK_PARTITION_SEED picks the seed (printed either way); ODRADEK_PARTITION_FAULTS=N draws N faults at
random instead of one of each kind. The soak (random seeds, many faults): python -m tests.chaos.partitions.soak.
Needs root (network namespaces); skipped otherwise.
"""

from __future__ import annotations

import os

import pytest

from tests.chaos.partitions import netlab
from tests.chaos.partitions.lab_cluster import LabCluster
from tests.chaos.partitions.nemesis import schedule
from tests.chaos.partitions.scenario import Settings, negative_control, run

CI_SEED = 19
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(netlab.available() is not None, reason=str(netlab.available()))]


@pytest.fixture(scope="module")
def lab_cluster(tmp_path_factory):
    with LabCluster(tmp_path_factory.mktemp("partitions")) as lc:
        yield lc


def test_no_anomaly_under_partitions_and_process_faults(lab_cluster):
    seed = int(os.environ.get("ODRADEK_PARTITION_SEED", CI_SEED))
    count = os.environ.get("ODRADEK_PARTITION_FAULTS")
    settings = Settings(seed=seed, faults=schedule(seed, int(count) if count else None))
    print(f"seed {seed}: {', '.join(settings.faults)}")
    outcome = run(lab_cluster, settings)
    print(outcome.schedule_text())
    print(outcome.report.render())
    assert not outcome.problems and not outcome.report.anomalies(), outcome.failure_text(lab_cluster)
    report = outcome.report
    # the checks had something to check: writes throughout, aborted and committed transactions, reads
    assert report.acknowledged > 500 and report.txn_committed > 5 and report.txn_aborted > 0 and report.reads > 100, \
        report.summary()


def test_negative_control_acks1_writes_to_a_cut_leader_are_reported_lost(lab_cluster):
    control = negative_control(lab_cluster, seed=CI_SEED)
    outcome = control.outcome
    print(f"negative control: broker {control.old_leader} cut, broker {control.new_leader} elected; the cut leader "
          f"acknowledged {control.acked_by_cut_leader} acks=1 writes after that and {control.acks_all_during_cut} "
          "acks=all writes during the cut")
    print(outcome.report.render())
    report = outcome.report
    assert not outcome.problems, outcome.failure_text(lab_cluster)
    assert control.acked_by_cut_leader > 0
    # everything the cut leader acknowledged alone is truncated when it follows the new leader ...
    lost = {text.split()[0] for text in report.lost}
    assert len(lost) >= control.acked_by_cut_leader, outcome.failure_text(lab_cluster)
    # ... but only acks=1 writes: the cut leader acknowledged no acks=all write (min ISR 2, no ISR change
    # without ZooKeeper), and nothing else is wrong: the replicas agree again and nothing was invented
    assert all(value.startswith("a1-") for value in lost), outcome.failure_text(lab_cluster)
    assert control.acks_all_during_cut == 0, outcome.failure_text(lab_cluster)
    assert set(report.anomalies()) == {"lost"}, outcome.failure_text(lab_cluster)

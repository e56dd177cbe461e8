"""Replicas of a compacted partition (RF 3) each clean their own log, as in Kafka: afterwards every replica
holds exactly the latest value of each key, the same on all three."""

from __future__ import annotations

import pytest

from .compaction import CLEANER_OVERRIDES, create_compacted, latest, produce_sentinel, produce_updates, wait_cleaned
from .log_inspection import stored_key_values

KEYS, UPDATES = 1000, 60_000


@pytest.mark.slow
def test_each_replica_cleans_its_own_log_and_they_agree(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3, {**CLEANER_OVERRIDES, "min.insync.replicas": "2"})
    bootstrap = cluster.bootstrap_servers
    create_compacted(bootstrap, "replicated", replication=3)
    expected = produce_updates(bootstrap, "replicated", UPDATES, KEYS)
    end = produce_sentinel(bootstrap, "replicated")
    wait_cleaned(cluster, "replicated", 0, end)  # on every broker
    on_disk = {b.broker_id: [r for r in stored_key_values(b.log_dirs, "replicated", 0) if r[1] != b"~sentinel"]
               for b in cluster.brokers}
    for broker_id, records in on_disk.items():
        assert len(records) == KEYS and latest(records) == expected, broker_id
    assert on_disk[0] == on_disk[1] == on_disk[2]  # same survivors at the same offsets

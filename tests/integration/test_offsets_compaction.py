"""__consumer_offsets is really compacted: a group committing 100 partitions every 100 ms keeps the offsets
partition within a small multiple of its live size, and the coordinator's load time after a failover stays
flat as commits accumulate (both printed). ODRADEK_OFFSETS_COMMIT_SECONDS sets how long the group commits
(default 45; the issue's "several minutes" is e.g. 300)."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from odradek.clients import Admin, Consumer, NewTopic, OffsetAndMetadata, TopicPartition
from odradek.clients.admin.partitions import ElectionType

from .compaction import CLEANER_OVERRIDES
from .helpers import wait_until

pytestmark = pytest.mark.timeout(900)
SECONDS = float(os.environ.get("ODRADEK_OFFSETS_COMMIT_SECONDS", "45"))
PARTITIONS = 100
OFFSETS = TopicPartition("__consumer_offsets", 0)
SEGMENT_BYTES = 16 * 1024
OVERRIDES = {**CLEANER_OVERRIDES, "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "2",
             "offsets.topic.segment.bytes": str(SEGMENT_BYTES), "min.insync.replicas": "1"}
LOADED = re.compile(r"Finished loading offsets and group metadata from __consumer_offsets-0 in (\d+) ms")


class Committer(threading.Thread):
    """A simple (group-less) consumer committing every partition every 100 ms."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(bootstrap_servers=bootstrap, group_id="committer", enable_auto_commit=False)
        self.commits = 0
        self.failures: list[str] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                n = self.commits
                try:
                    self.consumer.commit({TopicPartition("committed", p): OffsetAndMetadata(n * PARTITIONS + p, "")
                                          for p in range(PARTITIONS)})
                    self.commits += 1
                except Exception as exc:  # a commit during a failover may fail (NOT_COORDINATOR): retried
                    self.failures.append(repr(exc))
                self._stopping.wait(0.1)
        finally:
            self.consumer.close(autocommit=False)

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def partition_bytes(cluster, broker_id: int) -> int:
    directory = Path(cluster.brokers[broker_id].log_dirs) / "__consumer_offsets-0"
    total = 0
    for path in directory.glob("*.log"):
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            pass  # a segment the cleaner or retention renamed (.deleted) since the listing
    return total


def fail_over(cluster, admin: Admin, leader: int) -> tuple[int, int]:
    """Make the other broker the coordinator (reorder the replicas, elect the preferred leader); returns
    (new leader, its load time in ms from its log)."""
    other = 1 - leader
    log_path = cluster.broker_log(other)
    seen = len(LOADED.findall(log_path.read_text()))
    admin.alter_partition_reassignments({OFFSETS: [other, leader]})
    wait_until(lambda: not admin.list_partition_reassignments([OFFSETS]), 60, "the reorder to complete")
    wait_until(lambda: all(e is None or "ElectionNotNeeded" in repr(e)
                           for e in admin.elect_leaders(ElectionType.PREFERRED, [OFFSETS]).values()), 60,
               "the preferred leader elected")
    loads = wait_until(lambda: (found := LOADED.findall(log_path.read_text()))[seen:] and found, 60,
                       "the new coordinator to load")
    return other, int(loads[-1])


@pytest.mark.slow
def test_consumer_offsets_stays_bounded_and_loads_stay_flat(odradek_cluster_factory):
    cluster = odradek_cluster_factory(2, OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("committed", PARTITIONS, 1)])
        committer = Committer(bootstrap)
        committer.start()
        wait_until(lambda: committer.commits >= 1, 60, "the first commit")
        leader = admin.describe_topics(["__consumer_offsets"])[0].partitions[0].leader
        live = partition_bytes(cluster, leader)  # one commit of every offset: the live data
        rows, biggest = [], 0
        started = time.monotonic()
        for checkpoint in range(1, 5):
            while time.monotonic() - started < SECONDS * checkpoint / 4:
                biggest = max(biggest, partition_bytes(cluster, leader))
                time.sleep(0.2)
            size = partition_bytes(cluster, leader)
            leader, load_ms = fail_over(cluster, admin, leader)
            rows.append((time.monotonic() - started, committer.commits, size, load_ms))
        committer.stop()
    written = committer.commits * live
    print(f"\nlive size {live} B; {committer.commits} commits ({written / 1e6:.1f} MB written); largest partition "
          f"{biggest} B ({biggest / live:.1f}x live)")
    print("  seconds  commits  partition bytes  (x live)  coordinator load after failover")
    for elapsed, commits, size, load_ms in rows:
        print(f"  {elapsed:7.0f}  {commits:7d}  {size:15d}  {size / live:8.1f}  {load_ms:6d} ms")
    assert committer.commits > SECONDS  # the commits kept going through the failovers
    assert written > 20 * biggest  # cleaned all along: far less on disk than ever written
    # what a new coordinator loads does not grow with the commits: the last failover loads no more than
    # a small multiple of the live data (the active segment and one dirty segment are never cleaned away)
    assert rows[-1][2] <= live + 3 * SEGMENT_BYTES

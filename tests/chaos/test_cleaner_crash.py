"""SIGKILL of a broker while its cleaner rewrites a compacted log: the cleaner's worker process dies with the
broker (it never writes into the log dir of the restarted one), the restarted broker finds no half-swapped
files, reads back the latest value of every key, and finishes the cleaning."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from ..integration.compaction import (
    CLEANER_OVERRIDES, create_compacted, latest, partition_files, produce_sentinel, produce_updates, read_ours,
    wait_cleaned,
)
from ..integration.helpers import wait_until

pytestmark = pytest.mark.timeout(400)
KEYS, UPDATES = 5000, 300_000
# 3 MB/s: a cleaning of this log takes seconds, long enough to be caught in the middle
OVERRIDES = {**CLEANER_OVERRIDES, "log.cleaner.io.max.bytes.per.second": "3000000"}


def worker_pids(cluster) -> list[int]:
    path = Path(cluster.brokers[0].log_dirs).parent / "log-cleaner.log"
    text = path.read_text() if path.exists() else ""
    return [int(pid) for pid in re.findall(r"Started process worker for \S+ \(pid (\d+)\)", text)]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting to be reaped is gone too
        return f.read().split()[2] == "Z"


def in_the_middle_of_a_cleaning(log_dir: Path, topic: str) -> bool:
    return any(name.endswith(".cleaned") for name in os.listdir(log_dir / f"{topic}-0"))


@pytest.mark.slow
def test_sigkill_during_a_cleaning_leaves_a_readable_consistent_log(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, OVERRIDES)
    bootstrap = cluster.bootstrap_servers
    create_compacted(bootstrap, "crashing")
    expected = produce_updates(bootstrap, "crashing", UPDATES, KEYS, value_size=20)
    end = produce_sentinel(bootstrap, "crashing")
    log_dir = Path(cluster.brokers[0].log_dirs)
    for round_ in range(2):
        wait_until(lambda: in_the_middle_of_a_cleaning(log_dir, "crashing"), 120, "a cleaning under way",
                   interval=0.01)
        workers = worker_pids(cluster)
        assert workers
        cluster.kill_broker(0, signal.SIGKILL)
        wait_until(lambda: all(gone(pid) for pid in workers), 10, "the worker process to die with the broker")
        cluster.start_broker(0)
        leftovers = [n for n in partition_files(log_dir, "crashing", 0) if n.endswith((".cleaned", ".swap", ".deleted"))]
        assert leftovers == [] or all(n.endswith(".cleaned") for n in leftovers)  # a new cleaning may have begun
        records = read_ours(bootstrap, "crashing", end)
        assert latest(records) == expected, f"round {round_}"
        assert [o for o, _, _ in records] == sorted({o for o, _, _ in records})
    wait_cleaned(cluster, "crashing", 0, end)
    records = read_ours(bootstrap, "crashing", end)
    assert len(records) == KEYS and latest(records) == expected

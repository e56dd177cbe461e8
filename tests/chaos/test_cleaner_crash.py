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
# 0.7 MB/s: a cleaning of this log (~9 MB) takes over 10 s, long enough to be caught in the middle, and longer
# than the restarted broker's wait for its old session (at most 1.5 x 6 s), during which its cleaner already
# runs: at 3 MB/s that cleaning could end before the second round looked, leaving nothing to catch.
OVERRIDES = {**CLEANER_OVERRIDES, "log.cleaner.io.max.bytes.per.second": "700000"}


def cleaner_log(cluster) -> str:
    path = Path(cluster.brokers[0].log_dirs).parent / "log-cleaner.log"
    return path.read_text() if path.exists() else ""


def worker_pids(cluster) -> list[int]:
    return [int(pid) for pid in re.findall(r"Started process worker for \S+ \(pid (\d+)\)", cleaner_log(cluster))]


def swapped_out(log_text: str) -> set[int]:
    """Base offsets of the segments that the swaps logged in ``log_text`` replaced (renamed ``.deleted``)."""
    return {int(base) for found in re.findall(r"Swapping in cleaned segment .* for segment\(s\) \[([\d, ]*)\]", log_text)
            for base in found.split(",") if base.strip()}


def unexplained_leftovers(names: list[str], swapped: set[int] | None) -> list[str]:
    """Temporary files that a crash left behind. ``.cleaned`` files belong to a cleaning under way; ``.swap``
    and ``.deleted`` ones (the latter removed ``file.delete.delay.ms`` later) to a swap the restarted broker
    logged (``swapped``: the segments it replaced; None: no swap since the restart)."""
    if swapped is None:
        return [n for n in names if n.endswith((".swap", ".deleted"))]
    return [n for n in names if n.endswith(".deleted") and int(n.split(".")[0]) not in swapped]


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
        logged_before_restart = len(cleaner_log(cluster))
        cluster.start_broker(0)
        # the restarted cleaner may begin, or even finish, a new cleaning before the broker has registered;
        # the files are listed first, so a swap that made any of them is already in the log read next
        names = partition_files(log_dir, "crashing", 0)
        since_restart = cleaner_log(cluster)[logged_before_restart:]
        swapped = swapped_out(since_restart) if "Swapping in cleaned segment" in since_restart else None
        assert unexplained_leftovers(names, swapped) == []
        records = read_ours(bootstrap, "crashing", end)
        assert latest(records) == expected, f"round {round_}"
        assert [o for o, _, _ in records] == sorted({o for o, _, _ in records})
    wait_cleaned(cluster, "crashing", 0, end)
    records = read_ours(bootstrap, "crashing", end)
    assert len(records) == KEYS and latest(records) == expected

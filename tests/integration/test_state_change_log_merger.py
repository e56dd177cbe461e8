"""odradek-state-change-log-merger on the real state-change logs of a 3-broker cluster.

Each broker writes its own state-change.log (odradek.state.change.log.dir per broker). The controller is
stopped (its leaderships move away, another broker takes over as controller) and started again, so two
brokers' logs hold parts of the history; the merger interleaves them by time and filters by topic,
partition and time range.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid

import pytest

from odradek.clients.admin.client import Admin, NewTopic
from odradek.tools.local_cluster import LocalCluster
from odradek.tools.state_change_log_merger import partitions_named

from ..conftest import TEST_BROKER_OVERRIDES

pytestmark = pytest.mark.timeout(240)
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


class ClusterWithOwnStateChangeLogs(LocalCluster):
    def state_change_log(self, broker_id: int):
        return self.data_dir / f"broker-{broker_id}-logs" / "state-change.log"

    def broker_command(self, broker):
        return super().broker_command(broker) + [
            "--override", f"odradek.state.change.log.dir={self.state_change_log(broker.broker_id).parent}"]


@pytest.fixture(scope="module")
def merged_cluster(zookeeper, tmp_path_factory):
    cluster = ClusterWithOwnStateChangeLogs(
        tmp_path_factory.mktemp("merger"), 3, zookeeper=zookeeper, base_port=0,
        chroot=f"/odradek-{uuid.uuid4().hex}", broker_overrides=TEST_BROKER_OVERRIDES)
    cluster.start()
    try:
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("merge-a", num_partitions=2, replication_factor=3),
                                 NewTopic("merge-b", num_partitions=1, replication_factor=3)])
        first = cluster.metadata().controller_id
        cluster.stop_broker(first)  # its leaderships move away; another broker becomes controller
        cluster.start_broker(first)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            writers = [i for i in range(3) if "[Controller id=" in _read(cluster.state_change_log(i))]
            if len(writers) >= 2 and "OnlineReplica" in _read(cluster.state_change_log(cluster.metadata().controller_id)):
                break
            time.sleep(0.5)
        yield cluster
    finally:
        cluster.stop(timeout=15.0)


def _read(path) -> str:
    return path.read_text() if path.exists() else ""


def run_merger(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odradek.tools.state_change_log_merger", *args],
                          capture_output=True, text=True, timeout=60)


def logs_arg(cluster) -> str:
    return ",".join(str(cluster.state_change_log(i)) for i in range(3))


def stamps(lines: list[str]) -> list[str]:
    return [_STAMP.match(line).group(1) for line in lines]


def test_the_logs_of_two_controllers_are_merged_in_time_order(merged_cluster):
    cluster = merged_cluster
    per_file = [[line for line in _read(cluster.state_change_log(i)).splitlines() if _STAMP.match(line)]
                for i in range(3)]
    writers = [i for i, lines in enumerate(per_file) if lines]
    assert len(writers) >= 2, "the history should be spread over two brokers' logs"
    result = run_merger("--logs", logs_arg(cluster))
    assert result.returncode == 0, result.stderr
    merged = result.stdout.splitlines()
    assert sorted(merged) == sorted(line for lines in per_file for line in lines)  # every line, once
    assert stamps(merged) == sorted(stamps(merged))
    controllers = {int(m.group(1)) for line in merged if (m := re.search(r"\[Controller id=(\d+) ", line))}
    assert len(controllers) >= 2
    # the regex form finds the same files
    by_regex = run_merger("--logs-regex", str(cluster.data_dir) + "/broker-.*-logs/state-change.log")
    assert by_regex.returncode == 1 and "cannot list directory" in by_regex.stderr  # a directory part is literal
    in_dir = run_merger("--logs-regex", str(cluster.state_change_log(writers[0]).parent) + "/state-change\\.log$")
    assert in_dir.returncode == 0 and in_dir.stdout.splitlines() == per_file[writers[0]]


def test_topic_and_partition_filters(merged_cluster):
    cluster = merged_cluster
    everything = run_merger("--logs", logs_arg(cluster)).stdout.splitlines()
    result = run_merger("--logs", logs_arg(cluster), "--topic", "merge-a", "--partitions", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines, "partition merge-a-1 has state changes"
    assert all(("merge-a", 1) in partitions_named(line[25:]) for line in lines)
    assert lines == [line for line in everything if line in set(lines)]  # a subsequence, same order
    assert any("Changed partition merge-a-1 from NewPartition to OnlinePartition" in line for line in lines)
    topic_only = run_merger("--logs", logs_arg(cluster), "--topic", "merge-b").stdout.splitlines()
    assert topic_only and all(any(t == "merge-b" for t, _ in partitions_named(line[25:])) for line in topic_only)
    # only a line naming partitions of both topics (a StopReplica for several) is in both answers
    assert all({("merge-a", 1), ("merge-b", 0)} <= set(partitions_named(line[25:]))
               for line in set(topic_only) & set(lines))
    assert set(topic_only) != set(lines)


def test_time_range_filter_is_inclusive(merged_cluster):
    cluster = merged_cluster
    everything = run_merger("--logs", logs_arg(cluster)).stdout.splitlines()
    times = stamps(everything)
    start, end = times[len(times) // 3], times[2 * len(times) // 3]
    result = run_merger("--logs", logs_arg(cluster), "--start-time", start, "--end-time", f'"{end}"')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [line for line, t in zip(everything, times) if start <= t <= end]


@pytest.mark.parametrize("args, message", [
    ([], 'exactly one of the two options "logs" or "logs-regex"'),
    (["--logs", "a", "--logs-regex", "b"], 'exactly one of the two options "logs" or "logs-regex"'),
    (["--logs", "a", "--partitions", "0"], 'The option "topic" needs to be provided'),
    (["--logs", "a", "--topic", "t", "--partitions", "0,1,0"], "repeated entries: 0"),
    (["--logs", "a", "--topic", "t", "--partitions", "x"], "--partitions 'x'"),
    (["--logs", "a", "--start-time", "2026-01-01 10:00:00"], "--start-time '2026-01-01 10:00:00' is not a timestamp"),
    (["--logs", "/nonexistent/state-change.log"], "cannot read state change log /nonexistent/state-change.log"),
    (["--logs", "a", "--frobnicate"], "frobnicate is not a recognized option"),
])
def test_usage_errors_are_one_line(args, message):
    result = run_merger(*args)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr

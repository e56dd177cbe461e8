"""``odradek-cluster start --console-port`` starts the web console beside the brokers (cluster.sh asks for it),
``status`` shows it, ``stop`` stops it first."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from odradek.tools.console_process import ConsoleProcess
from odradek.tools.local_cluster import LocalCluster, pid_alive

CLI = [sys.executable, "-m", "odradek.tools.cluster"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=120)


def test_start_status_and_stop_with_the_console(zookeeper, tmp_path):
    data_dir = tmp_path / "cluster"
    try:
        started = run_cli("start", "--brokers", "1", "--data-dir", str(data_dir), "--zookeeper",
                          zookeeper.connect_string, "--chroot", "/console-command", "--base-port", "0",
                          "--console-port", "0")
        assert started.returncode == 0, started.stderr
        [line] = [line for line in started.stderr.splitlines() if line.startswith("Console: ")]
        url = line.split()[1]
        with urllib.request.urlopen(url + "api/overview", timeout=30) as response:
            overview = json.loads(response.read())
        assert [(b["id"], b["alive"]) for b in overview["brokers"]] == [(0, True)]
        assert len(overview["metrics"]) == 1  # the console turned the broker's metrics endpoint on
        pid = ConsoleProcess.attach(data_dir).process.pid

        status = run_cli("status", "--data-dir", str(data_dir))
        assert status.returncode == 0, status.stdout
        assert f"Console: {url}" in status.stdout
        assert any(row.startswith("console ") and row.endswith("running") for row in status.stdout.splitlines())

        stopped = run_cli("stop", "--data-dir", str(data_dir))
        assert stopped.returncode == 0, stopped.stderr
        assert not pid_alive(pid) and ConsoleProcess.attach(data_dir) is None
    finally:
        console = ConsoleProcess.attach(data_dir)
        if console is not None:
            console.stop()
        cluster = LocalCluster.attach(data_dir)
        if cluster is not None:
            cluster.stop(timeout=15.0)

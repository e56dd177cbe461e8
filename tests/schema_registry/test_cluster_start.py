"""`odradek-cluster start --schema-registry-port` starts a registry beside the brokers and prints its URL;
`status` lists it and `stop` stops it with the cluster."""

from __future__ import annotations

import re
import subprocess
import sys

from odradek.tools.local_cluster import LocalCluster, pid_alive
from odradek.tools.local_schema_registry import attached, stop_attached

from .conftest import call

CLI = [sys.executable, "-m", "odradek.tools.cluster"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=180)


def test_start_prints_the_registry_url_and_stop_stops_it(tmp_path):
    data_dir = tmp_path / "cluster"
    try:
        started = run_cli("start", "--brokers", "1", "--data-dir", str(data_dir), "--zookeeper-port", "0",
                          "--base-port", "0", "--schema-registry-port", "0")
        assert started.returncode == 0, started.stderr
        found = re.search(r"Schema registry: (http://\S+)", started.stderr)
        assert found, started.stderr
        url = found.group(1)
        assert started.stdout.strip().startswith("127.0.0.1:")  # stdout stays the bootstrap servers alone
        assert call(f"{url}/subjects/cluster-start/versions", "POST", {"schema": '"string"'})[1] == {"id": 1}
        status = run_cli("status", "--data-dir", str(data_dir))
        assert re.search(rf"registry\s+{re.escape(url)}\s+pid \d+\s+running", status.stdout), status.stdout
        process = attached(data_dir)[0]
        assert run_cli("stop", "--data-dir", str(data_dir)).returncode == 0
        assert not pid_alive(process.pid, process.marker)
        assert attached(data_dir) is None
    finally:
        stop_attached(data_dir, 10.0)
        cluster = LocalCluster.attach(data_dir)
        if cluster is not None:
            cluster.stop(timeout=15.0)

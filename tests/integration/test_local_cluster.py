"""odradek-cluster and LocalCluster with a real ZooKeeper and real broker processes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from odradek.tools.local_cluster import ClusterStartError, LocalCluster, pid_alive
from odradek.tools.local_zookeeper import free_port

CLI = [sys.executable, "-m", "odradek.tools.cluster"]


def run_cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy())


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one-line error a failed command ends with (progress lines may come before it)."""
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and result.stderr.endswith(errors[0] + "\n"), result.stderr
    return errors[0]


def connectable(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def recorded_pids(data_dir: Path) -> list[int]:
    state = json.loads((data_dir / "cluster.json").read_text())
    return [state["zookeeper"]["pid"]] + [b["pid"] for b in state["brokers"]]


@pytest.fixture
def cli_data_dir(tmp_path):
    """A data directory for clusters started by the command line; whatever runs there is stopped afterwards."""
    data_dir = tmp_path / "cluster"
    yield data_dir
    cluster = LocalCluster.attach(data_dir)
    if cluster is not None:
        cluster.stop(timeout=15.0)


def start_args(data_dir: Path, brokers: int = 2, *extra: str) -> list[str]:
    return ["start", "--brokers", str(brokers), "--data-dir", str(data_dir), "--zookeeper-port", "0",
            "--base-port", "0", *extra]


# --- the command line ---------------------------------------------------------------------------------------

def test_start_status_stop(cli_data_dir):
    started = run_cli(*start_args(cli_data_dir, 2))
    assert started.returncode == 0, started.stderr
    bootstrap = started.stdout.strip()
    servers = bootstrap.split(",")
    assert len(servers) == 2 and all(s.startswith("127.0.0.1:") for s in servers)
    assert "Cluster is up: 2 brokers" in started.stderr

    # the processes outlive the command that started them
    pids = recorded_pids(cli_data_dir)
    assert all(pid_alive(pid) for pid in pids)
    assert all(connectable(s) for s in servers)
    assert {p.name for p in cli_data_dir.glob("*.pid")} == {"zookeeper.pid", "broker-0.pid", "broker-1.pid"}
    assert (cli_data_dir / "broker-0.log").exists() and (cli_data_dir / "broker-0").is_dir()

    status = run_cli("status", "--data-dir", str(cli_data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("running") == 3 and "NOT RUNNING" not in status.stdout
    assert f"Bootstrap servers: {bootstrap}" in status.stdout
    assert "Brokers in metadata: 0,1" in status.stdout
    controller = [line for line in status.stdout.splitlines() if line.startswith("Controller: broker ")]
    assert controller and int(controller[0].rsplit(" ", 1)[1]) in (0, 1)

    stopped = run_cli("stop", "--data-dir", str(cli_data_dir))
    assert stopped.returncode == 0, stopped.stderr
    assert not any(pid_alive(pid) for pid in pids)
    assert not list(cli_data_dir.glob("*.pid")) and not (cli_data_dir / "cluster.json").exists()
    assert not any(connectable(s) for s in servers)

    again = run_cli("stop", "--data-dir", str(cli_data_dir))
    assert again.returncode == 1 and "No cluster to stop" in again.stderr


def test_start_refuses_when_already_running(cli_data_dir):
    first = run_cli(*start_args(cli_data_dir, 1))
    assert first.returncode == 0, first.stderr
    pids = recorded_pids(cli_data_dir)

    second = run_cli(*start_args(cli_data_dir, 1))
    error = error_line(second)
    assert "already running" in error
    assert first.stdout.strip() in error  # names the running cluster's bootstrap servers
    assert recorded_pids(cli_data_dir) == pids and all(pid_alive(pid) for pid in pids)


def test_dead_processes_are_reported_and_a_new_start_cleans_up(cli_data_dir):
    # a short session, so the new broker need not wait long for the killed one's registration to expire
    short_session = ("--override", "zookeeper.session.timeout.ms=6000")
    assert run_cli(*start_args(cli_data_dir, 1, *short_session)).returncode == 0
    pids = recorded_pids(cli_data_dir)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)

    status = run_cli("status", "--data-dir", str(cli_data_dir), "--timeout", "2")
    assert status.returncode == 1
    assert status.stdout.count("NOT RUNNING") == 2
    assert "Controller: unknown" in status.stdout

    restarted = run_cli(*start_args(cli_data_dir, 1, *short_session))
    assert restarted.returncode == 0, restarted.stderr
    assert not set(recorded_pids(cli_data_dir)) & set(pids)


def test_missing_zookeeper_home_is_one_line_with_the_install_command(tmp_path):
    env = dict(os.environ, ZOOKEEPER_HOME=str(tmp_path / "nowhere"))
    error = error_line(run_cli(*start_args(tmp_path / "cluster", 1), env=env))
    assert "ZOOKEEPER_HOME" in error and "sudo apt-get install -y zookeeper" in error
    assert not (tmp_path / "cluster" / "cluster.json").exists()


def test_missing_java_is_one_line_with_the_install_command(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ZOOKEEPER_HOME"}
    env["PATH"] = str(tmp_path)  # no java there
    error = error_line(run_cli(*start_args(tmp_path / "cluster", 1), env=env))
    assert "java" in error and "apt-get install" in error
    assert not (tmp_path / "cluster" / "cluster.json").exists()


@pytest.mark.parametrize("args, expected", [
    (["start", "--bogus"], "unrecognized arguments: --bogus"),
    (["start", "--brokers", "0"], "--brokers: expected a number >= 1"),
    (["start", "--brokers", "three"], "--brokers: expected an integer"),
    (["start", "--base-port", "65535", "--brokers", "2"], "leaves no room for 2 brokers"),
    (["start", "--override", "num.partitions"], "--override: expected key=value"),
    (["start", "--chroot", "odradek"], "--chroot must start with /"),
    (["start", "--zookeeper-port", "2182", "--zookeeper", "127.0.0.1:2181"], "not allowed with argument"),
    (["stop", "--brokers", "2"], "unrecognized arguments: --brokers"),
    (["restart"], "invalid choice: 'restart'"),
    ([], "required: {start,stop,status}"),
])
def test_bad_flags_are_one_line(tmp_path, args, expected):
    result = run_cli(*args, "--data-dir", str(tmp_path)) if args else run_cli()
    assert result.returncode == 1
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert expected in result.stderr
    assert result.stdout == ""


def test_ports_in_use_are_named(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("start", "--data-dir", str(tmp_path), "--zookeeper-port", "0",
                         "--base-port", str(port), "--brokers", "2")
        zk_result = run_cli("start", "--data-dir", str(tmp_path), "--zookeeper-port", str(port),
                            "--base-port", "0")
    # broker 1's port (port + 1) may be taken by someone else too: then both are named
    assert re.match(rf"Error: Ports? {port} \(broker 0\)(, {port + 1} \(broker 1\))? on 127\.0\.0\.1 already in use",
                    error_line(result)), error_line(result)
    assert f"Port {port} (ZooKeeper)" in error_line(zk_result)
    assert not (tmp_path / "cluster.json").exists()


def test_start_timeout_names_the_broker_log_and_cleans_up(tmp_path):
    # nothing listens on this ZooKeeper port, so the broker keeps trying to connect and never registers
    dead_zookeeper = f"127.0.0.1:{free_port()}"
    result = run_cli("start", "--data-dir", str(tmp_path), "--zookeeper", dead_zookeeper, "--base-port", "0",
                     "--timeout", "3", "--override", "zookeeper.connection.timeout.ms=60000")
    assert error_line(result) == (
        f"Error: Broker 0 did not join the cluster (in Metadata) within 3 s; see {tmp_path / 'broker-0.log'}")
    assert not (tmp_path / "cluster.json").exists() and not (tmp_path / "broker-0.pid").exists()


# --- LocalCluster (the fixtures) ------------------------------------------------------------------------------

def test_bad_broker_config_fails_start_with_the_brokers_message(zookeeper, tmp_path):
    cluster = LocalCluster(tmp_path, 1, zookeeper=zookeeper, chroot="/bad-config",
                           broker_overrides={"num.partitions": "0"})
    with pytest.raises(ClusterStartError) as failure:
        cluster.start(timeout=60)
    message = failure.value.message
    assert message.startswith("Broker 0 exited with code 1 during start-up: ")
    assert "num.partitions" in message and str(cluster.broker_log(0)) in message
    assert not cluster.running() and not (tmp_path / "broker-0.pid").exists()


def test_clusters_share_the_zookeeper_under_their_own_chroots(odradek_cluster_factory):
    one = odradek_cluster_factory(brokers=1)
    two = odradek_cluster_factory(brokers=2)
    assert one.zookeeper_hosts == two.zookeeper_hosts and one.chroot != two.chroot
    assert set(one.metadata().brokers) == {0}
    meta = two.metadata()
    assert set(meta.brokers) == {0, 1}
    assert {(b.host, b.port) for b in meta.brokers.values()} == {("127.0.0.1", p) for p in two.broker_ports}
    assert len(set(one.broker_ports + two.broker_ports)) == 3


def test_kill_and_restart_a_broker(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=3)
    port = cluster.broker_ports[1]
    assert cluster.kill_broker(1, signal.SIGKILL) == -signal.SIGKILL
    assert not cluster.broker_alive(1) and not connectable(f"127.0.0.1:{port}")

    metadata = cluster.start_broker(1)  # waits out the killed broker's ZooKeeper session
    assert cluster.broker_alive(1) and cluster.broker_ports[1] == port
    assert set(metadata.brokers) == {0, 1, 2}

    # a clean shutdown on SIGTERM exits 0, and the broker comes back on the same port
    assert cluster.kill_broker(2, signal.SIGTERM) == 0
    metadata = cluster.restart_broker(2)
    assert set(metadata.brokers) == {0, 1, 2}
    assert connectable(f"127.0.0.1:{cluster.broker_ports[2]}")


def test_stop_kills_every_process(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=2)
    processes = [b.process for b in cluster.brokers]
    cluster.stop(timeout=15)
    assert all(p.popen.returncode is not None for p in processes)
    assert not cluster.running()


def test_pid_checks_guard_against_reuse():
    assert pid_alive(os.getpid())
    assert pid_alive(os.getpid(), "python")
    assert not pid_alive(os.getpid(), "odradek.broker.server --override log.dirs=/nowhere")

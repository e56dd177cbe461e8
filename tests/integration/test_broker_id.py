"""broker.id auto-generation and the meta.properties checks, on real broker processes and ZooKeeper.

Brokers without broker.id take ids above reserved.broker.max.id from /brokers/seqid and keep them across
restarts (meta.properties); a configured id that differs from the stored one, log dirs that disagree, and
a stored cluster.id of another cluster each stop start-up with one line and exit code 1 (Kafka 2.8's
InconsistentBrokerIdException, InconsistentBrokerMetadataException, InconsistentClusterIdException).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from odradek.broker.log.log_manager import read_properties

pytestmark = pytest.mark.timeout(240)

RESERVED_MAX = 1000


class BrokerProcess:
    def __init__(self, tmp_path: Path, name: str, zk_connect: str, log_dirs: list[Path], **overrides: str) -> None:
        self.log_path = tmp_path / f"{name}.log"
        props = tmp_path / "server.properties"
        props.write_text("listeners=PLAINTEXT://127.0.0.1:0\nzookeeper.session.timeout.ms=6000\n"
                         "controlled.shutdown.retry.backoff.ms=500\noffsets.topic.replication.factor=1\n")
        command = [sys.executable, "-m", "odradek.broker.server", str(props),
                   "--override", f"zookeeper.connect={zk_connect}",
                   "--override", "log.dirs=" + ",".join(str(d) for d in log_dirs)]
        for key, value in overrides.items():
            command += ["--override", f"{key.replace('_', '.')}={value}"]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def output(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def brokers():
    started: list[BrokerProcess] = []
    yield started
    for broker in started:
        broker.stop()


def wait_for_registered(zk, count: int, timeout: float = 90.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ids = set(zk.get_all_brokers_with_epochs())
        if len(ids) >= count:
            return ids
        time.sleep(0.3)
    raise AssertionError(f"only {count} brokers registered within {timeout} s")


def wait_for_unregistered(zk, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while zk.get_all_brokers_with_epochs() and time.monotonic() < deadline:
        time.sleep(0.3)


def start_failure(tmp_path: Path, zk_connect: str, log_dirs: list[Path], **overrides: str) -> str:
    """Run a broker expected to refuse to start; return its output."""
    broker = BrokerProcess(tmp_path, f"failing-{time.monotonic_ns()}", zk_connect, log_dirs, **overrides)
    try:
        assert broker.proc.wait(90) == 1
    finally:
        broker.stop()
    return broker.output()


def fatal_line(output: str) -> str:
    lines = [line for line in output.splitlines() if "Fatal error during KafkaServer startup" in line]
    assert len(lines) == 1, output
    assert "Traceback" not in output, output
    return lines[0]


def test_generated_ids_are_above_the_reserved_range_and_survive_restarts(tmp_path, zk_chroot, zk_client_factory,
                                                                          brokers):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for i, d in enumerate(dirs):
        brokers.append(BrokerProcess(tmp_path, f"broker-{i}", zk_chroot, [d]))
    zk = zk_client_factory()
    ids = wait_for_registered(zk, 2)
    assert ids == {RESERVED_MAX + 1, RESERVED_MAX + 2}
    stored = {int(read_properties(str(d / "meta.properties"))["broker.id"]) for d in dirs}
    assert stored == ids
    by_dir = {d: int(read_properties(str(d / "meta.properties"))["broker.id"]) for d in dirs}

    for broker in brokers:
        broker.stop()
    wait_for_unregistered(zk)
    assert not zk.get_all_brokers_with_epochs()
    brokers.clear()
    for i, d in enumerate(dirs):
        brokers.append(BrokerProcess(tmp_path, f"broker-{i}-again", zk_chroot, [d]))
    assert wait_for_registered(zk, 2) == ids  # the stored ids, no new ones from /brokers/seqid
    for i, d in enumerate(dirs):
        assert f"[KafkaServer id={by_dir[d]}] started" in brokers[i].output() or \
            wait_for_log(brokers[i], f"[KafkaServer id={by_dir[d]}] started")
    # a third broker without a stored id gets the next one
    brokers.append(BrokerProcess(tmp_path, "broker-new", zk_chroot, [tmp_path / "c"]))
    assert wait_for_registered(zk, 3) == ids | {RESERVED_MAX + 3}


def wait_for_log(broker: BrokerProcess, text: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in broker.output():
            return True
        time.sleep(0.2)
    return False


def write_meta(d: Path, broker_id: int, cluster_id: str | None = None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    lines = ["version=0", f"broker.id={broker_id}"] + ([f"cluster.id={cluster_id}"] if cluster_id else [])
    (d / "meta.properties").write_text("\n".join(lines) + "\n")


def test_a_configured_id_that_differs_from_the_stored_one_refuses_to_start(tmp_path, zk_chroot):
    d = tmp_path / "data"
    write_meta(d, 1001)
    line = fatal_line(start_failure(tmp_path, zk_chroot, [d], broker_id="5"))
    assert "Configured broker.id 5 doesn't match stored broker.id 1001" in line
    assert str(d / "meta.properties") in line


def test_log_dirs_with_different_broker_ids_refuse_to_start(tmp_path, zk_chroot):
    a, b = tmp_path / "a", tmp_path / "b"
    write_meta(a, 1001)
    write_meta(b, 1002)
    line = fatal_line(start_failure(tmp_path, zk_chroot, [a, b]))
    assert "BrokerMetadata is not consistent across log.dirs" in line
    assert f"{a / 'meta.properties'} -> version=0, broker.id=1001" in line
    assert f"{b / 'meta.properties'} -> version=0, broker.id=1002" in line


def test_a_stored_cluster_id_of_another_cluster_refuses_to_start(tmp_path, zk_chroot, zk_client_factory):
    zk = zk_client_factory()
    zk.create_top_level_paths()
    cluster_id = zk.get_or_create_cluster_id()
    d = tmp_path / "data"
    write_meta(d, 7, "AnotherClusterIdAAAAAA")
    line = fatal_line(start_failure(tmp_path, zk_chroot, [d], broker_id="7"))
    assert (f"The Cluster ID {cluster_id} doesn't match stored clusterId AnotherClusterIdAAAAAA in meta.properties"
            in line)
    assert "trying to join the wrong cluster" in line

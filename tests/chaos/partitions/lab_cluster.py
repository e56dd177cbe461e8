"""ZooKeeper and three brokers, each in a network namespace of its own (a NetLab), started with the project's
own LocalZooKeeper and LocalCluster (their ``command_prefix`` / ``broker_hosts``), plus a ZooKeeper client in
the test process (never cut) to see leaders and ISRs as the controller wrote them."""

from __future__ import annotations

import time
from pathlib import Path

from odradek.tools.local_cluster import LocalCluster, log_tail
from odradek.tools.local_zookeeper import LocalZooKeeper
from odradek.controller.zk_client import KafkaZkClient

from .netlab import NetLab

ZK_PORT, BROKER_PORT = 2181, 9092
SESSION_TIMEOUT_MS = 4000
# RELIABILITY.md's harness: short sessions and lag bounds so faults play out in seconds; the safety settings
# under test (RF 3, min ISR 2, no unclean election) also for the internal topics.
OVERRIDES = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "3000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "controlled.shutdown.retry.backoff.ms": "500",
    "auto.leader.rebalance.enable": "false",
}


def node(broker_id: int) -> str:
    return f"b{broker_id}"


class LabCluster:
    def __init__(self, data_dir: Path, brokers: int = 3, overrides: dict[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.broker_ids = list(range(brokers))
        self.lab = NetLab(["zk"] + [node(b) for b in self.broker_ids])
        self.overrides = {**OVERRIDES, **(overrides or {})}
        self.zookeeper: LocalZooKeeper | None = None
        self.cluster: LocalCluster | None = None
        self.zk: KafkaZkClient | None = None

    def start(self) -> "LabCluster":
        try:
            lab = self.lab.create()
            self.zookeeper = LocalZooKeeper(self.data_dir / "zookeeper", port=ZK_PORT, host=lab.address("zk"),
                                            command_prefix=lab.prefix("zk")).start(timeout=60)
            self.cluster = LocalCluster(
                self.data_dir / "cluster", len(self.broker_ids), zookeeper=self.zookeeper, base_port=BROKER_PORT,
                broker_overrides=self.overrides, broker_hosts=[lab.address(node(b)) for b in self.broker_ids],
                broker_command_prefixes=[lab.prefix(node(b)) for b in self.broker_ids]).start(timeout=120)
            self.zk = KafkaZkClient(self.cluster.zookeeper_connect, session_timeout_ms=30000,
                                    connection_timeout_ms=30000)
            self.zk.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Everything goes, whatever state it is in (a paused broker, cut links): the lab last."""
        try:
            if self.zk is not None:
                self.zk.close()
            if self.lab.created:
                self.lab.heal()
            if self.cluster is not None:
                self.cluster.stop(timeout=15.0)
            if self.zookeeper is not None:
                self.zookeeper.stop()
        finally:
            self.lab.destroy()

    def __enter__(self) -> "LabCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    # -- what ZooKeeper says --------------------------------------------------------------------------------------
    def partition_state(self, topic: str, partition: int):
        """(leader, leader epoch, isr) as last written to the partition's state znode."""
        state, _ = self.zk.get_partition_states([(topic, partition)])[(topic, partition)]
        return state.leader, state.leader_epoch, list(state.isr)

    def controller(self) -> int | None:
        return self.zk.get_controller_id()

    def healthy(self, topics: list[str]) -> bool:
        """Every broker up and registered, every partition of ``topics`` led and with its full ISR."""
        if not all(self.cluster.broker_alive(b) for b in self.broker_ids):
            return False
        if set(self.zk.get_all_brokers()) != set(self.broker_ids):
            return False
        assignments = self.zk.get_topic_assignments(topics)
        keys = [(t, p) for t, a in assignments.items() for p in a.partitions]
        states = self.zk.get_partition_states(keys)
        for key in keys:
            if key not in states:
                return False
            state, _ = states[key]
            replicas = assignments[key[0]].partitions[key[1]]
            if state.leader not in self.broker_ids or set(state.isr) != set(replicas):
                return False
        return True

    def wait_healthy(self, topics: list[str], timeout: float) -> float | None:
        """time.time() once healthy, None if not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.healthy(topics):
                    return time.time()
            except Exception:  # a ZooKeeper hiccup under load: ask again
                pass
            time.sleep(0.25)
        return None

    def log_excerpts(self, start: float, end: float, limit: int = 80) -> str:
        """Each broker's log lines stamped between ``start`` and ``end`` (time.time()), at most ``limit``."""
        parts = []
        for b in self.cluster.brokers:
            lines = lines_between(b.log_path, start, end)
            shown = lines if len(lines) <= limit else lines[:limit // 2] + ["..."] + lines[-limit // 2:]
            since, until = (time.strftime("%H:%M:%S", time.localtime(t)) for t in (start, end))
            parts.append(f"----- broker {b.broker_id} ({b.log_path}), {since} to {until} -----\n" + "\n".join(shown))
        return "\n".join(parts)

    def log_tails(self) -> str:
        return "\n".join(f"----- broker {b.broker_id} -----\n{log_tail(b.log_path, 40)}" for b in self.cluster.brokers)


def lines_between(path: Path, start: float, end: float) -> list[str]:
    """Lines of a broker log ("[YYYY-MM-DD HH:MM:SS,mmm] ...") whose stamp falls in [start, end]; lines without a
    stamp (tracebacks) go with the line before."""
    out, inside = [], False
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        if line.startswith("[") and len(line) > 24 and line[24] == "]":
            try:
                stamp = time.mktime(time.strptime(line[1:20], "%Y-%m-%d %H:%M:%S")) + int(line[21:24]) / 1000
                inside = start <= stamp <= end
            except ValueError:
                pass
        if inside:
            out.append(line)
    return out

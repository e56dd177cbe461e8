"""One write at a time: the latency of an acknowledged produce and what it costs each broker (figures printed,
nothing asserted).

    python benchmarks/bench_write_latency.py [--quick] [--rounds N] [--seconds S] [--baseline-python PY]

Three real brokers and a real ZooKeeper (LocalCluster). confluent-kafka (linger 0) sends one 100-byte record,
waits for its acknowledgement (flush), and sends the next, for ``--seconds`` per workload: acks=all to a
replication-factor-3 topic (min.insync.replicas 2: one replication round per write, the step a transaction
takes four times, see bench_transactions.py) and acks=1 to a replication-factor-1 topic (one request, no
replication). Printed per workload, medians over the rounds: p50 and p99 of one write, and the CPU (utime +
stime from /proc) per write of the partition's leader and of the two other brokers together.

``--baseline-python PY`` also starts a cluster whose brokers run under another interpreter (e.g. the venv of a
checkout of main) and measures both side by side, alternating their order round by round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import confluent_kafka

from bench_vs_tansu import format_table
from kafka_client_workloads import process_cpu_seconds
from odradek.tools.local_cluster import LocalCluster

RECORD = b"x" * 100
WARMUP = 200
WORKLOADS = (("acks=all, RF 3", "rf3", "all"), ("acks=1, RF 1", "rf1", "1"))


def start_cluster(workdir: Path, label: str, python: str | None) -> LocalCluster:
    cluster = LocalCluster(workdir / label, 3, broker_overrides={"zookeeper.session.timeout.ms": "6000"},
                           python=python)
    cluster.start()
    with cluster.client() as client:
        errors = client.create_topics({"rf3": (1, 3), "rf1": (1, 1)}, configs={"min.insync.replicas": "2"})
        if any(errors.values()):
            raise RuntimeError(f"CreateTopics: {errors}")
    return cluster


def leader_of(cluster: LocalCluster, topic: str) -> int:
    """The broker id leading partition 0, once every replica is in sync."""
    deadline = time.monotonic() + 60
    while True:
        with cluster.client() as client:
            info = client.metadata([topic]).topics[topic].partitions.get(0)
        if info is not None and info.leader >= 0 and sorted(info.isr) == sorted(info.replicas):
            return info.leader
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}-0: no leader with a full ISR after 60 s")
        time.sleep(0.1)


def serial_writes(cluster: LocalCluster, topic: str, acks: str, seconds: float) -> dict[str, float]:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks,
                                         "linger.ms": 0})
    for _ in range(WARMUP):  # connections, metadata, the followers' fetch sessions
        producer.produce(topic, RECORD, partition=0)
        producer.flush(10)
    leader = leader_of(cluster, topic)
    pids = {broker.broker_id: broker.process.pid for broker in cluster.brokers}
    before = {b: process_cpu_seconds(pid) for b, pid in pids.items()}
    latencies = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        began = time.perf_counter()
        producer.produce(topic, RECORD, partition=0)
        if producer.flush(10):
            raise RuntimeError(f"{topic}: a record was not acknowledged within 10 s")
        latencies.append((time.perf_counter() - began) * 1000)
    used = {b: (process_cpu_seconds(pid) - before[b]) * 1e6 / len(latencies) for b, pid in pids.items()}
    latencies.sort()
    return {"writes": len(latencies), "p50 ms": statistics.median(latencies),
            "p99 ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "leader µs/write": used[leader], "others µs/write": sum(v for b, v in used.items() if b != leader)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="per workload and round")
    parser.add_argument("--baseline-python", metavar="PY", help="also measure brokers run by this interpreter")
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s per workload")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 1, 3.0
    labels = ["this tree"] if args.baseline_python is None else ["baseline", "this tree"]
    pythons = {"this tree": None, "baseline": args.baseline_python}
    workdir = Path(tempfile.mkdtemp(prefix="odradek-bench-latency-"))
    clusters: dict[str, LocalCluster] = {}
    figures: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for label in labels:
            clusters[label] = start_cluster(workdir, label.replace(" ", "-"), pythons[label])
        print(f"3 brokers; one 100-byte record at a time (confluent-kafka, linger 0), {args.seconds:g} s per "
              f"workload, {args.rounds} round(s); clusters: {', '.join(labels)}", flush=True)
        for round_no in range(args.rounds):
            for label in labels if round_no % 2 == 0 else labels[::-1]:
                for name, topic, acks in WORKLOADS:
                    got = serial_writes(clusters[label], topic, acks, args.seconds)
                    figures.setdefault((label, name), []).append(got)
                    print(f"  round {round_no + 1} [{label}] {name:15} {got['writes']:6,d} writes  "
                          f"p50 {got['p50 ms']:.3f} ms  p99 {got['p99 ms']:.3f} ms  leader "
                          f"{got['leader µs/write']:.0f} µs  others {got['others µs/write']:.0f} µs", flush=True)
    finally:
        for cluster in clusters.values():
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    rows = []
    for name, _, _ in WORKLOADS:
        for figure in ("p50 ms", "p99 ms", "leader µs/write", "others µs/write"):
            values = [statistics.median(f[figure] for f in figures[(label, name)]) for label in labels]
            row = [f"{name}, {figure}"] + [f"{v:.3f}" if "ms" in figure else f"{v:.0f}" for v in values]
            if len(values) == 2:
                row.append(f"{values[1] / values[0]:.2f}")
            rows.append(row)
    print()
    print(format_table(["median over rounds"] + labels + (["ratio"] if len(labels) == 2 else []), rows))


if __name__ == "__main__":
    sys.exit(main())

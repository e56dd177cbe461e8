"""Transaction latency and transactional throughput (issues 6 and 21; figures printed, nothing asserted).

    python benchmarks/bench_transactions.py [--quick] [--rounds N] [--serial N] [--records N] [--brokers N]
                                            [--baseline-python PY] [--trace]

One real ZooKeeper and real broker processes (LocalCluster; 3 brokers by default, topics of replication
factor = brokers, min.insync.replicas 2 when RF 3). Two clients run every workload: confluent-kafka (librdkafka;
little client cost, so the broker's share shows) and our own blocking `Producer`.

- serial:     one-record transactions back to back (begin, produce, commit, each awaited): transactions per
              second, p50 and p99 of one transaction;
- idempotent: 100-byte records with enable.idempotence, acks=all, no transactions (the baseline);
- txn x100:   the same records in transactions of 100; txn x1000: of 1,000 (as a ratio to idempotent).
  Each producer sends one record (in a transaction when transactional) before the clock starts, so no rate
  includes the producer's start (librdkafka's idempotent producer waits ~500 ms for its producer id).

Each round uses fresh topics and rotates the order of the record workloads so the machine's drift favours none;
the tables show medians over the rounds. Each fresh topic is warmed up first (one acks=all record per partition,
untimed by the workloads; its time is printed as "new topic"), so the workloads measure the steady state.

``--baseline-python PY`` starts a second cluster whose brokers run under another interpreter, e.g. the venv of
a checkout of main, and measures it side by side with this tree, round by round (the clients are this tree's).
``--trace`` instead runs only serial transactions on one cluster with the brokers' transaction trace on and
prints where a transaction's time goes (benchmarks/txn_trace_breakdown.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

import confluent_kafka

from bench_vs_tansu import format_table
from odradek.clients import Producer
from odradek.tools.local_cluster import LocalCluster
from txn_trace_breakdown import breakdown, cycles, format_breakdown, parse

PARTITIONS = 3
RECORD_SIZE = 100
WARMUP = 10  # serial transactions not timed (connections, metadata, the coordinator's first lookups)
BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": "6000"}
# (label, records per transaction; None = no transaction)
WORKLOADS = (("idempotent", None), ("txn x100", 100), ("txn x1000", 1000))
TRACE_LOGGER = "odradek.broker.coordinator.transaction.trace"


# -- serial one-record transactions ------------------------------------------------------------------

def confluent_serial(bootstrap: str, topic: str, count: int) -> list[float]:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                                         "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    payload = b"x" * RECORD_SIZE

    def one() -> None:
        producer.begin_transaction()
        producer.produce(topic, payload)
        producer.commit_transaction(30)
    return _serial(one, count)


def own_serial(bootstrap: str, topic: str, count: int) -> list[float]:
    with Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=0,
                  transactional_id=f"bench-{uuid.uuid4().hex[:8]}") as producer:
        producer.init_transactions()
        payload = b"x" * RECORD_SIZE

        def one() -> None:
            producer.begin_transaction()
            producer.send(topic, payload)
            producer.commit_transaction()
        return _serial(one, count)


def _serial(one: Callable[[], None], count: int) -> list[float]:
    """Milliseconds of each of ``count`` transactions, after WARMUP untimed ones."""
    for _ in range(WARMUP):
        one()
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        one()
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def serial_figures(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {"txn/s": len(ordered) / (sum(ordered) / 1000), "p50 ms": statistics.median(ordered),
            "p99 ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]}


# -- records in transactions against idempotent ---------------------------------------------------------

def confluent_run(bootstrap: str, topic: str, count: int, per_txn: int | None) -> float:
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
              "queue.buffering.max.messages": 1_000_000}
    if per_txn:
        config["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer(config)
    if per_txn:
        producer.init_transactions(30)
    payload = b"x" * RECORD_SIZE

    def send(n: int) -> None:
        for _ in range(n):
            while True:
                try:
                    producer.produce(topic, payload)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.poll(0)

    steps = (send, producer.begin_transaction, lambda: producer.commit_transaction(60), lambda: producer.flush(60))
    timed(per_txn, 1, *steps)  # warm-up (untimed): producer id, connections to the leaders
    started = time.perf_counter()
    timed(per_txn, count, *steps)
    seconds = time.perf_counter() - started
    return count / seconds


def own_run(bootstrap: str, topic: str, count: int, per_txn: int | None) -> float:
    config = {"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 5}
    if per_txn:
        config["transactional_id"] = f"bench-{uuid.uuid4().hex[:8]}"
    with Producer(**config) as producer:
        if per_txn:
            producer.init_transactions()
        payload = b"x" * RECORD_SIZE

        def send(n: int) -> None:
            for _ in range(n):
                producer.send(topic, payload)

        steps = (send, producer.begin_transaction, producer.commit_transaction, producer.flush)
        timed(per_txn, 1, *steps)  # warm-up (untimed): producer id, connections to the leaders
        started = time.perf_counter()
        timed(per_txn, count, *steps)
        return count / (time.perf_counter() - started)


def timed(per_txn: int | None, count: int, send: Callable[[int], None], begin: Callable[[], None],
          commit: Callable[[], None], flush: Callable[[], None]) -> None:
    """Produce ``count`` records, in transactions of ``per_txn`` when given (commit waits for delivery)."""
    if not per_txn:
        send(count)
        flush()
        return
    for start in range(0, count, per_txn):
        begin()
        send(min(per_txn, count - start))
        commit()


CLIENTS = (("confluent-kafka", confluent_serial, confluent_run), ("odradek Producer", own_serial, own_run))


# -- clusters -------------------------------------------------------------------------------------------

def create_topic(cluster: LocalCluster, topic: str, replication: int) -> None:
    configs = {"min.insync.replicas": "2"} if replication >= 3 else {}
    with cluster.client() as client:
        errors = client.create_topics({topic: (PARTITIONS, replication)}, configs=configs)
        if errors[topic]:
            raise RuntimeError(f"CreateTopics {topic}: error {errors[topic]}")


def fresh_topic(cluster: LocalCluster, brokers: int, first_produce_ms: list[float] | None = None) -> str:
    """A new topic, warmed up: one acks=all record per partition (untimed by the workloads), so every
    follower fetches it before a workload starts. ``first_produce_ms`` collects how long that took."""
    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, brokers)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                         "linger.ms": 0})
    started = time.perf_counter()
    for partition in range(PARTITIONS):
        producer.produce(topic, b"warm-up", partition=partition)
    if producer.flush(30):
        raise RuntimeError(f"warming up {topic}: records not acknowledged within 30 s")
    if first_produce_ms is not None:
        first_produce_ms.append((time.perf_counter() - started) * 1000)
    return topic


def start_cluster(workdir: Path, label: str, brokers: int, python: str | None, trace: bool = False) -> LocalCluster:
    cluster = LocalCluster(workdir / label, brokers, broker_overrides=BROKER_OVERRIDES, python=python)
    saved = os.environ.get("ODRADEK_LOG_LEVELS")
    if trace:  # the brokers inherit this process's environment
        os.environ["ODRADEK_LOG_LEVELS"] = ",".join(filter(None, [saved, f"{TRACE_LOGGER}=DEBUG"]))
    try:
        cluster.start()
    finally:
        if saved is None:
            os.environ.pop("ODRADEK_LOG_LEVELS", None)
        else:
            os.environ["ODRADEK_LOG_LEVELS"] = saved
    return cluster


# -- the two modes --------------------------------------------------------------------------------------

def measure(args: argparse.Namespace, workdir: Path) -> None:
    labels = ["this tree"] if args.baseline_python is None else ["baseline", "this tree"]
    pythons = {"this tree": None, "baseline": args.baseline_python}
    clusters: dict[str, LocalCluster] = {}
    serial: dict[tuple[str, str], list[dict[str, float]]] = {}
    rates: dict[tuple[str, str, str], list[float]] = {}
    warm_up: dict[str, list[float]] = {label: [] for label in labels}
    try:
        for label in labels:
            clusters[label] = start_cluster(workdir, label.replace(" ", "-"), args.brokers, pythons[label])
        print(f"{args.brokers} broker(s), RF {args.brokers}, {PARTITIONS} partitions; per round {args.serial} serial "
              f"one-record transactions and {args.records:,} records of {RECORD_SIZE} B per record workload; "
              f"{args.rounds} round(s); clusters: {', '.join(labels)}", flush=True)
        for round_no in range(args.rounds):
            order = WORKLOADS[round_no % len(WORKLOADS):] + WORKLOADS[:round_no % len(WORKLOADS)]
            for label in labels if round_no % 2 == 0 else labels[::-1]:
                cluster = clusters[label]
                for client, serial_run, records_run in CLIENTS:
                    figures = serial_figures(serial_run(
                        cluster.bootstrap_servers, fresh_topic(cluster, args.brokers, warm_up[label]), args.serial))
                    serial.setdefault((label, client), []).append(figures)
                    print(f"  round {round_no + 1} [{label}] {client:17} serial    {figures['txn/s']:7.0f} txn/s  "
                          f"p50 {figures['p50 ms']:6.2f} ms  p99 {figures['p99 ms']:6.2f} ms", flush=True)
                    for workload, per_txn in order:
                        rate = records_run(cluster.bootstrap_servers,
                                           fresh_topic(cluster, args.brokers, warm_up[label]), args.records, per_txn)
                        rates.setdefault((label, client, workload), []).append(rate)
                        print(f"  round {round_no + 1} [{label}] {client:17} {workload:9} {rate:>10,.0f} rec/s",
                              flush=True)
    finally:
        for cluster in clusters.values():
            cluster.stop()
    print()
    print(format_table(["serial one-record transactions (median)"] + labels, serial_rows(serial, labels)))
    print()
    print(format_table(["records (median)"] + labels, rate_rows(rates, labels)))
    print()
    print(format_table(["new topic (median)"] + labels, [
        [f"first acks=all record to each of its {PARTITIONS} partitions, ms"] +
        [f"{statistics.median(warm_up[label]):.1f}" for label in labels]]))


def serial_rows(serial: dict, labels: list[str]) -> list[list[str]]:
    rows = []
    for client, _, _ in CLIENTS:
        for figure, fmt in (("txn/s", "{:,.0f}"), ("p50 ms", "{:.2f}"), ("p99 ms", "{:.2f}")):
            rows.append([f"{client}, {figure}"] + [
                fmt.format(statistics.median(f[figure] for f in serial[(label, client)])) for label in labels])
    return rows


def rate_rows(rates: dict, labels: list[str]) -> list[list[str]]:
    rows = []
    for client, _, _ in CLIENTS:
        base = {label: statistics.median(rates[(label, client, "idempotent")]) for label in labels}
        for workload, per_txn in WORKLOADS:
            medians = {label: statistics.median(rates[(label, client, workload)]) for label in labels}
            rows.append([f"{client}, {workload} rec/s"] + [f"{medians[label]:,.0f}" for label in labels])
            if per_txn:
                rows.append([f"{client}, {workload} / idempotent"] +
                            [f"{medians[label] / base[label]:.2f}" for label in labels])
    return rows


def trace(args: argparse.Namespace, workdir: Path) -> None:
    cluster = start_cluster(workdir, "traced", args.brokers, None, trace=True)
    try:
        print(f"{args.brokers} broker(s), RF {args.brokers}; {args.serial} serial one-record transactions per "
              "client with the brokers' transaction trace on (its logging is included in the times)", flush=True)
        for client, serial_run, _ in CLIENTS:
            started = time.monotonic() * 1000
            figures = serial_figures(serial_run(cluster.bootstrap_servers, fresh_topic(cluster, args.brokers),
                                                args.serial))
            ended = time.monotonic() * 1000
            time.sleep(0.5)  # the last lines reach the logs
            lines = [line for broker in range(args.brokers)
                     for line in cluster.broker_log(broker).read_text(errors="replace").splitlines()]
            found = [c for producer_id, timeline in parse(lines).items() if producer_id >= 0
                     for c in cycles([(t, e) for t, e in timeline if started <= t <= ended])[WARMUP:]]
            print(f"\n{client}: {figures['txn/s']:.0f} txn/s, p50 {figures['p50 ms']:.2f} ms, "
                  f"p99 {figures['p99 ms']:.2f} ms; {len(found)} traced cycles")
            if found:
                print(format_breakdown(breakdown(found)))
    finally:
        cluster.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serial", type=int, default=300, help="timed one-record transactions per client and round")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--baseline-python", metavar="PY",
                        help="also measure a cluster whose brokers run with this interpreter (another checkout)")
    parser.add_argument("--trace", action="store_true", help="print where a serial transaction's time goes")
    parser.add_argument("--quick", action="store_true", help="1 round, 100 serial transactions, 3,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.serial, args.records = 1, 100, 3000
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="odradek-bench-txn-"))
    try:
        (trace if args.trace else measure)(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Transactional produce against plain idempotent produce (issue 6; figures printed, nothing asserted).

    python benchmarks/bench_transactions.py [--quick] [--rounds N] [--records N] [--brokers N]

One real ZooKeeper and real broker processes (LocalCluster; 3 brokers by default, topics of replication
factor = brokers, min.insync.replicas 2 when RF 3). Each round produces the same number of 100-byte records
to a fresh 3-partition topic in three ways, in an order that rotates between rounds so that the machine's
drift does not favour one:

- idempotent: enable.idempotence, acks=all, no transactions (the baseline);
- txn x100:   a transaction per 100 records (begin, produce, commit);
- txn x1000:  a transaction per 1,000 records.

Two clients run every workload: confluent-kafka (librdkafka; little client cost, so the broker's share
shows) and our own blocking `Producer`. The table shows the median records/s and the ratio to the same
client's idempotent baseline; the cost of a transaction (AddPartitionsToTxn, EndTxn, PrepareCommit written
with acks=all, markers to every partition, CompleteCommit) is amortized over its records.
"""

from __future__ import annotations

import argparse
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
from odradek.clients.cli.local_cluster import LocalCluster

PARTITIONS = 3
RECORD_SIZE = 100
BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": "6000"}
# (label, records per transaction; None = no transaction)
WORKLOADS = (("idempotent", None), ("txn x100", 100), ("txn x1000", 1000))


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

    started = time.perf_counter()
    timed(per_txn, count, send, producer.begin_transaction, lambda: producer.commit_transaction(60),
          lambda: producer.flush(60))
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

        started = time.perf_counter()
        timed(per_txn, count, send, producer.begin_transaction, producer.commit_transaction, producer.flush)
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


CLIENTS = (("confluent-kafka", confluent_run), ("odradek Producer", own_run))


def create_topic(cluster: LocalCluster, topic: str, replication: int) -> None:
    configs = {"min.insync.replicas": "2"} if replication >= 3 else {}
    with cluster.client() as client:
        errors = client.create_topics({topic: (PARTITIONS, replication)}, configs=configs)
        if errors[topic]:
            raise RuntimeError(f"CreateTopics {topic}: error {errors[topic]}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round of 3,000 records (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.records = 1, 3000
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="odradek-bench-txn-"))
    cluster = LocalCluster(workdir / "cluster", args.brokers, broker_overrides=BROKER_OVERRIDES)
    results: dict[tuple[str, str], list[float]] = {}
    try:
        cluster.start()
        print(f"{args.brokers} broker(s), RF {args.brokers}, {PARTITIONS} partitions, {args.records:,} records of "
              f"{RECORD_SIZE} B per run, {args.rounds} round(s)", flush=True)
        for round_no in range(args.rounds):
            order = WORKLOADS[round_no % len(WORKLOADS):] + WORKLOADS[:round_no % len(WORKLOADS)]
            for client_label, run in CLIENTS:
                for label, per_txn in order:
                    topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
                    create_topic(cluster, topic, args.brokers)
                    rate = run(cluster.bootstrap_servers, topic, args.records, per_txn)
                    results.setdefault((client_label, label), []).append(rate)
                    print(f"  round {round_no + 1}: {client_label:17} {label:10} {rate:>10,.0f} rec/s", flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    rows = []
    for client_label, _ in CLIENTS:
        base = statistics.median(results[(client_label, "idempotent")])
        for label, _ in WORKLOADS:
            median = statistics.median(results[(client_label, label)])
            rows.append([f"{client_label}, {label}", f"{median:,.0f}", f"{median / base:.2f}"])
    print()
    print(format_table(["workload (median)", "rec/s", "vs idempotent"], rows))


if __name__ == "__main__":
    sys.exit(main())

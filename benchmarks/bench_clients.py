"""Our clients against confluent-kafka and kafka-python on the same Odradek cluster (figures printed, nothing asserted).

    python benchmarks/bench_clients.py [--quick] [--rounds N] [--records N] [--brokers 1|3] [--clients a,b,...]
                                       [--no-spark]

Workloads (3 partitions; replication factor 1, or 3 with --brokers 3): produce 100-byte records without
key with acks=1 and with acks=all, and consume records from earliest with assign (no group). Every
producer runs with linger.ms 5, idempotence off and its library's other defaults; a fresh topic per
round and client. Clients (each takes the workloads it has a way for):

* odradek-sync: ``Producer`` (kafka-python's shape: ``send`` in a loop, ``flush``) / ``Consumer.poll``;
* odradek-batch: ``Producer.send_batch`` of all the records in one call / ``Consumer.poll_arrow``
  (one pyarrow.RecordBatch per partition, Spark's Kafka schema);
* odradek-iter: ``for record in consumer`` on the blocking Consumer (consume only);
* odradek-aio: ``AIOProducer`` (``await send`` in a loop, the loop yielded every 1,000 records, ``flush``)
  / ``AIOConsumer.getmany``;
* confluent-kafka (librdkafka): ``produce``/``poll`` with delivery reports for errors only / ``consume(1000)``
  (fetch.queue.backoff.ms 10, as bench_vs_tansu.py);
* kafka-python 3: ``send`` in a loop, ``flush`` / ``poll(max_records=...)``.

Each measurement runs in a process of its own (this script with the internal ``--client`` option), after
the connection and the topic's metadata are set up (one warm-up record per partition for producers; a
metadata request and the assignment for consumers, whose window opens when their first record arrives,
so start-up is not counted); the window ends when the last record is acknowledged (producers) or read
(consumers). The client's CPU and the brokers' CPU (/proc) over the window are recorded. ROUNDS rounds,
the client order rotating; the table shows medians of records/s and CPU per record, and each client's ratio
to confluent-kafka. On a 2-core machine client and broker share the cores: the client's own CPU per record
is the figure that compares the client libraries best.

Then (unless --no-spark, or without pyspark) a Spark batch read of a 2-partition topic of --spark-records
records (default 1,000,000: a query's fixed costs are about half a second) on ``local[2]`` (``spark.read.format("odradek")`` ... ``count``/``sum(length(value))``, after a warm-up
query), beside our Consumer.poll reading that topic; its CPU is the Spark driver's process tree (JVM and
Python workers). The last table puts the figures against issue 17's goals.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_tansu import format_table, run_json_process  # noqa: E402
from kafka_client_workloads import own_cpu_seconds, process_cpu_seconds  # noqa: E402

PARTITIONS = 3
RECORD_SIZE = 100
LINGER_MS = 5
CLIENTS = ("odradek-sync", "odradek-batch", "odradek-iter", "odradek-aio", "confluent-kafka", "kafka-python")
SPARK_PARTITIONS = 2
# Issue 17's starting point (the same benchmark before the compiled codec): our consumer's records/s.
CONSUMER_BEFORE = 559_000
WORKLOADS = (("produce", 1, "produce acks=1"), ("produce", -1, "produce acks=all"), ("consume", None, "consume"))
BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": "6000", "controlled.shutdown.retry.backoff.ms": "500"}


# ------------------------------------------------------------------------------------------ client process

class Window:
    """Wall time and CPU (this client, every broker) between start() and stop()."""

    def __init__(self, broker_pids: list[int], client_cpu=own_cpu_seconds) -> None:
        self.pids = broker_pids
        self.client_cpu = client_cpu

    def start(self) -> None:
        self.brokers = sum(process_cpu_seconds(pid) for pid in self.pids)
        self.client = self.client_cpu()
        self.began = time.perf_counter()

    def stop(self, records: int) -> dict:
        return {"seconds": time.perf_counter() - self.began, "records": records,
                "client_cpu": self.client_cpu() - self.client,
                "broker_cpu": sum(process_cpu_seconds(pid) for pid in self.pids) - self.brokers}


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU of this process and all its descendants that are alive (Spark: its JVM and Python workers)."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    text = stat.read()
            except OSError:
                continue
            parents[int(entry)] = int(text[text.rindex(b")") + 2:].split()[1])
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    total = 0.0
    for pid in tree:
        try:
            total += process_cpu_seconds(pid)
        except OSError:
            pass
    return total


def _odradek_producer(spec: dict):
    """Our blocking Producer, connected, with one record written to each partition (not timed)."""
    from odradek.clients.producer.sync_producer import Producer

    producer = Producer(bootstrap_servers=spec["bootstrap"], acks=spec["acks"], linger_ms=LINGER_MS,
                        enable_idempotence=False)
    for partition in range(spec["partitions"]):
        producer.send(spec["topic"], b"v" * RECORD_SIZE, partition=partition)
    producer.flush()
    return producer


def produce_odradek_sync(spec: dict, window: Window) -> dict:
    value = b"v" * RECORD_SIZE
    with _odradek_producer(spec) as producer:
        window.start()
        send = producer.send
        futures = [send(spec["topic"], value) for _ in range(spec["count"])]
        producer.flush()
        failed = [f for f in futures if f.exception() is not None]
        result = window.stop(spec["count"])
    if failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[0].exception()}")
    return result


def produce_odradek_batch(spec: dict, window: Window) -> dict:
    with _odradek_producer(spec) as producer:
        values = [b"v" * RECORD_SIZE] * spec["count"]
        window.start()
        result = producer.send_batch(spec["topic"], values).get(600)
        return window.stop(result.records)


def produce_odradek_aio(spec: dict, window: Window) -> dict:
    from odradek.clients.producer.producer import AIOProducer

    async def run() -> dict:
        value = b"v" * RECORD_SIZE
        async with AIOProducer(bootstrap_servers=spec["bootstrap"], acks=spec["acks"], linger_ms=LINGER_MS,
                               enable_idempotence=False) as producer:
            for partition in range(spec["partitions"]):
                await producer.send(spec["topic"], value, partition=partition)
            await producer.flush()
            window.start()
            futures = []
            for i in range(spec["count"]):
                futures.append(await producer.send(spec["topic"], value))
                if i % 1000 == 999:
                    await asyncio.sleep(0)
            await producer.flush()
            result = window.stop(spec["count"])
            failed = [f for f in futures if f.exception() is not None]
            if failed:
                raise RuntimeError(f"{len(failed)} records failed: {failed[0].exception()}")
            return result

    return asyncio.run(run())


def produce_confluent(spec: dict, window: Window) -> dict:
    from confluent_kafka import Producer

    failures: list[str] = []
    producer = Producer({"bootstrap.servers": spec["bootstrap"], "acks": spec["acks"], "linger.ms": LINGER_MS,
                         "enable.idempotence": False, "delivery.report.only.error": True,
                         "on_delivery": lambda err, msg: failures.append(str(err)) if err else None})
    value = b"v" * RECORD_SIZE
    for partition in range(spec["partitions"]):
        producer.produce(spec["topic"], value, partition=partition)
    producer.flush(60)
    window.start()
    produce, poll = producer.produce, producer.poll
    for i in range(spec["count"]):
        while True:
            try:
                produce(spec["topic"], value)
                break
            except BufferError:  # the local queue is full: let librdkafka drain it
                poll(0.005)
        if not i & 0x3FFF:
            poll(0)
    left = producer.flush(300)
    result = window.stop(spec["count"])
    if left or failures:
        raise RuntimeError(f"{left} undelivered, {len(failures)} failed: {failures[:1]}")
    return result


def produce_kafka_python(spec: dict, window: Window) -> dict:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=spec["bootstrap"], acks=spec["acks"], linger_ms=LINGER_MS,
                             enable_idempotence=False)
    value = b"v" * RECORD_SIZE
    try:
        for partition in range(spec["partitions"]):
            producer.send(spec["topic"], value, partition=partition)
        producer.flush()
        window.start()
        futures = [producer.send(spec["topic"], value) for _ in range(spec["count"])]
        producer.flush()
        result = window.stop(spec["count"])
        failed = [f for f in futures if f.failed()]
        if failed:
            raise RuntimeError(f"{len(failed)} records failed: {failed[0].exception}")
        return result
    finally:
        producer.close()


def _partitions(spec: dict, make) -> list:
    return [make(spec["topic"], p) for p in range(spec["partitions"])]


def consume_odradek_sync(spec: dict, window: Window) -> dict:
    from odradek.clients.consumer.sync_consumer import Consumer
    from odradek.clients.types import TopicPartition

    with Consumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest") as consumer:
        consumer.partitions_for_topic(spec["topic"])  # connection and metadata before the window
        consumer.assign(_partitions(spec, TopicPartition))
        return _poll_all(consumer, spec["count"], window)


def _poll_all(consumer, count: int, window: Window) -> dict:
    """The timed window of a kafka-python-shaped consumer (ours or kafka-python): poll until ``count`` read,
    from the first records on."""
    read = 0
    while not read:
        read = sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
    window.start()
    while read < count:
        read += sum(len(records) for records in consumer.poll(timeout_ms=1000).values())
    return window.stop(read)


def consume_odradek_iter(spec: dict, window: Window) -> dict:
    from odradek.clients.consumer.sync_consumer import Consumer
    from odradek.clients.types import TopicPartition

    with Consumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest") as consumer:
        consumer.partitions_for_topic(spec["topic"])
        consumer.assign(_partitions(spec, TopicPartition))
        records = iter(consumer)
        next(records)
        window.start()
        read, count = 1, spec["count"]
        for _ in records:
            read += 1
            if read >= count:
                break
        return window.stop(read)


def consume_odradek_batch(spec: dict, window: Window) -> dict:
    from odradek.clients.consumer.sync_consumer import Consumer
    from odradek.clients.types import TopicPartition

    with Consumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest") as consumer:
        consumer.partitions_for_topic(spec["topic"])
        consumer.assign(_partitions(spec, TopicPartition))
        read = 0
        while not read:
            read = sum(batch.num_rows for batch in consumer.poll_arrow(timeout_ms=1000).values())
        window.start()
        while read < spec["count"]:
            read += sum(batch.num_rows for batch in consumer.poll_arrow(timeout_ms=1000).values())
        return window.stop(read)


def consume_odradek_aio(spec: dict, window: Window) -> dict:
    from odradek.clients.consumer.consumer import AIOConsumer
    from odradek.clients.types import TopicPartition

    async def run() -> dict:
        async with AIOConsumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest") as consumer:
            await consumer.partitions_for_topic(spec["topic"])
            consumer.assign(_partitions(spec, TopicPartition))
            read = 0
            while not read:
                read = sum(len(records) for records in (await consumer.getmany(timeout_ms=1000)).values())
            window.start()
            while read < spec["count"]:
                read += sum(len(records) for records in (await consumer.getmany(timeout_ms=1000)).values())
            return window.stop(read)

    return asyncio.run(run())


def consume_confluent(spec: dict, window: Window) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.auto.offset.store": False,
                         "fetch.queue.backoff.ms": 10})
    try:
        consumer.list_topics(spec["topic"], timeout=30)
        consumer.assign(_partitions(spec, lambda t, p: TopicPartition(t, p, OFFSET_BEGINNING)))
        read = 0
        while not read:
            read = sum(1 for message in consumer.consume(1000, 1.0) if message.error() is None)
        window.start()
        while read < spec["count"]:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    read += 1
        return window.stop(read)
    finally:
        consumer.close()


def consume_kafka_python(spec: dict, window: Window) -> dict:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=spec["bootstrap"], auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        consumer.partitions_for_topic(spec["topic"])
        consumer.assign(_partitions(spec, TopicPartition))
        return _poll_all(consumer, spec["count"], window)
    finally:
        consumer.close()


def read_spark(spec: dict, window: Window) -> dict:
    """A Spark batch read of the topic on local[2] after a warm-up query; CPU of the whole process tree."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from odradek.spark_connector import use_this_python_for_workers

    use_this_python_for_workers()

    spark = (SparkSession.builder.master("local[2]").appName("bench-clients").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    def read() -> int:
        frame = (spark.read.format("odradek").option("kafka.bootstrap.servers", spec["bootstrap"])
                 .option("subscribe", spec["topic"]).load())
        row = frame.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
        expected = spec["count"] + spec["partitions"]  # the producer's warm-up wrote one record per partition
        if row.n != expected or row.bytes != expected * RECORD_SIZE:
            raise RuntimeError(f"spark read {row.n} rows ({row.bytes} bytes), expected {expected}")
        return row.n

    try:
        read()  # warm-up: JVM, Python workers, imports
        window.client_cpu = tree_cpu_seconds
        window.start()
        return window.stop(read())
    finally:
        spark.stop()


RUNNERS = {
    ("produce", "odradek-sync"): produce_odradek_sync, ("produce", "odradek-batch"): produce_odradek_batch,
    ("produce", "odradek-aio"): produce_odradek_aio,
    ("produce", "confluent-kafka"): produce_confluent, ("produce", "kafka-python"): produce_kafka_python,
    ("consume", "odradek-sync"): consume_odradek_sync, ("consume", "odradek-batch"): consume_odradek_batch,
    ("consume", "odradek-iter"): consume_odradek_iter, ("consume", "odradek-aio"): consume_odradek_aio,
    ("consume", "confluent-kafka"): consume_confluent, ("consume", "kafka-python"): consume_kafka_python,
    ("spark", "spark"): read_spark,
}


def client_main(spec: dict) -> None:
    result = RUNNERS[(spec["kind"], spec["client"])](spec, Window(spec["broker_pids"]))
    print(json.dumps(result))


def run_client(spec: dict, timeout: float = 900.0) -> dict:
    return run_json_process([__file__, "--client", json.dumps(spec)], f"{spec['client']} {spec['kind']}", timeout,
                            stderr_lines=8)


# ---------------------------------------------------------------------------------------------- the run

def create_topic(cluster, topic: str, replication: int, partitions: int = PARTITIONS) -> None:
    from odradek.clients.admin.client import Admin, NewTopic

    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication)])
    deadline = time.monotonic() + 60
    with cluster.client() as client:
        while True:  # every partition led and its ISR full before the clock runs
            metadata = client.metadata([topic])
            info = metadata.topics.get(topic)
            if (info is not None and len(info.partitions) == partitions
                    and all(p.leader in metadata.brokers and len(p.isr) == replication
                            for p in info.partitions.values())):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} not ready: {info}")
            time.sleep(0.1)


def measure(cluster, args: argparse.Namespace) -> dict[tuple[str, str], list[dict]]:
    pids = [broker.process.pid for broker in cluster.brokers]
    replication = min(args.brokers, 3)
    results: dict[tuple[str, str], list[dict]] = {}
    consume_topic = f"bench-clients-consume-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, consume_topic, replication)
    base = {"bootstrap": cluster.bootstrap_servers, "count": args.records, "broker_pids": pids,
            "partitions": PARTITIONS}
    run_client({**base, "kind": "produce", "client": "confluent-kafka", "topic": consume_topic, "acks": 1})
    for round_ in range(args.rounds):
        order = args.clients[round_ % len(args.clients):] + args.clients[:round_ % len(args.clients)]
        for kind, acks, label in WORKLOADS:
            for client in order:
                if (kind, client) not in RUNNERS:
                    continue
                spec = {**base, "kind": kind, "client": client, "acks": acks, "topic": consume_topic}
                if kind == "produce":
                    spec["topic"] = f"bench-clients-{uuid.uuid4().hex[:8]}"
                    create_topic(cluster, spec["topic"], replication)
                record(results, label, client, spec, f"round {round_ + 1}/{args.rounds}")
    if args.spark:
        spark_topic = f"bench-clients-spark-{uuid.uuid4().hex[:6]}"
        create_topic(cluster, spark_topic, replication, SPARK_PARTITIONS)
        spark_base = {**base, "topic": spark_topic, "partitions": SPARK_PARTITIONS, "acks": 1,
                      "count": args.spark_records}
        run_client({**spark_base, "kind": "produce", "client": "confluent-kafka"})
        for round_ in range(args.rounds):
            for client, kind in (("odradek-sync", "consume"), ("spark", "spark")):
                record(results, f"read {SPARK_PARTITIONS} partitions", client, {**spark_base, "kind": kind,
                                                                               "client": client},
                       f"round {round_ + 1}/{args.rounds}")
    return results


def record(results: dict, label: str, client: str, spec: dict, when: str) -> None:
    try:
        result = run_client(spec)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"{when} {label} {client}: {exc}", file=sys.stderr)
        return
    results.setdefault((label, client), []).append(result)
    print(f"{when}  {label:<17} {client:<16} {result['records'] / result['seconds']:>10,.0f} rec/s", flush=True)


def medians(results: dict[tuple[str, str], list[dict]]) -> dict[tuple[str, str], dict[str, float]]:
    return {key: {"rec/s": statistics.median(r["records"] / r["seconds"] for r in rounds),
                  "client": statistics.median(r["client_cpu"] / r["records"] * 1e6 for r in rounds),
                  "broker": statistics.median(r["broker_cpu"] / r["records"] * 1e6 for r in rounds)}
            for key, rounds in results.items() if rounds}


def summary(results: dict[tuple[str, str], list[dict]], args: argparse.Namespace) -> str:
    header = ["workload", "client", "rec/s", "MB/s", "client µs/rec", "broker µs/rec", "rec/s vs confluent",
              "client CPU vs confluent"]
    rows = []
    figures = medians(results)
    labels = [label for _, _, label in WORKLOADS] + [f"read {SPARK_PARTITIONS} partitions"]
    for label in labels:
        base = figures.get((label, "confluent-kafka"))
        for client in [*args.clients, "spark"]:
            f = figures.get((label, client))
            if f is None:
                continue
            rows.append([label, client, f"{f['rec/s']:,.0f}", f"{f['rec/s'] * RECORD_SIZE / 1e6:.1f}",
                         f"{f['client']:.1f}", f"{f['broker']:.1f}",
                         f"{f['rec/s'] / base['rec/s']:.2f}×" if base else "-",
                         f"{f['client'] / base['client']:.2f}×" if base and base["client"] else "-"])
    return format_table(header, rows)


def goals(results: dict[tuple[str, str], list[dict]]) -> str:
    """Issue 17's table: ours against confluent-kafka's in the same run (acks=1), and Spark's read."""
    figures = medians(results)
    produce, consume, spark = "produce acks=1", "consume", f"read {SPARK_PARTITIONS} partitions"

    def ratio(ours: tuple[str, str], theirs: tuple[str, str] | None, goal: str, their_rate: float | None = None):
        mine, other = figures.get(ours), figures.get(theirs) if theirs else None
        rate = their_rate if their_rate is not None else (other["rec/s"] if other else None)
        if mine is None or not rate:
            return None
        cpu = f"{mine['client']:.2f} / {other['client']:.2f}" if other else f"{mine['client']:.2f} / -"
        return [f"{mine['rec/s'] / rate:.2f}×", goal, f"{mine['rec/s']:,.0f}", cpu]

    lines = [
        ("our Producer send() / confluent-kafka produce()", ratio((produce, "odradek-sync"),
                                                                  (produce, "confluent-kafka"), "≥ 0.5×")),
        ("our send_batch / confluent-kafka produce()", ratio((produce, "odradek-batch"),
                                                             (produce, "confluent-kafka"), "≥ 1.0× (stretch 2×)")),
        ("our Consumer iteration / confluent-kafka consume()", ratio((consume, "odradek-iter"),
                                                                     (consume, "confluent-kafka"), "≥ 1.0×")),
        ("our poll_arrow / confluent-kafka consume()", ratio((consume, "odradek-batch"),
                                                             (consume, "confluent-kafka"), "≥ 3×")),
        (f"Spark batch read, {SPARK_PARTITIONS} partitions / our consumer today ({CONSUMER_BEFORE:,} rec/s)",
         ratio((spark, "spark"), None, "≥ 4× (≥ 1 M rows/s)", CONSUMER_BEFORE)),
        (f"Spark batch read, {SPARK_PARTITIONS} partitions / our Consumer.poll on that topic now",
         ratio((spark, "spark"), (spark, "odradek-sync"), "-")),
    ]
    header = ["measure", "ratio", "goal", "ours rec/s", "client µs/rec ours / theirs"]
    return format_table(header, [[name, *row] for name, row in lines if row is not None])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 20,000 records, one round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000, help="records per measurement (default 200,000)")
    parser.add_argument("--brokers", type=int, default=1, choices=(1, 3),
                        help="1 broker (replication factor 1) or 3 (replication factor 3)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"a subset of {','.join(CLIENTS)}")
    parser.add_argument("--no-spark", dest="spark", action="store_false", help="skip the Spark batch read")
    parser.add_argument("--spark-records", type=int, default=1_000_000,
                        help="records of the Spark read's topic (default 1,000,000, as bench_spark.py)")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        client_main(json.loads(args.client))
        return
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = set(args.clients) - set(CLIENTS)
    if unknown:
        parser.error(f"--clients: unknown {sorted(unknown)}; accepted: {', '.join(CLIENTS)}")
    if args.quick:
        args.rounds, args.records, args.spark_records = 1, 20_000, 100_000
    if args.spark and importlib.util.find_spec("pyspark") is None:
        print("pyspark is not installed: no Spark read", file=sys.stderr)
        args.spark = False

    from odradek.tools.local_cluster import LocalCluster

    workdir = Path(tempfile.mkdtemp(prefix="bench-clients-"))
    cluster = LocalCluster(workdir / "cluster", args.brokers, broker_overrides=BROKER_OVERRIDES)
    import confluent_kafka
    import kafka
    print(f"{args.brokers} broker(s), replication factor {min(args.brokers, 3)}, {PARTITIONS} partitions, "
          f"{RECORD_SIZE}-byte records, linger.ms {LINGER_MS}, {args.records:,} records x {args.rounds} rounds; "
          f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
          f"kafka-python {kafka.__version__}; {os.cpu_count()} cores", flush=True)
    try:
        cluster.start()
        results = measure(cluster, args)
    finally:
        cluster.stop(timeout=30.0)
    print()
    print(summary(results, args))
    print()
    print(goals(results))


if __name__ == "__main__":
    main()

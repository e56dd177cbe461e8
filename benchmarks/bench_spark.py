"""Rows/s into Spark through the odradek DataSource, against reading the same records with our consumer alone.

    python benchmarks/bench_spark.py [--quick] [--records N] [--partitions N] [--rounds N]

One local broker (LocalCluster with its own ZooKeeper), one topic of ``--records`` 100-byte records
(default 1,000,000; --quick: 100,000) over ``--partitions`` partitions (default 2, one per core of
``local[2]``). Measured, each ``--rounds`` times (median printed):
- consumer: our synchronous Consumer assigned every partition, polling until every record arrived;
- spark: ``spark.read.format("odradek")`` ... ``.agg(count, sum(length(value)))`` on a ``local[2]`` session
  (after one warm-up query, so JVM and Python-worker start-up are not counted);
- spark-minPartitions: the same with minPartitions = 2 x partitions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

RECORD_SIZE = 100
TOPIC = "bench-spark"


def produce(servers: str, records: int, partitions: int) -> None:
    from odradek.clients import Producer

    value = b"x" * RECORD_SIZE
    with Producer(bootstrap_servers=servers, linger_ms=5, batch_size=262144, acks=1,
                  enable_idempotence=False) as producer:
        for i in range(records):
            producer.send(TOPIC, value=value, partition=i % partitions)
        producer.flush()


def read_with_consumer(servers: str, records: int, partitions: int) -> float:
    from odradek.clients import Consumer, TopicPartition

    start = time.perf_counter()
    consumer = Consumer(bootstrap_servers=servers, auto_offset_reset="earliest", enable_auto_commit=False,
                        max_partition_fetch_bytes=4 * 1024 * 1024)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        seen = 0
        while seen < records:
            for batch in consumer.poll(timeout_ms=1000, max_records=10000).values():
                seen += len(batch)
    finally:
        consumer.close(autocommit=False)
    return time.perf_counter() - start


def read_with_spark(spark, servers: str, records: int, **options: str) -> float:
    from pyspark.sql import functions as F

    start = time.perf_counter()
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", TOPIC)
    for name, value in options.items():
        reader = reader.option(name, value)
    row = reader.load().agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    elapsed = time.perf_counter() - start
    if row.n != records or row.bytes != records * RECORD_SIZE:
        raise SystemExit(f"spark read {row.n} rows ({row.bytes} bytes), expected {records}")
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 100,000 records, one round")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.records <= 0 or args.partitions <= 0 or args.rounds <= 0:
        parser.error("--records, --partitions and --rounds must be positive integers")
    if args.quick:
        args.records, args.rounds = 100_000, 1

    from pyspark.sql import SparkSession

    from odradek.clients import Admin, NewTopic
    from odradek.tools.local_cluster import LocalCluster
    from odradek.spark_connector import use_this_python_for_workers

    use_this_python_for_workers()

    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    cluster = LocalCluster(workdir / "cluster", 1)
    spark = None
    try:
        cluster.start()
        servers = cluster.bootstrap_servers
        with Admin(servers) as admin:
            admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])
        started = time.perf_counter()
        produce(servers, args.records, args.partitions)
        print(f"{args.records:,} records of {RECORD_SIZE} bytes in {args.partitions} partitions produced in "
              f"{time.perf_counter() - started:.1f} s; {os.cpu_count()} cores", flush=True)
        spark = (SparkSession.builder.master("local[2]").appName("bench-spark").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        read_with_spark(spark, servers, args.records)  # warm-up: JVM, Python workers, imports
        runs: dict[str, list[float]] = {"consumer": [], "spark": [], "spark-minPartitions": []}
        for _ in range(args.rounds):
            runs["consumer"].append(read_with_consumer(servers, args.records, args.partitions))
            runs["spark"].append(read_with_spark(spark, servers, args.records))
            runs["spark-minPartitions"].append(read_with_spark(spark, servers, args.records,
                                                               minPartitions=str(2 * args.partitions)))
        print(f"\n{'reader':<22}{'median s':>10}{'rows/s':>14}{'vs consumer':>13}")
        base = statistics.median(runs["consumer"])
        for name, times in runs.items():
            median = statistics.median(times)
            print(f"{name:<22}{median:>10.2f}{args.records / median:>14,.0f}{base / median:>12.2f}x")
    finally:
        if spark is not None:
            spark.stop()
        cluster.stop(timeout=30.0)


if __name__ == "__main__":
    main()

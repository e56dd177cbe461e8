"""An end-to-end pipeline: events produced with odradek's producer, a Structured Streaming aggregation over
the topic, results written back to a topic (exactly once) and to parquet.

    python examples/spark_pipeline.py --bootstrap-servers 127.0.0.1:9092 --work-dir /tmp/pipeline

Events are JSON ``{"user": "u3", "amount": 12}`` on topic ``events``; the query keeps each user's event
count and total amount and
- writes the totals after each micro-batch to topic ``user-totals`` (key: user, value: JSON; Python
  sinks take append and complete mode, not update), through the odradek
  sink's transactional writer, so a replayed micro-batch never writes a total twice;
- writes the full table of totals to ``<work-dir>/totals`` (parquet) after each micro-batch.
Both queries use Trigger.AvailableNow: they process what is in the topic and stop, and the next run
resumes from their checkpoints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from odradek.clients import Admin, NewTopic, Producer

USERS = 5


def produce_events(servers: str, topic: str, count: int, start: int = 0) -> None:
    with Producer(bootstrap_servers=servers, linger_ms=5) as producer:  # idempotent, acks=all
        futures = [producer.send(topic, key=f"u{i % USERS}".encode(),
                                 value=json.dumps({"user": f"u{i % USERS}", "amount": i}).encode())
                   for i in range(start, start + count)]
        producer.flush()  # until each event is acknowledged or has failed (delivery_timeout_ms, 2 min)
    failed = [future.exception() for future in futures if future.failed()]
    if failed:
        raise RuntimeError(f"{len(failed)} of {count} events were not written to {topic}: {failed[0]}")


def ensure_topics(servers: str, *topics: str, partitions: int = 3) -> None:
    """Create the topics that are missing, with the brokers' default.replication.factor (3 on the cluster
    cluster.sh and docker-compose start, whose min.insync.replicas 2 refuses acks=all writes to fewer)."""
    with Admin(servers) as admin:
        existing = set(admin.list_topics())
        missing = [NewTopic(t, partitions) for t in topics if t not in existing]
        if missing:
            admin.create_topics(missing)
    with Producer(bootstrap_servers=servers) as producer:  # wait until the leaders are known
        for topic in topics:
            producer.partitions_for(topic)


def run_pipeline(spark: Any, servers: str, work_dir: Path, events: str = "events",
                 results: str = "user-totals") -> None:
    """Run both streaming queries until they have processed every event now in ``events``."""
    from pyspark.sql import functions as F

    totals = (spark.readStream.format("odradek")
              .option("kafka.bootstrap.servers", servers).option("subscribe", events)
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "5000").load()
              .select(F.from_json(F.col("value").cast("string"), "user string, amount long").alias("e"))
              .groupBy("e.user").agg(F.count("*").alias("events"), F.sum("e.amount").alias("total")))

    to_topic = (totals.select(F.col("user").alias("key"),
                              F.to_json(F.struct("user", "events", "total")).alias("value"))
                .writeStream.format("odradek").outputMode("complete")
                .option("kafka.bootstrap.servers", servers).option("topic", results)
                .option("checkpointLocation", str(work_dir / "checkpoint-topic"))
                .trigger(availableNow=True).start())

    def save_totals(batch: Any, batch_id: int) -> None:
        batch.write.mode("overwrite").parquet(str(work_dir / "totals"))  # the whole table: a replay is harmless

    to_parquet = (totals.writeStream.outputMode("complete").foreachBatch(save_totals)
                  .option("checkpointLocation", str(work_dir / "checkpoint-parquet"))
                  .trigger(availableNow=True).start())
    for query in (to_topic, to_parquet):
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"query {query.name or query.id} failed: {query.exception()}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--work-dir", type=Path, required=True, help="checkpoints and the parquet output")
    parser.add_argument("--events", type=int, default=10000, help="events to produce first (default 10000)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    from odradek.spark_connector import use_this_python_for_workers

    use_this_python_for_workers()  # else Spark's workers run the python3 on PATH, which may lack odradek
    spark = (SparkSession.builder.master("local[2]").appName("odradek-pipeline")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false").getOrCreate())
    ensure_topics(args.bootstrap_servers, "events", "user-totals")
    produce_events(args.bootstrap_servers, "events", args.events)
    run_pipeline(spark, args.bootstrap_servers, args.work_dir)
    spark.read.parquet(str(args.work_dir / "totals")).orderBy("user").show()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

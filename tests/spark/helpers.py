"""Topic set-up for the Spark tests, with our own clients."""

from __future__ import annotations

import json
import os
import sys

from odradek.clients import Admin, NewTopic, Producer
from tests.integration.helpers import wait_until


def local_session(app_name: str, warehouse, jars: list[str] = ()):
    """The tests' local SparkSession (local[2], small shuffles, UTC) with ``jars`` (spark.jars), or the one
    this process already runs."""
    from pyspark.sql import SparkSession

    from odradek.spark_connector import use_this_python_for_workers

    use_this_python_for_workers()
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.config("spark.jars", ",".join(jars)) if jars else SparkSession.builder
    session = (builder.master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def create_topic(servers: str, topic: str, partitions: int, replication: int = 1, configs: dict | None = None) -> None:
    with Admin(servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs or {})])
    with Producer(bootstrap_servers=servers) as producer:  # wait until every partition has a leader
        assert len(producer.partitions_for(topic)) == partitions


def produce(servers: str, topic: str, rows: list[tuple], **configs) -> None:
    """rows: (partition, key, value[, headers[, timestamp_ms]])."""
    with Producer(bootstrap_servers=servers, **configs) as producer:
        futures = []
        for row in rows:
            partition, key, value = row[:3]
            headers = row[3] if len(row) > 3 else None
            timestamp = row[4] if len(row) > 4 else None
            futures.append(producer.send(topic, value=value, key=key, partition=partition, headers=headers,
                                         timestamp_ms=timestamp))
        producer.flush()
        for future in futures:
            future.get(timeout=60)


def start_memory_stream(spark, servers: str, topic: str, name: str, checkpoint, trigger_ms: int = 300,
                        parquet=None, **options):
    """A running query reading ``topic`` from the earliest offset into the memory table ``name``, or the
    parquet folder ``parquet`` (restartable from ``checkpoint``); columns partition, offset and value as a
    string. ``options`` are source options."""
    reader = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", servers)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for option, value in options.items():
        reader = reader.option(option, value)
    writer = (reader.load().selectExpr("partition", "offset", "CAST(value AS STRING) AS value").writeStream
              .queryName(name).option("checkpointLocation", str(checkpoint))
              .trigger(processingTime=f"{trigger_ms} milliseconds"))
    if parquet is not None:
        return writer.format("parquet").option("path", str(parquet)).start()
    return writer.format("memory").start()


def source_latest_total(progress: dict) -> int | None:
    """The sum of the source's latest offsets a progress event reports (None when it reports none)."""
    sources = progress.get("sources") or []
    latest = sources[0].get("latestOffset") if sources else None
    if not latest:
        return None
    if isinstance(latest, str):
        latest = json.loads(latest)
    return sum(int(o) for parts in latest.values() for o in parts.values())


def delete_topic(servers: str, topic: str) -> None:
    """Delete ``topic`` and wait until the cluster's metadata no longer lists it."""
    with Admin(servers) as admin:
        admin.delete_topics([topic])
        wait_until(lambda: topic not in admin.list_topics(), 60, f"topic {topic} to leave the metadata")

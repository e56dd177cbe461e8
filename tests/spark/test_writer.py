"""The writers: rows written by Spark come back identical through kafka-python; a replayed micro-batch
(its commit-log entry removed, as when the driver dies before writing it) writes nothing twice."""

from __future__ import annotations

import json
import time

import pytest
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

from odradek.clients import Admin, TopicPartition
from odradek.spark_connector.options import parse_sink_options

from .helpers import create_topic, produce


def consume_all(servers, topic, expected_count, timeout_s=60.0):
    """Every committed record of ``topic`` through kafka-python (read_committed): polls until
    ``expected_count`` arrived, then 3 s more so that extra (duplicate) records show up too."""
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=servers, auto_offset_reset="earliest",
                                   isolation_level="read_committed", enable_auto_commit=False)
    records = []
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(records) < expected_count:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        quiet_until = time.monotonic() + 3
        while time.monotonic() < quiet_until:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def test_batch_write_round_trips_through_kafka_python(spark, three_broker_cluster):
    servers, topic = three_broker_cluster.bootstrap_servers, "spark-write-batch"
    create_topic(servers, topic, 3)
    schema = StructType([
        StructField("key", StringType()), StructField("value", BinaryType()), StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                     StructField("value", BinaryType())])))])
    rows = [(f"k{i}" if i % 4 else None, f"value-{i}".encode(), topic, i % 3,
             [("n", str(i).encode()), ("kind", b"test")] if i % 2 else [])
            for i in range(90)]
    spark.createDataFrame(rows, schema).repartition(3).write.format("odradek") \
        .option("kafka.bootstrap.servers", servers).mode("append").save()

    records = consume_all(servers, topic, 90)
    got = sorted((r.value, r.key.decode() if r.key is not None else None, r.partition,
                  [(k, v) for k, v in r.headers]) for r in records)
    assert got == sorted((v, k, p, h) for k, v, _, p, h in rows)


def test_writer_rejects_missing_value_and_topic(spark, three_broker_cluster):
    df = spark.createDataFrame([("a",)], "key string")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        df.write.format("odradek").option("kafka.bootstrap.servers", three_broker_cluster.bootstrap_servers) \
            .option("topic", "x").mode("append").save()
    df = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        df.write.format("odradek").option("kafka.bootstrap.servers", three_broker_cluster.bootstrap_servers) \
            .mode("append").save()


def test_a_write_the_brokers_refuse_fails_the_job_with_one_line_not_a_hang(spark, three_broker_cluster):
    # One replica, two required in sync: every acks=all write is refused (NOT_ENOUGH_REPLICAS) and retried
    # until delivery.timeout.ms (issue 22: the task's flush never returned).
    servers, topic = three_broker_cluster.bootstrap_servers, "spark-write-short-isr"
    create_topic(servers, topic, 2, configs={"min.insync.replicas": "2"})
    df = spark.createDataFrame([(f"v{i}",) for i in range(50)], "value string").coalesce(1)
    with pytest.raises(Exception) as failure:
        df.write.format("odradek").option("kafka.bootstrap.servers", servers).option("topic", topic) \
            .option("exactlyOnce", "false").option("kafka.delivery.timeout.ms", "3000") \
            .option("kafka.request.timeout.ms", "1500").mode("append").save()
    lines = [line for line in str(failure.value).splitlines() if "SinkWriteError: " in line]
    assert lines and "50 of 50 records could not be written to spark-write-short-isr; the first error: " in lines[0]
    assert "NOT_ENOUGH_REPLICAS" in lines[0], lines[0]
    with pytest.raises(ValueError, match="delivery_timeout_ms should be equal to or larger than"):
        parse_sink_options({"kafka.bootstrap.servers": servers, "kafka.delivery.timeout.ms": "1000"})


def test_replayed_micro_batches_write_no_duplicates(spark, three_broker_cluster, tmp_path):
    servers, source, sink = three_broker_cluster.bootstrap_servers, "spark-eos-in", "spark-eos-out"
    create_topic(servers, source, 2)
    create_topic(servers, sink, 2)
    produce(servers, source, [(i % 2, None, f"e{i}".encode()) for i in range(100)])
    checkpoint = tmp_path / "checkpoint"

    def run():
        query = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", servers)
                 .option("subscribe", source).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", "40").option("commitOffsetsToGroup", "spark-eos-progress").load()
                 .selectExpr("CAST(partition AS STRING) AS key", "value").repartition(2)
                 .writeStream.format("odradek").option("kafka.bootstrap.servers", servers).option("topic", sink)
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return [p["numInputRows"] for p in query.recentProgress]

    assert sum(run()) == 100
    commits = checkpoint / "commits"

    def forget_last_commit():
        last = max(int(f.name) for f in commits.iterdir() if f.name.isdigit())
        (commits / str(last)).unlink()
        for crc in commits.glob(f".{last}.crc"):
            crc.unlink()

    # Replay 1: the driver "died" after the sink's commit but before Spark's commit log: the batch marker skips it.
    forget_last_commit()
    assert sum(run()) > 0  # the batch really ran again
    # Replay 2: also without the query's batch marker (the driver died before its commit()): each task's
    # own marker, committed in its transaction, skips it.
    query_id = json.loads((checkpoint / "metadata").read_text())["id"]
    with Admin(servers) as admin:
        assert admin.list_consumer_group_offsets(f"odradek-spark-{query_id}")  # the batch marker was there
        admin.delete_consumer_groups([f"odradek-spark-{query_id}"])
    forget_last_commit()
    assert sum(run()) > 0

    values = sorted(r.value.decode() for r in consume_all(servers, sink, 100))
    assert values == sorted(f"e{i}" for i in range(100))
    with Admin(servers) as admin:  # the query's progress, as a consumer group lag tools can read
        progress = admin.list_consumer_group_offsets("spark-eos-progress")
    # Spark calls the source's commit(end) of a batch when it plans the next one, so the group trails the
    # query by one micro-batch: batches end at 20, 40 and 50 per partition, the last two committed are 40.
    assert {tp: o.offset for tp, o in progress.items()} == {TopicPartition(source, 0): 40, TopicPartition(source, 1): 40}

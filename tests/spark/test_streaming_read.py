"""Structured Streaming reads: availableNow restarts from a checkpoint, maxOffsetsPerTrigger, read_committed,
and a leader that moves mid-query."""

from __future__ import annotations

import signal
import threading

import pytest



from tests.integration.helpers import wait_until
from .helpers import create_topic, produce


def stream(spark, servers, topic, **options):
    reader = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", servers)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def run_available_now(df, out, checkpoint):
    query = (df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
             .start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return query


def test_available_now_restarts_from_checkpoint_exactly_once(spark, three_broker_cluster, tmp_path):
    servers, topic = three_broker_cluster.bootstrap_servers, "spark-stream-restart"
    create_topic(servers, topic, 3)
    produce(servers, topic, [(i % 3, None, f"a{i}".encode()) for i in range(60)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    df = stream(spark, servers, topic, maxOffsetsPerTrigger="25")

    first = run_available_now(df, out, checkpoint)
    batches = [p["numInputRows"] for p in first.recentProgress]
    assert sum(batches) == 60 and max(batches) <= 25 and len([b for b in batches if b]) >= 3

    # New records arrive while the query is down and while it runs again.
    produce(servers, topic, [(i % 3, None, f"b{i}".encode()) for i in range(30)])
    writer = threading.Thread(target=produce, args=(servers, topic, [(i % 3, None, f"c{i}".encode())
                                                                        for i in range(30)]))
    writer.start()
    second = run_available_now(df, out, checkpoint)
    writer.join()
    assert all(p["numInputRows"] <= 25 for p in second.recentProgress)
    third = run_available_now(df, out, checkpoint)  # whatever the second run did not see yet
    assert all(p["numInputRows"] <= 25 for p in third.recentProgress)

    rows = spark.read.parquet(str(out)).collect()
    values = sorted(r.value for r in rows)
    expected = sorted([f"a{i}" for i in range(60)] + [f"b{i}" for i in range(30)] + [f"c{i}" for i in range(30)])
    assert values == expected  # every record once: none lost, none twice
    assert len({(r.partition, r.offset) for r in rows}) == 120


def test_read_committed_skips_aborted_transaction(spark, three_broker_cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    servers, topic = three_broker_cluster.bootstrap_servers, "spark-read-committed"
    create_topic(servers, topic, 1)
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "transactional.id": "spark-rc-test"})
    producer.init_transactions(30)
    for outcome, prefix in (("commit", "c1"), ("abort", "x"), ("commit", "c2")):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=0)
        producer.flush(30)
        producer.commit_transaction(30) if outcome == "commit" else producer.abort_transaction(30)
    # An open transaction at the end: read_committed stops at the last stable offset before it.
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(30)

    def values(isolation):
        df = (spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
              .option("kafka.isolation.level", isolation).load())
        return sorted(bytes(r.value).decode() for r in df.select("value").collect())

    committed = sorted([f"c1-{i}" for i in range(5)] + [f"c2-{i}" for i in range(5)])
    assert values("read_committed") == committed
    assert len(values("read_uncommitted")) == 16  # aborted and open records too
    producer.abort_transaction(30)

    name = "rc_stream"
    query = (stream(spark, servers, topic, **{"kafka.isolation.level": "read_committed"})
             .selectExpr("CAST(value AS STRING) AS value").writeStream.format("memory").queryName(name)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert sorted(r.value for r in spark.table(name).collect()) == committed


def test_source_follows_a_leader_moved_by_a_broker_failure(spark, odradek_cluster_factory, tmp_path):
    cluster = odradek_cluster_factory(3)
    servers, topic = cluster.bootstrap_servers, "spark-failover"
    create_topic(servers, topic, 1, replication=3, configs={"min.insync.replicas": "1"})
    produce(servers, topic, [(0, None, f"before-{i}".encode()) for i in range(50)], acks="all")
    name = "failover_stream"
    query = (stream(spark, servers, topic).selectExpr("CAST(value AS STRING) AS value").writeStream
             .format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        wait_until(lambda: spark.table(name).count() == 50, 120, what="the first 50 records")
        from odradek.clients import Admin
        with Admin(servers) as admin:
            leader = admin.describe_topics([topic])[0].partitions[0].leader
        cluster.kill_broker(leader, signal.SIGKILL)
        produce(servers, topic, [(0, None, f"after-{i}".encode()) for i in range(50)], acks="all")
        wait_until(lambda: spark.table(name).count() >= 100, 180, what="the records written after the failover")
        values = sorted(r.value for r in spark.table(name).collect())
        assert values == sorted([f"before-{i}" for i in range(50)] + [f"after-{i}" for i in range(50)])
        assert query.exception() is None
    finally:
        query.stop()





def test_pattern_subscription_picks_up_new_partitions_and_topics(spark, three_broker_cluster, tmp_path):
    from odradek.clients import Admin, NewPartitions

    servers = three_broker_cluster.bootstrap_servers
    create_topic(servers, "grow-a", 1)
    produce(servers, "grow-a", [(0, None, f"a{i}".encode()) for i in range(10)])
    name = "grow_stream"
    query = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", servers)
             .option("subscribePattern", "grow-.*").option("startingOffsets", "earliest").load()
             .selectExpr("topic", "partition", "CAST(value AS STRING) AS value").writeStream.format("memory")
             .queryName(name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        wait_until(lambda: spark.table(name).count() == 10, 120, what="the first records")
        with Admin(servers) as admin:
            admin.create_partitions({"grow-a": NewPartitions(2)})
        create_topic(servers, "grow-b", 1)
        produce(servers, "grow-a", [(1, None, f"a1-{i}".encode()) for i in range(5)])
        produce(servers, "grow-b", [(0, None, f"b{i}".encode()) for i in range(5)])
        wait_until(lambda: spark.table(name).count() >= 20, 120, what="records of the new partition and topic")
        got = sorted((r.topic, r.partition, r.value) for r in spark.table(name).collect())
        assert got == sorted([("grow-a", 0, f"a{i}") for i in range(10)] + [("grow-a", 1, f"a1-{i}") for i in range(5)]
                             + [("grow-b", 0, f"b{i}") for i in range(5)])
    finally:
        query.stop()

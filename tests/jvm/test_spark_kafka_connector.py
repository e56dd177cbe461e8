"""Spark's built-in Kafka connector (spark-sql-kafka-0-10, the Java client inside Spark's JVM) against a
3-broker Odradek cluster: batch reads and writes, streaming reads from chosen offsets and timestamps,
read_committed over an aborted transaction, and queries that read with one connector and write with the other.

The connector's jars come from the ``spark`` class path set of pom.xml (Maven Central has no 4.3.0 build, the
installed pyspark's version, so 4.2.0 runs on pyspark 4.3.0). They are added to the session with ADD JAR, so
the test works whether or not this process already runs a SparkSession (tests/spark's, under xdist).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.helpers import wait_until
from tests.spark.helpers import create_topic, local_session, produce

from . import jvm

pyspark = pytest.importorskip("pyspark")

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

_VERSIONED_JAR = re.compile(r"-[0-9][^-]*\.jar$")


def connector_jars() -> list[str]:
    """The spark set's jars that pyspark does not ship itself (the connector, its token provider, the
    kafka-clients it runs and commons-pool2); pyspark's own Scala, Hadoop and logging jars stay in charge."""
    shipped = {_VERSIONED_JAR.sub("", jar.name) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = [jar for jar in jvm.classpath(jvm.SPARK_SET).split(":") if jar.endswith(".jar")]
    return [jar for jar in jars if _VERSIONED_JAR.sub("", Path(jar).name) not in shipped and "slf4j" not in jar]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    jars = connector_jars()
    already_running = SparkSession.getActiveSession() is not None
    session = local_session("odradek-jvm-tests", tmp_path_factory.mktemp("warehouse"), jars)
    if already_running:  # tests/spark's session (an xdist worker runs both): spark.jars came too late
        for jar in jars:
            session.sql(f"ADD JAR '{jar}'")
    yield session
    if not already_running:
        session.stop()


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from tests.conftest import module_cluster

    from tests.integration.compaction import CLEANER_OVERRIDES

    # The cleaner's short back-off: the compacted topic's test waits for it.
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("spark-kafka"), 3, CLEANER_OVERRIDES)


def kafka_read(spark, servers: str, topic: str, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def kafka_stream_values(spark, servers: str, topic: str, name: str, **options) -> list[str]:
    """Runs a streaming query of Spark's connector over ``topic`` once (availableNow) into the memory table
    ``name``; returns the values read, sorted."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
    for option, value in options.items():
        reader = reader.option(option, value)
    query = (reader.load().selectExpr("CAST(value AS STRING) AS value").writeStream.format("memory")
             .queryName(name).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return sorted(row.value for row in spark.table(name).collect())


def test_connector_loads_on_this_pyspark(spark):
    provider = spark._jvm.org.apache.spark.sql.kafka010.KafkaSourceProvider  # a JavaClass, not a JavaPackage
    assert provider.__class__.__name__ == "JavaClass"
    client = spark._jvm.org.apache.kafka.common.utils.AppInfoParser.getVersion()
    assert client == jvm.SPARK_CLIENT_VERSION


def test_batch_write_then_read(spark, cluster):
    servers, topic = cluster.bootstrap_servers, "spark-kafka-batch"
    create_topic(servers, topic, 3, replication=3)
    rows = [(f"k{i}", f"v{i}", i % 3) for i in range(300)]
    frame = spark.createDataFrame(rows, "key STRING, value STRING, partition INT")
    # The sink's producer is the 3.9 client's default: idempotent, acks=all.
    (frame.write.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", topic).save())

    read = kafka_read(spark, servers, topic).selectExpr("CAST(key AS STRING) AS key",
                                                       "CAST(value AS STRING) AS value", "partition", "offset")
    got = read.collect()
    assert sorted((r.key, r.value, r.partition) for r in got) == sorted(rows)
    for partition in range(3):
        offsets = sorted(r.offset for r in got if r.partition == partition)
        assert offsets == list(range(100))  # each record once, the offsets dense

    # endingOffsets bound a batch read; "-1" is latest.
    ends = json.dumps({topic: {"0": 10, "1": 20, "2": -1}})
    bounded = kafka_read(spark, servers, topic, endingOffsets=ends).groupBy("partition").count().collect()
    assert {r.partition: r["count"] for r in bounded} == {0: 10, 1: 20, 2: 100}


def test_streaming_starting_offsets_and_timestamps(spark, cluster):
    servers, topic = cluster.bootstrap_servers, "spark-kafka-starting"
    create_topic(servers, topic, 3, replication=3)
    base = 1_700_000_000_000
    produce(servers, topic, [(i % 3, None, f"v{i}".encode(), None, base + i * 1000) for i in range(60)])

    # JSON offsets per partition: -2 earliest, -1 latest.
    starting = json.dumps({topic: {"0": 5, "1": -2, "2": -1}})
    values = kafka_stream_values(spark, servers, topic, "spark_kafka_from_offsets", startingOffsets=starting)
    expected = sorted([f"v{i}" for i in range(0, 60, 3)][5:] + [f"v{i}" for i in range(1, 60, 3)])
    assert values == expected

    # From a timestamp per partition: the first record at or after it (offsetsForTimes).
    middle = base + 30_000
    by_time = json.dumps({topic: {"0": middle, "1": middle, "2": base + 120_000}})
    values = kafka_stream_values(spark, servers, topic, "spark_kafka_from_timestamps",
                                 startingOffsetsByTimestamp=by_time,
                                 startingOffsetsByTimestampStrategy="latest")
    assert values == sorted(f"v{i}" for i in range(30, 60) if i % 3 in (0, 1))


def test_read_committed_skips_an_aborted_transaction(spark, cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    servers, topic = cluster.bootstrap_servers, "spark-kafka-read-committed"
    create_topic(servers, topic, 2, replication=3)
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "transactional.id": "spark-kafka-rc"})
    producer.init_transactions(30)
    for outcome, prefix in (("commit", "c1"), ("abort", "x"), ("commit", "c2")):
        producer.begin_transaction()
        for i in range(6):
            producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=i % 2)
        producer.flush(30)
        producer.commit_transaction(30) if outcome == "commit" else producer.abort_transaction(30)

    committed = sorted(f"{prefix}-{i}" for prefix in ("c1", "c2") for i in range(6))
    rc = {"kafka.isolation.level": "read_committed"}
    batch = kafka_read(spark, servers, topic, **rc).selectExpr("CAST(value AS STRING) AS value").collect()
    assert sorted(r.value for r in batch) == committed
    uncommitted = kafka_read(spark, servers, topic).collect()
    assert len(uncommitted) == 18  # the aborted records are in the log (and the markers take offsets)
    assert kafka_stream_values(spark, servers, topic, "spark_kafka_rc", startingOffsets="earliest", **rc) == committed


def copy_stream(spark, servers: str, reader: str, source: str, writer: str, target: str, checkpoint) -> None:
    """Copies ``source`` to ``target`` once (availableNow), reading with connector ``reader`` and writing
    with ``writer`` (kafka: Spark's, odradek: ours)."""
    query = (spark.readStream.format(reader).option("kafka.bootstrap.servers", servers).option("subscribe", source)
             .option("startingOffsets", "earliest").load().selectExpr("key", "value").writeStream
             .format(writer).option("kafka.bootstrap.servers", servers).option("topic", target)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()


def test_read_with_one_connector_write_with_the_other(spark, cluster, tmp_path):
    servers = cluster.bootstrap_servers
    source, middle, target = "spark-kafka-x-source", "spark-kafka-x-middle", "spark-kafka-x-target"
    for topic in (source, middle, target):
        create_topic(servers, topic, 2, replication=3)
    produce(servers, source, [(i % 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(100)])

    copy_stream(spark, servers, "kafka", source, "odradek", middle, tmp_path / "kafka-to-odradek")
    copy_stream(spark, servers, "odradek", middle, "kafka", target, tmp_path / "odradek-to-kafka")

    expected = sorted((f"k{i}", f"v{i}") for i in range(100))
    for reader in ("kafka", "odradek"):
        rows = (spark.read.format(reader).option("kafka.bootstrap.servers", servers).option("subscribe", target)
                .load().selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").collect())
        assert sorted((r.key, r.value) for r in rows) == expected, reader


def test_compacted_topic_with_gaps(spark, cluster):
    """The cleaner leaves gaps in the offsets; Spark's connector (failOnDataLoss on) reads what is left, in
    batch and streaming, without calling the gaps data loss."""
    from tests.integration.compaction import (
        create_compacted, produce_sentinel, produce_updates, read_ours, wait_cleaned,
    )

    servers, topic, keys = cluster.bootstrap_servers, "spark-kafka-compacted", 30
    create_compacted(servers, topic, replication=3, **{"segment.bytes": "16384"})
    produce_updates(servers, topic, 3000, keys, batch_size=4096, seed=7)
    end = produce_sentinel(servers, topic)
    wait_cleaned(cluster, topic, 0, end)
    kept = sorted(f"{offset}:{value.decode()}" for offset, _, value in read_ours(servers, topic, end + 1))
    assert len(kept) == keys + 1  # a record per key and the sentinel, out of end + 1 offsets: gaps

    batch = kafka_read(spark, servers, topic).selectExpr("CONCAT(offset, ':', CAST(value AS STRING)) AS value")
    assert sorted(row.value for row in batch.collect()) == kept
    streamed = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
                .option("startingOffsets", "earliest").load()
                .selectExpr("CONCAT(offset, ':', CAST(value AS STRING)) AS value").writeStream.format("memory")
                .queryName("spark_kafka_compacted").trigger(availableNow=True).start())
    streamed.awaitTermination(300)
    assert streamed.exception() is None, streamed.exception()
    assert sorted(row.value for row in spark.table("spark_kafka_compacted").collect()) == kept


def test_fail_on_data_loss_over_deleted_records(spark, cluster, tmp_path):
    """Records deleted (DeleteRecords) past a query's checkpointed position: failOnDataLoss=true fails the
    query; false goes on from the new start of the log."""
    from odradek.clients import Admin, TopicPartition

    servers, topic = cluster.bootstrap_servers, "spark-kafka-data-loss"
    create_topic(servers, topic, 1, replication=3)
    produce(servers, topic, [(0, None, f"a{i}".encode()) for i in range(50)], acks="all")

    def run(checkpoint, fail_on_data_loss: str):
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("failOnDataLoss", fail_on_data_loss).load().selectExpr("CAST(value AS STRING) AS value")
                 .writeStream.format("parquet").option("path", str(checkpoint / "out"))
                 .option("checkpointLocation", str(checkpoint / "cp")).trigger(availableNow=True).start())
        try:
            query.awaitTermination(300)
        except Exception as failure:  # noqa: BLE001 - pyspark raises its StreamingQueryException
            return str(failure)
        return None

    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    assert run(strict, "true") is None and run(lenient, "false") is None
    produce(servers, topic, [(0, None, f"b{i}".encode()) for i in range(50)], acks="all")
    with Admin(servers) as admin:
        assert admin.delete_records({TopicPartition(topic, 0): 80})[TopicPartition(topic, 0)] == 80

    # The task fails with the connector's KafkaIllegalStateException ("Some data may have been lost ... set
    # the source option failOnDataLoss to false"). With its jar added to a running session (ADD JAR) the
    # driver cannot deserialize that exception and reports UnknownReason instead.
    failure = run(strict, "true")
    assert failure is not None and "STREAM_FAILED" in failure, failure
    if "spark-sql-kafka" in spark.sparkContext.getConf().get("spark.jars", ""):
        assert "failOnDataLoss" in failure, failure
    assert run(lenient, "false") is None
    values = sorted(row.value for row in spark.read.parquet(str(lenient / "out")).collect())
    assert values == sorted([f"a{i}" for i in range(50)] + [f"b{i}" for i in range(30, 50)])


def test_stream_follows_a_leader_killed_mid_stream(spark, cluster, tmp_path):
    """Last in the module: it kills a broker (started again at the end)."""
    servers, topic, name = cluster.bootstrap_servers, "spark-kafka-failover", "spark_kafka_failover"
    create_topic(servers, topic, 2, replication=3)
    produce(servers, topic, [(i % 2, None, f"before-{i}".encode()) for i in range(100)], acks="all")
    # A batch planned in the seconds before the controller notices the kill (zookeeper.session.timeout.ms)
    # asks the dead leader for the latest offsets: the Java AdminClient's ListOffsets call stays bound to that
    # node ("Timed out waiting for a node assignment") until default.api.timeout.ms (60 s), against Apache
    # Kafka too, and Spark then retries. 15 s (request.timeout.ms may not exceed it) keeps the wait short.
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
             .option("kafka.default.api.timeout.ms", "15000").option("kafka.request.timeout.ms", "15000")
             .option("startingOffsets", "earliest").load().selectExpr("CAST(value AS STRING) AS value")
             .writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="300 milliseconds").start())
    killed = None
    try:
        wait_until(lambda: spark.table(name).count() >= 100, 120, "the records before the kill")
        with cluster.client() as client:
            killed = client.metadata(topics=[topic]).leader_for(topic, 0)
        cluster.kill_broker(killed)
        produce(servers, topic, [(i % 2, None, f"after-{i}".encode()) for i in range(100)], acks="all")
        wait_until(lambda: spark.table(name).count() >= 200 or query.exception() is not None, 180,
                   "the records after the kill")
        assert query.exception() is None, query.exception()
        values = sorted(row.value for row in spark.table(name).collect())
        assert values == sorted([f"before-{i}" for i in range(100)] + [f"after-{i}" for i in range(100)])
    finally:
        query.stop()
        if killed is not None and not cluster.broker_alive(killed):
            cluster.start_broker(killed)

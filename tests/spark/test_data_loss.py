"""Data loss on a running stream, as Spark's Kafka source handles it (KafkaMicroBatchStream.reportDataLoss,
KafkaDataConsumer): a deleted topic, and offsets aged out (delete_records, retention) between batches.
failOnDataLoss=true fails the query with a message naming the partitions; false warns and goes on, reading
a re-created topic from its start and skipping to the new log start of an aged-out partition."""

from __future__ import annotations

import time

import pytest

from odradek.clients import Admin, TopicPartition

from tests.integration.helpers import wait_until
from .helpers import create_topic, delete_topic, produce, start_memory_stream


@pytest.fixture(scope="module")
def servers(single_broker_cluster):
    return single_broker_cluster.bootstrap_servers


def values(spark, name):
    return sorted(r.value for r in spark.table(name).collect())


def wait_for_failure(query) -> str:
    wait_until(lambda: not query.isActive, 180, what="the query to fail")
    assert query.exception() is not None, "the query stopped without an error"
    return str(query.exception())


def recreate_topic(servers, topic, partitions):
    """Create ``topic`` again; the broker may still be finishing the deletion for a moment."""
    def created():
        try:
            create_topic(servers, topic, partitions)
            return True
        except Exception as exc:  # TOPIC_ALREADY_EXISTS while the deletion completes
            if "exist" not in str(exc).lower() and "marked for deletion" not in str(exc).lower():
                raise
            return False
    wait_until(created, 60, interval=0.5, what=f"{topic} to be created again")


def test_deleted_topic_fails_the_query_naming_its_partitions(spark, servers, tmp_path):
    topic, name = "loss-deleted-fail", "loss_deleted_fail"
    create_topic(servers, topic, 2)
    produce(servers, topic, [(i % 2, None, f"a{i}".encode()) for i in range(10)])
    query = start_memory_stream(spark, servers, topic, name, tmp_path / "cp")
    try:
        wait_until(lambda: spark.table(name).count() == 10, 120, what="the first records")
        delete_topic(servers, topic)
        message = wait_for_failure(query)
    finally:
        query.stop()
    assert "KAFKA_DATA_LOSS.PARTITIONS_DELETED" in message
    assert f"Partitions [{topic}-0, {topic}-1] have been deleted" in message
    assert "failOnDataLoss" in message
    assert spark.table(name).count() == 10


def test_deleted_topic_is_skipped_and_a_recreated_one_read_from_its_start(spark, servers, tmp_path):
    topic, name = "loss-deleted-go-on", "loss_deleted_go_on"
    create_topic(servers, topic, 1)
    produce(servers, topic, [(0, None, f"old{i}".encode()) for i in range(10)])
    query = start_memory_stream(spark, servers, topic, name, tmp_path / "cp", failOnDataLoss="false")
    try:
        wait_until(lambda: spark.table(name).count() == 10, 120, what="the first records")
        batches = len(query.recentProgress)
        delete_topic(servers, topic)
        # A trigger sees the topic gone and moves the query's offsets past it: a batch ends without it.
        wait_until(lambda: any(p["batchId"] > 0 and p["sources"][0]["endOffset"] in ("{}", {}, None)
                               for p in query.recentProgress[batches:]), 120, what="a batch without the topic")
        recreate_topic(servers, topic, 1)
        produce(servers, topic, [(0, None, f"new{i}".encode()) for i in range(5)])
        wait_until(lambda: spark.table(name).count() == 15, 120, what="the re-created topic's records")
        assert query.isActive and query.exception() is None
        rows = sorted((r.value, r.offset) for r in spark.table(name).collect())
    finally:
        query.stop()
    # Offsets 0-4 of the new topic were read although the query had been at offset 10 of the old one.
    assert rows == sorted([(f"old{i}", i) for i in range(10)] + [(f"new{i}", i) for i in range(5)])


def hold_then_age_out(spark, servers, topic, name, checkpoint, fail_on_data_loss):
    """Offsets 0-9 read by a first batch; 10-19 wait (held back by minOffsetsPerTrigger=20); delete_records
    moves the log start to 15; 10 more make the next batch [10, 30), whose first 5 offsets are gone."""
    create_topic(servers, topic, 1)
    produce(servers, topic, [(0, None, f"a{i}".encode()) for i in range(10)])
    query = start_memory_stream(spark, servers, topic, name, checkpoint, minOffsetsPerTrigger="20",
                                maxTriggerDelay="1h", failOnDataLoss=fail_on_data_loss)
    wait_until(lambda: spark.table(name).count() == 10, 120, what="the first batch")
    produce(servers, topic, [(0, None, f"b{i}".encode()) for i in range(10)])
    with Admin(servers) as admin:
        admin.delete_records({TopicPartition(topic, 0): 15})
    assert spark.table(name).count() == 10  # still held: the batch will start at offset 10
    produce(servers, topic, [(0, None, f"c{i}".encode()) for i in range(10)])
    return query


def test_aged_out_offsets_fail_the_query(spark, servers, tmp_path):
    topic, name = "loss-aged-fail", "loss_aged_fail"
    query = hold_then_age_out(spark, servers, topic, name, tmp_path / "cp", "true")
    try:
        message = wait_for_failure(query)
    finally:
        query.stop()
    assert f"Cannot fetch offset 10 (TopicPartition: {topic}-0); the earliest available offset is 15" in message
    assert "Some data may have been lost" in message
    assert spark.table(name).count() == 10


def test_aged_out_offsets_are_skipped_with_fail_on_data_loss_false(spark, servers, tmp_path):
    topic, name = "loss-aged-go-on", "loss_aged_go_on"
    query = hold_then_age_out(spark, servers, topic, name, tmp_path / "cp", "false")
    try:
        wait_until(lambda: spark.table(name).count() == 25, 120, what="the records after the new log start")
        assert query.isActive and query.exception() is None
        rows = sorted((r.offset, r.value) for r in spark.table(name).collect())
    finally:
        query.stop()
    assert rows == ([(i, f"a{i}") for i in range(10)] + [(i, f"b{i - 10}") for i in range(15, 20)]
                    + [(i, f"c{i - 20}") for i in range(20, 30)])


def test_retention_between_batches_is_skipped_with_fail_on_data_loss_false(spark, odradek_cluster_factory, tmp_path):
    """Time-based retention: old segments go while the query waits at offset 0; its next batch starts at
    the new log start."""
    cluster = odradek_cluster_factory(1, overrides={"log.retention.check.interval.ms": "200"})
    servers, topic, name = cluster.bootstrap_servers, "loss-retention", "loss_retention"
    create_topic(servers, topic, 1, configs={"retention.ms": "60000", "segment.bytes": "1024"})
    query = start_memory_stream(spark, servers, topic, name, tmp_path / "cp", minOffsetsPerTrigger="60",
                                maxTriggerDelay="1h", failOnDataLoss="false")
    try:
        wait_until(lambda: query.recentProgress, 120, what="the first trigger (the query is at offset 0)")
        # 40 records timestamped an hour ago fill several 1 KiB segments, which retention removes once newer
        # records roll them; 59 records wait, fewer than minOffsetsPerTrigger, so no batch runs meanwhile.
        # (batch_size=64: one record per batch, each far below segment.bytes)
        old = int(time.time() * 1000) - 3_600_000
        produce(servers, topic, [(0, None, f"old{i}".encode() * 8, None, old) for i in range(40)], batch_size=64)
        produce(servers, topic, [(0, None, f"new{i}".encode() * 8) for i in range(19)], batch_size=64)
        with Admin(servers) as admin:
            wait_until(lambda: admin.list_offsets({TopicPartition(topic, 0): -2})[TopicPartition(topic, 0)] > 0,
                       120, what="retention to move the log start")
        assert spark.table(name).count() == 0
        produce(servers, topic, [(0, None, b"new19" * 8)])  # 60 wait: the batch [0, 60) runs
        wait_until(lambda: spark.table(name).count() > 0, 120, what="the batch")
        rows = spark.table(name).collect()
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
    offsets = sorted(r.offset for r in rows)
    assert 0 < offsets[0] <= 40  # the aged-out offsets were skipped ...
    assert offsets == list(range(offsets[0], 60))  # ... and everything after the new log start read once
    assert sum(1 for r in rows if r.value.startswith("new")) == 20


def test_offset_lookup_leaves_out_a_topic_deleted_meanwhile(servers):
    """A trigger that listed a topic's partitions just before its deletion and looks up their offsets just
    after leaves that topic out (it is reported when the batch is planned) instead of retrying for minutes.
    (A topic that does not exist stands in for the deleted one: right after a deletion the broker may still
    answer for its partitions for a moment.)"""
    from odradek.spark_connector.offset_reader import KafkaOffsetReader
    from odradek.spark_connector.options import parse_source_options

    kept, gone = "loss-lookup-kept", "loss-lookup-gone"
    create_topic(servers, kept, 1)
    produce(servers, kept, [(0, None, b"x")] * 3)
    reader = KafkaOffsetReader(parse_source_options(
        {"kafka.bootstrap.servers": servers, "subscribe": f"{kept},{gone}"}, streaming=True))
    try:
        listed = {TopicPartition(kept, 0), TopicPartition(gone, 0)}
        assert reader.latest(listed, drop_missing=True) == {TopicPartition(kept, 0): 3}
        assert reader.earliest(listed, drop_missing=True) == {TopicPartition(kept, 0): 0}
        assert reader.partitions() == {TopicPartition(kept, 0)}
    finally:
        reader.close()


def test_report_data_loss_raises_or_warns_with_sparks_texts(caplog):
    from odradek.spark_connector.partition_reader import KafkaDataLossError, report_data_loss

    with pytest.raises(KafkaDataLossError) as raised:
        report_data_loss(True, "Partitions [t-0] have been deleted.", "PARTITIONS_DELETED")
    assert str(raised.value).startswith("[KAFKA_DATA_LOSS.PARTITIONS_DELETED] Some data may have been lost")
    assert str(raised.value).endswith("Reason: Partitions [t-0] have been deleted.")
    with caplog.at_level("WARNING", logger="odradek.spark_connector.partition_reader"):
        report_data_loss(False, "Partitions [t-0] have been deleted.", "PARTITIONS_DELETED")
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].getMessage().startswith("Partitions [t-0] have been deleted.")
    assert 'set the source option "failOnDataLoss" to "true"' in caplog.records[0].getMessage()

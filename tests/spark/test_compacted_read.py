"""The Spark source over a compacted topic: the cleaner leaves gaps in the offsets, which are not data loss
(Spark's KafkaDataConsumer skips offsets that are still above the earliest one), in batch and streaming,
also when a range starts or ends in a gap and when the cleaner runs while a stream reads."""

from __future__ import annotations

import json

import pytest

from odradek.tools.local_cluster import LocalCluster

from tests.conftest import new_cluster
from tests.integration.compaction import (
    CLEANER_OVERRIDES, create_compacted, produce_sentinel, produce_updates, read_ours, wait_cleaned,
)
from tests.integration.helpers import wait_until

from .helpers import produce, start_memory_stream

TOPIC, KEYS, UPDATES = "spark-compacted", 40, 4000


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory) -> LocalCluster:
    cluster = new_cluster(tmp_path_factory.mktemp("spark-compacted"), zookeeper, 1, CLEANER_OVERRIDES)
    cluster.start()
    yield cluster
    cluster.stop(timeout=15.0)


@pytest.fixture(scope="module")
def compacted(cluster):
    """Two partitions cleaned down to one record per key (random keys: gaps all over) and a sentinel."""
    servers = cluster.bootstrap_servers
    create_compacted(servers, TOPIC, partitions=2, **{"segment.bytes": "16384"})
    ends = {}
    for partition in range(2):
        produce_updates(servers, TOPIC, UPDATES, KEYS, partition=partition, batch_size=4096, seed=partition)
        ends[partition] = produce_sentinel(servers, TOPIC, partition)
        wait_cleaned(cluster, TOPIC, partition, ends[partition])
    kept = {p: read_ours(servers, TOPIC, ends[p] + 1, partition=p) for p in range(2)}
    assert all(len(records) == KEYS + 1 for records in kept.values())
    return servers, kept


def rows(df):
    return sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in df.collect())


def test_a_batch_read_of_a_compacted_topic_returns_its_records_without_data_loss(spark, compacted):
    servers, kept = compacted
    df = (spark.read.format("odradek").option("kafka.bootstrap.servers", servers).option("subscribe", TOPIC)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    assert rows(df) == sorted((p, o, k, v) for p, records in kept.items() for o, k, v in records)


def test_a_range_starting_and_ending_in_gaps_is_not_data_loss(spark, compacted):
    servers, kept = compacted
    offsets = [o for o, _, _ in kept[0]]
    gaps = [o + 1 for o, nxt in zip(offsets, offsets[1:]) if nxt > o + 1]  # offsets the cleaner removed
    gap_start, gap_end = gaps[0], gaps[-1]
    df = (spark.read.format("odradek").option("kafka.bootstrap.servers", servers)
          .option("assign", json.dumps({TOPIC: [0]}))
          .option("startingOffsets", json.dumps({TOPIC: {"0": gap_start}}))
          .option("endingOffsets", json.dumps({TOPIC: {"0": gap_end}})).load())
    assert [r[1] for r in rows(df)] == [o for o in offsets if gap_start <= o < gap_end]


def test_a_stream_reads_a_compacted_topic_while_it_is_cleaned(spark, compacted, cluster, tmp_path):
    servers, kept = compacted
    name = "compacted_stream"
    query = start_memory_stream(spark, servers, TOPIC, name, tmp_path / "cp", maxOffsetsPerTrigger="700")
    try:
        total = sum(len(records) for records in kept.values())
        wait_until(lambda: spark.table(name).count() >= total, 180, what="the cleaned records")
        # more updates, and the cleaner removing some of them while the stream reads: still no data loss
        produce(servers, TOPIC, [(0, b"key-%06d" % (i % KEYS), b"again-%d" % i) for i in range(600)])
        end = produce_sentinel(servers, TOPIC, 0)
        wait_cleaned(cluster, TOPIC, 0, end)
        latest_again = {b"key-%06d" % (i % KEYS): b"again-%d" % i for i in range(600)}
        wait_until(lambda: {r.value for r in spark.table(name).collect() if r.partition == 0}
                   >= {v.decode() for v in latest_again.values()}, 180, what="the newest values")
        assert query.isActive and query.exception() is None
    finally:
        query.stop()

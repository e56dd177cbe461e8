"""Batch reads (spark.read.format("odradek")) of a 3-partition topic on three real brokers."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from .helpers import create_topic, produce

TOPIC = "spark-batch"
BASE_TS = 1_700_000_000_000  # ms; record i of a partition gets BASE_TS + 1000 * i


@pytest.fixture(scope="module")
def servers(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    create_topic(servers, TOPIC, 3, replication=2)
    rows = [(p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), [("h", f"{i}".encode())], BASE_TS + 1000 * i)
            for p in range(3) for i in range(10)]
    produce(servers, TOPIC, rows)
    return servers


def read(spark, servers, **options):
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", servers)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def test_auto_registered_and_schema_is_sparks(spark, servers):
    df = read(spark, servers, subscribe=TOPIC, includeHeaders="true")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"),
        ("timestamp", "timestamp"), ("timestampType", "int"), ("headers", "array<struct<key:string,value:binary>>")]


def test_register_by_hand_is_the_same_source(spark, servers):
    from odradek.spark_connector import register

    register(spark)  # harmless next to the automatic registration
    assert read(spark, servers, subscribe=TOPIC).count() == 30


def test_batch_read_returns_every_row_with_metadata(spark, servers):
    rows = read(spark, servers, subscribe=TOPIC, includeHeaders="true").collect()
    assert len(rows) == 30
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value), r.topic, r.timestampType,
                  [(h.key, bytes(h.value)) for h in r.headers], r.timestamp) for r in rows)
    expected = sorted((p, i, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(), TOPIC, 0, [("h", f"{i}".encode())],
                       dt.datetime.fromtimestamp((BASE_TS + 1000 * i) / 1000, dt.timezone.utc).replace(tzinfo=None))
                      for p in range(3) for i in range(10))
    assert got == expected


def test_offsets_json_select_exact_ranges(spark, servers):
    starting = json.dumps({TOPIC: {"0": 2, "1": -2, "2": 9}})
    ending = json.dumps({TOPIC: {"0": 5, "1": 1, "2": -1}})
    rows = read(spark, servers, assign=json.dumps({TOPIC: [0, 1, 2]}), startingOffsets=starting,
                endingOffsets=ending).select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, 2), (0, 3), (0, 4), (1, 0), (2, 9)]


def test_timestamps_select_exact_ranges(spark, servers):
    rows = read(spark, servers, subscribe=TOPIC, startingTimestamp=str(BASE_TS + 7000),
                endingOffsetsByTimestamp=json.dumps({TOPIC: {"0": BASE_TS + 8000, "1": BASE_TS + 9000,
                                                              "2": BASE_TS + 99000}})
                ).select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, 7), (1, 7), (1, 8), (2, 7), (2, 8), (2, 9)]


def test_min_partitions_splits_ranges_without_changing_rows(spark, servers):
    df = read(spark, servers, subscribe=TOPIC, minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    assert sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()) == \
        [(p, i) for p in range(3) for i in range(10)]


@pytest.mark.parametrize("options, message", [
    ({"subscribe": TOPIC, "assign": "{}"}, "Only one of the following options"),
    ({}, "One of the following options must be specified"),
    ({"subscribe": TOPIC, "startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
    ({"subscribe": TOPIC, "endingOffsets": "earliest"}, "ending offset can't be earliest for batch queries"),
    ({"subscribe": TOPIC, "minPartitions": "0"}, "minPartitions"),
    ({"subscribe": TOPIC, "kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
    ({"subscribe": TOPIC, "startingOffsets": json.dumps({TOPIC: {"0": 1}})}, "you must specify all TopicPartitions"),
])
def test_invalid_options_fail_naming_the_option(spark, servers, options, message):
    with pytest.raises(Exception, match=message):
        read(spark, servers, **options).collect()


def test_aged_out_offsets_fail_or_are_skipped(spark, servers):
    from odradek.clients import Admin, TopicPartition

    topic = "spark-data-loss"
    create_topic(servers, topic, 1)
    produce(servers, topic, [(0, None, f"r{i}".encode()) for i in range(20)])
    with Admin(servers) as admin:
        admin.delete_records({TopicPartition(topic, 0): 10})  # offsets 0-9 are gone
    starting = json.dumps({topic: {"0": 0}})
    with pytest.raises(Exception, match="Some data may have been lost"):
        read(spark, servers, subscribe=topic, startingOffsets=starting).collect()
    rows = read(spark, servers, subscribe=topic, startingOffsets=starting, failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(10, 20))

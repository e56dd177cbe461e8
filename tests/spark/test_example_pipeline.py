"""examples/spark_pipeline.py runs end to end on the cluster the README starts (three brokers with
cluster.sh's settings: default.replication.factor 3, min.insync.replicas 2): twice, with new events in
between, and its two outputs (a topic read back with confluent-kafka, and parquet) hold exactly the
totals of every event. Its topics take the brokers' replication factor (issue 22: with RF 1 every
acks=all write was refused and the producer retried for ever)."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from odradek.clients import Admin
from tests.conftest import module_cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


def load_example():
    spec = importlib.util.spec_from_file_location("spark_pipeline_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def latest_per_key(servers, topic):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": f"check-{time.time()}",
                                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    latest, idle_since = {}, time.monotonic()
    try:
        while time.monotonic() - idle_since < 5:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            idle_since = time.monotonic()
            latest[message.key().decode()] = json.loads(message.value())
    finally:
        consumer.close()
    return latest


@pytest.fixture(scope="module")
def readme_cluster(zookeeper, tmp_path_factory):
    """Three brokers with the replication settings of `bash cluster.sh start` (LocalCluster's
    replication_defaults, as odradek-cluster passes them); the test fixtures' other overrides only shorten
    ZooKeeper sessions and shutdown retries."""
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("readme-cluster"), 3, replication_defaults=True)


def test_example_pipeline(spark, readme_cluster, tmp_path):
    example = load_example()
    servers = readme_cluster.bootstrap_servers
    example.ensure_topics(servers, "events", "user-totals")
    with Admin(servers) as admin:  # the brokers' default.replication.factor, not 1
        assert {t.topic: len(t.partitions[0].replicas) for t in admin.describe_topics(["events", "user-totals"])} \
            == {"events": 3, "user-totals": 3}
    example.produce_events(servers, "events", 300)
    example.run_pipeline(spark, servers, tmp_path)
    example.produce_events(servers, "events", 200, start=300)
    example.run_pipeline(spark, servers, tmp_path)  # resumes from the checkpoints

    expected = {f"u{u}": {"user": f"u{u}", "events": 100, "total": sum(range(u, 500, example.USERS))}
                for u in range(example.USERS)}
    assert latest_per_key(servers, "user-totals") == expected
    parquet = {r.user: {"user": r.user, "events": r.events, "total": r.total}
               for r in spark.read.parquet(str(tmp_path / "totals")).collect()}
    assert parquet == expected

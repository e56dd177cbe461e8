"""examples/spark_pipeline.py runs end to end: twice, with new events in between, and its two outputs
(a topic read back with confluent-kafka, and parquet) hold exactly the totals of every event."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

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


def test_example_pipeline(spark, three_broker_cluster, tmp_path):
    example = load_example()
    servers = three_broker_cluster.bootstrap_servers
    example.ensure_topics(servers, "events", "user-totals")
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

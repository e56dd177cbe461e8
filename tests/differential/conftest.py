"""One Apache Kafka 2.8.2 broker and one Odradek broker, each on a chroot of its own on the session's ZooKeeper,
with the same settings, shared by a test module."""

from __future__ import annotations

import pytest

from tests.conftest import module_cluster
from tests.kafka.fixtures import module_kafka_cluster

# The same keys for both brokers (on top of tests/conftest.py's TEST_BROKER_OVERRIDES and the cluster's
# server.properties, which KafkaCluster shares with LocalCluster).
SHARED_OVERRIDES = {
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "600000",
    # The scenarios' records carry timestamps of 2023 (scenarios_data.TS): a retention pass (Kafka's first comes
    # 30 s after its start) would delete them, on one side first when the run is slow.
    "log.retention.ms": "-1",
}


@pytest.fixture(scope="module")
def kafka_broker(zookeeper, tmp_path_factory):
    yield from module_kafka_cluster(zookeeper, tmp_path_factory.mktemp("diff-kafka"), 1, SHARED_OVERRIDES)


@pytest.fixture(scope="module")
def odradek_broker(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("diff-odradek"), 1, SHARED_OVERRIDES)

"""Module-scoped Kafka 2.8.2 clusters for the tests of the Kafka helper."""

from __future__ import annotations

import pytest

from tests.kafka.fixtures import module_kafka_cluster


@pytest.fixture(scope="module")
def kafka_two_brokers(zookeeper, tmp_path_factory):
    """Two Apache Kafka 2.8.2 brokers on a chroot of their own, shared by the module."""
    yield from module_kafka_cluster(zookeeper, tmp_path_factory.mktemp("kafka-two"), 2)

"""Pytest plumbing for Kafka 2.8.2 clusters: a module fixture's body and the one-line failure when the jars
are missing (a jvm test that cannot get Kafka fails, it is never skipped)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from odradek.tools.local_zookeeper import LocalZooKeeper
from tests.conftest import TEST_BROKER_OVERRIDES
from tests.kafka.kafka_cluster import KafkaCluster, KafkaJarsMissing


def new_kafka_cluster(data_dir: Path, zookeeper: LocalZooKeeper, brokers: int = 1,
                      overrides: dict | None = None, **options: Any) -> KafkaCluster:
    """A (not yet started) Kafka 2.8.2 cluster on free ports with a chroot of its own on ``zookeeper``, with
    the test settings our clusters get (tests/conftest.py's TEST_BROKER_OVERRIDES)."""
    return KafkaCluster(data_dir, brokers, zookeeper=zookeeper, base_port=0, chroot=f"/kafka-{uuid.uuid4().hex}",
                        broker_overrides={**TEST_BROKER_OVERRIDES, **(overrides or {})}, **options)


def start_or_fail(cluster: KafkaCluster, timeout: float = 120.0) -> KafkaCluster:
    """Start ``cluster``; without Java or the jars, fail the test with one line saying what is missing."""
    try:
        return cluster.start(timeout)
    except KafkaJarsMissing as e:
        pytest.fail(str(e), pytrace=False)


def module_kafka_cluster(zookeeper: LocalZooKeeper, data_dir: Path, brokers: int = 1,
                         overrides: dict | None = None, **options: Any) -> Iterator[KafkaCluster]:
    """A module fixture's body: ``yield from module_kafka_cluster(...)`` starts the cluster and stops it after."""
    cluster = new_kafka_cluster(data_dir, zookeeper, brokers, overrides, **options)
    try:
        yield start_or_fail(cluster)
    finally:
        cluster.stop(timeout=20.0)

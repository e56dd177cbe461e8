"""DescribeLogDirs (35) on a real 3-broker cluster, through our Admin and kafka-python's KafkaAdminClient.

Each broker answers for its own log dir: the partitions it holds a replica of, their sizes (equal on all
replicas once the followers caught up) and offset lag 0; a request naming partitions gets only those.
"""

from __future__ import annotations

import time

import pytest
from kafka.admin import KafkaAdminClient

from odradek.clients.admin.client import Admin, NewTopic
from odradek.clients import Producer
from odradek.clients.types import TopicPartition

pytestmark = pytest.mark.timeout(180)

TOPIC = "log-dirs"


@pytest.fixture(scope="module")
def cluster_with_topic(three_broker_cluster):
    cluster = three_broker_cluster
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=2)])
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    try:
        for i in range(300):
            producer.send(TOPIC, value=f"record-{i}".encode(), partition=i % 3)
        producer.flush(30)
    finally:
        producer.close()
    return cluster


def replicas_of(cluster) -> dict[TopicPartition, list[int]]:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        [description] = admin.describe_topics([TOPIC])
    return {TopicPartition(TOPIC, p.partition): sorted(p.replicas) for p in description.partitions}


def describe_until_replicas_agree(admin, timeout: float = 60.0):
    """Followers copy asynchronously: wait until every replica of a partition reports the same size."""
    deadline = time.monotonic() + timeout
    while True:
        dirs = admin.describe_log_dirs()
        sizes: dict[TopicPartition, set[int]] = {}
        for by_dir in dirs.values():
            for description in by_dir.values():
                for tp, info in description.replicas.items():
                    if tp.topic == TOPIC:
                        sizes.setdefault(tp, set()).add(info.size)
        if all(len(s) == 1 for s in sizes.values()) or time.monotonic() > deadline:
            return dirs


def test_our_admin_lists_every_replica_in_its_brokers_log_dir(cluster_with_topic):
    cluster = cluster_with_topic
    expected = replicas_of(cluster)
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        dirs = describe_until_replicas_agree(admin)
    assert sorted(dirs) == [0, 1, 2]
    found: dict[TopicPartition, list[int]] = {}
    sizes: dict[TopicPartition, set[int]] = {}
    for broker_id, by_dir in dirs.items():
        assert list(by_dir) == [str(cluster.brokers[broker_id].log_dirs)]
        [description] = by_dir.values()
        assert description.error is None
        for tp, info in description.replicas.items():
            if tp.topic != TOPIC:
                continue
            found.setdefault(tp, []).append(broker_id)
            sizes.setdefault(tp, set()).add(info.size)
            assert info.offset_lag == 0 and info.is_future is False
    assert {tp: sorted(b) for tp, b in found.items()} == expected
    assert all(len(s) == 1 and next(iter(s)) > 100 * len("record-0") for s in sizes.values()), sizes


def test_a_request_naming_partitions_gets_only_those(cluster_with_topic):
    cluster = cluster_with_topic
    expected = replicas_of(cluster)
    tp0 = TopicPartition(TOPIC, 0)
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        by_map = admin.describe_log_dirs({TOPIC: [0]})
        by_tp = admin.describe_log_dirs([tp0], brokers=[expected[tp0][0]])
        by_name = admin.describe_log_dirs([TOPIC])
    holders = sorted(b for b, dirs in by_map.items() for d in dirs.values() if d.replicas)
    assert holders == expected[tp0]
    assert all(set(d.replicas) <= {tp0} for dirs in by_map.values() for d in dirs.values())
    assert list(by_tp) == [expected[tp0][0]]
    assert set(next(iter(by_tp[expected[tp0][0]].values())).replicas) == {tp0}
    named = {tp for dirs in by_name.values() for d in dirs.values() for tp in d.replicas}
    assert named == set(expected)  # all partitions of the topic, and no internal topic's


def test_kafka_python_admin_describes_log_dirs(cluster_with_topic):
    cluster = cluster_with_topic
    expected = replicas_of(cluster)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        everything = admin.describe_log_dirs()
        only_one = admin.describe_log_dirs({TOPIC: [1]})
    finally:
        admin.close()
    found: dict[TopicPartition, list[int]] = {}
    for answer in everything:
        [log_dir] = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert log_dir["log_dir"] == str(cluster.brokers[answer["broker"]].log_dirs)
        for topic in log_dir["topics"]:
            for p in topic["partitions"]:
                assert p["offset_lag"] == 0 and p["is_future_key"] is False
                if topic["name"] == TOPIC:
                    assert p["partition_size"] > 0
                    found.setdefault(TopicPartition(TOPIC, p["partition_index"]), []).append(answer["broker"])
    assert {tp: sorted(b) for tp, b in found.items()} == expected
    holders = sorted(answer["broker"] for answer in only_one
                     for d in answer["log_dirs"] for t in d["topics"] if t["partitions"])
    assert holders == expected[TopicPartition(TOPIC, 1)]

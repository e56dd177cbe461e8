"""DeleteRecords (21) on a real 3-broker cluster, replication factor 3: confluent-kafka's and kafka-python's
delete_records return the new low watermark, consumers from earliest start there, fetching below it is
OFFSET_OUT_OF_RANGE, followers take the new log start offset (a new leader keeps it) and it survives
restarts; the leader's whole segments below it are deleted; errors per partition as Kafka."""

from __future__ import annotations

import signal
import time

import pytest

from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.messages import DeleteRecordsRequest
from tests.integration.helpers import wait_until

pytestmark = pytest.mark.timeout(300)

OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT = 1, 6, 3, 7
POLICY_VIOLATION = 44
EARLIEST = -2


@pytest.fixture
def cluster(odradek_cluster_factory):
    return odradek_cluster_factory(3)


def produce(client, topic: str, count: int, partition: int = 0) -> None:
    for i in range(0, count, 10):  # batches of 10 records (~500 bytes): several segments with segment.bytes=1024
        result = client.produce(topic, partition, [(b"k", b"v%04d" % n + b"-" * 30) for n in range(i, i + 10)],
                                acks=-1)
        assert result.error_code == 0


def delete_raw(client, node_id: int, topic: str, offsets: dict[int, int], timeout_ms: int = 30000) -> dict:
    request = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=p, offset=o)
        for p, o in offsets.items()])], timeout_ms=timeout_ms)
    answer = client.send(node_id, request, version=1, timeout=timeout_ms / 1000 + 30)
    return {p.partition_index: (p.error_code, p.low_watermark) for p in answer.topics[0].partitions}


def leader_of(client, topic: str, partition: int = 0, not_in: tuple = ()) -> int:
    def found():
        leader = client.metadata([topic]).leader_for(topic, partition)
        return [leader] if leader is not None and leader not in not_in else None  # a list: broker 0 is falsy
    return wait_until(found, what=f"a leader for {topic}-{partition} other than {not_in}")[0]


def segment_bases(cluster, broker_id: int, topic: str, partition: int = 0) -> list[int]:
    directory = cluster.data_dir / f"broker-{broker_id}" / f"{topic}-{partition}"
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))


def test_confluent_delete_records_moves_the_log_start_everywhere(cluster):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("dr-events", 1, 3, config={"segment.bytes": "1024"})])["dr-events"].result(30)
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        client.wait_for_leaders("dr-events")
        produce(client, "dr-events", 100)
        leader = leader_of(client, "dr-events")
        segments_before = segment_bases(cluster, leader, "dr-events")
        assert len(segments_before) >= 5

        futures = admin.delete_records([TopicPartition("dr-events", 0, 45)], operation_timeout=30)
        deleted = futures[TopicPartition("dr-events", 0, 45)].result(30)
        # The low watermark is the smallest log start offset of all live replicas: followers are there too.
        assert deleted.low_watermark == 45
        assert client.list_offsets("dr-events", 0, EARLIEST)[0] == 45
        # Whole segments below 45 are gone from the leader's disk at once.
        bases = segment_bases(cluster, leader, "dr-events")
        assert bases[0] <= 45 and (len(bases) == 1 or bases[1] > 45) and len(bases) < len(segments_before)

        # Fetching below the log start offset is OFFSET_OUT_OF_RANGE; from it, records start there.
        assert client.fetch("dr-events", 0, 10).error_code == OFFSET_OUT_OF_RANGE
        assert client.fetch("dr-events", 0, 45).records[0].offset == 45

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "dr-group",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            consumer.subscribe(["dr-events"])
            first = None
            deadline = time.monotonic() + 30
            while first is None and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    first = message.offset()
            assert first == 45
        finally:
            consumer.close()

        # Offset -1 means the high watermark (all records).
        assert delete_raw(client, leader, "dr-events", {0: -1}) == {0: (0, 100)}

        # The leader stops cleanly: the new leader (a follower until now) kept the log start offset.
        cluster.stop_broker(leader)
        new_leader = leader_of(client, "dr-events", not_in=(leader,))
        assert client.list_offsets("dr-events", 0, EARLIEST)[0] == 100
        cluster.start_broker(leader)
        # And once more with the restarted broker back in the ISR: stop the new leader too.
        wait_until(lambda: delete_raw(client, new_leader, "dr-events", {0: 100})[0] == (0, 100),
                   what="the restarted broker reporting its log start offset")
        cluster.stop_broker(new_leader)
        leader_of(client, "dr-events", not_in=(new_leader,))
        assert client.list_offsets("dr-events", 0, EARLIEST)[0] == 100
        produce(client, "dr-events", 10)
        assert client.fetch("dr-events", 0, 100).records[0].offset == 100


def test_delete_records_errors_and_timeout(cluster):
    kafka_admin = pytest.importorskip("kafka.admin")
    from kafka import TopicPartition as KafkaTopicPartition
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        assert client.create_topics({"dr-errors": (2, 3), "dr-compacted": (1, 3)},
                                    configs={"dr-compacted": {"cleanup.policy": "compact"}}) == \
            {"dr-errors": 0, "dr-compacted": 0}
        client.wait_for_leaders("dr-errors")
        client.wait_for_leaders("dr-compacted")
        produce(client, "dr-errors", 20)
        produce(client, "dr-compacted", 10)
        leader = leader_of(client, "dr-errors")
        follower = next(b for b in range(3) if b != leader)

        # kafka-python's delete_records: the low watermark per partition.
        admin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            answer = admin.delete_records({KafkaTopicPartition("dr-errors", 0): 5})
            assert answer[KafkaTopicPartition("dr-errors", 0)]["low_watermark"] == 5
        finally:
            admin.close()

        assert delete_raw(client, leader, "dr-errors", {0: 21}) == {0: (OFFSET_OUT_OF_RANGE, -1)}
        assert delete_raw(client, leader, "dr-errors", {0: -5}) == {0: (OFFSET_OUT_OF_RANGE, -1)}
        assert delete_raw(client, follower, "dr-errors", {0: 10}) == {0: (NOT_LEADER_OR_FOLLOWER, -1)}
        assert delete_raw(client, leader, "dr-no-such-topic", {0: 1}) == {0: (UNKNOWN_TOPIC_OR_PARTITION, -1)}
        compacted_leader = leader_of(client, "dr-compacted")
        assert delete_raw(client, compacted_leader, "dr-compacted", {0: 1}) == {0: (POLICY_VIOLATION, -1)}
        assert client.list_offsets("dr-errors", 0, EARLIEST)[0] == 5

        # A follower that does not fetch holds the low watermark back: the request times out waiting
        # for it (DelayedDeleteRecords), although the leader's log start offset moved.
        cluster.kill_broker(follower, signal.SIGSTOP)
        try:
            assert delete_raw(client, leader, "dr-errors", {0: 15}, timeout_ms=1500) == {0: (REQUEST_TIMED_OUT, -1)}
        finally:
            cluster.kill_broker(follower, signal.SIGCONT)
        assert client.list_offsets("dr-errors", 0, EARLIEST)[0] == 15
        wait_until(lambda: delete_raw(client, leader, "dr-errors", {0: 15}) == {0: (0, 15)},
                   what="the resumed follower catching up with the log start offset")

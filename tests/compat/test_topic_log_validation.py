"""compression.type and the timestamp settings of a topic, with unmodified third-party clients (issue 13).

As Kafka's LogValidator: a topic whose compression.type is not ``producer`` stores its own codec whatever the
producer used (``uncompressed`` stores batches uncompressed), and clients read the records back unchanged;
LogAppendTime stamps the broker's time; CreateTime outside message.timestamp.difference.max.ms is refused
with INVALID_TIMESTAMP.
"""

from __future__ import annotations

import time

import pytest

from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.records import Compression, iter_batches

from .client_drivers import (CODECS, plan, produce_confluent_kafka, produce_kafka_python,
                             read_confluent_kafka, read_kafka_python)

pytestmark = pytest.mark.timeout(300)

PER_PARTITION = 200
PRODUCERS = {"kafka-python": produce_kafka_python, "confluent-kafka": produce_confluent_kafka}
READERS = {"kafka-python": read_kafka_python, "confluent-kafka": read_confluent_kafka}


def create(cluster, topic: str, partitions: int, **configs: str) -> None:
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        assert client.create_topics({topic: (partitions, 1)}, configs=configs)[topic] == 0
        client.wait_for_leaders(topic)


def codecs_on_disk(cluster, topic: str, partition: int) -> set[int]:
    folder = cluster.brokers[0].log_dirs / f"{topic}-{partition}"
    return {b.compression for segment in sorted(folder.glob("*.log"))
            for b in iter_batches(bytearray(segment.read_bytes()), allow_partial=False)}


@pytest.mark.parametrize("topic_codec, stored", [("gzip", Compression.GZIP), ("uncompressed", Compression.NONE)])
def test_the_topics_codec_is_stored_whatever_the_producer_used(single_broker_cluster, topic_codec, stored):
    for producer, produce in PRODUCERS.items():
        topic = f"codec-{topic_codec}-{producer}"
        create(single_broker_cluster, topic, len(CODECS), **{"compression.type": topic_codec})
        plans = {p: (codec, plan(producer, codec, PER_PARTITION)) for p, codec in enumerate(CODECS)}
        produce(single_broker_cluster.bootstrap_servers, topic, plans)
        for partition in plans:
            assert codecs_on_disk(single_broker_cluster, topic, partition) == {stored}, (producer, partition)
        ends = {p: PER_PARTITION for p in plans}
        for reader, read in READERS.items():
            got = read(single_broker_cluster.bootstrap_servers, topic, ends)
            for partition, (_, planned) in plans.items():
                assert [(r.key, r.value, r.headers) for r in got[partition]] == \
                    [(p.key, p.value, p.headers) for p in planned], (producer, reader, partition)
                assert [r.offset for r in got[partition]] == list(range(PER_PARTITION))


def test_log_append_time_stamps_the_brokers_clock(single_broker_cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    create(single_broker_cluster, "stamped", 1, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=single_broker_cluster.bootstrap_servers)
    try:
        metadata = producer.send("stamped", b"v", timestamp_ms=1_000).get(timeout=30)
    finally:
        producer.close(timeout=10)
    after = int(time.time() * 1000)
    assert before <= metadata.timestamp <= after  # the append time comes back in the answer
    consumer = KafkaConsumer(bootstrap_servers=single_broker_cluster.bootstrap_servers, group_id=None,
                             auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("stamped", 0)])
        records = []
        deadline = time.monotonic() + 30
        while not records and time.monotonic() < deadline:
            records = [m for ms in consumer.poll(timeout_ms=500).values() for m in ms]
    finally:
        consumer.close()
    assert [(m.timestamp_type, m.timestamp) for m in records] == [(1, metadata.timestamp)]


def test_create_time_too_far_from_the_brokers_clock_is_refused(single_broker_cluster):
    import confluent_kafka
    from kafka import KafkaProducer
    from kafka.errors import InvalidTimestampError

    create(single_broker_cluster, "bounded-time", 1, **{"message.timestamp.difference.max.ms": "3600000"})
    producer = KafkaProducer(bootstrap_servers=single_broker_cluster.bootstrap_servers, retries=0)
    try:
        assert producer.send("bounded-time", b"now").get(timeout=30).offset == 0
        with pytest.raises(InvalidTimestampError):
            producer.send("bounded-time", b"old", timestamp_ms=int(time.time() * 1000) - 7_200_000).get(timeout=30)
    finally:
        producer.close(timeout=10)
    reports = []
    ck = confluent_kafka.Producer({"bootstrap.servers": single_broker_cluster.bootstrap_servers})
    ck.produce("bounded-time", b"future", timestamp=int(time.time() * 1000) + 7_200_000,
               on_delivery=lambda err, msg: reports.append(err))
    ck.flush(30)
    assert [e.code() for e in reports] == [confluent_kafka.KafkaError.INVALID_TIMESTAMP]
    with SyncSimpleClient(single_broker_cluster.bootstrap_servers) as client:
        assert [r.value for r in client.fetch("bounded-time", 0, 0).records] == [b"now"]  # nothing else written

"""zstd and Fetch versions (KIP-110) against a real broker: raw Fetch requests at chosen versions.

- A zstd batch written by confluent-kafka (``compression.type=zstd``) after an uncompressed one, on a topic
  with the default ``compression.type=producer``: Fetch v10+ returns both; Fetch v9 (and v3) gets only the
  batch before it, and UNSUPPORTED_COMPRESSION_TYPE (76) once the zstd batch comes first.
- A topic whose ``compression.type`` is zstd: any Fetch below v10 gets 76 for it, whatever its batches hold
  (Kafka 2.8's KafkaApis.maybeConvertFetchedData checks the topic config); v10 reads it.
"""

from __future__ import annotations

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.records import Compression, iter_batches
from odradek.protocol.records.legacy_records import iter_messages
from tests.integration.helpers import raw_fetch, run

pytestmark = pytest.mark.timeout(180)

UNSUPPORTED_COMPRESSION_TYPE = 76


def codecs(records) -> list[int]:
    return [batch.compression for batch in iter_batches(bytes(records or b""))]


def produce_zstd(servers: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": servers, "compression.type": "zstd", "linger.ms": 50})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(60) == 0


def test_zstd_batches_reach_only_fetch_v10_and_later(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic = "zstd-batches"

    async def setup():
        async with SimpleClient(servers) as client:
            assert (await client.create_topics({topic: (1, 1)}))[topic] == 0
            await client.wait_for_leaders(topic)
            assert (await client.produce(topic, 0, [(None, b"plain-1"), (None, b"plain-2")], acks=-1)).error_code == 0
    run(setup())
    produce_zstd(servers, topic, [b"zstd-%d" % i * 20 for i in range(10)])

    async def check():
        async with SimpleClient(servers) as client:
            for version in (10, 11, 12):
                answer = await raw_fetch(client, topic, 0, version)
                assert answer.error_code == 0
                assert codecs(answer.records) == [Compression.NONE, Compression.ZSTD], version
                values = [r.value for b in iter_batches(bytes(answer.records)) for r in b.records()]
                assert values[:2] == [b"plain-1", b"plain-2"] and values[2:] == [b"zstd-%d" % i * 20 for i in range(10)]
            for version in (9, 4, 3):
                before = await raw_fetch(client, topic, 0, version)  # the batch before the zstd one
                if version == 3:  # down-converted to magic 1 messages
                    assert before.error_code == 0
                    messages = list(iter_messages(bytes(before.records)))
                    assert [(m.compression, m.value) for m in messages] == [(0, b"plain-1"), (0, b"plain-2")]
                else:
                    assert before.error_code == 0 and codecs(before.records) == [Compression.NONE], version
                assert before.high_watermark == 12
                refused = await raw_fetch(client, topic, 2, version)  # the zstd batch first
                assert refused.error_code == UNSUPPORTED_COMPRESSION_TYPE, version
                assert (refused.high_watermark, bytes(refused.records or b"")) == (-1, b"")
    run(check())


def test_topic_compressed_with_zstd_is_refused_below_fetch_v10(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic = "zstd-topic"

    async def check():
        async with SimpleClient(servers) as client:
            created = await client.create_topics({topic: (1, 1)}, configs={"compression.type": "zstd"})
            assert created[topic] == 0
            await client.wait_for_leaders(topic)
            assert (await client.produce(topic, 0, [(None, b"stored")], acks=-1)).error_code == 0
            for version in (0, 4, 9):
                answer = await raw_fetch(client, topic, 0, version)
                assert answer.error_code == UNSUPPORTED_COMPRESSION_TYPE, version
            answer = await raw_fetch(client, topic, 0, 10)
            assert answer.error_code == 0 and len(codecs(answer.records)) == 1
    run(check())

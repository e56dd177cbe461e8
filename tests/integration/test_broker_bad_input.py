"""Bad input over real sockets against real broker processes: clear answers, nothing lost, others served."""

from __future__ import annotations

import asyncio
import struct

import pytest

from odradek.clients.simple_client import SimpleClient, build_batch
from odradek.protocol import errors
from odradek.protocol.messages import CreateTopicsRequest, ProduceRequest
from tests.unit.broker.network.helpers import Client

pytestmark = pytest.mark.timeout(120)
MAGIC_OFFSET = 16


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


async def topic(client: SimpleClient, name: str, partitions: int = 1) -> None:
    assert (await client.create_topics({name: (partitions, 1)}))[name] in (0, errors.TopicAlreadyExistsError.code)
    await client.wait_for_leaders(name)


def test_bad_batches_get_their_kafka_error_codes_and_lose_nothing(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await topic(client, "bad-batches")
            assert (await client.produce("bad-batches", 0, [(None, b"good")])).base_offset == 0
            corrupt = bytearray(build_batch([(None, b"payload")]))
            corrupt[-1] ^= 0xFF  # a flipped bit under the CRC
            assert (await client.produce("bad-batches", 0, bytes(corrupt))).error_code == \
                errors.CorruptMessageError.code
            old_magic = bytearray(build_batch([(None, b"payload")]))
            old_magic[MAGIC_OFFSET] = 1
            assert (await client.produce("bad-batches", 0, bytes(old_magic))).error_code == \
                errors.InvalidRecordError.code
            too_large = [(None, b"x" * (1024 * 1024 + 100))]  # over message.max.bytes (1048588)
            assert (await client.produce("bad-batches", 0, too_large)).error_code == \
                errors.MessageTooLargeError.code
            truncated = build_batch([(None, b"payload")])[:-3]
            assert (await client.produce("bad-batches", 0, truncated)).error_code == errors.CorruptMessageError.code
            fetched = await client.fetch("bad-batches", 0, 0)
            assert [r.value for r in fetched.records] == [b"good"]
            assert (await client.fetch("bad-batches", 0, 5)).error_code == errors.OffsetOutOfRangeError.code
            assert (await client.produce("unknown-topic-here", 0, [(None, b"x")])).error_code == \
                errors.UnknownTopicOrPartitionError.code
    run(main())


def test_invalid_topic_names_and_arguments_are_refused(single_broker_cluster):
    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            conn = await client.connection((await client.metadata([])).controller_id)
            topics = [CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
                      for name in ("bad/name", "..", "x" * 250)]
            topics.append(CreateTopicsRequest.CreatableTopic(name="zero-partitions", num_partitions=0,
                                                             replication_factor=1))
            topics.append(CreateTopicsRequest.CreatableTopic(name="too-many-replicas", num_partitions=1,
                                                             replication_factor=3))
            response = await conn.send(CreateTopicsRequest(topics=topics, timeout_ms=5000))
            codes = {t.name: t.error_code for t in response.topics}
            assert codes == {"bad/name": errors.InvalidTopicError.code, "..": errors.InvalidTopicError.code,
                             "x" * 250: errors.InvalidTopicError.code,
                             "zero-partitions": errors.InvalidPartitionsError.code,
                             "too-many-replicas": errors.InvalidReplicationFactorError.code}
            assert all(t.error_message for t in response.topics)
    run(main())


def test_garbage_and_oversized_frames_close_only_their_connection(single_broker_cluster):
    async def main():
        port = single_broker_cluster.broker_ports[0]
        bystander = await Client.connect(port)
        assert (await bystander.api_versions()).error_code == 0
        for raw in (struct.pack(">i", -5), struct.pack(">i", 200 * 1024 * 1024),
                    frame(struct.pack(">hhih", 99, 0, 1, -1)),               # unknown api key 99
                    struct.pack(">i", 3) + b"abc"):                    # a header cut short
            victim = await Client.connect(port)
            victim.send_raw(raw)
            assert await victim.closed_by_server()
            victim.close()
        unsupported = await Client.connect(port)
        # ApiVersions v4 (newer than Kafka 2.8's): answered with a v0 body, not closed (KIP-511).
        unsupported.send_raw(frame(struct.pack(">hhih", 18, 4, 41, 1) + b"x\x00" + b"\x02a\x021\x00"))
        correlation_id, body = await unsupported.receive(18, 0)
        assert correlation_id == 41
        assert body.error_code == errors.UnsupportedVersionError.code
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 3)]
        assert (await bystander.api_versions(correlation_id=2)).error_code == 0
        bystander.close()
        unsupported.close()
    run(main())


def test_produce_to_a_broker_that_does_not_lead_the_partition(three_broker_cluster):
    async def main():
        async with SimpleClient(three_broker_cluster.bootstrap_servers) as client:
            md = await client.wait_for_brokers(3)
            assert sorted(md.brokers) == [0, 1, 2] and md.controller_id in (0, 1, 2)
            await topic(client, "spread", partitions=6)
            md = await client.metadata(["spread"])
            leaders = {p: info.leader for p, info in md.topics["spread"].partitions.items()}
            assert set(leaders.values()) == {0, 1, 2}  # round-robin assignment spreads the leaders
            partition, leader = next(iter(leaders.items()))
            other = next(b for b in (0, 1, 2) if b != leader)
            # Kafka answers NOT_LEADER_OR_FOLLOWER only once the broker's metadata knows the partition
            # (UNKNOWN_TOPIC_OR_PARTITION before): wait for the controller's UpdateMetadata to reach it.
            await client.wait_until_broker_knows(other, "spread")
            request = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
                name="spread", partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=partition, records=build_batch([(None, b"x")]))])])
            response = await client.send(other, request)
            assert response.responses[0].partition_responses[0].error_code == errors.NotLeaderOrFollowerError.code
            for p in leaders:
                assert (await client.produce("spread", p, [(None, b"%d" % p)])).error_code == 0
    run(main())

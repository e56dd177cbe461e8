"""Bad input over real sockets against real broker processes: clear answers, nothing lost, others served."""

from __future__ import annotations

import asyncio
import struct

import pytest

from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SimpleClient, build_batch
from odradek.protocol import errors
from odradek.protocol.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
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


def _fetch(partitions: list[tuple[int, int, int]], topic: str, *, min_bytes: int = 1, max_wait_ms: int = 0):
    """A sessionless consumer Fetch of (partition, fetch offset, partition max bytes) entries."""
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                            topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                                partition=p, fetch_offset=offset, partition_max_bytes=size)
                                for p, offset, size in partitions])])


def test_a_parked_fetch_with_a_negative_size_leaves_produce_and_replication_untouched(three_broker_cluster):
    """Issue 13 finding 1: such a fetch made every later append to its partition fail (the records were
    written, the producer told UNKNOWN_SERVER_ERROR) and follower fetches with it, until it expired."""
    async def main():
        async with SimpleClient(three_broker_cluster.bootstrap_servers) as client:
            await client.wait_for_brokers(3)
            assert (await client.create_topics({"parked-negative": (1, 3)}))["parked-negative"] == 0
            md = await client.wait_for_leaders("parked-negative")
            leader = md.topics["parked-negative"].partitions[0].leader
            assert (await client.produce("parked-negative", 0, [(None, b"first")], acks=-1)).base_offset == 0
            # Its own connection: the broker answers one request per connection at a time.
            parker = await BrokerConnection.connect(*client.cluster.broker_address(leader))
            parked = asyncio.ensure_future(parker.send(
                _fetch([(0, 1, -5)], "parked-negative", min_bytes=1000, max_wait_ms=60_000), timeout=90))
            await asyncio.sleep(0.2)  # let it park (nothing to wait for: it stays parked for 60 s)
            assert not parked.done()
            for i in range(1, 21):
                result = await client.produce("parked-negative", 0, [(None, b"v%d" % i)], acks=-1)
                assert (result.error_code, result.base_offset) == (0, i)  # replicated to the whole ISR
            fetched = await client.fetch("parked-negative", 0, 0)
            assert [r.value for r in fetched.records] == [b"first"] + [b"v%d" % i for i in range(1, 21)]
            assert fetched.high_watermark == 21
            md = await client.metadata(["parked-negative"])
            assert sorted(md.topics["parked-negative"].partitions[0].isr) == [0, 1, 2]
            parked.cancel()
            await parker.close()
    run(main())


def test_a_plain_fetch_with_a_negative_size_fails_that_partition_alone(three_broker_cluster):
    async def main():
        async with SimpleClient(three_broker_cluster.bootstrap_servers) as client:
            await client.wait_for_brokers(3)
            created = await client.create_topics({"plain-negative": (6, 1)})  # two partitions a broker
            assert created["plain-negative"] == 0
            md = await client.wait_for_leaders("plain-negative")
            leaders = {p: info.leader for p, info in md.topics["plain-negative"].partitions.items()}
            leader = leaders[0]
            mine = [p for p, broker in leaders.items() if broker == leader]
            for p in mine:
                assert (await client.produce("plain-negative", p, [(None, b"p%d" % p)])).error_code == 0
            assert len(mine) >= 2

            async def answers(partitions):
                response = await client.send(leader, _fetch(partitions, "plain-negative"))
                assert response.error_code == 0
                return [(d.partition_index, d.error_code, bool(d.records))
                        for t in response.responses for d in t.partitions]
            # Kafka's LogSegment.read refuses the size: that partition alone gets UNKNOWN_SERVER_ERROR.
            assert await answers([(p, 0, -1 if p == mine[0] else 1 << 20) for p in mine]) == \
                [(mine[0], errors.UnknownServerError.code, False)] + [(p, 0, True) for p in mine[1:]]
            # At the log end nothing is read, so nothing fails (as Kafka).
            assert await answers([(mine[0], 1, -1)]) == [(mine[0], 0, False)]
            assert (await client.produce("plain-negative", mine[0], [(None, b"after")])).base_offset == 1
    run(main())

"""Our consumer (AIOConsumer and the synchronous Consumer) against real brokers and ZooKeeper."""

from __future__ import annotations

import asyncio
import signal

import pytest

from odradek.clients.consumer.consumer import AIOConsumer, NoOffsetForPartitionError
from odradek.clients.simple_client import SimpleClient
from odradek.clients.consumer.sync_consumer import Consumer
from odradek.clients.types import KafkaConfigurationError, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import OffsetOutOfRangeError

pytestmark = pytest.mark.timeout(240)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_PARTITION = 3334  # 3 partitions: 10,002 records per codec


def run(coro, timeout: float = 200):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def expected_value(partition: int, i: int) -> bytes:
    return b"p%d-%06d-" % (partition, i) + b"x" * (i % 50)


async def create(client: SimpleClient, topic: str, partitions: int, replication: int = 1) -> None:
    assert (await client.create_topics({topic: (partitions, replication)}))[topic] == 0
    await client.wait_for_leaders(topic)


async def fill(client: SimpleClient, topic: str, partition: int, count: int, *, compression: str = "none",
               batch: int = 500, start: int = 0, timestamp=None, acks: int = 1) -> None:
    for first in range(start, start + count, batch):
        records = [(b"k%d" % i, expected_value(partition, i), [("h", b"%d" % i)],
                    None if timestamp is None else timestamp(i))
                   for i in range(first, min(first + batch, start + count))]
        result = await client.produce(topic, partition, records, compression=compression, acks=acks)
        assert result.error_code == 0


async def consume(consumer: AIOConsumer, count: int) -> dict[TopicPartition, list]:
    got: dict[TopicPartition, list] = {}
    total = 0
    while total < count:
        for tp, records in (await consumer.getmany(timeout_ms=2000)).items():
            got.setdefault(tp, []).extend(records)
            total += len(records)
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_reads_every_record_of_each_codec_in_order(single_broker_cluster, codec):
    topic = f"codec-{codec}"
    partitions = [TopicPartition(topic, p) for p in range(3)]

    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await create(client, topic, 3)
            await asyncio.gather(*(fill(client, topic, p, PER_PARTITION, compression=codec) for p in range(3)))
        async with AIOConsumer(bootstrap_servers=single_broker_cluster.bootstrap_servers,
                               auto_offset_reset="earliest", max_partition_fetch_bytes=64 * 1024,
                               value_deserializer=bytes.decode) as consumer:
            consumer.assign(partitions)
            assert consumer.assignment() == set(partitions)
            got = await consume(consumer, 3 * PER_PARTITION)
            assert await consumer.getmany(timeout_ms=200) == {}  # nothing beyond the end
            for tp in partitions:
                records = got[tp]
                assert [r.offset for r in records] == list(range(PER_PARTITION))
                assert [r.value for r in records] == [expected_value(tp.partition, i).decode()
                                                      for i in range(PER_PARTITION)]
                assert [r.key for r in records] == [b"k%d" % i for i in range(PER_PARTITION)]
                assert records[7].headers == [("h", b"7")]
                assert (records[7].serialized_key_size, records[7].serialized_value_size) == (
                    2, len(expected_value(tp.partition, 7)))
                assert {(r.topic, r.partition, r.timestamp_type) for r in records} == {(topic, tp.partition, 0)}
                assert await consumer.position(tp) == PER_PARTITION
                assert consumer.highwater(tp) == PER_PARTITION
    run(main())


def test_seek_position_pause_and_offset_queries(single_broker_cluster):
    topic = "seeking"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    base = 1_700_000_000_000

    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await create(client, topic, 2)
            for p in (0, 1):
                await fill(client, topic, p, 100, batch=10, timestamp=lambda i: base + 1000 * i)
        async with AIOConsumer(bootstrap_servers=single_broker_cluster.bootstrap_servers,
                               auto_offset_reset="earliest") as consumer:
            consumer.assign([tp0, tp1])
            assert await consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
            assert await consumer.end_offsets([tp0, tp1]) == {tp0: 100, tp1: 100}
            found = await consumer.offsets_for_times({tp0: base + 41_500, tp1: base + 200_000})
            assert found == {tp0: OffsetAndTimestamp(42, base + 42_000), tp1: None}
            assert await consumer.position(tp0) == 0

            consumer.seek(tp0, 42)
            assert await consumer.position(tp0) == 42
            got = await consumer.getmany(tp0, timeout_ms=5000, max_records=5)
            assert [r.offset for r in got[tp0]] == [42, 43, 44, 45, 46]
            assert got[tp0][0].timestamp == base + 42_000
            assert await consumer.position(tp0) == 47

            consumer.pause(tp0)
            assert consumer.paused() == {tp0}
            rest = await consume(consumer, 100)  # only tp1 comes while tp0 is paused
            assert set(rest) == {tp1} and [r.offset for r in rest[tp1]] == list(range(100))
            assert await consumer.position(tp0) == 47
            consumer.resume(tp0)
            assert consumer.paused() == set()
            rest = await consume(consumer, 53)
            assert [r.offset for r in rest[tp0]] == list(range(47, 100))

            await consumer.seek_to_beginning(tp1)
            assert await consumer.position(tp1) == 0
            await consumer.seek_to_end(tp0)
            assert await consumer.position(tp0) == 100
            got = await consume(consumer, 100)
            assert set(got) == {tp1} and got[tp1][-1].offset == 99
    run(main())


def test_offset_reset_policies(single_broker_cluster):
    topic = "resets"
    tp = TopicPartition(topic, 0)

    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await create(client, topic, 1)
            await fill(client, topic, 0, 10)
            servers = single_broker_cluster.bootstrap_servers
            async with AIOConsumer(bootstrap_servers=servers, auto_offset_reset="none") as consumer:
                consumer.assign([tp])
                with pytest.raises(NoOffsetForPartitionError):
                    await consumer.getmany(timeout_ms=1000)
                consumer.seek(tp, 1000)  # beyond the end: the broker answers OFFSET_OUT_OF_RANGE
                with pytest.raises(OffsetOutOfRangeError):
                    await consumer.getmany(timeout_ms=5000)
            async with AIOConsumer(bootstrap_servers=servers, auto_offset_reset="earliest") as consumer:
                consumer.assign([tp])
                consumer.seek(tp, 1000)  # out of range: reset to the earliest offset
                got = await consume(consumer, 10)
                assert [r.offset for r in got[tp]] == list(range(10))
            async with AIOConsumer(bootstrap_servers=servers) as consumer:  # latest, kafka-python's default
                consumer.assign([tp])
                assert await consumer.position(tp) == 10
                await fill(client, topic, 0, 5, start=10)
                got = await consume(consumer, 5)
                assert [r.offset for r in got[tp]] == list(range(10, 15))
    run(main())


def test_unknown_config_is_refused():
    with pytest.raises(KafkaConfigurationError, match="Unrecognized configs"):
        AIOConsumer(bootstrap_servers="127.0.0.1:1", no_such_setting=1)


def test_consumer_follows_a_new_leader(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3)
    topic = "moving"
    tp = TopicPartition(topic, 0)

    async def main():
        async with SimpleClient(cluster.bootstrap_servers, retries=30) as client:
            await client.wait_for_brokers(3)
            await create(client, topic, 1, replication=3)
            await fill(client, topic, 0, 1000, batch=100, acks=-1)
            async with AIOConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                   auto_offset_reset="earliest") as consumer:
                consumer.assign([tp])
                first = await consume(consumer, 1000)
                old_leader = client.cluster.leader_for(topic, 0)
                await asyncio.to_thread(cluster.kill_broker, old_leader, signal.SIGKILL)
                # The producer's retries wait for the new leader; acks=-1 keeps what it acknowledged.
                await fill(client, topic, 0, 1000, batch=100, start=1000, acks=-1)
                assert client.cluster.leader_for(topic, 0) != old_leader
                second = await consume(consumer, 1000)
            records = first[tp] + second[tp]
            assert [r.offset for r in records] == list(range(2000))
            assert [r.value for r in records] == [expected_value(0, i) for i in range(2000)]
    run(main())


def test_sync_consumer_iterates_until_idle(single_broker_cluster):
    topic = "iterated"

    async def produce():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await create(client, topic, 3)
            for p in range(3):
                await fill(client, topic, p, 200, batch=50)
    run(produce())

    # Without a group_id, subscribing takes every partition of the topic (as kafka-python does).
    with Consumer(topic, bootstrap_servers=single_broker_cluster.bootstrap_servers, auto_offset_reset="earliest",
                  consumer_timeout_ms=1500, key_deserializer=bytes.decode) as consumer:
        assert consumer.assignment() == {TopicPartition(topic, p) for p in range(3)}
        records = list(consumer)
        assert len(records) == 600
        for p in range(3):
            mine = [r for r in records if r.partition == p]
            assert [r.key for r in mine] == ["k%d" % i for i in range(200)]
        consumer.seek(TopicPartition(topic, 1), 190)
        batches = consumer.poll(timeout_ms=5000)
        assert [r.offset for r in batches[TopicPartition(topic, 1)]] == list(range(190, 200))
        assert consumer.position(TopicPartition(topic, 1)) == 200
        assert consumer.end_offsets([TopicPartition(topic, 2)]) == {TopicPartition(topic, 2): 200}


def test_a_failing_deserializer_reaches_the_application(single_broker_cluster):
    topic = "undecodable"
    tp = TopicPartition(topic, 0)

    def strict(value: bytes) -> int:
        return int(value)  # b"p0-..." is no integer

    async def main():
        async with SimpleClient(single_broker_cluster.bootstrap_servers) as client:
            await create(client, topic, 1)
            await fill(client, topic, 0, 3)
        async with AIOConsumer(bootstrap_servers=single_broker_cluster.bootstrap_servers,
                               auto_offset_reset="earliest", value_deserializer=strict) as consumer:
            consumer.assign([tp])
            with pytest.raises(ValueError):
                await consumer.getmany(timeout_ms=5000)
            assert await consumer.position(tp) == 0  # nothing was handed over
    run(main())


def test_commit_and_committed_without_group_membership(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, overrides={"offsets.topic.replication.factor": "1"})
    topic = "committing"
    tp = TopicPartition(topic, 0)

    async def main():
        async with SimpleClient(cluster.bootstrap_servers) as client:
            conn = await client.connection(0)
            needed = (ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH)
            if not all(key in conn.api_versions for key in needed):
                pytest.skip("the broker does not serve the group coordinator's APIs yet")
            await create(client, topic, 1)
            await fill(client, topic, 0, 10)
        servers = cluster.bootstrap_servers
        async with AIOConsumer(bootstrap_servers=servers, group_id="simple", auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            assert await consumer.committed(tp) is None
            got = await consumer.getmany(timeout_ms=5000, max_records=4)
            assert [r.offset for r in got[tp]] == [0, 1, 2, 3]
            await consumer.commit()  # the current position, generation -1
            assert await consumer.committed(tp) == OffsetAndMetadata(4, "")
            await consumer.commit({tp: OffsetAndMetadata(7, "seven")})
        async with AIOConsumer(bootstrap_servers=servers, group_id="simple", auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            assert await consumer.committed(tp) == OffsetAndMetadata(7, "seven")
            assert await consumer.position(tp) == 7  # the committed offset wins over auto_offset_reset
            got = await consume(consumer, 3)
            assert [r.offset for r in got[tp]] == [7, 8, 9]
    run(main())

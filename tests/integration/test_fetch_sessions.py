"""Incremental fetch sessions (KIP-227) against a real broker process: raw requests and kafka-python."""

from __future__ import annotations

import asyncio

import pytest

from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SimpleClient, records_from_fetch
from odradek.protocol import errors
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import FetchRequest

pytestmark = pytest.mark.timeout(180)

_Topic = FetchRequest.FetchTopic
_Partition = _Topic.FetchPartition
_Forgotten = FetchRequest.ForgottenTopic


def first_address(cluster) -> tuple[str, int]:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


async def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    async with SimpleClient(bootstrap) as client:
        assert (await client.create_topics({topic: (partitions, 1)}))[topic] == 0
        await client.wait_for_leaders(topic)


def fetch(session_id: int, epoch: int, topic: str, offsets: dict[int, int], *, forget: list[int] = (),
          max_wait_ms: int = 0) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=session_id, session_epoch=epoch,
                        topics=[_Topic(topic=topic, partitions=[
                            _Partition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                            for p, o in offsets.items()])] if offsets else [],
                        forgotten_topics_data=[_Forgotten(topic=topic, partitions=list(forget))] if forget else [])


def answered(response) -> dict[int, object]:
    return {p.partition_index: p for t in response.responses for p in t.partitions}


def test_the_broker_hands_out_a_session_and_answers_only_changed_partitions(single_broker_cluster):
    topic = "fs-raw"

    async def main():
        bootstrap = single_broker_cluster.bootstrap_servers
        await create_topic(bootstrap, topic, 3)
        conn = await BrokerConnection.connect(*first_address(single_broker_cluster))
        try:
            assert conn.version_for(ApiKey.FETCH) >= 7
            full = await conn.send(fetch(0, 0, topic, {0: 0, 1: 0, 2: 0}))
            assert full.error_code == 0 and full.session_id != 0
            assert sorted(answered(full)) == [0, 1, 2]
            sid = full.session_id

            quiet = await conn.send(fetch(sid, 1, topic, {}))
            assert (quiet.error_code, quiet.session_id, answered(quiet)) == (0, sid, {})

            async with SimpleClient(bootstrap) as client:
                await client.produce(topic, 1, [(None, b"a"), (None, b"b"), (None, b"c")])
            # The session remembers every offset: the request names no partition, only p1 is answered.
            woken = await conn.send(fetch(sid, 2, topic, {}, max_wait_ms=10_000))
            parts = answered(woken)
            assert list(parts) == [1] and parts[1].high_watermark == 3
            assert [r.value for r in records_from_fetch(parts[1].records, 0)] == [b"a", b"b", b"c"]

            moved = await conn.send(fetch(sid, 3, topic, {1: 3}))
            assert answered(moved) == {}
            replay = await conn.send(fetch(sid, 3, topic, {}))
            assert (replay.error_code, replay.responses) == (errors.InvalidFetchSessionEpochError.code, [])
            unknown = await conn.send(fetch(sid ^ 1, 4, topic, {}))
            assert unknown.error_code == errors.FetchSessionIdNotFoundError.code

            forgot = await conn.send(fetch(sid, 4, topic, {}, forget=[0]))
            assert forgot.error_code == 0 and answered(forgot) == {}
            async with SimpleClient(bootstrap) as client:
                await client.produce(topic, 0, [(None, b"x")])
                await client.produce(topic, 2, [(None, b"y")])
            later = await conn.send(fetch(sid, 5, topic, {}, max_wait_ms=10_000))
            assert list(answered(later)) == [2]

            closing = await conn.send(fetch(sid, -1, topic, {0: 0}))
            assert closing.session_id == 0 and list(answered(closing)) == [0]
            gone = await conn.send(fetch(sid, 6, topic, {}))
            assert gone.error_code == errors.FetchSessionIdNotFoundError.code
        finally:
            await conn.close()

    asyncio.run(asyncio.wait_for(main(), 120))


# Uneven rounds, so that between two polls only some partitions have new records.
ROUNDS = [(0, 400), (1, 150), (2, 600), (0, 50), (1, 1200), (2, 1), (0, 900), (2, 299), (1, 700), (0, 700)]


def test_kafka_python_reads_5000_records_over_3_partitions_through_one_session(single_broker_cluster):
    from kafka import KafkaConsumer, TopicPartition

    topic = "fs-kafka-python"
    assert sum(n for _, n in ROUNDS) == 5000
    bootstrap = single_broker_cluster.bootstrap_servers
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: []}
    with asyncio.Runner() as runner:
        runner.run(create_topic(bootstrap, topic, 3))
        client = SimpleClient(bootstrap)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="fs-kp", group_id=None,
                                 enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                 enable_incremental_fetch_sessions=True)
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(3)])
            for partition, count in ROUNDS:
                values = [f"{partition}:{len(expected[partition]) + i}".encode() for i in range(count)]
                for start in range(0, count, 250):
                    runner.run(client.produce(topic, partition, [(None, v) for v in values[start:start + 250]]))
                expected[partition] += values
                while sum(map(len, got.values())) < sum(map(len, expected.values())):
                    for tp, messages in consumer.poll(timeout_ms=500).items():
                        got[tp.partition] += [(m.offset, m.value) for m in messages]
            # Nothing more arrives once everything was read.
            assert consumer.poll(timeout_ms=300) == {}
            # kafka-python 3.0.12 keeps its session per node in the fetcher; every poll after the first
            # was an incremental fetch of the same session.
            handlers = consumer._fetcher._session_handlers
            assert len(handlers) == 1
            metadata = next(iter(handlers.values())).next_metadata
            assert metadata.session_id != 0 and metadata.epoch > len(ROUNDS)
        finally:
            consumer.close()
            runner.run(client.close())
    for partition in range(3):
        assert [offset for offset, _ in got[partition]] == list(range(len(expected[partition])))
        assert [value for _, value in got[partition]] == expected[partition]

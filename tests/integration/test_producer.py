"""Our Producer / AIOProducer against real broker processes (fixtures in tests/conftest.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from odradek.clients.producer.producer import AIOProducer, RecordMetadata
from odradek.clients.types import KafkaConfigurationError
from odradek.clients.producer.sync_producer import Producer
from odradek.protocol.errors import KafkaError, MessageTooLargeError
from odradek.protocol.messages import ProduceRequest
from tests.integration.helpers import create_topic, read_all, run

pytestmark = pytest.mark.timeout(240)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def kafka_python_partition(key: bytes, partitions: int) -> int:
    return (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.mark.parametrize("codec", CODECS)
def test_10000_keyed_records_land_where_kafka_python_puts_them(single_broker_cluster, codec):
    servers = single_broker_cluster.bootstrap_servers
    topic, partitions, count = f"keyed-{codec}", 6, 10000

    async def main():
        await create_topic(servers, topic, partitions)
        async with AIOProducer(bootstrap_servers=servers, compression_type=codec, linger_ms=5) as producer:
            futures = [await producer.send(topic, value=b"value-%d" % i, key=b"key-%d" % (i % 997),
                                           headers=[("n", b"%d" % i)]) for i in range(count)]
            sent = await asyncio.gather(*futures)
        return sent, await read_all(servers, topic, partitions)

    sent, stored = run(main())
    assert all(isinstance(m, RecordMetadata) for m in sent)
    for i, metadata in enumerate(sent):
        assert metadata.partition == kafka_python_partition(b"key-%d" % (i % 997), partitions)
        assert metadata.serialized_value_size == len(b"value-%d" % i)
    assert sum(len(records) for records in stored.values()) == count
    for partition, records in stored.items():
        for record in records:
            i = int(record.value.split(b"-")[1])
            assert record.key == b"key-%d" % (i % 997)
            assert record.headers[0][1] == b"%d" % i
            assert (sent[i].partition, sent[i].offset) == (partition, record.offset)
        # One producer, idempotent: every partition holds its records in send order.
        numbers = [int(r.value.split(b"-")[1]) for r in records]
        assert numbers == sorted(numbers)


def test_sync_producer_callbacks_get_and_close_flushes(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic = "sync-producer"
    run(create_topic(servers, topic, 3))
    successes, failures = [], []
    lock = threading.Lock()

    def on_success(metadata):
        with lock:
            successes.append(metadata)

    with Producer(bootstrap_servers=servers, value_serializer=str.encode, key_serializer=str.encode,
                  linger_ms=50) as producer:
        first = producer.send(topic, "first", key="k").add_callback(on_success).add_errback(failures.append)
        metadata = first.get(timeout=30)
        assert metadata.topic == topic and metadata.offset >= 0 and first.succeeded()
        assert producer.partitions_for(topic) == {0, 1, 2}
        futures = [producer.send(topic, f"v{i}", partition=i % 3) for i in range(2000)]
        for future in futures:
            future.add_callback(on_success)
        # No flush: leaving the block closes the producer, which must send everything queued.
    assert all(future.is_done() and future.succeeded() for future in futures)
    assert len(successes) == 2001 and not failures
    stored = run(read_all(servers, topic, 3))
    values = sorted(r.value for records in stored.values() for r in records)
    assert values == sorted([b"first"] + [b"v%d" % i for i in range(2000)])
    for partition, records in stored.items():
        assert all(int(r.value[1:]) % 3 == partition for r in records if r.value != b"first")


def test_message_too_large_surfaces_and_the_partition_keeps_working(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic = "too-large"

    async def main():
        await create_topic(servers, topic, 1)
        async with AIOProducer(bootstrap_servers=servers, max_request_size=8 << 20) as producer:
            before = await producer.send_and_wait(topic, b"small")
            with pytest.raises(MessageTooLargeError) as caught:
                await producer.send_and_wait(topic, b"x" * (2 << 20))  # over the broker's message.max.bytes
            assert isinstance(caught.value, KafkaError) and caught.value.code == 10
            after = await producer.send_and_wait(topic, b"small again")  # under a new producer id
            assert after.offset == before.offset + 1
        async with AIOProducer(bootstrap_servers=servers) as producer:  # default max_request_size: refused locally
            with pytest.raises(MessageTooLargeError):
                await producer.send_and_wait(topic, b"x" * (2 << 20))
        stored = await read_all(servers, topic, 1)
        assert [r.value for r in stored[0]] == [b"small", b"small again"]

    run(main())


class _CutAfterWrite:
    """Closes (not aborts) a producer connection right after it has written a Produce request: the request
    still reaches the broker and is appended, but its answer is lost, so the producer resends it and the
    broker must recognise the copy by its sequence numbers. Every connection the producer's client opens
    is watched; ``arm()`` makes the next Produce request cut, ``cut()`` waits for it."""

    def __init__(self, producer: AIOProducer) -> None:
        self.cuts = 0
        self._armed = False
        self._done = asyncio.Event()
        client = producer._client
        for conn in client._connections.values():
            self._wrap(conn)
        connect = client._connect

        async def watched_connect(*args, **kwargs):
            conn = await connect(*args, **kwargs)
            self._wrap(conn)
            return conn

        client._connect = watched_connect

    def _wrap(self, conn) -> None:
        if getattr(conn, "_cut_after_write", False):
            return
        conn._cut_after_write = True
        original = conn.send

        async def send(body, **kwargs):
            answer = asyncio.ensure_future(original(body, **kwargs))
            await asyncio.sleep(0)  # the send runs first (FIFO) up to waiting for its answer: the bytes are out
            if self._armed and isinstance(body, ProduceRequest) and conn.in_flight:
                self._armed = False
                await conn.close()
                self.cuts += 1
                self._done.set()
            return await answer

        conn.send = send

    def arm(self) -> None:
        self._armed, self._done = True, asyncio.Event()

    async def cut(self, timeout: float = 60.0) -> None:
        await asyncio.wait_for(self._done.wait(), timeout)


def test_idempotent_retries_after_lost_connections_write_each_record_once(single_broker_cluster):
    servers = single_broker_cluster.bootstrap_servers
    topic, count, rounds = "idempotent-retries", 5000, 25

    async def main():
        await create_topic(servers, topic, 2)
        async with AIOProducer(bootstrap_servers=servers, linger_ms=2, batch_size=2048) as producer:
            cutter = _CutAfterWrite(producer)
            futures = []
            for round_number in range(rounds):
                cutter.arm()
                futures += [await producer.send(topic, b"%d" % i, key=b"%d" % (i % 50))
                            for i in range(round_number * 200, (round_number + 1) * 200)]
                await cutter.cut()
            sent = await asyncio.gather(*futures)
        return cutter.cuts, sent, await read_all(servers, topic, 2)

    cuts, sent, stored = run(main())
    assert cuts == rounds  # a connection was cut with a Produce request in flight in every round
    values = [int(r.value) for records in stored.values() for r in records]
    assert sorted(values) == list(range(count))  # nothing lost, nothing twice
    for partition, records in stored.items():
        assert [int(r.value) for r in records] == sorted(int(r.value) for r in records)
        for record in records:
            assert (sent[int(record.value)].partition, sent[int(record.value)].offset) == (partition, record.offset)


def test_configuration_errors():
    with pytest.raises(KafkaConfigurationError, match="Unrecognized configs"):
        AIOProducer(bootstrap_servers="127.0.0.1:1", lingerms=5)
    with pytest.raises(KafkaConfigurationError):
        AIOProducer(enable_idempotence=True, acks=1)
    with pytest.raises(KafkaConfigurationError):
        AIOProducer(compression_type="brotli")
    assert AIOProducer(acks=1).config["enable_idempotence"] is False
    assert AIOProducer().config["acks"] == -1 and AIOProducer().config["enable_idempotence"] is True

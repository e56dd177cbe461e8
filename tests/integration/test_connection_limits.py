"""Connection limits on a real broker, with kafka-python and confluent-kafka alongside (issue 13)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from odradek.tools.local_cluster import LocalCluster
from odradek.tools.local_zookeeper import free_port
from odradek.protocol.header import decode_response, encode_request
from odradek.protocol.messages import ApiVersionsRequest

from tests.conftest import TEST_BROKER_OVERRIDES

pytestmark = pytest.mark.timeout(180)


async def open_from(port: int, source: str = "127.0.0.1"):
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def answers(connection, timeout: float = 3.0) -> bool:
    """ApiVersions answered (True), the connection closed or no answer in time (False)."""
    reader, writer = connection
    try:
        writer.write(encode_request(ApiVersionsRequest(), 0, 7, "limits"))
        size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), timeout), "big")
        _, body = decode_response(await asyncio.wait_for(reader.readexactly(size), timeout), 18, 0)
        return body.error_code == 0
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        return False


def kafka_python_produces(bootstrap: str, topic: str, value: bytes) -> int:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=5000, request_timeout_ms=5000)
    try:
        return producer.send(topic, value).get(timeout=10).offset
    finally:
        producer.close(timeout=5)


async def close_all(connections: list) -> None:
    for _, writer in connections:
        writer.close()
    await asyncio.gather(*(writer.wait_closed() for _, writer in connections), return_exceptions=True)


def confluent_kafka_delivery_error(bootstrap: str, topic: str) -> str | None:
    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 3000})
    reports: list = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    del producer  # librdkafka closes its connections here
    return reports[0].name() if reports and reports[0] is not None else None


def test_per_ip_limits_close_new_connections_and_spare_other_addresses(odradek_cluster_factory):
    # 127.0.0.1 (the broker's own controller connection, kafka-python) is generous; 127.0.0.7 gets 2.
    cluster = odradek_cluster_factory(overrides={"max.connections.per.ip": "2",
                                                 "max.connections.per.ip.overrides": "127.0.0.1:100,localhost:100"})
    port = cluster.broker_ports[0]

    async def main():
        held = [await open_from(port, "127.0.0.7") for _ in range(2)]
        assert [await answers(c) for c in held] == [True, True]
        refused = await open_from(port, "127.0.0.7")
        assert await refused[0].read(1) == b""  # closed at once, nothing answered
        assert await answers(await open_from(port, "127.0.0.8"))
        for _, writer in held:
            writer.close()
    asyncio.run(main())
    assert kafka_python_produces(cluster.bootstrap_servers, "per-ip", b"v") == 0  # auto-created, 127.0.0.1
    assert "Rejected connection from 127.0.0.7, address already has the configured maximum of 2 connections" \
        in cluster.broker_log(0).read_text()


def test_at_max_connections_a_client_waits_for_a_free_slot(zookeeper, tmp_path):
    """Two listeners: the inter-broker one (the controller's own connection) is exempt; the client listener
    blocks at max.connections (confluent-kafka times out waiting), and once connections close, the one the
    acceptor held is served and kafka-python gets in."""
    client_port, broker_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    cluster = LocalCluster(tmp_path / "cluster", 1, zookeeper=zookeeper, base_port=client_port,
                           chroot=f"/limits-{uuid.uuid4().hex}", broker_overrides={
                               **TEST_BROKER_OVERRIDES,
                               "listeners": f"CLIENT://127.0.0.1:{client_port},BROKER://127.0.0.1:{broker_port}",
                               "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
                               "inter.broker.listener.name": "BROKER", "max.connections": "4"})
    cluster.start(60)
    held: list = []
    loop = asyncio.new_event_loop()

    async def fill() -> None:
        while True:  # up to the limit, whatever the broker holds besides (its controller's connection)
            connection = await open_from(client_port)
            held.append(connection)
            if not await answers(connection, timeout=1.5):
                return
    try:
        loop.run_until_complete(fill())
        assert 2 <= len(held) <= 4  # the last one is not served
        assert confluent_kafka_delivery_error(cluster.bootstrap_servers, "max-connections") == \
            "_MSG_TIMED_OUT"  # librdkafka's connection waits in the backlog like the others
        held[0][1].close()
        # The connection waiting since fill() gets the slot: its ApiVersions (sent then) is answered now.
        reader = held[-1][0]
        size = int.from_bytes(loop.run_until_complete(asyncio.wait_for(reader.readexactly(4), 10)), "big")
        assert decode_response(loop.run_until_complete(reader.readexactly(size)), 18, 0)[1].error_code == 0
        loop.run_until_complete(close_all(held))  # closed for real: the broker sees them go
        assert kafka_python_produces(cluster.bootstrap_servers, "max-connections", b"in") == 0
    finally:
        for _, writer in held:
            writer.close()
        loop.close()
        cluster.stop(15)

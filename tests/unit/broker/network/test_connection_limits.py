"""max.connections, max.connections.per.ip(.overrides) and queued.max.request.bytes on real sockets."""

from __future__ import annotations

import asyncio

import pytest

from odradek.broker.config import ConfigError
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import HeartbeatRequest

from .helpers import Client, heartbeat_response, make_config, run, serving, switchboard


async def connect_from(port: int, source: str) -> Client:
    """A client whose connection comes from ``source`` (any 127.x.y.z address is this host's loopback)."""
    return Client(*await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)))


async def served(client: Client, timeout: float = 2.0) -> bool:
    try:
        return (await asyncio.wait_for(client.api_versions(), timeout)).error_code == 0
    except asyncio.TimeoutError:
        return False


def test_an_address_over_its_limit_is_closed_at_once_and_others_are_served():
    async def main():
        async with serving(max_connections_per_ip=2, max_connections_per_ip_overrides="127.0.0.9:3") as server:
            port = server.port()
            first = [await connect_from(port, "127.0.0.7") for _ in range(2)]
            assert all([await served(c) for c in first])
            third = await connect_from(port, "127.0.0.7")
            assert await third.closed_by_server()  # Kafka closes it without a word
            other = await connect_from(port, "127.0.0.8")  # another address has its own count
            assert await served(other)
            overridden = [await connect_from(port, "127.0.0.9") for _ in range(3)]
            assert all([await served(c) for c in overridden])
            assert await (await connect_from(port, "127.0.0.9")).closed_by_server()
            first[0].close()
            while server.quotas.count("127.0.0.7") > 1:  # the closed connection gives its slot back
                await asyncio.sleep(0.01)
            assert await served(await connect_from(port, "127.0.0.7"))
            assert server.stats["connections_accepted"] == 2 + 1 + 3 + 1
    run(main())


def test_at_max_connections_the_broker_stops_accepting_until_one_closes():
    async def main():
        async with serving(max_connections=2) as server:
            port = server.port()
            held = [await Client.connect(port) for _ in range(2)]
            assert all([await served(c) for c in held])
            waiting = await Client.connect(port)  # TCP accepts it (the backlog); the broker does not yet
            assert not await served(waiting, timeout=0.5)
            held[0].close()
            assert await served(waiting, timeout=5)  # its request was read once a slot freed
            assert server.quotas.total == 2
    run(main())


def test_the_inter_broker_listener_is_exempt_and_pushes_out_the_oldest_client_connection():
    async def main():
        async with serving(listeners="CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
                           listener_security_protocol_map="CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
                           inter_broker_listener_name="BROKER", max_connections=2) as server:
            clients = [await Client.connect(server.port("CLIENT")) for _ in range(2)]
            assert all([await served(c) for c in clients])
            brokers = [await Client.connect(server.port("BROKER")) for _ in range(2)]
            assert all([await served(c) for c in brokers])  # never blocked
            assert await clients[0].closed_by_server() and await clients[1].closed_by_server()
            assert server.stats["max_connections_exceeded"] == 2
    run(main())


@pytest.mark.parametrize("settings, key", [
    ({"queued_max_request_bytes": "1000", "socket_request_max_bytes": "2000"}, "queued.max.request.bytes"),
    ({"max_connections_per_ip": "0"}, "max.connections.per.ip"),
    ({"max_connections_per_ip_overrides": "a:b"}, "max.connections.per.ip.overrides"),
    ({"max_connections_per_ip_overrides": "bad/host:3"}, "max.connections.per.ip.overrides")])
def test_kafkas_checks_of_the_limits(settings, key):
    with pytest.raises(ConfigError) as refused:
        make_config(**settings)
    assert f"for configuration {key}:" in str(refused.value)


def test_queued_request_bytes_stop_reading_until_handlers_catch_up():
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())

    async def main():
        async with serving(apis, queued_max_request_bytes=1000, socket_request_max_bytes=1000,
                           queued_max_requests=500) as server:
            await server.handler_pool.stop()  # nothing is handled: read requests stay queued
            clients = [await Client.connect(server.port()) for _ in range(40)]
            for i, client in enumerate(clients):
                client.send(HeartbeatRequest(group_id="g" * 20, member_id="m"), 3, i)
            while not server.memory_pool.exhausted:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            read = server.stats["requests_received"]
            assert read < 40 and server.memory_pool.used >= 1000  # reading stopped at the limit
            server.handler_pool.start()
            answered = await asyncio.gather(*(c.receive(12, 3) for c in clients))
            assert [cid for cid, _ in answered] == list(range(40))  # nothing was lost
            assert server.memory_pool.used == 0 and server.memory_pool.exhausted_count >= 1
    run(main())

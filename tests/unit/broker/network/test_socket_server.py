"""The reactor on real sockets: ordering, acks=0, backpressure, listeners, idle expiry, shutdown."""

from __future__ import annotations

import asyncio
import random

import pytest

from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.server import build_socket_server
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.errors import CoordinatorNotAvailableError
from odradek.protocol.messages import HeartbeatRequest, ProduceRequest, ProduceResponse

from .helpers import LOOP_IDS, LOOPS, Client, heartbeat_response, make_config, run, serving, switchboard


def sleepy_apis(max_sleep: float = 0.01) -> KafkaApis:
    """Heartbeat handlers that finish in random order; acks=0 Produce answered with nothing."""
    apis = switchboard()

    async def heartbeat(request):
        await asyncio.sleep(random.random() * max_sleep)
        return heartbeat_response()

    async def produce(request):
        await asyncio.sleep(random.random() * max_sleep)
        return ProduceResponse(responses=[])  # the switchboard must drop it for acks=0

    apis.register(ApiKey.HEARTBEAT, heartbeat)
    apis.register(ApiKey.PRODUCE, produce)
    return apis


async def read_correlation_ids(client: Client, api_key: int, version: int, count: int) -> list[int]:
    return [(await client.receive(api_key, version))[0] for _ in range(count)]


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_pipelined_responses_keep_request_order(factory):
    async def main():
        async with serving(sleepy_apis(), num_io_threads=8) as server:
            clients = [await Client.connect(server.port()) for _ in range(4)]
            for client in clients:  # everything written before anything is read
                for cid in range(50):
                    client.send(HeartbeatRequest(group_id="g", member_id="m"), 3, cid)
            results = await asyncio.gather(*(read_correlation_ids(c, 12, 3, 50) for c in clients))
            assert all(ids == list(range(50)) for ids in results)
            assert server.stats["responses_sent"] == 200
            for client in clients:
                client.close()

    run(factory=factory, coro=main())


def test_acks_0_produce_gets_no_response_and_later_responses_stay_in_order():
    async def main():
        async with serving(sleepy_apis(), num_io_threads=4) as server:
            client = await Client.connect(server.port())
            expected = []
            for cid in range(30):
                if cid % 3 == 1:
                    client.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]), 8, cid)
                else:
                    client.send(HeartbeatRequest(group_id="g", member_id="m"), 3, cid)
                    expected.append(cid)
            assert await read_correlation_ids(client, 12, 3, len(expected)) == expected
            assert server.stats["responses_noop"] == 10
            # acks=1 is answered.
            client.send(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[]), 8, 99)
            assert (await client.receive(0, 8))[0] == 99
            client.close()

    run(main())


def test_failed_acks_0_produce_closes_the_connection():
    apis = switchboard()

    def produce(request):
        raise CoordinatorNotAvailableError()

    apis.register(ApiKey.PRODUCE, produce)

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            client.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]), 8, 1)
            assert await client.closed_by_server()
            assert server.stats["closed_by_handler"] == 1
            # acks=1 gets the error in its response instead.
            other = await Client.connect(server.port())
            other.send(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[]), 8, 2)
            cid, body = await other.receive(0, 8)
            assert (cid, body.responses) == (2, [])
            other.close()

    run(main())


def test_handler_errors_become_error_responses():
    apis = switchboard()
    calls = []

    def heartbeat(request):
        calls.append(request.correlation_id)
        if request.correlation_id == 1:
            raise CoordinatorNotAvailableError("moving")
        if request.correlation_id == 2:
            raise RuntimeError("bug")
        return heartbeat_response()

    apis.register(ApiKey.HEARTBEAT, heartbeat)

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            assert (await client.heartbeat(1)).error_code == CoordinatorNotAvailableError.code
            assert (await client.heartbeat(2)).error_code == -1
            assert (await client.heartbeat(3)).error_code == 0
            client.close()

    run(main())


def test_backpressure_when_the_channel_is_full_loses_nothing():
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())

    async def main():
        async with serving(apis, num_io_threads=1, queued_max_requests=1, num_network_threads=2) as server:
            # Handlers that stop taking requests (all busy, in Kafka's terms) fill the channel.
            await server.handler_pool.stop()
            clients = [await Client.connect(server.port()) for _ in range(6)]
            for i, client in enumerate(clients):
                for cid in range(5):
                    client.send(HeartbeatRequest(group_id="g", member_id="m"), 3, i * 100 + cid)
            while server.stats["channel_full"] == 0:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            # One request queued, the rest held by blocked processors: none read further.
            assert server.channel.qsize() == 1
            assert any(p.blocked for p in server.processors)
            assert server.stats["requests_received"] <= 6
            server.handler_pool.start()
            results = await asyncio.gather(*(read_correlation_ids(c, 12, 3, 5) for c in clients))
            assert results == [[i * 100 + cid for cid in range(5)] for i in range(6)]
            assert server.stats["responses_sent"] == 30
            assert not any(p.blocked for p in server.processors)
            for client in clients:
                client.close()

    run(main())


def test_a_waiting_request_does_not_hold_a_handler():
    """An async handler (a parked fetch) waits in its own task: one handler task serves the others."""
    apis = switchboard()
    gate = asyncio.Event()

    async def slow_heartbeat(request):
        await gate.wait()
        return heartbeat_response()

    apis.register(ApiKey.HEARTBEAT, slow_heartbeat)

    async def main():
        async with serving(apis, num_io_threads=1) as server:
            waiting, other = await Client.connect(server.port()), await Client.connect(server.port())
            waiting.send(HeartbeatRequest(group_id="g", member_id="m"), 3, 1)
            await asyncio.sleep(0.05)
            assert (await other.api_versions(correlation_id=2)).error_code == 0
            assert len(server.handler_pool.waiting) == 1
            gate.set()
            assert await read_correlation_ids(waiting, 12, 3, 1) == [1]
            waiting.close()
            other.close()

    run(main())


def test_a_request_read_while_none_waits_is_handled_in_the_read_callback_and_handlers_never_nest():
    """RequestChannel.direct: a lone request is handled inside the read callback; requests read while one
    is being handled (pipelined behind it, read as its response is sent) go through the queue, in order."""
    apis = switchboard()
    seen: list[tuple[int, bool, int]] = []  # (correlation id, handled in the read callback, handlers busy)

    def heartbeat(request):
        seen.append((request.correlation_id, request.connection.processor.reading, pool.busy))
        return heartbeat_response()

    apis.register(ApiKey.HEARTBEAT, heartbeat)

    async def main():
        nonlocal pool
        async with serving(apis, num_io_threads=2) as server:
            pool = server.handler_pool
            client = await Client.connect(server.port())
            client.send(HeartbeatRequest(group_id="g", member_id="m"), 3, 0)
            assert await read_correlation_ids(client, 12, 3, 1) == [0]
            assert seen == [(0, True, 1)]
            for cid in range(1, 21):  # one write: read in one callback, mostly
                client.send(HeartbeatRequest(group_id="g", member_id="m"), 3, cid)
            assert await read_correlation_ids(client, 12, 3, 20) == list(range(1, 21))
            assert [cid for cid, _, _ in seen] == list(range(21))
            assert all(busy == 1 for _, _, busy in seen)  # never one handler inside another
            assert any(not direct for _, direct, _ in seen[2:])  # those behind the first came through the queue
            client.close()

    pool = None
    run(main())


def test_connections_are_spread_round_robin_over_processors_and_listeners():
    config = make_config(num_network_threads=3, listeners="PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                         **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                            "inter.broker.listener.name": "INTERNAL"})

    async def main():
        server = build_socket_server(config, switchboard())
        await server.start()
        ports = server.bound_ports
        assert set(ports) == {"PLAINTEXT", "INTERNAL"} and all(ports.values())
        clients = [await Client.connect(ports[name]) for name in ("PLAINTEXT", "INTERNAL") for _ in range(3)]
        for client in clients:
            await client.api_versions()
        assert [len(p.connections) for p in server.processors] == [2, 2, 2]
        listeners = sorted(c.listener for p in server.processors for c in p.connections.values())
        assert listeners == ["INTERNAL"] * 3 + ["PLAINTEXT"] * 3
        for client in clients:
            client.close()
        await server.stop()

    run(main())


def test_large_request_trickled_byte_by_byte():
    async def main():
        apis = switchboard()
        apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response(len(request.body.group_id) % 1000))
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            from odradek.protocol.header import encode_request
            # v4 is flexible: compact strings may be longer than 32767 bytes.
            frame = encode_request(HeartbeatRequest(group_id="x" * 300_123, member_id="m"), 4, 5, "c")
            small = encode_request(HeartbeatRequest(group_id="ab", member_id="m"), 4, 6, "c")
            for i in range(0, 64):
                client.send_raw(frame[i:i + 1])
                await client.writer.drain()
            client.send_raw(frame[64:] + small)
            assert [await client.receive(12, 4) for _ in range(2)] == [
                (5, heartbeat_response(123)), (6, heartbeat_response(2))]
            client.close()

    run(main())


def test_idle_connections_are_closed():
    async def main():
        # a second of idleness against a request every 50 ms: margin for a loaded machine's stalls
        async with serving(connections_max_idle_ms=1000) as server:
            idle = await Client.connect(server.port())
            busy = await Client.connect(server.port())
            for i in range(30):
                await busy.api_versions(correlation_id=i)
                await asyncio.sleep(0.05)
            assert await idle.closed_by_server(timeout=5)
            assert server.stats["idle_closed"] >= 1
            busy.close()

    run(main())


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_stop_answers_requests_in_flight_then_closes_connections(factory):
    apis = switchboard()

    async def heartbeat(request):
        await asyncio.sleep(0.1)
        return heartbeat_response()

    apis.register(ApiKey.HEARTBEAT, heartbeat)

    async def main():
        server = build_socket_server(make_config(), apis)
        await server.start()
        port = server.port()
        slow = await Client.connect(port)
        idle = await Client.connect(port)
        await idle.api_versions()
        slow.send(HeartbeatRequest(group_id="g", member_id="m"), 3, 7)
        await asyncio.sleep(0.02)
        await server.stop(timeout=2)
        assert await slow.receive(12, 3) == (7, heartbeat_response())
        assert await slow.closed_by_server()
        assert await idle.closed_by_server()
        assert server.connection_count() == 0
        with pytest.raises(OSError):
            await Client.connect(port)
        slow.close()
        idle.close()

    run(factory=factory, coro=main())

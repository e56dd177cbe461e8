"""A connection throttled by a client quota (KIP-219): the response goes out at once, then nothing more is
read from the connection until the throttle ends; other connections are served meanwhile."""

from __future__ import annotations

import asyncio

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import HeartbeatRequest

from .helpers import Client, heartbeat_response, run, serving, switchboard

THROTTLE_S = 1.0


def test_a_throttled_connection_reads_nothing_until_the_throttle_ends_but_gets_its_response_at_once():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        events: list[tuple[str, float]] = []
        ended: list[float] = []

        def handler(request):
            events.append((f"handled {request.correlation_id} {request.header.client_id}", loop.time()))
            if request.header.client_id == "slow" and request.correlation_id == 1:
                assert request.connection.throttle(THROTTLE_S, lambda: ended.append(loop.time()))
            return heartbeat_response()

        apis = switchboard()
        apis.register(ApiKey.HEARTBEAT, handler)
        async with serving(apis) as server:
            slow = await Client.connect(server.port())
            other = await Client.connect(server.port())
            request = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
            slow.send(request, 3, 1, client_id="slow")
            slow.send(request, 3, 2, client_id="slow")  # pipelined: waits behind the throttle
            assert (await slow.receive(12, 3))[0] == 1
            [connection] = [c for p in server.processors for c in p.connections.values()
                            if c.in_flight is None and c.throttled]
            events.append(("response 1 received", loop.time()))
            other.send(request, 3, 7, client_id="other")
            assert (await other.receive(12, 3))[0] == 7  # another client is not held up
            assert connection.throttled
            assert (await slow.receive(12, 3))[0] == 2
            assert not connection.throttled
            slow.close()
            other.close()
        names = [name for name, _ in events]
        assert names == ["handled 1 slow", "response 1 received", "handled 7 other", "handled 2 slow"]
        throttle_started = events[0][1]
        second = events[-1][1]
        assert ended and second >= ended[0] >= throttle_started + THROTTLE_S - 0.01

    run(main())


def test_closing_a_throttled_connection_ends_its_throttle():
    async def main() -> None:
        done: list[int] = []

        def handler(request):
            request.connection.throttle(60.0, lambda: done.append(1))
            return heartbeat_response()

        apis = switchboard()
        apis.register(ApiKey.HEARTBEAT, handler)
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            await client.heartbeat(1)
            client.close()
            for _ in range(200):
                if done:
                    break
                await asyncio.sleep(0.01)
        assert done == [1]

    run(main())

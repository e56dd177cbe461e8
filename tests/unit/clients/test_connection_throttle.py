"""BrokerConnection waits out broker throttles (KIP-219) as Kafka 2.8's Java client: a raw fake broker answers
with chosen ``throttle_time_ms`` and notes, on the same event loop, when each request reached it."""

from __future__ import annotations

import asyncio
import math

import pytest

from odradek.clients.connection import BrokerConnection
from odradek.clients.throttle import THROTTLES_FROM, ThrottleState, ThrottleTimeSensor, client_throttles
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.messages import RESPONSES, MetadataRequest, MetadataResponse, ProduceRequest

from .helpers import LOOP_IDS, LOOPS, full_api_versions, raw_broker, run, write_response

SLACK = 0.002  # event-loop timers may fire up to a millisecond early (uvloop counts in ms)


class FakeBroker:
    """Answers Metadata with the requested topic name and the throttle ``throttles`` gives that name (once
    ``gate`` is set, for the names in ``gated``); ``arrivals`` lists (name, loop time) in arrival order."""

    def __init__(self, throttles: dict[str, int], gated: tuple[str, ...] = ()) -> None:
        self.throttles = throttles
        self.gated = gated
        self.gate = asyncio.Event()
        self.arrivals: list[tuple[str, float]] = []
        self.api_versions_at: list[float] = []

    async def on_request(self, header, body, writer) -> None:
        now = asyncio.get_running_loop().time()
        if header.api_key == ApiKey.API_VERSIONS:
            self.api_versions_at.append(now)
            full_api_versions(header, writer)
            return
        if header.api_key == ApiKey.PRODUCE:  # acks=0 only: no answer
            self.arrivals.append(("produce", now))
            return
        name = body.topics[0].name
        self.arrivals.append((name, now))
        if name in self.gated:
            await self.gate.wait()
        write_response(writer, header, MetadataResponse(
            throttle_time_ms=self.throttles.get(name, 0), brokers=[],
            topics=[MetadataResponse.MetadataResponseTopic(error_code=0, name=name)]))

    def arrival(self, name: str) -> float:
        return next(at for n, at in self.arrivals if n == name)

    def names(self) -> list[str]:
        return [n for n, _ in self.arrivals]


def metadata(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)


def against(broker: FakeBroker, scenario, factory=None, **connect) -> None:
    """Runs ``scenario(connection)`` on a connection to ``broker``, then closes it."""
    async def main():
        async with raw_broker(broker.on_request) as port:
            conn = await BrokerConnection.connect("127.0.0.1", port, **connect)
            await scenario(conn)
            await conn.close()

    run(main(), *([factory] if factory else []))


async def answered_at(conn: BrokerConnection, name: str, **kwargs) -> tuple[MetadataResponse, float]:
    response = await conn.send(metadata(name), **kwargs)
    return response, asyncio.get_running_loop().time()


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_a_throttled_response_holds_later_requests_in_order_and_their_timeouts_wait(factory):
    broker = FakeBroker({"a": 1000})

    async def scenario(conn):
        response, received = await answered_at(conn, "a")
        assert response.throttle_time_ms == 1000
        assert 0 < conn.throttle_delay() <= 1.0
        # Held: a timeout far shorter than the throttle does not run until the request is written.
        sends = [asyncio.ensure_future(conn.send(metadata("b"), timeout=0.1)),
                 asyncio.ensure_future(conn.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]))),
                 asyncio.ensure_future(conn.send(metadata("c"), timeout=0.1))]
        await asyncio.sleep(0.05)  # time for a request written to reach the broker (on this loop)
        assert broker.names() == ["a"] and conn.in_flight == 0  # nothing sent yet
        b, produced, c = await asyncio.gather(*sends)
        assert (b.topics[0].name, produced, c.topics[0].name) == ("b", None, "c")
        assert broker.names() == ["a", "b", "produce", "c"]  # in the order they were sent
        assert broker.arrival("b") >= received + 1.0 - SLACK
        assert not conn.closed and conn.throttle_delay() == 0
        await conn.send(metadata("d"), timeout=5)  # unthrottled again: sent at once

    against(broker, scenario, factory)


def test_a_later_longer_throttle_extends_the_hold_and_a_shorter_one_does_not_shorten_it():
    broker = FakeBroker({"long": 600, "short": 100})

    async def scenario(conn):
        # Both in flight before either answer: the broker's answers come back to back.
        (_, long_received), _ = await asyncio.gather(answered_at(conn, "long"), answered_at(conn, "short"))
        await conn.send(metadata("after"))
        assert broker.arrival("after") >= long_received + 0.6 - SLACK

    against(broker, scenario)


def test_only_unsent_requests_wait_for_the_throttle():
    broker = FakeBroker({"a": 1000})

    async def scenario(conn):
        # b is written before a's throttled answer comes, and answered during the throttle
        await asyncio.gather(conn.send(metadata("a")), conn.send(metadata("b")))
        assert conn.throttle_delay() > 0
        late = asyncio.ensure_future(conn.send(metadata("late")))
        await asyncio.sleep(0.05)
        assert not late.done() and broker.names() == ["a", "b"]
        await late

    against(broker, scenario)


def test_a_throttle_at_a_version_before_kip_219_is_not_waited_out():
    broker = FakeBroker({"old": 60_000})

    async def scenario(conn):
        response = await conn.send(metadata("old"), version=5)  # Metadata v5 has the field, v6+ is honoured
        assert response.throttle_time_ms == 60_000
        assert conn.throttle_delay() == 0
        await conn.send(metadata("next"), timeout=5)

    against(broker, scenario)


def test_a_request_cancelled_while_held_is_never_sent():
    broker = FakeBroker({"a": 800})

    async def scenario(conn):
        await conn.send(metadata("a"))
        cancelled = asyncio.ensure_future(conn.send(metadata("cancelled")))
        kept = asyncio.ensure_future(conn.send(metadata("kept")))
        await asyncio.sleep(0.05)
        cancelled.cancel()
        assert (await kept).topics[0].name == "kept"
        assert cancelled.cancelled()
        assert broker.names() == ["a", "kept"]

    against(broker, scenario)


def test_a_cancelled_callers_response_still_throttles():
    broker = FakeBroker({"gone": 400}, gated=("gone",))

    async def scenario(conn):
        gone = asyncio.ensure_future(conn.send(metadata("gone")))
        await asyncio.sleep(0.01)
        gone.cancel()
        broker.gate.set()
        await conn.send(metadata("next"))  # pipelined behind "gone": written before its answer came
        assert conn.throttle_delay() > 0  # "gone"'s answer was read, dropped, and its throttle kept

    against(broker, scenario)


def test_held_requests_fail_when_the_connection_is_lost():
    broker = FakeBroker({"a": 5000})

    async def scenario(conn):
        await conn.send(metadata("a"))
        held = [asyncio.ensure_future(conn.send(metadata(f"h{i}"))) for i in range(3)]
        await asyncio.sleep(0.01)
        await conn.close()
        results = await asyncio.gather(*held, return_exceptions=True)
        assert all(isinstance(r, ConnectionError) for r in results), results
        assert broker.names() == ["a"]

    against(broker, scenario)


def test_a_new_connection_sharing_the_throttle_negotiates_at_once_and_then_waits():
    broker = FakeBroker({"a": 500})

    async def main():
        state = ThrottleState()
        async with raw_broker(broker.on_request) as port:
            first = await BrokerConnection.connect("127.0.0.1", port, throttle=state)
            _, received = await answered_at(first, "a")
            await first.close()  # e.g. the client timed out: the throttle outlives the connection
            second = await BrokerConnection.connect("127.0.0.1", port, throttle=state)
            assert second.throttle_delay() > 0  # ApiVersions did not wait for it (Java: the node is not READY yet)
            assert len(broker.api_versions_at) == 2 and broker.api_versions_at[-1] < received + 0.5
            await second.send(metadata("b"))
            assert broker.arrival("b") >= received + 0.5 - SLACK
            await second.close()

    run(main())


def test_the_sensor_records_every_responses_throttle_time():
    sensor = ThrottleTimeSensor()
    assert all(math.isnan(v) for v in sensor.metrics("fetch-throttle-time").values())

    async def scenario(conn):
        await conn.send(metadata("a"))
        await conn.send(metadata("old"), version=5)  # not waited out, but recorded (as Java)

    against(FakeBroker({"a": 200, "old": 100}), scenario, throttle_sensor=sensor)
    # ApiVersions (0), a (200), old (100)
    assert sensor.metrics("fetch-throttle-time") == {"fetch-throttle-time-avg": 100.0,
                                                     "fetch-throttle-time-max": 200.0}


def test_the_throttle_table_is_kafkas_and_every_listed_version_has_the_field():
    assert client_throttles(ApiKey.PRODUCE, 6) and not client_throttles(ApiKey.PRODUCE, 5)
    assert client_throttles(ApiKey.FETCH, 8) and not client_throttles(ApiKey.FETCH, 7)
    assert not client_throttles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1)  # carries the field, never honoured (Java)
    for api_key, since in THROTTLES_FROM.items():
        low, high = KAFKA_2_8_VERSIONS[api_key]
        assert low <= since <= high, api_key
        fields = RESPONSES[api_key].fields
        assert all(any(f.name == "throttle_time_ms" and f.present_in(v) for f in fields)
                   for v in range(since, high + 1)), api_key


@pytest.mark.parametrize("throttles", [[300, 100, 0], [0]])
def test_throttle_state_never_regresses(throttles):
    state = ThrottleState()
    for ms in throttles:
        state.throttle(10.0 + ms / 1000)
    assert state.until == 10.0 + max(throttles) / 1000
    assert state.delay(10.1) == pytest.approx(max(0.0, state.until - 10.1))


def test_simple_client_keeps_a_brokers_throttle_across_reconnects():
    from odradek.clients.simple_client import SimpleClient

    broker = FakeBroker({"a": 500})

    async def main():
        async with raw_broker(broker.on_request) as port:
            async with SimpleClient(f"127.0.0.1:{port}", client_id="t") as client:
                await client.send(None, metadata("a"))
                received = asyncio.get_running_loop().time()
                [conn] = client._connections.values()
                await conn.close()  # as after a timeout: the next send connects again
                await client.send(None, metadata("b"))
                assert len(broker.api_versions_at) == 2  # a new connection, which still waited
                assert broker.arrival("b") >= received + 0.5 - SLACK
                assert client.throttle_time.metrics("t")["t-max"] == 500

    run(main())


def test_the_sensor_forgets_samples_older_than_its_two_30_s_windows():
    now = [1000.0]
    sensor = ThrottleTimeSensor(clock=lambda: now[0])
    sensor.record(200)
    sensor.record(0)
    now[0] += 31  # a second sample
    sensor.record(100)
    assert sensor.metrics("t") == {"t-avg": 100.0, "t-max": 200.0}
    now[0] += 30  # the first sample is now 61 s old
    assert sensor.metrics("t") == {"t-avg": 100.0, "t-max": 100.0}
    now[0] += 30
    assert all(math.isnan(v) for v in sensor.metrics("t").values())
    sensor.record(50)  # recording goes on in the next slot
    assert sensor.metrics("t") == {"t-avg": 50.0, "t-max": 50.0}

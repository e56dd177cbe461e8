"""BrokerConnection against the real broker reactor (SocketServer + KafkaApis) and a raw fake broker."""

from __future__ import annotations

import asyncio
import random
import socket

import pytest

from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.network.request_channel import Response
from odradek.clients.connection import CLIENT_SOFTWARE_NAME, BrokerConnection
from odradek.clients.errors import CorrelationIdError, KafkaConnectionError
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.errors import UnsupportedVersionError
from odradek.protocol.messages import (
    ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse,
)

from .helpers import (
    LOOP_IDS, LOOPS, answer_v0, api_versions_table, frame, full_api_versions, raw_broker, run, serving,
    switchboard, write_response,
)

Topic = MetadataRequest.MetadataRequestTopic
ResponseTopic = MetadataResponse.MetadataResponseTopic


def echo_metadata(request) -> MetadataResponse:
    """Answers with the requested topic names, so each response can be matched to its request."""
    names = [t.name for t in request.body.topics or []]
    return MetadataResponse(brokers=[], topics=[ResponseTopic(error_code=0, name=n) for n in names])


def metadata_request(*names: str) -> MetadataRequest:
    return MetadataRequest(topics=[Topic(name=n) for n in names], allow_auto_topic_creation=False)


def old_broker_apis(seen_versions: list[int], ranges: dict[int, tuple[int, int]], api_versions_max: int) -> KafkaApis:
    """A broker that speaks ApiVersions only up to ``api_versions_max`` and advertises ``ranges``."""
    apis = switchboard()

    def api_versions(request):
        seen_versions.append(request.api_version)
        if request.api_version > api_versions_max:  # what a pre-KIP-511 broker's successor does: v0, error 35
            return answer_v0(request, ApiVersionsResponse(
                error_code=35, api_keys=api_versions_table({18: (0, api_versions_max)})))
        return ApiVersionsResponse(error_code=0, api_keys=api_versions_table(ranges))

    apis.register(ApiKey.API_VERSIONS, api_versions)
    return apis


def gated_apis(gate: asyncio.Event, hold: str | None = None) -> KafkaApis:
    """Metadata echoed once ``gate`` is set (only topic ``hold`` waits, if given); topic "close" closes."""
    apis = switchboard()

    async def metadata(request):
        name = request.body.topics[0].name
        if name == "close":
            return Response.close(request, "test")
        if hold is None or name == hold:
            await gate.wait()
        return echo_metadata(request)

    apis.register(ApiKey.METADATA, metadata)
    return apis


# -- negotiation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_negotiates_with_the_real_broker(factory):
    apis = switchboard()
    apis.register(ApiKey.METADATA, echo_metadata)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port(), client_id="t")
            assert conn.api_versions == {18: (0, 3), 3: (0, 11)}
            assert conn.version_for(ApiKey.METADATA) == 11
            assert conn.version_for(ApiKey.METADATA, max_version=4) == 4
            with pytest.raises(UnsupportedVersionError):
                conn.version_for(ApiKey.PRODUCE)  # not served by this broker
            with pytest.raises(UnsupportedVersionError):
                conn.version_for(9999)  # not an API we speak
            response = await conn.send(metadata_request("a", "b"))
            assert [t.name for t in response.topics] == ["a", "b"]
            await conn.close()
            assert conn.closed

    run(main(), factory)


def test_sends_apiversions_v3_with_software_name_and_version():
    seen = []
    apis = switchboard()
    builtin = apis.handlers[ApiKey.API_VERSIONS]

    def api_versions(request):
        seen.append((request.api_version, request.body.client_software_name, request.body.client_software_version))
        return builtin(request)

    apis.register(ApiKey.API_VERSIONS, api_versions)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            await conn.close()
        [(version, name, software_version)] = seen
        assert (version, name) == (3, CLIENT_SOFTWARE_NAME)
        assert software_version and software_version[0].isdigit()

    run(main())


def test_falls_back_when_the_broker_answers_error_35():
    seen: list[int] = []
    apis = old_broker_apis(seen, {18: (0, 2), 3: (0, 8), 0: (0, 7)}, api_versions_max=2)
    apis.register(ApiKey.METADATA, echo_metadata)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            assert seen == [3, 2]  # v3 refused with the broker's range 0-2, then v2 on the same connection
            assert conn.api_versions == {18: (0, 2), 3: (0, 8), 0: (0, 7)}
            assert conn.version_for(ApiKey.METADATA) == 8
            assert conn.version_for(ApiKey.PRODUCE) == 7
            assert [t.name for t in (await conn.send(metadata_request("x"))).topics] == ["x"]
            await conn.close()

    run(main())


def test_error_35_without_a_range_falls_back_to_v0():
    seen: list[int] = []
    apis = switchboard()

    def api_versions(request):
        seen.append(request.api_version)
        if request.api_version > 0:
            return answer_v0(request, ApiVersionsResponse(error_code=35, api_keys=[]))
        return ApiVersionsResponse(error_code=0, api_keys=api_versions_table({18: (0, 0), 3: (0, 1)}))

    apis.register(ApiKey.API_VERSIONS, api_versions)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            assert seen == [3, 0]
            assert conn.version_for(ApiKey.METADATA) == 1
            await conn.close()

    run(main())


def test_old_broker_ranges_pick_old_versions():
    seen_api_versions: list[int] = []
    metadata_versions: list[int] = []
    apis = old_broker_apis(seen_api_versions, {18: (0, 3), 3: (0, 1)}, api_versions_max=3)

    def metadata(request):
        metadata_versions.append(request.api_version)
        return echo_metadata(request)

    apis.register(ApiKey.METADATA, metadata)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            assert conn.version_for(ApiKey.METADATA) == 1
            assert conn.version_for(ApiKey.METADATA, max_version=0) == 0
            with pytest.raises(UnsupportedVersionError):
                conn.version_for(ApiKey.FETCH)
            # v1 has no allow_auto_topic_creation: leave the field at its default.
            response = await conn.send(MetadataRequest(topics=[Topic(name="old")]))
            assert [t.name for t in response.topics] == ["old"]
            assert metadata_versions == [1]
            await conn.close()

    run(main())


def test_no_common_version_is_an_error():
    apis = old_broker_apis([], {18: (0, 3), 3: (12, 13)}, api_versions_max=3)  # a broker newer than us

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            with pytest.raises(UnsupportedVersionError):
                conn.version_for(ApiKey.METADATA)
            with pytest.raises(UnsupportedVersionError):
                await conn.send(metadata_request("x"))
            assert not conn.closed  # nothing was written
            await conn.close()

    run(main())


def test_without_negotiation_our_own_ranges_are_assumed():
    apis = switchboard()
    apis.register(ApiKey.METADATA, echo_metadata)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port(), negotiate=False)
            assert conn.api_versions == {}
            assert conn.version_for(ApiKey.FETCH) == KAFKA_2_8_VERSIONS[ApiKey.FETCH][1]
            assert [t.name for t in (await conn.send(metadata_request("n"))).topics] == ["n"]
            assert server.api_requests[18] == 0
            await conn.close()

    run(main())


# -- pipelining ------------------------------------------------------------------------------------

@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_pipelined_requests_get_their_own_responses(factory):
    apis = switchboard()

    async def metadata(request):
        await asyncio.sleep(random.random() * 0.005)
        return echo_metadata(request)

    apis.register(ApiKey.METADATA, metadata)

    async def main():
        async with serving(apis, num_io_threads=8) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            names = [f"topic-{i}" for i in range(200)]
            responses = await asyncio.gather(*(conn.send(metadata_request(n)) for n in names))
            assert [r.topics[0].name for r in responses] == names
            assert server.api_requests[ApiKey.METADATA] == 200
            assert conn.in_flight == 0
            await conn.close()

    run(main(), factory)


def test_acks_0_produce_returns_none_and_later_responses_stay_matched():
    apis = switchboard()
    produced = []

    def produce(request):
        produced.append(request.body.acks)
        return ProduceResponse(responses=[])

    apis.register(ApiKey.PRODUCE, produce)
    apis.register(ApiKey.METADATA, echo_metadata)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            sends = []
            for i in range(10):
                sends.append(conn.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[])))
                sends.append(conn.send(metadata_request(f"t{i}")))
            results = await asyncio.gather(*sends)
            assert results[0::2] == [None] * 10
            assert [r.topics[0].name for r in results[1::2]] == [f"t{i}" for i in range(10)]
            assert await conn.send(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[])) == ProduceResponse()
            assert produced == [0] * 10 + [1]
            await conn.close()

    run(main())


def test_cancelled_send_leaves_the_connection_usable():
    gate = asyncio.Event()
    apis = gated_apis(gate, hold="slow")

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            slow = asyncio.ensure_future(conn.send(metadata_request("slow")))
            await asyncio.sleep(0.01)
            slow.cancel()
            after = asyncio.ensure_future(conn.send(metadata_request("after")))
            gate.set()
            assert (await after).topics[0].name == "after"  # the late "slow" answer was read and dropped
            assert slow.cancelled() and not conn.closed
            await conn.close()

    run(main())


# -- failures --------------------------------------------------------------------------------------

def test_timeout_closes_the_connection_and_fails_the_others():
    gate = asyncio.Event()
    apis = gated_apis(gate)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            other = asyncio.ensure_future(conn.send(metadata_request("other")))
            with pytest.raises(TimeoutError):
                await conn.send(metadata_request("late"), timeout=0.05)
            assert conn.closed
            with pytest.raises(ConnectionError):
                await other
            with pytest.raises(KafkaConnectionError):
                await conn.send(metadata_request("after"))
            gate.set()
            await conn.close()

    run(main())


def test_connection_closed_by_the_broker_fails_every_waiter():
    gate = asyncio.Event()
    apis = gated_apis(gate)

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            # The reactor handles one request per connection at a time: "close" goes first.
            sends = [conn.send(metadata_request("close"))] + [conn.send(metadata_request(f"w{i}")) for i in range(5)]
            results = await asyncio.gather(*sends, return_exceptions=True)
            assert all(isinstance(r, ConnectionError) for r in results), results
            assert conn.closed
            with pytest.raises(ConnectionError):
                await conn.send(metadata_request("after"))
            gate.set()
            await conn.close()

    run(main())


def test_server_shutdown_fails_waiters():
    apis = switchboard()
    apis.register(ApiKey.METADATA, lambda request: asyncio.sleep(3600))

    async def main():
        async with serving(apis) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            pending = asyncio.ensure_future(conn.send(metadata_request("x")))
            await asyncio.sleep(0.01)
            await server.stop(timeout=0)
            with pytest.raises(ConnectionError):
                await pending
            assert conn.closed
            await conn.close()

    run(main())


def test_connect_refused_is_a_connection_error():
    async def main():
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        with pytest.raises(ConnectionError):
            await BrokerConnection.connect("127.0.0.1", port)

    run(main())


def test_silent_broker_times_out_the_connect():
    async def silent(header, body, writer):
        pass

    async def main():
        async with raw_broker(silent) as port:
            with pytest.raises(TimeoutError):
                await BrokerConnection.connect("127.0.0.1", port, timeout=0.1)

    run(main())


def test_wrong_correlation_id_closes_the_connection():
    async def liar(header, body, writer):
        if header.api_key == ApiKey.API_VERSIONS:
            full_api_versions(header, writer)
        else:
            writer.write(frame(header.correlation_id + 1000, b""))

    async def main():
        async with raw_broker(liar) as port:
            conn = await BrokerConnection.connect("127.0.0.1", port)
            first = conn.send(metadata_request("a"))
            second = conn.send(metadata_request("b"))
            results = await asyncio.gather(first, second, return_exceptions=True)
            assert isinstance(results[0], CorrelationIdError)
            assert isinstance(results[1], ConnectionError)
            assert conn.closed
            await conn.close()

    run(main())


def test_undecodable_body_fails_only_its_request():
    async def garbler(header, body, writer):
        if header.api_key == ApiKey.API_VERSIONS:
            full_api_versions(header, writer)
        elif body.topics[0].name == "garbage":
            writer.write(frame(header.correlation_id, b"\x00\x00\x00"))  # truncated MetadataResponse
        else:
            write_response(writer, header, echo_metadata(type("R", (), {"body": body})()))

    async def main():
        async with raw_broker(garbler) as port:
            conn = await BrokerConnection.connect("127.0.0.1", port)
            results = await asyncio.gather(conn.send(metadata_request("garbage")), conn.send(metadata_request("ok")),
                                           return_exceptions=True)
            assert isinstance(results[0], Exception) and not isinstance(results[0], ConnectionError)
            assert results[1].topics[0].name == "ok"
            assert not conn.closed
            await conn.close()

    run(main())


def test_unsolicited_response_closes_the_connection():
    async def chatty(header, body, writer):
        full_api_versions(header, writer)
        writer.write(frame(77, b""))  # nobody asked

    async def main():
        async with raw_broker(chatty) as port:
            conn = await BrokerConnection.connect("127.0.0.1", port)
            for _ in range(100):
                if conn.closed:
                    break
                await asyncio.sleep(0.01)
            assert conn.closed
            with pytest.raises(CorrelationIdError):
                await conn.send(metadata_request("x"))

    run(main())


def test_tcp_nodelay_is_on():
    async def main():
        async with serving(switchboard()) as server:
            conn = await BrokerConnection.connect("127.0.0.1", server.port())
            sock = conn._transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            await conn.close()

    run(main())

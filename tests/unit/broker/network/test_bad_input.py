"""Bad input closes only the connection that sent it (Kafka's answers; RELIABILITY.md section 5)."""

from __future__ import annotations

import struct

import pytest

from odradek.broker.kafka_apis import KafkaApis
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import encode_request
from odradek.protocol.messages import HeartbeatRequest, MetadataRequest

from .helpers import LOOP_IDS, LOOPS, Client, heartbeat_response, run, serving, switchboard


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header(api_key: int, version: int, correlation_id: int = 1, client_id: bytes = b"c") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


HEARTBEAT_V3 = encode_request(HeartbeatRequest(group_id="g", member_id="m"), 3, 1, "c")

BAD_INPUTS = {
    # name: (bytes, counter)
    "oversize_frame": (struct.pack(">i", 4097) + b"\0" * 16, "bad_frame_size"),
    "negative_length": (struct.pack(">i", -1), "bad_frame_size"),
    "zero_length": (frame(b""), "invalid_request"),
    "short_header": (frame(b"\x00\x12\x00"), "invalid_request"),
    "client_id_past_the_end": (frame(struct.pack(">hhih", 18, 1, 1, 50) + b"abc"), "invalid_request"),
    "unknown_api_key": (frame(header(999, 0)), "unknown_api_key"),
    "unsupported_version": (frame(header(12, 99)), "unsupported_version"),
    "api_not_served": (encode_request(MetadataRequest(topics=None), 1, 1, "c"), "api_not_served"),
    "truncated_body": (frame(HEARTBEAT_V3[4:-3]), "invalid_request"),
    "array_count_past_the_end": (frame(header(3, 1) + struct.pack(">i", 1_000_000)), "invalid_request"),
    "bad_utf8_client_id": (frame(struct.pack(">hhih", 18, 1, 1, 2) + b"\xff\xfe"), "invalid_request"),
}


def apis_with_heartbeat() -> KafkaApis:
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())
    return apis


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_closes_only_its_connection(name):
    data, counter = BAD_INPUTS[name]

    async def main():
        async with serving(apis_with_heartbeat(), socket_request_max_bytes=4096) as server:
            good = await Client.connect(server.port())
            await good.api_versions()
            bad = await Client.connect(server.port())
            await bad.api_versions()  # a request answered before the bad one still is
            bad.send_raw(data)
            assert await bad.closed_by_server()
            assert server.stats[counter] == 1
            assert server.stats["responses_sent"] == 2
            # The other connection does not notice.
            assert (await good.heartbeat(7)).error_code == 0
            assert (await good.api_versions(correlation_id=8)).error_code == 0
            good.close()
            bad.close()

    run(main())


@pytest.mark.parametrize("factory", LOOPS, ids=LOOP_IDS)
def test_requests_pipelined_before_the_bad_frame_are_answered(factory):
    async def main():
        async with serving(apis_with_heartbeat()) as server:
            client = await Client.connect(server.port())
            good = [encode_request(HeartbeatRequest(group_id="g", member_id="m"), 3, cid, "c") for cid in range(3)]
            after = encode_request(HeartbeatRequest(group_id="g", member_id="m"), 3, 9, "c")
            client.send_raw(b"".join(good) + frame(header(999, 0)) + after)
            assert [(await client.receive(12, 3))[0] for _ in range(3)] == [0, 1, 2]
            assert await client.closed_by_server()
            assert server.stats["unknown_api_key"] == 1
            assert server.api_requests[12] == 3  # the request behind the bad frame was never handled
            client.close()

    run(main(), factory)


def test_client_disconnecting_with_a_request_in_flight():
    import asyncio

    apis = switchboard()

    async def heartbeat(request):
        await asyncio.sleep(0.05)
        return heartbeat_response()

    apis.register(ApiKey.HEARTBEAT, heartbeat)

    async def main():
        async with serving(apis) as server:
            client = await Client.connect(server.port())
            client.send_raw(HEARTBEAT_V3 * 3)
            await client.writer.drain()
            await asyncio.sleep(0.01)
            client.writer.transport.abort()
            # Muted, the server learns of the reset when it writes the response (as Kafka does).
            for _ in range(200):
                if server.connection_count() == 0:
                    break
                await asyncio.sleep(0.01)
            assert server.connection_count() == 0
            assert server.api_requests[12] <= 3
            other = await Client.connect(server.port())
            assert (await other.heartbeat(1)).error_code == 0
            other.close()

    run(main())

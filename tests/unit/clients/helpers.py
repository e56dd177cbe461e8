"""Shared bits of the client tests: the real broker reactor with fake handlers, and a raw fake broker."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any, Awaitable, Callable

from odradek.broker.network.request_channel import Response
from odradek.protocol.header import decode_request, encode_response_parts
from odradek.protocol.messages import ApiVersionsResponse

from ..broker.network.helpers import LOOP_IDS, LOOPS, make_config, run, serving, switchboard  # noqa: F401  (re-exported)

ApiVersion = ApiVersionsResponse.ApiVersion


def api_versions_table(ranges: dict[int, tuple[int, int]]) -> list[Any]:
    return [ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(ranges.items())]


def answer_v0(request: Any, body: Any) -> Response:
    """A response encoded at version 0 whatever the request's version (an old broker's error 35)."""
    return Response.send(request, encode_response_parts(body, 0, request.correlation_id))


RawHandler = Callable[[Any, Any, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_broker(on_request: RawHandler):
    """A byte-level fake broker: ``on_request(header, body, writer)`` is called for each request frame.

    For what the real reactor would never do: wrong correlation ids, garbage bodies, silence.
    """
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                header, body = decode_request(await reader.readexactly(size))
                await on_request(header, body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def frame(correlation_id: int, payload: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(payload), correlation_id) + payload


def write_response(writer: asyncio.StreamWriter, header: Any, body: Any, version: int | None = None) -> None:
    from odradek.protocol.header import encode_response
    writer.write(encode_response(body, header.api_version if version is None else version, header.correlation_id))


def full_api_versions(header: Any, writer: asyncio.StreamWriter) -> None:
    """A raw broker's ApiVersions answer: Kafka 2.8's whole table."""
    from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
    write_response(writer, header, ApiVersionsResponse(error_code=0, api_keys=api_versions_table(KAFKA_2_8_VERSIONS)))

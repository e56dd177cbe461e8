"""Shared bits of the reactor tests: a config on 127.0.0.1:0, a server context, a raw-socket client."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

import uvloop

from odradek.broker.config import KafkaConfig
from odradek.broker.apis import api_versions
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.server import build_socket_server
from odradek.protocol.header import decode_response, encode_request
from odradek.protocol.messages import ApiVersionsRequest, HeartbeatRequest, HeartbeatResponse

LOOPS = [asyncio.new_event_loop, uvloop.new_event_loop]
LOOP_IDS = ["asyncio", "uvloop"]


def make_config(**overrides: Any) -> KafkaConfig:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "zookeeper.connect": "localhost:2181"}
    props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return KafkaConfig(props)


def switchboard() -> KafkaApis:
    """A KafkaApis answering ApiVersions (as the broker's does), for the test to register more on."""
    apis = KafkaApis()
    api_versions.register(apis)
    return apis


def run(coro: Any, factory: Any = uvloop.new_event_loop, timeout: float = 30.0) -> Any:
    loop = factory()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))
    finally:
        loop.close()


@contextlib.asynccontextmanager
async def serving(apis: KafkaApis | None = None, **overrides: Any):
    server = build_socket_server(make_config(**overrides), apis if apis is not None else switchboard())
    await server.start()
    try:
        yield server
    finally:
        await server.stop(timeout=1.0)


class Client:
    """A raw Kafka client over asyncio streams: exact control of what goes on the wire."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> "Client":
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, body: Any, version: int, correlation_id: int, client_id: str | None = "test") -> None:
        self.writer.write(encode_request(body, version, correlation_id, client_id))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        return decode_response(await self.read_frame(), api_key, version)

    async def api_versions(self, version: int = 3, correlation_id: int = 1) -> Any:
        self.send(ApiVersionsRequest(client_software_name="odradek-test", client_software_version="1.0"),
                  version, correlation_id)
        cid, body = await self.receive(18, version)
        assert cid == correlation_id
        return body

    async def heartbeat(self, correlation_id: int, group: str = "g") -> Any:
        self.send(HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 3, correlation_id)
        cid, body = await self.receive(12, 3)
        assert cid == correlation_id
        return body

    async def closed_by_server(self, timeout: float = 5.0) -> bool:
        """True when the server closes the connection without sending anything more."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except (ConnectionResetError, BrokenPipeError):
            return True
        return data == b""

    def close(self) -> None:
        self.writer.close()


def heartbeat_response(error_code: int = 0) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=error_code, throttle_time_ms=0)

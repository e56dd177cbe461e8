"""A connection closed because of who it is (a client certificate no principal mapping rule accepts, a failed
SASL exchange) serves nothing it sent: asyncio promises no data after a close, but a request handed on anyway
must not run as User:ANONYMOUS."""

from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace

from odradek.broker.network.processor import Connection, Processor
from odradek.broker.network.request_channel import RequestChannel
from odradek.broker.security.listener_config import ListenerSecurity
from odradek.broker.security.ssl_principal import SslPrincipalMapper
from odradek.clients.cli.local_ca import LocalCA
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import encode_request
from odradek.protocol.messages import HeartbeatRequest


class _Transport:
    def __init__(self, certificate: bytes) -> None:
        self.closed = False
        self._ssl = SimpleNamespace(getpeercert=lambda binary_form=False: certificate)

    def get_extra_info(self, name: str, default=None):
        return {"ssl_object": self._ssl, "sockname": ("127.0.0.1", 9093), "peername": ("127.0.0.1", 50000)}.get(
            name, default)

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_frames_that_arrive_after_an_authentication_close_are_dropped(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    alice = x509.load_pem_x509_certificates(LocalCA(tmp_path).issue("alice", client=True).read_bytes())[0]

    async def main() -> tuple[bool, int]:
        channel = RequestChannel(10)
        processor = Processor(0, channel, {int(ApiKey.HEARTBEAT)}, Counter(), Counter(), asyncio.get_running_loop())
        security = ListenerSecurity("SSL", "SSL", principal_mapper=SslPrincipalMapper("RULE:^CN=(admin)$/$1/"))
        connection = Connection(processor, "SSL", 1 << 20, security)
        transport = _Transport(alice.public_bytes(Encoding.DER))
        connection.connection_made(transport)  # no rule maps CN=alice: closed at once
        connection.data_received(encode_request(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 3,
                                                1, "late"))
        return transport.closed, channel.qsize()

    closed, queued = asyncio.run(main())
    assert closed and queued == 0

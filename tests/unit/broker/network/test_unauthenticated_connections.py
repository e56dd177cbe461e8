"""Connections that have not authenticated hold nothing for long and get nothing: one closed because of who
it is (a client certificate no principal mapping rule accepts) serves nothing it sent (asyncio promises no data
after a close, but a request handed on anyway must not run as User:ANONYMOUS); one stalled in the SASL exchange
is closed by connections.max.idle.ms; a crowd of stalled ones does not keep others from being served."""

from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace

from odradek.broker.network.processor import Connection, Processor
from odradek.broker.network.request_channel import RequestChannel
from odradek.broker.security.listener_config import ListenerSecurity
from odradek.broker.security.ssl_principal import SslPrincipalMapper
from odradek.tools.local_ca import LocalCA
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import encode_request
from odradek.protocol.messages import HeartbeatRequest, SaslAuthenticateRequest, SaslHandshakeRequest

from .helpers import Client, heartbeat_response, run, serving, switchboard

PLAIN = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "security.inter.broker.protocol": "SASL_PLAINTEXT",
         "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
         "plain.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                   'username="admin" password="admin-secret" user_admin="admin-secret";'}


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


async def _authenticate(client: Client) -> None:
    client.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 1)
    assert (await client.receive(17, 1))[1].error_code == 0
    client.send(SaslAuthenticateRequest(auth_bytes=b"\0admin\0admin-secret"), 2, 2)
    assert (await client.receive(36, 2))[1].error_code == 0


def _heartbeats():
    apis = switchboard()
    apis.register(ApiKey.HEARTBEAT, lambda request: heartbeat_response())
    return apis


def test_a_connection_stalled_in_the_sasl_exchange_is_closed_when_idle():
    async def main() -> None:
        # a second of idleness against a request every 50 ms: margin for a loaded machine's stalls
        async with serving(_heartbeats(), connections_max_idle_ms=1000, **PLAIN) as server:
            stalled = await Client.connect(server.port())
            stalled.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 1)
            assert (await stalled.receive(17, 1))[1].error_code == 0  # and then nothing more
            busy = await Client.connect(server.port())
            await _authenticate(busy)
            for i in range(30):
                assert (await busy.heartbeat(10 + i)).error_code == 0
                await asyncio.sleep(0.05)
            assert await stalled.closed_by_server(timeout=5)
            assert server.stats["idle_closed"] >= 1
            busy.close()
            stalled.close()

    run(main())


def test_a_crowd_of_stalled_unauthenticated_connections_does_not_keep_others_out():
    async def main() -> None:
        async with serving(_heartbeats(), **PLAIN) as server:
            crowd = [await Client.connect(server.port()) for _ in range(200)]
            for i, client in enumerate(crowd):  # half stall after the handshake, half send half a frame
                if i % 2:
                    client.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 1)
                else:
                    client.send_raw(b"\0\0\x10\0partial")
            latecomer = await Client.connect(server.port())
            await _authenticate(latecomer)
            assert (await latecomer.heartbeat(3)).error_code == 0
            assert server.connection_count() == len(crowd) + 1
            for client in (*crowd, latecomer):
                client.close()

    run(main())

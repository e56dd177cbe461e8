"""One Acceptor per listener: a listening socket whose connections go round-robin to the processors.

On an SSL or SASL_SSL listener the socket speaks TLS (asyncio's SSL transport: the handshake runs on the
event loop in small steps, so one client's handshake does not stall the others); its connections get
the listener's security, which authenticates them (broker/security/).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Sequence

from ..config import Endpoint
from ..security.credential_cache import CredentialCache
from ..security.listener_config import ListenerSecurity
from .processor import Connection, Processor

log = logging.getLogger(__name__)
_TLS_HANDSHAKE_TIMEOUT_S = 10.0  # a client that opens a socket and never finishes the handshake is dropped


class Acceptor:
    def __init__(self, endpoint: Endpoint, processors: Sequence[Processor], max_frame_size: int,
                 send_buffer: int = -1, receive_buffer: int = -1, backlog: int = 50,
                 security: ListenerSecurity | None = None, credentials: CredentialCache | None = None) -> None:
        self.endpoint = endpoint
        self.security = security if security is not None and security.protocol != "PLAINTEXT" else None
        self.credentials = credentials if credentials is not None else CredentialCache()
        self.processors = list(processors)
        self.max_frame_size = max_frame_size
        self.send_buffer = send_buffer
        self.receive_buffer = receive_buffer
        self.backlog = backlog
        self.server: asyncio.AbstractServer | None = None
        self._next = 0

    @property
    def listener(self) -> str:
        return self.endpoint.name

    def _new_connection(self) -> Connection:
        # Round-robin, as Kafka's Acceptor assigns new channels to processors.
        processor = self.processors[self._next % len(self.processors)]
        self._next += 1
        return Connection(processor, self.endpoint.name, self.max_frame_size, self.security, self.credentials)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.endpoint.host or None  # empty host: every interface
        context = self.security.ssl_context if self.security is not None else None
        tls = {"ssl": context, "ssl_handshake_timeout": _TLS_HANDSHAKE_TIMEOUT_S} if context is not None else {}
        self.server = await loop.create_server(self._new_connection, host, self.endpoint.port,
                                               reuse_address=True, backlog=self.backlog, **tls)
        for sock in self.server.sockets:
            # Accepted sockets inherit the listening socket's buffer sizes (Kafka sets them the same way).
            if self.receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
            if self.send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        log.info("Listener %s bound to %s", self.endpoint.name, self.bound_addresses())

    def bound_addresses(self) -> list[tuple[str, int]]:
        if self.server is None:
            return []
        return [s.getsockname()[:2] for s in self.server.sockets]

    @property
    def port(self) -> int:
        addresses = self.bound_addresses()
        return addresses[0][1] if addresses else self.endpoint.port

    def stop_accepting(self) -> None:
        if self.server is not None:
            self.server.close()

    async def wait_closed(self) -> None:
        if self.server is not None:
            await self.server.wait_closed()

"""One Acceptor per listener: a listening socket whose connections go round-robin to the processors.

On an SSL or SASL_SSL listener the socket speaks TLS (asyncio's SSL transport: the handshake runs on the
event loop in small steps, so one client's handshake does not stall the others); its connections get
the listener's security, which authenticates them (broker/security/).

The acceptor runs its own accept loop (``loop.sock_accept``) rather than asyncio's server, so that it can
stop accepting, as Kafka's does, while the broker holds ``max.connections`` (``connection_quotas.py``): it
accepts one connection, waits for a slot, then checks the address's own limit, closing the connection
at once when that is exceeded.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from typing import Sequence

from ..config import Endpoint
from ..security.credential_cache import CredentialCache
from ..security.listener_config import ListenerSecurity
from .connection_quotas import ConnectionQuotas, TooManyConnectionsError
from .processor import Connection, Processor

log = logging.getLogger(__name__)
_TLS_HANDSHAKE_TIMEOUT_S = 10.0  # a client that opens a socket and never finishes the handshake is dropped
# accept() failures that mean "not now" (out of file descriptors, memory, a connection reset while queued)
_TRANSIENT = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED, errno.EPROTO}


class Acceptor:
    def __init__(self, endpoint: Endpoint, processors: Sequence[Processor], max_frame_size: int,
                 send_buffer: int = -1, receive_buffer: int = -1, backlog: int = 50,
                 security: ListenerSecurity | None = None, credentials: CredentialCache | None = None,
                 quotas: ConnectionQuotas | None = None) -> None:
        self.endpoint = endpoint
        self.security = security if security is not None and security.protocol != "PLAINTEXT" else None
        self.credentials = credentials if credentials is not None else CredentialCache()
        self.processors = list(processors)
        self.max_frame_size = max_frame_size
        self.send_buffer = send_buffer
        self.receive_buffer = receive_buffer
        self.backlog = backlog
        self.quotas = quotas
        self.sockets: list[socket.socket] = []
        self._tasks: list[asyncio.Task] = []
        self._next = 0

    @property
    def listener(self) -> str:
        return self.endpoint.name

    def _new_connection(self) -> Connection:
        # Round-robin, as Kafka's Acceptor assigns new channels to processors.
        processor = self.processors[self._next % len(self.processors)]
        self._next += 1
        return Connection(processor, self.endpoint.name, self.max_frame_size, self.security, self.credentials)

    def _listen(self) -> list[socket.socket]:
        host = self.endpoint.host
        if not host:  # every interface: IPv6 and IPv4 on one socket where the system has both
            dualstack = socket.has_dualstack_ipv6()
            sock = socket.create_server(("", self.endpoint.port), backlog=self.backlog, dualstack_ipv6=dualstack,
                                        family=socket.AF_INET6 if dualstack else socket.AF_INET)
        else:
            family = socket.getaddrinfo(host, self.endpoint.port, type=socket.SOCK_STREAM)[0][0]
            sock = socket.create_server((host, self.endpoint.port), family=family, backlog=self.backlog)
        # Accepted sockets inherit the listening socket's buffer sizes (Kafka sets them the same way).
        if self.receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
        if self.send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        sock.setblocking(False)
        return [sock]

    def bind(self) -> None:
        """Listen on the port (known from here on, even when configured as 0). Connections wait in the
        backlog until ``start_accepting``, as Kafka's do before startProcessingRequests."""
        self.sockets = self._listen()
        log.info("Listener %s bound to %s", self.endpoint.name, self.bound_addresses())

    def start_accepting(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._accept(sock), name=f"acceptor-{self.listener}")
                       for sock in self.sockets]

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        listener = self.listener
        context = self.security.ssl_context if self.security is not None else None
        tls = {"ssl": context, "ssl_handshake_timeout": _TLS_HANDSHAKE_TIMEOUT_S} if context is not None else {}
        while True:
            try:
                sock, address = await loop.sock_accept(listening)
            except OSError as exc:
                if exc.errno in _TRANSIENT:
                    log.warning("Listener %s could not accept a connection: %s", listener, exc)
                else:  # never stop accepting: a listener without its loop is a broker nobody can reach
                    log.exception("Listener %s could not accept a connection", listener)
                await asyncio.sleep(0.1)
                continue
            ip = address[0]
            if self.quotas is not None:
                await self.quotas.wait_for_slot(listener)  # max.connections: accept nothing more meanwhile
                try:
                    self.quotas.inc(listener, ip)
                except TooManyConnectionsError as exc:
                    log.info("Rejected connection from %s, address already has the configured maximum of %d "
                             "connections.", exc.address, exc.limit)
                    self.quotas.dec(listener, ip)
                    sock.close()
                    continue
            # The TLS handshake runs in its own task: a slow client never holds up the accept loop.
            loop.create_task(self._start_connection(sock, ip, tls))

    async def _start_connection(self, sock: socket.socket, ip: str, tls: dict) -> None:
        made: list[Connection] = []

        def connection() -> Connection:
            made.append(self._new_connection())
            return made[0]
        try:
            await asyncio.get_running_loop().connect_accepted_socket(connection, sock, **tls)
        except Exception as exc:  # the peer went away, or never finished the handshake
            log.info("Listener %s lost a connection from %s before it started: %s", self.listener, ip, exc)
            if self.quotas is not None and not (made and made[0].id):  # not registered: not counted off yet
                self.quotas.dec(self.listener, ip)
            sock.close()

    def bound_addresses(self) -> list[tuple[str, int]]:
        return [s.getsockname()[:2] for s in self.sockets]

    @property
    def port(self) -> int:
        addresses = self.bound_addresses()
        return addresses[0][1] if addresses else self.endpoint.port

    def stop_accepting(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def wait_closed(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        for sock in self.sockets:
            sock.close()

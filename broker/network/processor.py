"""Processors and their connections (Kafka's SocketServer.Processor and KafkaChannel).

A ``Connection`` is the asyncio Protocol of one socket: it splits the byte stream into frames, decodes
each request header and hands the request to its ``Processor``, which puts it on the RequestChannel.
Like Kafka, a connection is muted from the moment a request is read until that request's response has
been handed to the transport: at most one request per connection is in flight, so responses leave in
request order however the handlers interleave (kafka-python and aiokafka match responses
to requests first-in first-out and drop the connection on a mismatch). Frames that arrived behind it wait in
``pending`` and the socket is not read meanwhile.

Anything wrong with a frame (bad size, unparseable header or body, unknown api key, a version or an
API we do not serve) closes that connection only, without a response, as Kafka does; the one
exception is ApiVersions at an unsupported version, which is answered with error 35 (KIP-511: closing
it would make librdkafka blame the security protocol and fall back to 0.9-era features).

On one event loop a Processor is a logical group of connections; the round-robin assignment and the
name stay so that processors can become event loops in threads later.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...protocol.api_keys import ApiKey
from ...protocol.errors import FrameTooLargeError, UnknownApiKeyError, UnsupportedApiVersionError
from ...protocol.framing import FrameSplitter
from ...protocol.header import RequestHeader, decode_request
from ..security.credential_cache import CredentialCache
from ..security.listener_config import ListenerSecurity
from ..security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from ..security.sasl_authenticator import SaslAuthenticator
from ..security.ssl_principal import distinguished_name
from .request_channel import Request, RequestChannel, Response

if TYPE_CHECKING:
    from .connection_quotas import ConnectionQuotas
    from .memory_pool import MemoryPool

log = logging.getLogger(__name__)

_API_VERSIONS = int(ApiKey.API_VERSIONS)


class Connection(asyncio.Protocol):
    __slots__ = ("processor", "listener", "principal", "id", "peer_host", "transport", "splitter", "pending",
                 "in_flight", "closed", "last_active", "_reading", "_writable", "_served", "_stats", "_throttle",
                 "security", "credentials", "authenticator", "_max_frame_size", "client_software")

    def __init__(self, processor: "Processor", listener: str, max_frame_size: int,
                 security: ListenerSecurity | None = None, credentials: CredentialCache | None = None) -> None:
        self.processor = processor
        self.listener = listener
        self.principal = ANONYMOUS  # replaced by authentication on SSL/SASL listeners
        self.security = security  # None on a PLAINTEXT listener
        self.credentials = credentials
        self.authenticator: SaslAuthenticator | None = None  # set while a SASL connection authenticates
        self._max_frame_size = max_frame_size
        # (name, version) from ApiVersions v3+ (Kafka's ClientInformation): the request log shows it
        self.client_software = ("unknown", "unknown")
        self.id = ""
        self.peer_host = ""
        self.transport: asyncio.Transport | None = None
        self.splitter = FrameSplitter(max_frame_size)
        self.pending: deque[Any] = deque()  # frames read behind the request in flight
        self.in_flight: Request | None = None
        self.closed = False
        self.last_active = 0.0
        self._reading = True
        self._writable = True
        self._served = processor.served
        self._stats = processor.stats
        self._throttle: tuple[asyncio.TimerHandle, Callable[[], None]] | None = None  # muted by a client quota

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        local = transport.get_extra_info("sockname") or ("?", 0)
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer_host = peer[0]
        self.id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{self.processor.next_index()}"
        self.last_active = self.processor.loop.time()
        self.processor.add(self)
        if self.security is not None:
            self._start_authentication(transport)
        self._update_reading()  # the processor may be blocked on a full channel

    def _start_authentication(self, transport: asyncio.BaseTransport) -> None:
        """TLS is done when asyncio calls connection_made: a client certificate names the principal (mutual
        TLS); a SASL listener then waits for the SASL exchange, with small frames only."""
        security = self.security
        assert security is not None
        ssl_object = transport.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if certificate and security.principal_mapper is not None:
            try:
                name = security.principal_mapper.name(distinguished_name(certificate))
            except Exception as exc:  # NoMatchingRule, or a subject we cannot read: fail the connection
                self.close_for("authentication_failed", f"SSL principal: {exc}")
                return
            self.principal = KafkaPrincipal(USER_TYPE, name)
        if security.uses_sasl:
            self.authenticator = SaslAuthenticator(security, self.credentials or CredentialCache())
            self.splitter.max_frame_size = min(security.max_receive_size, self._max_frame_size)

    def data_received(self, data: bytes) -> None:
        if self.closed:  # e.g. refused at authentication: nothing it sent is served, whatever a transport hands on
            return
        self.last_active = self.processor.loop.time()
        try:
            frames = self.splitter.feed(data)
        except FrameTooLargeError as exc:
            self.close_for("bad_frame_size", str(exc))
            return
        if not frames:
            return
        processor = self.processor
        processor.reading = True  # requests read here may be handled in this call (RequestChannel.direct)
        try:
            if self.in_flight is None and not self.pending and len(frames) == 1 and self._throttle is None:
                self._handle_frame(frames[0])  # the common case: one request, nothing queued
            else:
                self.pending.extend(frames)
                self._process_pending()
        finally:
            processor.reading = False
        self._update_reading()

    def eof_received(self) -> bool | None:
        return None  # close our side too; a half-closed client gets no more responses

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            self._stats["connections_closed"] += 1
        self.pending.clear()
        self._end_throttle(resume=False)
        self.processor.remove(self)

    def pause_writing(self) -> None:
        # The client is not reading its responses: stay muted until the buffer drains.
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        if not self.closed:
            self._process_pending()
            self._update_reading()

    # -- requests ------------------------------------------------------------------------------------
    def _handle_frame(self, frame: Any) -> None:
        if self.authenticator is not None:
            self._authenticate(frame)
            return
        self._handle_request(frame)

    def _authenticate(self, frame: Any) -> None:
        authenticator = self.authenticator
        assert authenticator is not None
        if authenticator.state == authenticator.FAILED:
            return  # closing after the failed-authentication delay; later frames are dropped
        step = authenticator.receive(frame)
        if step.close:
            self.close_for("authentication_failed", step.close)
        elif step.fail:
            self._fail_authentication(step.response, step.fail)
        elif step.dispatch:
            self._handle_request(frame)  # ApiVersions, answered by its handler
        else:
            if step.response:
                self.transport.writelines(step.response)  # type: ignore[union-attr]
            if step.principal is not None:
                self.principal = step.principal
                self.authenticator = None
                self.splitter.max_frame_size = self._max_frame_size
                self._stats["authentications"] += 1

    def _fail_authentication(self, response: list[Any] | None, reason: str) -> None:
        """Kafka's connection.failed.authentication.delay.ms: the answer and the close wait a little, so a
        client guessing passwords cannot go fast; the connection reads nothing meanwhile."""
        self._stats["authentication_failures"] += 1
        self.pending.clear()

        def finish() -> None:
            if not self.closed and response and self.transport is not None:
                self.transport.writelines(response)
            self.close_for("authentication_failed", reason)

        delay = self.security.failed_authentication_delay_ms / 1000 if self.security is not None else 0
        if delay > 0:
            self.processor.loop.call_later(delay, finish)  # reading stays paused (_update_reading) meanwhile
        else:
            finish()

    def _handle_request(self, frame: Any) -> None:
        try:
            header, body = decode_request(frame)
        except UnsupportedApiVersionError as exc:
            if exc.api_key == _API_VERSIONS and _API_VERSIONS in self._served:
                header = RequestHeader(exc.api_key, exc.api_version, exc.correlation_id)
                self._dispatch(Request(header, None, self, len(frame), unsupported_version=True))
            else:
                self.close_for("unsupported_version", str(exc))
            return
        except UnknownApiKeyError as exc:
            self.close_for("unknown_api_key", str(exc))
            return
        except Exception as exc:  # ProtocolError, or anything a decoder tripped over
            self.close_for("invalid_request", f"{type(exc).__name__}: {exc}")
            return
        if header.api_key not in self._served:
            self.close_for("api_not_served", f"api key {header.api_key} is not served")
            return
        self._dispatch(Request(header, body, self, len(frame)))

    def _dispatch(self, request: Request) -> None:
        self.in_flight = request  # muted from here until its response is sent
        self._stats["requests_received"] += 1
        self.processor.api_requests[request.header.api_key] += 1
        self.processor.enqueue(request)

    def _process_pending(self) -> None:
        while (self.in_flight is None and self.pending and self._writable and not self.closed
               and self._throttle is None):
            self._handle_frame(self.pending.popleft())

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        want = (self.in_flight is None and not self.pending and self._writable and self._throttle is None
                and not self.processor.blocked and self.processor.reading_enabled
                and not self.processor.out_of_memory
                and (self.authenticator is None or self.authenticator.state != SaslAuthenticator.FAILED))
        if want != self._reading:
            self._reading = want
            if want:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def on_response(self, response: Response) -> None:
        if self.closed:
            self._stats["responses_dropped"] += 1
            return
        if response.request is not self.in_flight:
            log.error("Connection %s: response %r does not match the request in flight", self.id, response)
            self.close_for("internal_error", "response out of order")
            return
        kind = response.kind
        if kind is Response.SEND:
            self.transport.writelines(response.parts)  # type: ignore[union-attr]
            self._stats["responses_sent"] += 1
        elif kind is Response.NOOP:
            self._stats["responses_noop"] += 1
        else:
            self.close_for("closed_by_handler", response.reason)
            return
        self.in_flight = None
        self.last_active = self.processor.loop.time()
        if self.pending:
            self._process_pending()
        self._update_reading()

    # -- client quotas (KIP-219) ------------------------------------------------------------------------
    def throttle(self, seconds: float, on_done: Callable[[], None]) -> bool:
        """Read no request for ``seconds``: a client quota was violated. The response in flight is still
        sent at once. ``on_done`` runs when the throttle ends (or the connection closes); False if closed."""
        if self.closed:
            return False
        self._end_throttle(resume=False)  # a new throttle replaces one still running
        self._throttle = (self.processor.loop.call_later(seconds, self._end_throttle), on_done)
        self._stats["throttled"] += 1
        self._update_reading()
        return True

    @property
    def throttled(self) -> bool:
        return self._throttle is not None

    def _end_throttle(self, resume: bool = True) -> None:
        if self._throttle is None:
            return
        timer, on_done = self._throttle
        self._throttle = None
        timer.cancel()
        on_done()
        if resume and not self.closed:
            self._process_pending()
            self._update_reading()

    def close_for(self, counter: str, reason: str) -> None:
        """Close because of something this connection sent: one log line, one counter."""
        self._stats[counter] += 1
        log.info("Closing connection %s (%s): %s", self.id, counter, reason)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._stats["connections_closed"] += 1
        self.pending.clear()
        self._end_throttle(resume=False)
        if self.transport is not None:
            self.transport.close()


class Processor:
    """A group of connections sharing one path to the RequestChannel."""

    def __init__(self, index: int, channel: RequestChannel, served: Mapping[int, Any], stats: Counter,
                 api_requests: Counter, loop: asyncio.AbstractEventLoop) -> None:
        self.index = index
        self.channel = channel
        self.served = served  # container of api keys with a handler (KafkaApis.handlers)
        self.stats = stats
        self.api_requests = api_requests
        self.loop = loop
        self.connections: dict[str, Connection] = {}
        self.blocked = False  # the channel was full: no connection of ours reads until it drains
        self.reading_enabled = True  # False while shutting down
        self.quotas: ConnectionQuotas | None = None  # when the socket server has one
        self.memory_pool: MemoryPool | None = None  # queued.max.request.bytes, shared, or None
        self._backlog: deque[Request] = deque()
        self._drainer: asyncio.Task | None = None
        # Inside a connection's read callback: only there may a request be handled in the same call; from
        # anywhere else (a response sent by a purgatory's timer, a throttle ending) it is queued.
        self.reading = False
        self._counter = 0

    def next_index(self) -> int:
        self._counter += 1
        return self._counter

    def connection_factory(self, listener: str, max_frame_size: int) -> Callable[[], Connection]:
        return lambda: Connection(self, listener, max_frame_size)  # a PLAINTEXT listener's (tests)

    def add(self, conn: Connection) -> None:
        self.connections[conn.id] = conn
        self.stats["connections_accepted"] += 1

    def remove(self, conn: Connection) -> None:
        if self.connections.pop(conn.id, None) is not None and self.quotas is not None:
            self.quotas.dec(conn.listener, conn.peer_host)  # the acceptor counted it (connection_quotas.py)

    @property
    def out_of_memory(self) -> bool:
        return self.memory_pool is not None and self.memory_pool.exhausted

    def enqueue(self, request: Request) -> None:
        if self.memory_pool is not None:
            request.pool = self.memory_pool
            self.memory_pool.allocate(request.size)
        if not self.blocked and self.channel.try_send_request(request, from_network=self.reading):
            return
        # Backpressure, as Kafka's processor blocking on a full queue: keep the request, stop reading.
        self._backlog.append(request)
        if not self.blocked:
            self.blocked = True
            self.stats["channel_full"] += 1
            self._update_all()
            self._drainer = self.loop.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._backlog:
                request = self._backlog[0]
                if not request.connection.closed:
                    await self.channel.send_request(request)
                else:
                    request.release_memory()
                self._backlog.popleft()
        finally:
            self.blocked = False
            self._drainer = None
            self._update_all()

    def send_response(self, response: Response) -> None:
        response.request.connection.on_response(response)

    def _update_all(self) -> None:
        for conn in list(self.connections.values()):
            conn._update_reading()

    def stop_reading(self) -> None:
        self.reading_enabled = False
        self._update_all()

    def in_flight(self) -> int:
        return sum(1 for c in self.connections.values() if c.in_flight is not None) + len(self._backlog)

    def close_idle(self, max_idle_s: float) -> int:
        """Close connections silent for max_idle_s with nothing in flight (connections.max.idle.ms)."""
        deadline = self.loop.time() - max_idle_s
        closed = 0
        for conn in list(self.connections.values()):
            if conn.in_flight is None and conn.last_active < deadline:
                conn.close_for("idle_closed", f"idle for more than {max_idle_s:g} s")
                closed += 1
        return closed

    def close_all(self) -> None:
        if self._drainer is not None:
            self._drainer.cancel()
        for request in self._backlog:
            request.release_memory()
        self._backlog.clear()
        for conn in list(self.connections.values()):
            conn.close()

"""One TCP connection to one Kafka broker: version negotiation and pipelined requests.

    conn = await BrokerConnection.connect("127.0.0.1", 9092)      # TCP + ApiVersions
    conn = await BrokerConnection.connect(host, port, security=ClientSecurity.from_kwargs(...))  # + TLS, SASL
    response = await conn.send(MetadataRequest(topics=None))       # highest version both sides speak
    await conn.close()

Many requests may be in flight at once. A broker answers each connection in request order (Kafka
mutes a channel until its response is written), so responses are matched first-in first-out and
each one's correlation id must be the oldest outstanding one; anything else means the stream is out
of sync and the connection is closed, failing every waiter (as the Java client and kafka-python do).
A request that times out closes the connection for the same reason: its response may still come and
would be taken for the next one's. A caller that merely cancels its ``send`` leaves the connection
usable: the late response is read and dropped.

Produce with acks=0 gets no response at all (as from Kafka), so it is never put in flight.

A response with ``throttle_time_ms`` > 0 (KIP-219, see ``throttle.py``) stops the connection sending: until
the throttle has passed, each ``send`` is held unsent, in order, and its timeout starts only when it is
written (Java's request timeout counts from the send too). The throttle lives in a ``ThrottleState`` the
client keeps per broker, so a new connection to the broker waits it out as well; ApiVersions and SASL on a
new connection go out regardless, as in Java (the connection is not ready yet).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections import deque
from importlib import metadata as _metadata
from typing import Any

from ..protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from ..protocol.errors import FrameTooLargeError, UnsupportedVersionError, for_code
from ..protocol.framing import FrameSplitter
from ..protocol.header import decode_response, encode_request
from ..protocol.messages import ApiVersionsRequest
from .errors import CorrelationIdError, KafkaConnectionError
from .security.client_security import ClientSecurity
from .security.sasl_client import authenticate
from .throttle import ThrottleState, ThrottleTimeSensor, client_throttles

log = logging.getLogger(__name__)

_API_VERSIONS = int(ApiKey.API_VERSIONS)
_PRODUCE = int(ApiKey.PRODUCE)
# Java's NetworkClient never sees SASL: the channel authenticates before it is ready.
_AUTHENTICATION_KEYS = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})
# Event-loop timers may fire up to a millisecond early (uvloop counts in ms): a throttle that far from its
# end counts as over, instead of rearming a timer for the rest.
_TIMER_SLACK = 0.001
_UNSUPPORTED_VERSION = UnsupportedVersionError.code
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_MAX_CORRELATION_ID = 2**31 - 1
# Clients accept responses of any size (Java's client reads with an unlimited NetworkReceive);
# the cap only rejects a negative or absurd size prefix.
_MAX_RESPONSE_SIZE = 2**31 - 1
CLIENT_SOFTWARE_NAME = "odradek"


def _software_version() -> str:
    try:
        return _metadata.version("odradek")
    except _metadata.PackageNotFoundError:
        return "0.0.0"


CLIENT_SOFTWARE_VERSION = _software_version()


class _InFlight:
    __slots__ = ("correlation_id", "api_key", "api_version", "future")

    def __init__(self, correlation_id: int, api_key: int, api_version: int, future: asyncio.Future) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.future = future


class _Held:
    """A request waiting for a throttle to pass: encoded (correlation id 0 for now), not sent."""

    __slots__ = ("data", "api_key", "api_version", "expects_response", "sent")

    def __init__(self, data: bytes, api_key: int, api_version: int, expects_response: bool,
                 sent: asyncio.Future) -> None:
        self.data = data
        self.api_key = api_key
        self.api_version = api_version
        self.expects_response = expects_response
        self.sent = sent  # set once written: the response future (None for acks=0 Produce)


def _copy_error(exc: BaseException) -> BaseException:
    """A fresh instance per waiter, so that raising it in one task does not grow another's traceback."""
    try:
        copy = type(exc)(*exc.args)
    except Exception:
        return exc
    copy.__cause__ = exc.__cause__
    return copy


class BrokerConnection(asyncio.Protocol):
    """A connection to one broker. Build it with ``await BrokerConnection.connect(host, port)``.

    The ``asyncio.Protocol`` callbacks (``connection_made``, ``data_received``, ...) are internal.
    """

    def __init__(self, host: str, port: int, client_id: str, loop: asyncio.AbstractEventLoop, *,
                 throttle: ThrottleState | None = None, throttle_sensor: ThrottleTimeSensor | None = None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        # The broker's advertised (min, max) per api key; empty until negotiated.
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._negotiated = False
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._splitter = FrameSplitter(_MAX_RESPONSE_SIZE)
        self._in_flight: deque[_InFlight] = deque()
        self._next_correlation_id = 0
        self._closed = False
        self._error: BaseException | None = None  # why the connection is closed
        self._lost: asyncio.Future = loop.create_future()
        self._paused = False
        self._drain_waiters: list[asyncio.Future] = []
        self._throttle = throttle if throttle is not None else ThrottleState()
        self._throttle_sensor = throttle_sensor  # records every response's throttle time (None: not kept)
        self._held: deque[_Held] = deque()
        self._release: asyncio.TimerHandle | None = None
        self._setting_up = False  # ApiVersions and SASL of connect(): sent whatever the throttle

    # -- construction -------------------------------------------------------------------------------
    @classmethod
    async def connect(cls, host: str, port: int, *, client_id: str = "odradek", timeout: float = 10.0,
                      negotiate: bool = True, security: ClientSecurity | None = None,
                      throttle: ThrottleState | None = None,
                      throttle_sensor: ThrottleTimeSensor | None = None) -> "BrokerConnection":
        """Open the TCP connection (TLS when ``security`` says SSL or SASL_SSL), (unless
        ``negotiate=False``) learn the broker's API versions, then authenticate (SASL).

        ``throttle``: the client's throttle state for this broker (shared with its earlier connections);
        ``throttle_sensor``: where the client records the throttle time of every response.

        Raises ``ConnectionError`` (``KafkaConnectionError``) when the broker cannot be reached (a TLS
        handshake that fails, e.g. an untrusted certificate, is one), ``TimeoutError`` when connecting
        and negotiating take longer than ``timeout`` seconds, and the broker's Kafka error when SASL
        fails (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM).
        """
        loop = asyncio.get_running_loop()
        conn = cls(host, port, client_id, loop, throttle=throttle, throttle_sensor=throttle_sensor)
        conn._setting_up = True
        context = security.ssl_context if security is not None and security.uses_ssl else None
        try:
            async with asyncio.timeout(timeout):
                try:
                    if context is None:
                        await loop.create_connection(lambda: conn, host, port)
                    else:
                        await loop.create_connection(lambda: conn, host, port, ssl=context, server_hostname=host)
                except TimeoutError:
                    raise
                except OSError as exc:
                    raise KafkaConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
                if negotiate or (security is not None and security.uses_sasl):
                    await conn._negotiate()
                if security is not None and security.uses_sasl:
                    await authenticate(conn, security)
            conn._setting_up = False
        except TimeoutError:
            conn._fail(KafkaConnectionError(f"connecting to {host}:{port} timed out"))
            raise TimeoutError(f"connecting to {host}:{port} took longer than {timeout} s") from None
        except BaseException as exc:
            conn._fail(KafkaConnectionError(f"connecting to {host}:{port} failed: {exc}"))
            raise
        return conn

    async def _negotiate(self) -> None:
        """ApiVersions at our highest version, falling back when the broker answers error 35.

        Since KIP-511 a broker that does not know our ApiVersions version answers with a v0 body:
        error 35 and its own ApiVersions range. Like librdkafka we retry at min(our version - 1,
        the broker's max) (Java's client uses the broker's max; the -1 guards against a broker that
        keeps refusing the version it advertised); a broker that sent no range gets v0.
        """
        version = KAFKA_2_8_VERSIONS[_API_VERSIONS][1]
        request = ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                     client_software_version=CLIENT_SOFTWARE_VERSION)
        while True:
            response = await self.send(request, version=version)
            code = response.error_code
            if code == 0:
                break
            if code != _UNSUPPORTED_VERSION or version == 0:
                raise for_code(code)(f"ApiVersions v{version} to {self.host}:{self.port} failed")
            broker_max = max((e.max_version for e in response.api_keys if e.api_key == _API_VERSIONS), default=0)
            log.debug("%s:%d refused ApiVersions v%d (its max is v%d); retrying",
                      self.host, self.port, version, broker_max)
            version = max(0, min(version - 1, broker_max))
        self.api_versions = {e.api_key: (e.min_version, e.max_version) for e in response.api_keys}
        self._negotiated = True

    # -- public API ---------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered (for picking the least loaded connection)."""
        return len(self._in_flight)

    def throttle_delay(self) -> float:
        """Seconds until the broker's throttle has passed and held requests go out (0: not throttled)."""
        return self._throttle.delay(self._loop.time())

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        """The highest version of ``api_key`` both sides speak, at most ``max_version``.

        Without negotiation (``connect(negotiate=False)``) our own Kafka 2.8 ranges are assumed.
        Raises ``UnsupportedVersionError`` when there is no common version.
        """
        ours = KAFKA_2_8_VERSIONS.get(api_key)
        if ours is None:
            raise UnsupportedVersionError(f"api key {api_key} is not one this client speaks")
        theirs = self.api_versions.get(api_key) if self._negotiated else ours
        if theirs is None:
            raise UnsupportedVersionError(f"broker {self.host}:{self.port} does not support api key {api_key}")
        low = max(ours[0], theirs[0])
        high = min(ours[1], theirs[1])
        if max_version is not None:
            high = min(high, max_version)
        if high < low:
            raise UnsupportedVersionError(
                f"no common version of api key {api_key}: broker {self.host}:{self.port} speaks "
                f"{theirs[0]}-{theirs[1]}, we speak {ours[0]}-{ours[1]}"
                + (f" (capped at {max_version})" if max_version is not None else ""))
        return high

    async def send(self, body: Any, *, version: int | None = None, timeout: float | None = None) -> Any:
        """Send a request and return the decoded response body (None for acks=0 Produce).

        ``version`` defaults to ``version_for(api key)``; ``timeout`` (seconds, None = no deadline)
        covers writing and waiting, from the moment the request is written: a request held while the
        broker throttles us waits without a deadline (cancel the call to give up; nothing was sent).
        On timeout the connection is closed and ``TimeoutError`` raised.
        """
        if self._closed:
            raise _copy_error(self._error or KafkaConnectionError(f"connection to {self.host}:{self.port} is closed"))
        api_key = body.MESSAGE.api_key
        if version is None:
            version = self.version_for(api_key)
        expects_response = not (api_key == _PRODUCE and body.acks == 0)
        if self._held or (self._throttle.until > self._loop.time() and not self._setting_up):
            waiter = await self._hold(body, api_key, version, expects_response)
        else:
            correlation_id = self._take_correlation_id()
            data = encode_request(body, version, correlation_id, self.client_id)  # may raise: nothing sent yet
            waiter = self._write(data, correlation_id, api_key, version, expects_response)
        return await self.answer(waiter, api_key, version, timeout)

    def send_now(self, body: Any) -> asyncio.Future | None:
        """Write a request in this call, at ``version_for`` its api key, and return the future of its raw
        answer, for ``answer()``; None (nothing written) when it cannot leave at once: the connection is
        closed, requests are held behind a throttle, or the transport's buffer is full. Then use ``send``."""
        if self._closed or self._paused or self._held or self._throttle.until > self._loop.time():
            return None
        api_key = body.MESSAGE.api_key
        version = self.version_for(api_key)
        correlation_id = self._take_correlation_id()
        data = encode_request(body, version, correlation_id, self.client_id)
        return self._write(data, correlation_id, api_key, version, True)

    async def answer(self, waiter: asyncio.Future | None, api_key: int, version: int,
                     timeout: float | None) -> Any:
        """The response body of a written request (None when none comes), as ``send`` waits for it."""
        try:
            async with asyncio.timeout(timeout):
                if self._paused:
                    await self._drain()
                if waiter is None:
                    return None
                return await waiter
        except TimeoutError:
            # Its response may still arrive and would be matched to the next request: close.
            self._fail(KafkaConnectionError(f"a request to {self.host}:{self.port} timed out; "
                                            "the connection was closed"))
            raise TimeoutError(f"api key {api_key} v{version} to {self.host}:{self.port} got no response "
                               f"within {timeout} s") from None

    async def close(self) -> None:
        """Close the connection; requests in flight fail with ``ConnectionError``."""
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} was closed by the client"),
                   abort=False)
        if self._transport is not None and not self._lost.done():
            await asyncio.shield(self._lost)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._in_flight)} in flight"
        return f"BrokerConnection({self.host}:{self.port}, {state})"

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:  # small requests must not wait for Nagle (both asyncio and uvloop set it; be sure)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                pass

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._splitter.feed(data)
        except FrameTooLargeError as exc:
            self._fail(KafkaConnectionError(f"bad response frame from {self.host}:{self.port}: {exc}"))
            return
        for frame in frames:
            if not self._on_frame(frame):
                return

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc else " by the broker"
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} was closed{reason}"), abort=False)
        if not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain_waiters(None)

    # -- internals ----------------------------------------------------------------------------------
    def _take_correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = 0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        return correlation_id

    def _write(self, data: bytes | bytearray, correlation_id: int, api_key: int, version: int,
               expects_response: bool) -> asyncio.Future | None:
        """Put a request on the wire (in flight unless no response will come); its response future."""
        waiter = None
        if expects_response:
            waiter = self._loop.create_future()
            self._in_flight.append(_InFlight(correlation_id, api_key, version, waiter))
        assert self._transport is not None
        self._transport.write(data)
        return waiter

    async def _hold(self, body: Any, api_key: int, version: int, expects_response: bool) -> asyncio.Future | None:
        """Queue a request behind the throttle (and the requests already held); once it is written, its
        response future. Cancelled while held, it is dropped unsent."""
        held = _Held(encode_request(body, version, 0, self.client_id), api_key, version, expects_response,
                     self._loop.create_future())
        self._held.append(held)
        self._arm_release()
        try:
            return await held.sent
        except asyncio.CancelledError:
            sent = held.sent
            if sent.cancelled():
                if held in self._held:
                    self._held.remove(held)
            elif sent.exception() is None and sent.result() is not None:
                sent.result().cancel()  # written just before the cancellation: its response will be dropped
            raise

    def _arm_release(self) -> None:
        if self._release is None:
            self._release = self._loop.call_at(self._throttle.until, self._release_held)

    def _release_held(self) -> None:
        """The throttle has passed: write the held requests, in order (unless another response throttled
        us meanwhile: then wait for that one too)."""
        self._release = None
        if self._closed:
            return
        if self._throttle.delay(self._loop.time()) > _TIMER_SLACK:
            self._arm_release()
            return
        while self._held:
            held = self._held.popleft()
            if held.sent.done():
                continue  # its caller gave up while it was held: never sent
            correlation_id = self._take_correlation_id()
            data = bytearray(held.data)
            _INT32.pack_into(data, 8, correlation_id)  # after the size prefix, api key and version
            held.sent.set_result(self._write(data, correlation_id, held.api_key, held.api_version,
                                             held.expects_response))

    def _note_throttle(self, api_key: int, version: int, body: Any) -> None:
        """Record a response's throttle time and, where Kafka's client honours it, throttle the broker."""
        throttle_ms = getattr(body, "throttle_time_ms", 0)
        sensor = self._throttle_sensor
        if sensor is not None and api_key not in _AUTHENTICATION_KEYS:
            sensor.record(throttle_ms)  # every response, 0 included, as Java's NetworkClient
        if throttle_ms > 0 and client_throttles(api_key, version):
            self._throttle.throttle(self._loop.time() + throttle_ms / 1000)
            log.debug("%s:%d throttles us for %d ms (api key %d v%d)", self.host, self.port, throttle_ms,
                      api_key, version)

    def _on_frame(self, frame: Any) -> bool:
        """Match one response frame to the oldest request in flight; False if the connection failed."""
        if not self._in_flight:
            self._fail(CorrelationIdError(f"{self.host}:{self.port} sent a response with no request in flight"))
            return False
        if len(frame) < 4:
            self._fail(KafkaConnectionError(f"{self.host}:{self.port} sent a {len(frame)}-byte response"))
            return False
        entry = self._in_flight.popleft()
        (correlation_id,) = _INT32.unpack_from(frame, 0)
        if correlation_id != entry.correlation_id:
            self._fail(CorrelationIdError(
                f"{self.host}:{self.port} answered correlation id {correlation_id}, "
                f"expected {entry.correlation_id}"))
            if not entry.future.done():
                entry.future.set_exception(_copy_error(self._error))  # type: ignore[arg-type]
            return False
        future = entry.future
        version = entry.api_version
        if future.done() and not client_throttles(entry.api_key, version):
            return True  # the caller gave up (cancelled); the stream stays in sync
        # UNSUPPORTED_VERSION to ApiVersions is sent as a v0 body whatever version was asked (KIP-511); the
        # error code comes first in every version, so read it before choosing the layout. Other errors
        # (INVALID_REQUEST for a bad client software name) come in the version asked, as Kafka sends them.
        if (entry.api_key == _API_VERSIONS and version and len(frame) >= 6
                and _INT16.unpack_from(frame, 4)[0] == _UNSUPPORTED_VERSION):
            version = 0
        try:
            _, body = decode_response(frame, entry.api_key, version)
        except Exception as exc:  # a bad body spoils only this response; framing is intact
            if not future.done():
                future.set_exception(exc)
            return True
        self._note_throttle(entry.api_key, version, body)  # even for a cancelled caller: the broker is muted
        if not future.done():
            future.set_result(body)
        return True

    def _fail(self, error: BaseException, *, abort: bool = True) -> None:
        """Close (once) and fail every waiter with ``error``."""
        if not self._closed:
            self._closed = True
            self._error = error
            if self._transport is not None:
                # On a broken stream drop unsent bytes; a normal close lets them go out.
                self._transport.abort() if abort else self._transport.close()
            elif not self._lost.done():
                self._lost.set_result(None)
        error = self._error or error
        while self._in_flight:
            entry = self._in_flight.popleft()
            if not entry.future.done():
                entry.future.set_exception(_copy_error(error))
        if self._release is not None:
            self._release.cancel()
            self._release = None
        while self._held:
            held = self._held.popleft()
            if not held.sent.done():
                held.sent.set_exception(_copy_error(error))
        self._wake_drain_waiters(error)

    async def _drain(self) -> None:
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _wake_drain_waiters(self, error: BaseException | None) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None) if error is None else waiter.set_exception(_copy_error(error))

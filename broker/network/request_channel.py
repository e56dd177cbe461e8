"""The hand-off between network processors and request handlers (Kafka's RequestChannel).

Processors put decoded ``Request``s on one bounded queue (``queued.max.requests``); handler tasks take
them, and give back a ``Response`` that the channel routes to the processor owning the connection.
Everything runs on one event loop today; ``send_response`` (and ``direct``) are the places to make
thread-safe if processors ever become event loops of their own.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ...protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from ...protocol.header import RequestHeader
    from ..security.principal import KafkaPrincipal

_PRODUCE = int(ApiKey.PRODUCE)


class ResponseRoute(Protocol):
    """Where a connection's responses go (its processor, network/processor.py)."""

    def send_response(self, response: "Response") -> None: ...


class Connection(Protocol):
    """What a request and its handlers read of the connection it came on; network/processor.py's
    ``Connection`` is the one implementation. Named here so this module does not import the processor
    that imports it."""

    id: str
    listener: str
    principal: "KafkaPrincipal"
    processor: ResponseRoute
    closed: bool

    def close(self) -> None: ...


class Request:
    """One decoded request and where it came from."""

    __slots__ = ("header", "body", "connection", "receive_time", "size", "unsupported_version", "dequeue_time",
                 "local_complete_time", "throttle_time_ms", "pool", "log_entry")

    def __init__(self, header: RequestHeader, body: Any, connection: Connection, size: int = 0,
                 unsupported_version: bool = False) -> None:
        self.header = header
        self.body = body
        self.connection = connection
        self.receive_time = time.monotonic()
        self.size = size
        # ApiVersions at a version we do not speak: answered (error 35, v0 body), body is None.
        self.unsupported_version = unsupported_version
        # Set by the handler pool: when a handler took it, and when the handler returned (if it then waited).
        self.dequeue_time = 0.0
        self.local_complete_time = 0.0
        self.throttle_time_ms: int | None = None  # the client quotas' verdict, once taken (broker/quota)
        self.pool: Any = None  # the MemoryPool its bytes count against until it is handled
        self.log_entry: dict | None = None  # its request-log entry, while kafka.request.logger is at DEBUG

    def release_memory(self) -> None:
        """Its bytes no longer count toward queued.max.request.bytes (called once it was handled)."""
        if self.pool is not None:
            self.pool.release(self.size)
            self.pool = None

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def connection_id(self) -> str:
        return self.connection.id

    @property
    def listener(self) -> str:
        return self.connection.listener

    @property
    def principal(self) -> KafkaPrincipal:
        """Who sent it: the connection's authenticated principal (User:ANONYMOUS on a PLAINTEXT listener)."""
        return self.connection.principal

    @property
    def expects_response(self) -> bool:
        """False only for acks=0 Produce, which is never answered (as Kafka: clients expect no
        response, and one would be paired with their next request)."""
        return not (self.header.api_key == _PRODUCE and self.body is not None and self.body.acks == 0)

    def __repr__(self) -> str:
        return (f"Request(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, connection={self.connection_id})")


class Response:
    """What a handler gives back for one request: bytes to send, nothing (NOOP), or CLOSE."""

    SEND = "send"
    NOOP = "noop"    # no bytes, but the connection is unmuted (acks=0 Produce)
    CLOSE = "close"  # close the connection (e.g. a failed acks=0 Produce: there is no way to answer)

    __slots__ = ("request", "kind", "parts", "reason")

    def __init__(self, request: Request, kind: str, parts: list[Any] | None = None, reason: str = "") -> None:
        self.request = request
        self.kind = kind
        self.parts = parts
        self.reason = reason

    @classmethod
    def send(cls, request: Request, parts: list[Any]) -> "Response":
        return cls(request, cls.SEND, parts)

    @classmethod
    def noop(cls, request: Request) -> "Response":
        return cls(request, cls.NOOP)

    @classmethod
    def close(cls, request: Request, reason: str = "") -> "Response":
        return cls(request, cls.CLOSE, reason=reason)

    def __repr__(self) -> str:
        return f"Response({self.kind}, {self.request!r})"


class RequestChannel:
    """A bounded queue of requests; responses go straight back to the connection's processor.

    ``direct`` (set by the handler pool) takes a request at once when the queue is empty: on one event
    loop a queued request waits a loop turn for a handler task that is idle anyway, so a request read from
    the network is handled in the read callback itself, unless a handler is busy (it then goes to the queue)."""

    def __init__(self, queue_size: int) -> None:
        self.queue_size = queue_size
        self._queue: asyncio.Queue[Request] = asyncio.Queue(queue_size)
        self.direct: Callable[[Request], bool] | None = None

    def try_send_request(self, request: Request, from_network: bool = False) -> bool:
        """Hand a request to a handler: at once when ``from_network`` (the processor's read callback) and no
        request is queued or being handled, else queued if there is room; False when full (the processor
        then stops reading)."""
        if from_network and self.direct is not None and not self._queue.qsize() and self.direct(request):
            return True
        try:
            self._queue.put_nowait(request)
        except asyncio.QueueFull:
            return False
        return True

    async def send_request(self, request: Request) -> None:
        await self._queue.put(request)

    async def receive_request(self) -> Request:
        return await self._queue.get()

    def send_response(self, response: Response) -> None:
        response.request.connection.processor.send_response(response)

    def qsize(self) -> int:
        return self._queue.qsize()

    def full(self) -> bool:
        return self._queue.full()

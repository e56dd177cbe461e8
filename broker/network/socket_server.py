"""SocketServer: acceptors (one per listener) + processors, feeding the handler pool's RequestChannel.

    server = SocketServer(config, handler_pool, apis.handlers)   # broker/server.py's build_socket_server
    await server.start()          # binds every listener; port 0 picks a free port (server.port())
                                  # (start(start_processing=False), then start_processing_requests(): the
                                  # broker's order, serving only once registered)
    ...
    await server.stop()           # stop accepting, let requests in flight answer, close, stop handlers

Connection limits (``connection_quotas.py``) are enforced by the acceptors; ``queued.max.request.bytes``
(``memory_pool.py``) makes every processor stop reading while the bytes of requests read and not yet
handled reach it.

``stats`` counts connections, requests, responses and every reason a connection was closed;
``api_requests`` counts requests per api key. Both are plain Counters, ready to feed metrics.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any, Mapping, Protocol

from ..security.credential_cache import CredentialCache
from .acceptor import Acceptor
from ..config import KafkaConfig, parse_connection_overrides
from .connection_quotas import ConnectionQuotas, resolve_overrides
from .memory_pool import MemoryPool
from .processor import Processor
from .request_channel import RequestChannel

log = logging.getLogger(__name__)


class HandlerPool(Protocol):
    """What the socket server needs of the request handlers (broker/request_handler.py's pool, built by the
    composition root): the channel they take requests from, start and stop, and how many are busy."""

    channel: RequestChannel
    busy: int

    def start(self) -> None: ...

    async def stop(self) -> None: ...


class SocketServer:
    def __init__(self, config: KafkaConfig, handler_pool: HandlerPool, served: Mapping[int, Any], *,
                 credentials: CredentialCache | None = None) -> None:
        self.config = config
        self.served = served  # the api keys handled (KafkaApis.handlers): processors refuse the others
        self.credentials = credentials  # SCRAM credentials for SASL listeners (broker/security/credential_cache.py)
        self.stats: Counter = Counter()
        self.api_requests: Counter = Counter()
        self.channel = handler_pool.channel
        self.quotas: ConnectionQuotas | None = None  # max.connections, max.connections.per.ip(.overrides)
        queued_bytes = config.get("queued.max.request.bytes")
        self.memory_pool = MemoryPool(queued_bytes) if queued_bytes > 0 else None
        self.processors: list[Processor] = []
        self.acceptors: list[Acceptor] = []
        self.handler_pool: HandlerPool | None = handler_pool  # None once stopped
        self._idle_task: asyncio.Task | None = None
        self.running = False

    async def start(self, start_processing: bool = True) -> None:
        """Bind every listener and start the handlers; with ``start_processing`` False no connection is
        accepted until ``start_processing_requests`` (Kafka 2.8's startup(startProcessingRequests=false):
        the broker binds its ports first, registers with them, and serves once it is registered)."""
        loop = asyncio.get_running_loop()
        cfg = self.config
        self.processors = [Processor(i, self.channel, self.served, self.stats, self.api_requests, loop)
                           for i in range(cfg.num_network_threads)]
        self.quotas = ConnectionQuotas(
            cfg.max_connections, cfg.max_connections_per_ip,
            resolve_overrides(parse_connection_overrides(cfg.max_connections_per_ip_overrides)),
            cfg.inter_broker_listener_name, [e.name for e in cfg.listeners])
        self.quotas.on_excess = self._close_an_excess_connection
        for processor in self.processors:
            processor.quotas = self.quotas
            processor.memory_pool = self.memory_pool
            if self.memory_pool is not None:
                self.memory_pool.on_change(processor._update_all)  # stop or go on reading
        if self.handler_pool is not None:
            self.handler_pool.start()
        try:
            security = cfg.listener_security()
            for endpoint in cfg.listeners:
                acceptor = Acceptor(endpoint, self.processors, cfg.socket_request_max_bytes,
                                    cfg.socket_send_buffer_bytes, cfg.socket_receive_buffer_bytes,
                                    security=security.get(endpoint.name), credentials=self.credentials,
                                    quotas=self.quotas)
                acceptor.bind()
                self.acceptors.append(acceptor)
        except BaseException:
            await self.stop(timeout=0)
            raise
        idle_ms = cfg.connections_max_idle_ms
        if idle_ms > 0:
            self._idle_task = loop.create_task(self._expire_idle(idle_ms / 1000.0))
        self.running = True
        if start_processing:
            self.start_processing_requests()

    def start_processing_requests(self) -> None:
        """Accept connections on every listener (their ports were bound by ``start``)."""
        for acceptor in self.acceptors:
            acceptor.start_accepting()

    def port(self, listener: str | None = None) -> int:
        """The bound port of a listener (the first one by default); real even when configured as 0."""
        for acceptor in self.acceptors:
            if listener is None or acceptor.listener == listener:
                return acceptor.port
        raise KeyError(listener)

    @property
    def bound_ports(self) -> dict[str, int]:
        return {a.listener: a.port for a in self.acceptors}

    def connection_count(self) -> int:
        return sum(len(p.connections) for p in self.processors)

    def _close_an_excess_connection(self) -> None:
        """The inter-broker listener took the broker past max.connections: close the least recently active
        connection of another listener (Kafka's Processor.closeExcessConnections)."""
        quotas = self.quotas
        assert quotas is not None
        candidates = [c for p in self.processors for c in p.connections.values()
                      if quotas.max_connections_exceeded(c.listener) and not c.closed]
        if candidates:
            oldest = min(candidates, key=lambda c: c.last_active)
            oldest.close_for("max_connections_exceeded",
                             f"the broker holds more than {quotas.max_connections} connections")

    def _in_flight(self) -> int:
        busy = self.handler_pool.busy if self.handler_pool else 0
        return sum(p.in_flight() for p in self.processors) + busy

    async def _expire_idle(self, max_idle_s: float) -> None:
        # Hook for connections.max.idle.ms: Kafka checks on every poll; a coarse periodic sweep is enough.
        interval = max(0.01, min(max_idle_s / 4, 10.0))
        while True:
            await asyncio.sleep(interval)
            for processor in self.processors:
                processor.close_idle(max_idle_s)

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, stop reading, give requests in flight ``timeout`` s to answer, close, stop."""
        self.running = False
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        for acceptor in self.acceptors:
            acceptor.stop_accepting()
        for processor in self.processors:
            processor.stop_reading()
        if self.handler_pool is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while self._in_flight() and loop.time() < deadline:
                await asyncio.sleep(0.005)
        for processor in self.processors:
            processor.close_all()
        if self.handler_pool is not None:
            await self.handler_pool.stop()
            self.handler_pool = None
        await asyncio.sleep(0)  # let transports run connection_lost
        for acceptor in self.acceptors:
            await acceptor.wait_closed()
        self.acceptors = []
        log.info("Socket server stopped: %s", dict(self.stats))

"""What every endpoint shares: the cluster connection, the admin client, a producer made on first use,
the metrics sampler, the metadata watch, group lag history and the running searches."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..clients import AIOAdmin, AIOProducer
from ..clients.simple_client import SimpleClient

from .cluster_watch import ClusterWatch
from .lag_history import LagHistory
from .metrics_sampler import MetricsSampler
from .topic_list import TopicList

CONSOLE_KEY = web.AppKey("console", object)


class Console:
    def __init__(self, bootstrap_servers: str, *, security: dict[str, Any] | None = None,
                 metrics: list[str] | None = None, metrics_interval_s: float = 5.0,
                 watch_interval_s: float = 2.0, lag_interval_s: float = 5.0, topics_interval_s: float = 5.0,
                 request_timeout_ms: int = 10000, schema_registry_url: str | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.schema_registry_url = schema_registry_url  # the Schemas page's registry (Confluent's REST API)
        self.security = dict(security or {})
        from ..clients.security.client_security import SECURITY_DEFAULTS, client_security
        from ..clients.types import check_configs
        self.client = SimpleClient(bootstrap_servers, client_id="odradek-console",
                                   request_timeout=request_timeout_ms / 1000.0, retries=0,
                                   security=client_security(check_configs(self.security, SECURITY_DEFAULTS)))
        # a call has 15 s in all: a page waits that long at most for one panel
        self.admin = AIOAdmin(bootstrap_servers, client=self.client, request_timeout_ms=request_timeout_ms,
                              default_api_timeout_ms=max(15000, request_timeout_ms))
        self.sampler = MetricsSampler(metrics or [], metrics_interval_s)
        self.watch = ClusterWatch(self.client, watch_interval_s)
        self.lag = LagHistory(self, lag_interval_s)
        self.topic_list = TopicList(self, topics_interval_s)
        self.searches: dict[str, Any] = {}
        self._producer: AIOProducer | None = None
        self._producer_lock = asyncio.Lock()

    async def start(self) -> None:
        self.sampler.start()
        self.watch.start()
        self.lag.start()
        self.topic_list.start()

    async def stop(self) -> None:
        for search in list(self.searches.values()):
            search.cancel()
        await self.lag.stop()
        await self.topic_list.stop()
        await self.watch.stop()
        await self.sampler.stop()
        if self._producer is not None:
            await self._producer.close()
        await self.admin.close()

    async def producer(self) -> AIOProducer:
        async with self._producer_lock:
            if self._producer is None:
                producer = AIOProducer(bootstrap_servers=self.bootstrap_servers, client_id="odradek-console",
                                       acks="all", linger_ms=0, **self.security)
                await producer.start()
                self._producer = producer
            return self._producer


def console_of(request: web.Request) -> Console:
    return request.app[CONSOLE_KEY]  # type: ignore[return-value]

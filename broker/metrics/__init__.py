"""Prometheus metrics of one broker, under the names operators graph through Kafka's JMX exporter.

    metrics = BrokerMetrics(server)          # before the parts start: counters are wired into them
    port = await metrics.start(host, port)   # GET http://host:port/metrics
    await metrics.stop()

Most series are read from the broker's state at scrape time by collectors (one module per area:
``replica_metrics``, ``controller_metrics``, ``group_metrics``, ``cleaner_metrics``, ``log_manager_metrics``); only what cannot be read
afterwards is counted
as it happens: per-topic bytes and records (``topic_stats``), request rates, errors and latency
(``request_metrics``), ISR shrinks and expands (two integers on the ReplicaManager), ZooKeeper session events.
Client-quota sensors (``quota_metrics``) are read from broker/quota, which keeps them for throttling.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily

from .cleaner_metrics import LogCleanerCollector
from .controller_metrics import ControllerCollector, ZooKeeperStats
from .group_metrics import ConsumerGroupCollector
from .http_endpoint import MetricsEndpoint
from .log_manager_metrics import LogManagerCollector
from .quota_metrics import ClientQuotaCollector
from .replica_metrics import ReplicaManagerCollector
from .request_metrics import RequestMetrics, RequestMetricsCollector
from .topic_stats import BrokerTopicMetricsCollector, BrokerTopicStats

__all__ = ["BrokerMetrics", "BrokerTopicStats", "RequestMetrics", "ZooKeeperStats", "MetricsEndpoint"]


class BrokerMetrics:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.topic_stats = BrokerTopicStats()
        self.request_metrics = RequestMetrics()
        self.zk_stats = ZooKeeperStats()
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(BrokerTopicMetricsCollector(self.topic_stats))
        self.registry.register(RequestMetricsCollector(self.request_metrics, self._channel))
        self.registry.register(ReplicaManagerCollector(server))
        self.registry.register(ControllerCollector(server, self.zk_stats))
        self.registry.register(ConsumerGroupCollector(server))
        self.registry.register(ClientQuotaCollector(server))
        self.registry.register(_BrokerStateCollector(server))
        self.registry.register(LogCleanerCollector(server))
        self.registry.register(LogManagerCollector(server))
        self.endpoint: MetricsEndpoint | None = None

    def _channel(self) -> Any:
        socket_server = getattr(self.server, "socket_server", None)
        return socket_server.channel if socket_server is not None else None

    async def start(self, host: str, port: int) -> int:
        self.endpoint = MetricsEndpoint(self.registry, host, port)
        return await self.endpoint.start()

    def urls(self) -> str:
        return ", ".join(f"http://{address}/metrics" for address in self.endpoint.addresses()) if self.endpoint else ""

    async def stop(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.stop()
            self.endpoint = None


class _BrokerStateCollector:
    """kafka.server:type=KafkaServer,name=BrokerState, a gauge of Kafka's BrokerState values (3 = running)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Any:
        gauge = GaugeMetricFamily("kafka_server_kafkaserver_brokerstate",
                                  "State of the broker: 0 not running, 1 starting, 2 recovery, 3 running, "
                                  "6 pending controlled shutdown, 7 shutting down")
        gauge.add_metric([], int(getattr(self.server, "broker_state", 0)))
        yield gauge

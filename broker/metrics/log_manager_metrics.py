"""The LogManager's gauges under the JMX exporter's names for Kafka's MBeans (KIP-112).

``kafka.log:type=LogManager,name=OfflineLogDirectoryCount`` becomes
``kafka_log_logmanager_offlinelogdirectorycount``, and ``kafka.log:type=LogManager,name=LogDirectoryOffline,
logDirectory=<dir>`` ``kafka_log_logmanager_logdirectoryoffline`` (1 offline, 0 online), labelled
``logDirectory``.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric


class LogManagerCollector:
    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        manager = getattr(self.server, "log_manager", None)
        if manager is None:
            return
        offline = manager.offline_log_dirs
        yield GaugeMetricFamily("kafka_log_logmanager_offlinelogdirectorycount", "Log directories offline",
                                value=len(offline))
        each = GaugeMetricFamily("kafka_log_logmanager_logdirectoryoffline", "1 when the log directory is offline",
                                 labels=["logDirectory"])
        for directory in manager.log_dirs:
            each.add_metric([directory], 1 if directory in offline else 0)
        yield each

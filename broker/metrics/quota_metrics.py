"""Client-quota metrics under the JMX exporter's names for Kafka's quota sensors (kafka-2_0_0.yml).

Kafka registers each quota sensor as ``kafka.server:type=<Produce|Fetch|Request>,user=<u>,client-id=<c>``
(tags with an empty value are left out of the MBean) with the attributes ``byte-rate`` (``request-time``
for Request) and ``throttle-time``; the exporter's rules turn them into ``kafka_server_quota_byte_rate``,
``kafka_server_quota_request_time`` and ``kafka_server_quota_throttle_time`` with the labels ``resource``
(the type), ``user`` and ``clientId``. A sensor exists once a client was measured, which Kafka does only
while some quota of that type is configured. The throttle-time average is over the last minute (Kafka's
two 30 s metric samples) and NaN when the sensor was never throttled in it, as Kafka's Avg.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric


class ClientQuotaCollector:
    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        quotas = getattr(self.server, "client_quotas", None)
        if quotas is None:
            return
        families: dict[str, GaugeMetricFamily] = {}

        def family(attribute: str) -> GaugeMetricFamily:
            name = "kafka_server_quota_" + attribute.replace("-", "_")
            if name not in families:
                families[name] = GaugeMetricFamily(name, f"Kafka's quota sensor attribute {attribute}",
                                                   labels=["resource", "user", "clientId"])
            return families[name]

        for manager in quotas.managers():
            for sensors, value, throttle in manager.metrics():
                labels = [manager.quota_type, sensors.user, sensors.client_id]
                family(manager.metric_name).add_metric(labels, value)
                family("throttle-time").add_metric(labels, throttle)
        yield from families.values()

"""Consumer-group offsets and lag under kafka_exporter's names (there is no broker MBean for lag).

A broker reports the groups it coordinates: ``kafka_consumergroup_current_offset`` for every committed
offset, and ``kafka_consumergroup_lag`` (high watermark minus committed offset) where it has a replica of the
partition to read the high watermark from (a follower's may trail the leader's by one fetch). With the
usual replication factor 3 on 3 brokers every partition has a local replica. Each leader also reports
``kafka_topic_partition_current_offset`` (its high watermark), so lag for any partition can be computed in
PromQL across brokers.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric


class ConsumerGroupCollector:
    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        rm = getattr(self.server, "replica_manager", None)
        coordinator = getattr(self.server, "group_coordinator", None)
        if rm is None or coordinator is None:
            return
        partitions = rm.partitions
        current = GaugeMetricFamily("kafka_topic_partition_current_offset", "High watermark of a partition this "
                                    "broker leads", labels=["topic", "partition"])
        for (topic, index), p in list(partitions.items()):
            if p.is_leader:
                current.add_metric([topic, str(index)], p.high_watermark)
        yield current
        committed = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset of a group",
                                      labels=["consumergroup", "topic", "partition"])
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus the group's committed offset",
                                labels=["consumergroup", "topic", "partition"])
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Lag of a group summed over a topic's "
                                    "partitions", labels=["consumergroup", "topic"])
        for group in coordinator.manager.local_groups():
            sums: dict[str, int] = {}
            for (topic, index), offset in sorted(list(group.offsets.items())):
                labels = [group.group_id, topic, str(index)]
                committed.add_metric(labels, offset.offset)
                p = partitions.get((topic, index))
                if p is None:
                    continue
                value = max(0, p.high_watermark - offset.offset)
                lag.add_metric(labels, value)
                sums[topic] = sums.get(topic, 0) + value
            for topic, value in sums.items():
                lag_sum.add_metric([group.group_id, topic], value)
        yield committed
        yield lag
        yield lag_sum

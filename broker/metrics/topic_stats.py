"""Per-topic throughput counters (Kafka's BrokerTopicStats) and their Prometheus collector.

The replica manager bumps plain integers on the produce and fetch paths (no Prometheus objects on the hot
path); the collector turns them into the series the JMX exporter makes of Kafka's
``kafka.server:type=BrokerTopicMetrics,name=...PerSec[,topic=T]`` meters: a ``..._total`` counter per topic
plus one without a topic label for all topics, as Kafka's allTopicsStats.
"""

from __future__ import annotations

from typing import Iterator

from prometheus_client.core import CounterMetricFamily

# (attribute, Kafka meter name without PerSec, help)
METERS = (
    ("messages_in", "MessagesIn", "Records appended to leader logs"),
    ("bytes_in", "BytesIn", "Bytes appended to leader logs by producers"),
    ("bytes_out", "BytesOut", "Bytes sent to consumers"),
    ("total_produce_requests", "TotalProduceRequests", "Produce requests per partition"),
    ("failed_produce_requests", "FailedProduceRequests", "Produce requests per partition that failed"),
    ("total_fetch_requests", "TotalFetchRequests", "Fetch requests per partition"),
    ("failed_fetch_requests", "FailedFetchRequests", "Fetch requests per partition that failed"),
)


class TopicCounters:
    __slots__ = tuple(attr for attr, _, _ in METERS)

    def __init__(self) -> None:
        for attr in self.__slots__:
            setattr(self, attr, 0)


class BrokerTopicStats:
    """Counters per topic and for all topics; follower traffic counts apart (Replication*BytesIn/Out)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.all = TopicCounters()
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0

    def _of(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def record_append(self, topic: str, messages: int, size: int) -> None:
        """A produce appended ``messages`` records of ``size`` bytes to a leader (Kafka's appendToLocalLog)."""
        for c in (self._of(topic), self.all):
            c.total_produce_requests += 1
            c.messages_in += messages
            c.bytes_in += size

    def record_failed_produce(self, topic: str) -> None:
        for c in (self._of(topic), self.all):
            c.total_produce_requests += 1
            c.failed_produce_requests += 1

    def record_fetch_request(self, topic: str, failed: bool = False) -> None:
        for c in (self._of(topic), self.all):
            c.total_fetch_requests += 1
            if failed:
                c.failed_fetch_requests += 1

    def record_bytes_out(self, topic: str, size: int, from_follower: bool) -> None:
        # Kafka's updateBytesOut: a follower's fetch is replication traffic, not the topic's BytesOut
        if from_follower:
            self.replication_bytes_out += size
        else:
            self._of(topic).bytes_out += size
            self.all.bytes_out += size

    def record_replication_bytes_in(self, size: int) -> None:
        self.replication_bytes_in += size

    def remove_topic(self, topic: str) -> None:
        """A deleted topic's series go away, as Kafka's removeMetrics on topic deletion."""
        self.topics.pop(topic, None)


class BrokerTopicMetricsCollector:
    """``kafka_server_brokertopicmetrics_<meter>_total{topic}`` read from a BrokerTopicStats at scrape time."""

    def __init__(self, stats: BrokerTopicStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self.stats
        topics = list(stats.topics.items())
        for attr, meter, help_text in METERS:
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{meter.lower()}", help_text,
                                         labels=["topic"])
            family.add_metric([], getattr(stats.all, attr))
            for topic, counters in topics:
                family.add_metric([topic], getattr(counters, attr))
            yield family
        yield CounterMetricFamily("kafka_server_brokertopicmetrics_replicationbytesin",
                                  "Bytes fetched from leaders by this broker's followers",
                                  value=stats.replication_bytes_in)
        yield CounterMetricFamily("kafka_server_brokertopicmetrics_replicationbytesout",
                                  "Bytes sent to followers", value=stats.replication_bytes_out)

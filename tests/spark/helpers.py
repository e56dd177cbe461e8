"""Topic set-up for the Spark tests, with our own clients."""

from __future__ import annotations

from odradek.clients import Admin, NewTopic, Producer


def create_topic(servers: str, topic: str, partitions: int, replication: int = 1, configs: dict | None = None) -> None:
    with Admin(servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs or {})])
    with Producer(bootstrap_servers=servers) as producer:  # wait until every partition has a leader
        assert len(producer.partitions_for(topic)) == partitions


def produce(servers: str, topic: str, rows: list[tuple], **configs) -> None:
    """rows: (partition, key, value[, headers[, timestamp_ms]])."""
    with Producer(bootstrap_servers=servers, **configs) as producer:
        futures = []
        for row in rows:
            partition, key, value = row[:3]
            headers = row[3] if len(row) > 3 else None
            timestamp = row[4] if len(row) > 4 else None
            futures.append(producer.send(topic, value=value, key=key, partition=partition, headers=headers,
                                         timestamp_ms=timestamp))
        producer.flush()
        for future in futures:
            future.get(timeout=60)

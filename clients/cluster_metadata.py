"""What a client knows about the cluster: brokers, controller, topics and partition leaders.

Built from a ``MetadataResponse`` (any version; fields a version lacks keep their defaults, e.g. no
controller before v1). ``merged`` folds a newer answer about some topics into an older picture of
the whole cluster, as Kafka's client-side Metadata does when it refreshes only the topics it needs.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class BrokerInfo(NamedTuple):
    host: str
    port: int
    rack: str | None


class PartitionInfo(NamedTuple):
    leader: int  # -1 when the partition has no leader
    leader_epoch: int  # -1 when unknown (Metadata < v7)
    replicas: list[int]
    isr: list[int]
    error_code: int


class TopicInfo(NamedTuple):
    error_code: int
    is_internal: bool
    partitions: dict[int, PartitionInfo]


class ClusterMetadata:
    __slots__ = ("brokers", "controller_id", "cluster_id", "topics")

    def __init__(self, brokers: dict[int, BrokerInfo] | None = None, controller_id: int = -1,
                 cluster_id: str | None = None, topics: dict[str, TopicInfo] | None = None) -> None:
        self.brokers: dict[int, BrokerInfo] = brokers or {}
        self.controller_id = controller_id
        self.cluster_id = cluster_id
        self.topics: dict[str, TopicInfo] = topics or {}

    @classmethod
    def from_response(cls, response: Any) -> "ClusterMetadata":
        brokers = {b.node_id: BrokerInfo(b.host, b.port, b.rack) for b in response.brokers}
        topics = {}
        for topic in response.topics:
            partitions = {
                p.partition_index: PartitionInfo(p.leader_id, p.leader_epoch, list(p.replica_nodes),
                                                 list(p.isr_nodes), p.error_code)
                for p in topic.partitions
            }
            topics[topic.name] = TopicInfo(topic.error_code, topic.is_internal, partitions)
        return cls(brokers, response.controller_id, response.cluster_id, topics)

    def merged(self, newer: "ClusterMetadata") -> "ClusterMetadata":
        """``newer``'s brokers and controller, this picture's topics updated with ``newer``'s."""
        topics = dict(self.topics)
        topics.update(newer.topics)
        return ClusterMetadata(dict(newer.brokers), newer.controller_id,
                               newer.cluster_id if newer.cluster_id is not None else self.cluster_id, topics)

    def without_topics(self, names: list[str]) -> "ClusterMetadata":
        """This picture minus ``names`` (after they are deleted)."""
        topics = {name: info for name, info in self.topics.items() if name not in names}
        return ClusterMetadata(dict(self.brokers), self.controller_id, self.cluster_id, topics)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        return info.partitions.get(partition) if info is not None else None

    def leader_for(self, topic: str, partition: int) -> int | None:
        """The leader's broker id, or None when the partition is unknown or has no leader."""
        info = self.partition(topic, partition)
        if info is None or info.leader < 0:
            return None
        return info.leader

    def partitions_for(self, topic: str) -> list[int]:
        info = self.topics.get(topic)
        return sorted(info.partitions) if info is not None else []

    def broker_address(self, node_id: int) -> tuple[str, int] | None:
        broker = self.brokers.get(node_id)
        return (broker.host, broker.port) if broker is not None else None

    def __repr__(self) -> str:
        return (f"ClusterMetadata(cluster_id={self.cluster_id!r}, controller_id={self.controller_id}, "
                f"brokers={sorted(self.brokers)}, topics={sorted(self.topics)})")

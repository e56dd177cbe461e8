"""Log-dir administration for ``AIOAdmin`` (mixed in): where each broker keeps which replicas.

Kafka's ``Admin.describeLogDirs(brokers)`` in kafka-python's argument names:

    dirs = await admin.describe_log_dirs()                         # every broker, every partition
    dirs = await admin.describe_log_dirs({"events": [0, 1]}, brokers=[1])
    # {1: {"/var/lib/odradek/data": LogDirDescription(error=None, replicas={
    #          TopicPartition("events", 0): ReplicaInfo(size=1234, offset_lag=0, is_future=False), ...})}}

Moving a replica to another log dir of its broker (Kafka's ``Admin.alterReplicaLogDirs``, KIP-113):

    errors = await admin.alter_replica_log_dirs({TopicPartitionReplica("events", 0, 1): "/data/disk2"})
    # {TopicPartitionReplica("events", 0, 1): None}, or the error (REPLICA_NOT_AVAILABLE: not on that broker
    # yet, its dir is remembered for when it is; LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR, ...)

One DescribeLogDirs or AlterReplicaLogDirs request per broker (each answers only for its own dirs), sent at once, each retried at
that broker until the call's deadline (``admin_calls``). A dir with an
error (KAFKA_STORAGE_ERROR for an offline dir) carries the ``odradek.protocol.errors`` instance and no
replicas, as the Java LogDirDescription does.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping, NamedTuple

from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import AlterReplicaLogDirsRequest, DescribeLogDirsRequest
from .calls import ANY, AdminCalls, Broker, Try
from ..types import TopicPartition


class ReplicaInfo(NamedTuple):
    """One replica in a log dir (Java's ReplicaInfo): bytes on disk, how far its log end is behind the
    high watermark (or, for a future replica, behind the current one), and whether it is a future replica."""
    size: int
    offset_lag: int
    is_future: bool


class TopicPartitionReplica(NamedTuple):
    """One replica: a partition on one broker (Java's TopicPartitionReplica)."""
    topic: str
    partition: int
    broker_id: int


class LogDirDescription(NamedTuple):
    error: KafkaError | None
    replicas: dict[TopicPartition, ReplicaInfo]


TopicPartitionsArg = Mapping[str, Iterable[int]] | Iterable[str] | Iterable[TopicPartition] | None


class LogDirAdmin:
    """The log-dir part of ``AIOAdmin``; needs ``self._client`` (a SimpleClient) and ``self._calls``."""

    _client: Any
    _calls: AdminCalls

    async def describe_log_dirs(self, topic_partitions: TopicPartitionsArg = None,
                                brokers: Iterable[int] | None = None
                                ) -> dict[int, dict[str, LogDirDescription]]:
        """broker id -> log dir -> LogDirDescription. ``topic_partitions``: None (all), {topic: [partitions]},
        topic names (all their partitions), or TopicPartitions; ``brokers``: None (all) or node ids."""
        topics = await self._log_dir_topics(topic_partitions)
        if brokers is None:
            response = await self._calls.run("findAllBrokers", ANY, self._metadata([]))
            brokers = [b.node_id for b in response.brokers]
        request = DescribeLogDirsRequest(topics=topics)

        async def attempt(t: Try) -> Any:
            assert t.conn is not None
            return await t.conn.send(request, timeout=t.timeout)

        node_ids = sorted(set(brokers))
        answers = await asyncio.gather(*(self._calls.run("describeLogDirs", Broker(node), attempt)
                                         for node in node_ids))
        return {node: _log_dirs(answer) for node, answer in zip(node_ids, answers)}

    async def alter_replica_log_dirs(self, replica_dirs: Mapping[TopicPartitionReplica, str]
                                     ) -> dict[TopicPartitionReplica, KafkaError | None]:
        """Move each replica to the log dir (an absolute path of its broker's log.dirs); per replica None or the
        error. The move itself goes on in the broker after the answer (DescribeLogDirs shows its progress)."""
        by_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
        for replica, path in replica_dirs.items():
            topic, partition, broker = replica
            by_broker.setdefault(broker, {}).setdefault(path, {}).setdefault(topic, []).append(partition)

        async def one_broker(broker: int) -> dict[TopicPartitionReplica, KafkaError | None]:
            dirs = [AlterReplicaLogDirsRequest.AlterReplicaLogDir(path=path, topics=[
                AlterReplicaLogDirsRequest.AlterReplicaLogDir.AlterReplicaLogDirTopic(name=t, partitions=sorted(ps))
                for t, ps in sorted(topics.items())]) for path, topics in by_broker[broker].items()]

            async def attempt(t: Try) -> Any:
                assert t.conn is not None
                return await t.conn.send(AlterReplicaLogDirsRequest(dirs=dirs), timeout=t.timeout)

            results: dict[TopicPartitionReplica, KafkaError | None] = {}
            try:
                response = await self._calls.run("alterReplicaLogDirs", Broker(broker), attempt)
            except KafkaError as exc:  # the broker's whole answer failed: each of its replicas has that error
                return {TopicPartitionReplica(t, p, broker): exc for topics in by_broker[broker].values()
                        for t, ps in topics.items() for p in ps}
            for topic in response.results:
                for p in topic.partitions:
                    replica = TopicPartitionReplica(topic.topic_name, p.partition_index, broker)
                    # the error's own description, as the Java client's Errors.exception()
                    results[replica] = for_code(p.error_code)() if p.error_code else None
            for topics in by_broker[broker].values():  # as Java's: an unanswered replica fails
                for t, ps in topics.items():
                    for p in ps:
                        replica = TopicPartitionReplica(t, p, broker)
                        results.setdefault(replica, for_code(-1)(f"The response from broker {broker} did not "
                                                                 f"contain a result for replica {replica}"))
            return results

        answers = await asyncio.gather(*(one_broker(b) for b in sorted(by_broker)))
        merged = {replica: error for answer in answers for replica, error in answer.items()}
        return {TopicPartitionReplica(*replica): merged[TopicPartitionReplica(*replica)] for replica in replica_dirs}

    def _metadata(self, topics: list[str]) -> Any:
        async def attempt(t: Try) -> Any:
            return await self._client.metadata_at(t.conn, topics, timeout=t.timeout)
        return attempt

    async def _log_dir_topics(self, topic_partitions: TopicPartitionsArg) -> list[Any] | None:
        if topic_partitions is None:
            return None
        wanted: dict[str, set[int]] = {}
        if isinstance(topic_partitions, Mapping):
            for topic, partitions in topic_partitions.items():
                wanted.setdefault(topic, set()).update(partitions)
        else:
            names = []
            for item in topic_partitions:
                if isinstance(item, str):
                    names.append(item)
                else:
                    wanted.setdefault(item.topic, set()).add(item.partition)
            if names:  # all partitions of these topics, from the metadata
                response = await self._calls.run("describeTopics", ANY, self._metadata(names))
                for t in response.topics:
                    if t.error_code:
                        raise for_code(t.error_code)(f"topic '{t.name}'")
                    wanted.setdefault(t.name, set()).update(p.partition_index for p in t.partitions)
        return [DescribeLogDirsRequest.DescribableLogDirTopic(topic=topic, partitions=sorted(partitions))
                for topic, partitions in sorted(wanted.items())]


def _log_dirs(response: Any) -> dict[str, LogDirDescription]:
    dirs: dict[str, LogDirDescription] = {}
    for result in response.results:
        error = for_code(result.error_code)(f"log dir {result.log_dir}") if result.error_code else None
        replicas = {TopicPartition(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                                           p.is_future_key)
                    for t in result.topics for p in t.partitions}
        dirs[result.log_dir] = LogDirDescription(error, replicas)
    return dirs


__all__ = ["LogDirAdmin", "LogDirDescription", "ReplicaInfo", "TopicPartitionReplica"]

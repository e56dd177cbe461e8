"""Leader elections and partition reassignments for ``AIOAdmin`` (mixed in).

Named and shaped as Kafka's Admin (``electLeaders``, ``alterPartitionReassignments``,
``listPartitionReassignments``) in snake_case, as kafka-python names them:

    results = await admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("events", 0)])
    # {TopicPartition: None or the KafkaError}; partitions=None elects wherever needed
    await admin.alter_partition_reassignments({TopicPartition("events", 0): [2, 3, 4],
                                               TopicPartition("events", 1): None})   # None cancels
    ongoing = await admin.list_partition_reassignments()  # {TopicPartition: PartitionReassignment}

All three go to the controller; NOT_CONTROLLER (per partition for ElectLeaders, for the whole
request otherwise) or a lost connection makes the call look the controller up again and retry until
its deadline (``admin_calls``). Other top-level errors end the call, as in Kafka 2.8.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import (AlterPartitionReassignmentsRequest, ElectLeadersRequest,
                                 ListPartitionReassignmentsRequest)
from .calls import CONTROLLER, NOT_CONTROLLER, AdminCalls, Try, final
from ..types import TopicPartition


class ElectionType(IntEnum):
    """Kafka's ElectionType."""
    PREFERRED = 0
    UNCLEAN = 1


class PartitionReassignment(NamedTuple):
    """A reassignment in progress (Kafka's PartitionReassignment): the full replica set and its changes."""
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class PartitionAdmin:
    """Mixed into AIOAdmin: expects ``self._calls``."""

    _calls: AdminCalls

    async def elect_leaders(self, election_type: ElectionType | int,
                            partitions: Iterable[TopicPartition] | None = None, timeout_ms: int | None = None
                            ) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders (preferred or unclean); per partition None or the error (ELECTION_NOT_NEEDED when
        the right leader leads already). ``partitions=None``: every partition that needs an election."""
        wanted = None if partitions is None else sorted({TopicPartition(*tp) for tp in partitions})
        topics: dict[str, list[int]] = {}
        for tp in wanted or ():
            topics.setdefault(tp.topic, []).append(tp.partition)
        requested = None if wanted is None else [ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                                                 for t, ps in topics.items()]

        async def attempt(t: Try) -> dict[TopicPartition, KafkaError | None]:
            response = await _send(t, ElectLeadersRequest(election_type=int(election_type), timeout_ms=t.timeout_ms,
                                                          topic_partitions=requested))
            results: dict[TopicPartition, KafkaError | None] = {}
            for topic in response.replica_election_results:
                for p in topic.partition_result:
                    if p.error_code == NOT_CONTROLLER:
                        raise for_code(NOT_CONTROLLER)(p.error_message or "ElectLeaders")
                    results[TopicPartition(topic.topic, p.partition_id)] = (
                        for_code(p.error_code)(p.error_message or f"{topic.topic}-{p.partition_id}")
                        if p.error_code else None)
            return results

        return await self._calls.run("electLeaders", CONTROLLER, attempt, timeout_ms)

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None],
                                            timeout_ms: int | None = None, *, raise_errors: bool = False
                                            ) -> dict[TopicPartition, KafkaError | None]:
        """Start (replica list) or cancel (None) reassignments; per partition None or the error (the first
        error is raised instead with ``raise_errors``). Returns once the controller started them."""
        topic_cls = AlterPartitionReassignmentsRequest.ReassignableTopic
        by_topic: dict[str, list[Any]] = {}
        for tp, replicas in sorted(reassignments.items(), key=lambda item: tuple(item[0])):
            by_topic.setdefault(tp[0], []).append(topic_cls.ReassignablePartition(
                partition_index=tp[1], replicas=None if replicas is None else list(replicas)))
        topics = [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]

        async def attempt(t: Try) -> dict[TopicPartition, KafkaError | None]:
            response = await _send(t, AlterPartitionReassignmentsRequest(timeout_ms=t.timeout_ms, topics=topics))
            return {TopicPartition(t.name, p.partition_index):
                    for_code(p.error_code)(p.error_message or f"{t.name}-{p.partition_index}") if p.error_code else None
                    for t in response.responses for p in t.partitions}

        results = await self._calls.run("alterPartitionReassignments", CONTROLLER, attempt, timeout_ms)
        failed = [e for e in results.values() if e is not None]
        if raise_errors and failed:
            raise failed[0]
        return results

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None,
                                           timeout_ms: int | None = None
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        """Reassignments in progress, of ``partitions`` or (None) of the whole cluster."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted({TopicPartition(*tp) for tp in partitions}):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                      for t, ps in by_topic.items()]
        async def attempt(t: Try) -> dict[TopicPartition, PartitionReassignment]:
            response = await _send(t, ListPartitionReassignmentsRequest(timeout_ms=t.timeout_ms, topics=topics))
            return {TopicPartition(t.name, p.partition_index):
                    PartitionReassignment(list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                    for t in response.topics for p in t.partitions}

        return await self._calls.run("listPartitionReassignments", CONTROLLER, attempt, timeout_ms)


async def _send(t: Try, request: Any) -> Any:
    """Send to the controller; a top-level NOT_CONTROLLER is retried at the new one, other errors end the call."""
    assert t.conn is not None
    response = await t.conn.send(request, timeout=t.timeout)
    if response.error_code == NOT_CONTROLLER:
        raise for_code(NOT_CONTROLLER)(response.error_message or "")
    if response.error_code:
        raise final(for_code(response.error_code)(response.error_message or ""))
    return response


__all__ = ["ElectionType", "PartitionAdmin", "PartitionReassignment"]

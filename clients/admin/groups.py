"""Consumer-group administration for ``AIOAdmin`` (mixed in): list, describe, delete groups, and list,
alter and delete their committed offsets.

Named and shaped as Kafka's Admin (``listConsumerGroups``, ``describeConsumerGroups``, ...) in
kafka-python 2.x's snake_case:

    groups = await admin.list_consumer_groups()                     # [GroupListing(group_id, protocol_type, state)]
    [described] = await admin.describe_consumer_groups(["billing"])  # ConsumerGroupDescription
    offsets = await admin.list_consumer_group_offsets("billing")    # {TopicPartition: OffsetAndMetadata}
    await admin.alter_consumer_group_offsets("billing", {TopicPartition("events", 0): 42})

ListGroups goes to every broker (each knows only the groups it coordinates); everything else goes to
the group's coordinator, found with FindCoordinator and cached. A coordinator that moved or is loading
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) or a lost connection makes
the call look the coordinator up again and retry until its deadline (``admin_calls.CoordinatorOf``);
other errors raise the ``odradek.protocol.errors`` class of their code.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence, TypeVar

from ...protocol.consumer_protocol import decode_assignment
from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest,
    OffsetFetchRequest,
)
from .calls import (
    ANY, COORDINATOR_ERRORS as _COORDINATOR_ERRORS, AdminCalls, Broker, Coordinator, CoordinatorOf, Try,
)
from ..types import OffsetAndMetadata, TopicPartition

T = TypeVar("T")

# The Java Admin lists as consumer groups those of the "consumer" protocol and simple ones (offsets only).
_CONSUMER_PROTOCOL_TYPES = ("consumer", "")


class GroupListing(NamedTuple):
    """One group of ``list_consumer_groups`` (Java's ConsumerGroupListing; state None from old brokers)."""
    group_id: str
    protocol_type: str
    state: str | None

    @property
    def is_simple_consumer_group(self) -> bool:
        return self.protocol_type == ""


class MemberDescription(NamedTuple):
    """A member as DescribeGroups shows it, its assignment decoded (Java's MemberDescription)."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition]  # sorted; empty while the group rebalances


class ConsumerGroupDescription(NamedTuple):
    group_id: str
    is_simple_consumer_group: bool
    members: list[MemberDescription]
    partition_assignor: str  # "" unless the group is Stable (Kafka shows the protocol only then)
    state: str  # Stable, PreparingRebalance, CompletingRebalance, Empty, Dead
    coordinator: Coordinator
    protocol_type: str


def _raise(code: int, message: str | None, what: str) -> None:
    if code:
        raise for_code(code)(message or what)


class GroupAdmin:
    """The consumer-group half of ``AIOAdmin``; needs ``self._client`` (a SimpleClient) and ``self._calls``."""

    _client: Any
    _calls: AdminCalls

    async def find_coordinator(self, group_id: str, timeout_ms: int | None = None) -> Coordinator:
        """The group's coordinator (FindCoordinator to any broker; remembered until it fails)."""
        async def attempt(t: Try) -> Coordinator:
            assert t.conn is not None
            return await self._calls.find_coordinator(group_id, t.conn, t.timeout)

        return await self._calls.run("findCoordinator", ANY, attempt, timeout_ms)

    async def _at_coordinator(self, name: str, group_id: str, request: Any, check: Callable[[Any], T],
                              timeout_ms: int | None) -> T:
        """Send ``request`` to the group's coordinator; ``check`` turns the response into the result
        (raising the errors it finds); coordinator errors and lost connections are retried."""
        async def attempt(t: Try) -> T:
            assert t.conn is not None
            return check(await t.conn.send(request, timeout=t.timeout))

        return await self._calls.run(name, CoordinatorOf(group_id), attempt, timeout_ms)

    # -- groups -----------------------------------------------------------------------------------
    async def list_consumer_groups(self, states: Iterable[str] | None = None, broker_ids: Sequence[int] | None = None,
                                   timeout_ms: int | None = None) -> list[GroupListing]:
        """Every consumer group of the cluster (ListGroups to each broker, merged, sorted by id);
        ``states`` keeps only groups in those states (asked of the broker from ListGroups v4)."""
        wanted = sorted(set(states or ()))
        if broker_ids is None:
            async def brokers(t: Try) -> list[int]:
                response = await self._client.metadata_at(t.conn, [], timeout=t.timeout)
                return sorted(b.node_id for b in response.brokers)
            broker_ids = await self._calls.run("findAllBrokers", ANY, brokers, timeout_ms)

        async def from_broker(node_id: int) -> list[Any]:
            async def attempt(t: Try) -> list[Any]:
                assert t.conn is not None
                response = await t.conn.send(ListGroupsRequest(states_filter=wanted), timeout=t.timeout)
                _raise(response.error_code, None, f"ListGroups at broker {node_id}")
                return list(response.groups)
            return await self._calls.run("listConsumerGroups", Broker(node_id), attempt, timeout_ms)

        listings: dict[str, GroupListing] = {}
        for answers in await asyncio.gather(*(from_broker(node_id) for node_id in broker_ids)):
            for g in answers:
                state = getattr(g, "group_state", "") or None
                if g.protocol_type in _CONSUMER_PROTOCOL_TYPES and (not wanted or state is None or state in wanted):
                    listings[g.group_id] = GroupListing(g.group_id, g.protocol_type, state)
        return [listings[name] for name in sorted(listings)]

    async def describe_consumer_groups(self, group_ids: Sequence[str], timeout_ms: int | None = None
                                       ) -> list[ConsumerGroupDescription]:
        """Each group's state, members (client id, host, decoded assignment), assignor and coordinator,
        in the order asked. A group the coordinator does not know is described as "Dead" with no
        members, as Kafka answers."""
        async def describe(group_id: str) -> ConsumerGroupDescription:
            route = CoordinatorOf(group_id)

            async def attempt(t: Try) -> ConsumerGroupDescription:
                assert t.conn is not None and route.coordinator is not None
                [group] = (await t.conn.send(DescribeGroupsRequest(groups=[group_id]), timeout=t.timeout)).groups
                _raise(group.error_code, None, f"DescribeGroups of group '{group_id}'")
                return _description(group, route.coordinator)
            return await self._calls.run("describeConsumerGroups", route, attempt, timeout_ms)

        return list(await asyncio.gather(*(describe(g) for g in group_ids)))

    async def delete_consumer_groups(self, group_ids: Sequence[str], timeout_ms: int | None = None, *,
                                     raise_errors: bool = True) -> dict[str, KafkaError | None]:
        """Delete empty groups and their offsets (DeleteGroups at each group's coordinator): group ->
        None or its error (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...); the first error is raised unless
        ``raise_errors=False``."""
        async def delete(group_id: str) -> KafkaError | None:
            def check(response: Any) -> KafkaError | None:
                [result] = response.results
                if result.error_code in _COORDINATOR_ERRORS:
                    _raise(result.error_code, None, f"DeleteGroups of group '{group_id}'")
                return for_code(result.error_code)(f"group '{group_id}'") if result.error_code else None
            try:
                return await self._at_coordinator("deleteConsumerGroups", group_id,
                                                  DeleteGroupsRequest(groups_names=[group_id]), check, timeout_ms)
            except KafkaError as exc:  # the coordinator could not be found in time
                return exc

        results = dict(zip(group_ids, await asyncio.gather(*(delete(g) for g in group_ids))))
        return _first_error_raised(results, raise_errors)

    # -- offsets ----------------------------------------------------------------------------------
    async def list_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None,
                                          timeout_ms: int | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (OffsetFetch): every partition it committed when ``partitions``
        is None. Partitions without a committed offset are left out."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=sorted(p))
                      for t, p in sorted(by_topic.items())]

        def check(response: Any) -> dict[TopicPartition, OffsetAndMetadata]:
            _raise(response.error_code, None, f"OffsetFetch of group '{group_id}'")
            offsets = {}
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code in _COORDINATOR_ERRORS:
                        _raise(p.error_code, None, f"OffsetFetch of group '{group_id}'")
                    if p.error_code == 0 and p.committed_offset >= 0:
                        offsets[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                            p.committed_offset, p.metadata or "", p.committed_leader_epoch)
            return dict(sorted(offsets.items()))

        return await self._at_coordinator("listConsumerGroupOffsets", group_id,
                                          OffsetFetchRequest(group_id=group_id, topics=topics), check, timeout_ms)

    async def alter_consumer_group_offsets(self, group_id: str,
                                           offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                           timeout_ms: int | None = None, *, raise_errors: bool = True
                                           ) -> dict[TopicPartition, KafkaError | None]:
        """Commit ``offsets`` for the group as Kafka's Admin does: OffsetCommit with generation -1 and
        an empty member id, which the coordinator accepts only while the group has no members
        (UNKNOWN_MEMBER_ID otherwise)."""
        by_topic: dict[str, list[Any]] = {}
        partition_cls = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        for tp, value in offsets.items():
            o = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
            by_topic.setdefault(tp.topic, []).append(partition_cls(
                partition_index=tp.partition, committed_offset=o.offset, committed_leader_epoch=o.leader_epoch,
                committed_metadata=o.metadata or ""))
        request = OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])

        def check(response: Any) -> dict[TopicPartition, KafkaError | None]:
            results: dict[TopicPartition, KafkaError | None] = {}
            for topic in response.topics:
                for p in topic.partitions:
                    if p.error_code in _COORDINATOR_ERRORS:
                        _raise(p.error_code, None, f"OffsetCommit of group '{group_id}'")
                    tp = TopicPartition(topic.name, p.partition_index)
                    results[tp] = for_code(p.error_code)(f"group '{group_id}', {tp.topic}-{tp.partition}") \
                        if p.error_code else None
            return results

        results = await self._at_coordinator("alterConsumerGroupOffsets", group_id, request, check, timeout_ms)
        return _first_error_raised(results, raise_errors)

    async def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                                            timeout_ms: int | None = None, *, raise_errors: bool = True
                                            ) -> dict[TopicPartition, KafkaError | None]:
        """Delete the group's committed offsets of ``partitions`` (OffsetDelete). A group-level error
        (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) always raises; partition errors such as
        GROUP_SUBSCRIBED_TO_TOPIC are returned per partition (the first raised unless ``raise_errors=False``)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
        request = OffsetDeleteRequest(group_id=group_id, topics=[
            topic_cls(name=t, partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
            for t, ps in by_topic.items()])

        def check(response: Any) -> dict[TopicPartition, KafkaError | None]:
            _raise(response.error_code, None, f"group '{group_id}'")
            return {TopicPartition(t.name, p.partition_index):
                    for_code(p.error_code)(f"{t.name}-{p.partition_index}") if p.error_code else None
                    for t in response.topics for p in t.partitions}

        results = await self._at_coordinator("deleteConsumerGroupOffsets", group_id, request, check, timeout_ms)
        return _first_error_raised(results, raise_errors)


def _first_error_raised(results: dict[Any, KafkaError | None], raise_errors: bool) -> dict[Any, KafkaError | None]:
    failed = [error for error in results.values() if error is not None]
    if raise_errors and failed:
        raise failed[0]
    return results


def _description(group: Any, coordinator: Coordinator) -> ConsumerGroupDescription:
    consumer = group.protocol_type == "consumer"
    members = [MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 _assigned(m.member_assignment) if consumer else [])
               for m in group.members]
    return ConsumerGroupDescription(group.group_id, group.protocol_type == "", members, group.protocol_data,
                                    group.group_state, coordinator, group.protocol_type)


def _assigned(assignment: bytes | memoryview | None) -> list[TopicPartition]:
    """The partitions of a consumer-protocol assignment (empty bytes while the group rebalances)."""
    if not assignment:
        return []
    decoded = decode_assignment(bytes(assignment))
    return sorted(TopicPartition(t, p) for t, ps in decoded.partitions.items() for p in ps)


__all__ = ["GroupAdmin", "GroupListing", "Coordinator", "MemberDescription", "ConsumerGroupDescription"]

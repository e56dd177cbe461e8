"""Committed offsets: OffsetCommit (8), OffsetFetch (9), OffsetDelete (47), answered by the group coordinator.

OffsetCommit v1 carries a commit timestamp per partition and v2-v4 a retention time; later versions
use the broker's clock and offsets.retention.minutes, as Kafka 2.8. The commit's metadata string
round-trips (clients such as kcat and Spark store their own data in it); an unknown committed leader
epoch is -1. OffsetFetch with null topics (v2+) returns every committed partition of the group.

Version 0 is the old ZooKeeper consumers' API, and Kafka 2.8 keeps it apart: an OffsetCommit v0 writes
each offset to ZooKeeper (/consumers/<group>/offsets/<topic>/<partition>, no metadata kept) and an
OffsetFetch v0 reads it back from there, on any broker, without the group coordinator; the two offset
stores never see each other's commits.

Authorization, as Kafka 2.8: OffsetCommit needs Read on the group and on each topic, OffsetFetch
Describe on the group and on each topic (with null topics the others are left out), OffsetDelete
Delete on the group and Read on each topic (GROUP_AUTHORIZATION_FAILED for the request,
TOPIC_AUTHORIZATION_FAILED per partition).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    GroupAuthorizationFailedError, KafkaError, OffsetMetadataTooLargeError, TopicAuthorizationFailedError,
    UnknownServerError, UnknownTopicOrPartitionError,
)
from ...protocol.messages import OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse
from ..coordinator.group.metadata_manager import wall_ms
from ..coordinator.group.records import OffsetAndMetadata
from ..zk_path import is_valid_path
from .authorization import GROUP, TOPIC

if TYPE_CHECKING:
    from ..coordinator.group.coordinator import GroupCoordinator
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)
_CommitTopic = OffsetCommitResponse.OffsetCommitResponseTopic
_CommitPartition = _CommitTopic.OffsetCommitResponsePartition
_FetchTopic = OffsetFetchResponse.OffsetFetchResponseTopic
_FetchPartition = _FetchTopic.OffsetFetchResponsePartition
_DeleteTopic = OffsetDeleteResponse.OffsetDeleteResponseTopic
_DeletePartition = _DeleteTopic.OffsetDeleteResponsePartition


def _grouped(codes: dict[tuple[str, int], int], order: list[tuple[str, int]], topic_cls: Any, part_cls: Any) -> list:
    topics: dict[str, list] = {}
    for topic, partition in dict.fromkeys(order):  # Kafka answers from a map: a partition named twice, once
        topics.setdefault(topic, []).append(part_cls(partition_index=partition, error_code=codes[(topic, partition)]))
    return [topic_cls(name=name, partitions=parts) for name, parts in topics.items()]


def _wrap_int64(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


class OffsetApis:
    def __init__(self, services: "BrokerServices", coordinator: "GroupCoordinator") -> None:
        self.services = services
        self.coordinator = coordinator
        self.auth = services.auth

    def _require(self, request: "Request", operation: AclOperation) -> None:
        if not self.auth.authorize(request, operation, GROUP, request.body.group_id):
            raise GroupAuthorizationFailedError()

    def _refused_partitions(self, request: "Request", operation: AclOperation, partitions: Any
                            ) -> dict[tuple[str, int], int]:
        """TOPIC_AUTHORIZATION_FAILED for the partitions of topics the request may not ``operation``."""
        allowed = self.auth.filter_authorized(request, operation, TOPIC, (t for t, _ in partitions))
        return {tp: TopicAuthorizationFailedError.code for tp in partitions if tp[0] not in allowed}

    async def offset_commit(self, request: "Request") -> Any:
        body, version = request.body, request.api_version
        self._require(request, AclOperation.READ)
        if version == 0:
            return await self._commit_to_zookeeper(request)
        now = wall_ms()
        retention = body.retention_time_ms if 2 <= version <= 4 else -1
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        order = []
        for topic in body.topics:
            for p in topic.partitions:
                commit_ts = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
                # Kafka's currentTimestamp + retentionTime is a Java long: it wraps rather than overflows.
                expire = _wrap_int64(commit_ts + retention) if retention != -1 else None
                tp = (topic.name, p.partition_index)
                order.append(tp)
                offsets[tp] = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch,
                                                p.committed_metadata or "", commit_ts, expire)
        generation = body.generation_id_or_member_epoch if version >= 1 else -1
        member_id = body.member_id if version >= 1 else ""
        refused = self._refused_partitions(request, AclOperation.READ, offsets)
        refused.update(self._unknown_partitions(tp for tp in offsets if tp not in refused))
        codes = await self.coordinator.commit_offsets(
            body.group_id, member_id or "", body.group_instance_id, generation,
            {tp: o for tp, o in offsets.items() if tp not in refused}) if len(refused) < len(offsets) else {}
        codes.update(refused)
        return OffsetCommitResponse(throttle_time_ms=0, topics=_grouped(codes, order, _CommitTopic,
                                                                        _CommitPartition))

    async def _commit_to_zookeeper(self, request: "Request") -> Any:
        """OffsetCommit v0 (Kafka 2.8's handleOffsetCommitRequest at version 0)."""
        body = request.body
        order = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
        codes = self._refused_partitions(request, AclOperation.READ, order)
        codes.update(self._unknown_partitions(tp for tp in order if tp not in codes))
        max_metadata = self.services.config.get("offset.metadata.max.bytes")
        offsets = {}
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if tp in codes:
                    continue
                if p.committed_metadata is not None and len(p.committed_metadata) > max_metadata:
                    codes[tp] = OffsetMetadataTooLargeError.code
                else:
                    offsets[tp] = p.committed_offset
        codes.update(await self.services.in_executor(self._write_zookeeper_offsets, body.group_id, offsets))
        return OffsetCommitResponse(throttle_time_ms=0, topics=_grouped(codes, order, _CommitTopic,
                                                                        _CommitPartition))

    def _write_zookeeper_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        codes = {}
        for (topic, partition), offset in offsets.items():
            try:
                _check_path(group, topic, partition)
                self.services.zk.set_consumer_offset(group, topic, partition, offset)
                codes[(topic, partition)] = 0
            except Exception as exc:  # Kafka: Errors.forException, UNKNOWN_SERVER_ERROR for a ZooKeeper failure
                log.warning("OffsetCommit v0 of group %s to ZooKeeper failed for %s-%d: %s", group, topic, partition, exc)
                codes[(topic, partition)] = UnknownServerError.code
        return codes

    def _unknown_partitions(self, partitions: Any) -> dict[tuple[str, int], int]:
        """Kafka answers UNKNOWN_TOPIC_OR_PARTITION for partitions the metadata cache does not know."""
        cache = self.services.metadata_cache
        return {tp: UnknownTopicOrPartitionError.code for tp in partitions if cache.partition(*tp) is None}

    def offset_commit_error(self, request: "Request", error_code: int) -> Any:
        order = [(t.name, p.partition_index) for t in request.body.topics for p in t.partitions]
        return OffsetCommitResponse(throttle_time_ms=0, topics=_grouped(
            {tp: error_code for tp in order}, order, _CommitTopic, _CommitPartition))

    def offset_fetch(self, request: "Request") -> Any:
        body, version = request.body, request.api_version
        self._require(request, AclOperation.DESCRIBE)
        if version == 0:
            return self._fetch_from_zookeeper(request)
        requested = None if body.topics is None else \
            [(t.name, p) for t in body.topics for p in t.partition_indexes]
        refused = self._refused_partitions(request, AclOperation.DESCRIBE, requested or [])
        try:
            committed = self.coordinator.fetch_offsets(
                body.group_id, requested if requested is None else [tp for tp in requested if tp not in refused])
        except KafkaError as exc:
            return self._fetch_error(request, exc.code)
        if requested is None and self.auth.enabled:  # every partition: the ones the principal may see
            visible = self.auth.filter_authorized(request, AclOperation.DESCRIBE, TOPIC, (t for t, _ in committed),
                                                  log_denied=False)
            committed = {tp: o for tp, o in committed.items() if tp[0] in visible}
        unstable = self.coordinator.unstable_partitions(body.group_id, list(committed)) \
            if version >= 7 and body.require_stable else set()
        topics: dict[str, list] = {}
        for (topic, partition), o in committed.items():
            if (topic, partition) in unstable:  # UNSTABLE_OFFSET_COMMIT: a transaction's offset is pending
                o = None
            topics.setdefault(topic, []).append(_FetchPartition(
                partition_index=partition, committed_offset=o.offset if o else -1,
                committed_leader_epoch=o.leader_epoch if o else -1, metadata=o.metadata if o else "",
                error_code=88 if (topic, partition) in unstable else 0))
        for topic, partition in refused:  # OffsetFetchResponse.UNAUTHORIZED_PARTITION
            topics.setdefault(topic, []).append(_FetchPartition(
                partition_index=partition, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                error_code=TopicAuthorizationFailedError.code))
        return OffsetFetchResponse(throttle_time_ms=0, error_code=0,
                                   topics=[_FetchTopic(name=n, partitions=p) for n, p in topics.items()])

    async def _fetch_from_zookeeper(self, request: "Request") -> Any:
        """OffsetFetch v0 (Kafka 2.8's handleOffsetFetchRequest at version 0): a partition the cluster does not
        know, or without an offset in ZooKeeper, is OffsetFetchResponse.UNKNOWN_PARTITION (offset -1, error 3)."""
        body = request.body
        cache = self.services.metadata_cache
        requested = [(t.name, p) for t in body.topics for p in t.partition_indexes]
        found = {tp: (-1, code) for tp, code in self._refused_partitions(request, AclOperation.DESCRIBE,
                                                                        requested).items()}
        known = [tp for tp in requested if tp not in found and cache.partition(*tp) is not None]
        found.update(await self.services.in_executor(self._read_zookeeper_offsets, body.group_id, known))
        found.update({tp: (-1, UnknownTopicOrPartitionError.code) for tp in requested if tp not in found})
        topics: dict[str, list] = {}
        for t, p in dict.fromkeys(requested):  # a partition named twice is answered once (Kafka: from a map)
            offset, code = found.get((t, p), (-1, 0))
            topics.setdefault(t, []).append(_FetchPartition(
                partition_index=p, committed_offset=offset, metadata="", error_code=code))
        return OffsetFetchResponse(throttle_time_ms=0, topics=[_FetchTopic(name=n, partitions=p)
                                                               for n, p in topics.items()])

    def _read_zookeeper_offsets(self, group: str, partitions: list[tuple[str, int]]
                                ) -> dict[tuple[str, int], tuple[int, int]]:
        found = {}
        for topic, partition in partitions:
            try:
                _check_path(group, topic, partition)
                offset = self.services.zk.get_consumer_offset(group, topic, partition)
                found[(topic, partition)] = (-1, UnknownTopicOrPartitionError.code) if offset is None else (offset, 0)
            except Exception as exc:  # Kafka answers the exception's error code for the partition
                log.warning("OffsetFetch v0 of group %s from ZooKeeper failed for %s-%d: %s", group, topic, partition, exc)
                found[(topic, partition)] = (-1, UnknownServerError.code)
        return found

    def _fetch_error(self, request: "Request", error_code: int) -> Any:
        """v2+ have a top-level error; v0-1 repeat it on each requested partition."""
        body = request.body
        if request.api_version >= 2:
            return OffsetFetchResponse(throttle_time_ms=0, error_code=error_code, topics=[])
        topics = [_FetchTopic(name=t.name, partitions=[
            _FetchPartition(partition_index=p, committed_offset=-1, metadata="", error_code=error_code)
            for p in t.partition_indexes]) for t in body.topics or []]
        return OffsetFetchResponse(throttle_time_ms=0, topics=topics)

    async def offset_delete(self, request: "Request") -> Any:
        body = request.body
        self._require(request, AclOperation.DELETE)
        order = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
        refused = self._refused_partitions(request, AclOperation.READ, order)
        refused.update(self._unknown_partitions(tp for tp in order if tp not in refused))
        code, codes = await self.coordinator.delete_offsets(body.group_id, [tp for tp in order if tp not in refused])
        codes.update(refused)
        if code:
            return OffsetDeleteResponse(error_code=code, throttle_time_ms=0, topics=[])
        return OffsetDeleteResponse(error_code=0, throttle_time_ms=0,
                                    topics=_grouped(codes, order, _DeleteTopic, _DeletePartition))

    def offset_delete_error(self, request: "Request", error_code: int) -> Any:
        return OffsetDeleteResponse(error_code=error_code, throttle_time_ms=0, topics=[])


def register(apis: "KafkaApis", services: "BrokerServices") -> OffsetApis:
    api = OffsetApis(services, services.group_coordinator)
    apis.register(ApiKey.OFFSET_COMMIT, api.offset_commit, api.offset_commit_error)
    apis.register(ApiKey.OFFSET_FETCH, api.offset_fetch, api._fetch_error)
    apis.register(ApiKey.OFFSET_DELETE, api.offset_delete, api.offset_delete_error)
    return api


def _check_path(group: str, topic: str, partition: int) -> None:
    """Kafka's ZooKeeper client refuses an illegal path (a group named ""): UNKNOWN_SERVER_ERROR there."""
    path = f"/consumers/{group}/offsets/{topic}/{partition}"
    if not is_valid_path(path):
        raise ValueError(f"invalid ZooKeeper path {path!r}")

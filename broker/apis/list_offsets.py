"""ListOffsets (2): earliest, latest, or the first offset at or after a timestamp (time index).

As Kafka 2.8: consumers (replica_id -1) see offsets below the high watermark only, so "latest" is
the high watermark, or the last stable offset under read_committed (isolation_level 1, v2+); a
follower or debug client (replica_id >= 0 or -2) sees the log end. v0 answers with the legacy list
of offsets.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError, KafkaError, TopicAuthorizationFailedError, UnknownServerError,
)
from ...protocol.messages import ListOffsetsResponse
from .authorization import TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from ..partition import Partition
    from .services import BrokerServices

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
CONSUMER_REPLICA_ID = -1

_TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
_PartitionResponse = _TopicResponse.ListOffsetsPartitionResponse


class ListOffsetsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.auth = services.auth

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        # Describe on each topic (Kafka 2.8); the others are answered TOPIC_AUTHORIZATION_FAILED.
        described = self.auth.filter_authorized(request, AclOperation.DESCRIBE, TOPIC, (t.name for t in body.topics))
        # Kafka 2.8 (v1+): a partition named twice is INVALID_REQUEST, every time it is named
        seen = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
        topics = []
        for t in body.topics:
            if t.name in described:
                parts = [_answer(version, p.partition_index, InvalidRequestError.code, -1, -1, -1)
                         if version >= 1 and seen[(t.name, p.partition_index)] > 1
                         else self._offset(body, version, t.name, p) for p in t.partitions]
            else:
                parts = [_answer(version, p.partition_index, TopicAuthorizationFailedError.code, -1, -1, -1)
                         for p in t.partitions]
            topics.append(_TopicResponse(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=topics)

    def _offset(self, body: Any, version: int, topic: str, p: Any) -> Any:
        try:
            isolation_level = getattr(body, "isolation_level", 0)
            if body.replica_id == CONSUMER_REPLICA_ID and isolation_level not in (0, 1):
                # Kafka's IsolationLevel.forId throws, inside the partition's try: that partition's error
                raise UnknownServerError(f"unknown isolation level {isolation_level}")
            partition = self.replica_manager.leader_partition(topic, p.partition_index, p.current_leader_epoch)
            if version == 0:
                return _PartitionResponse(partition_index=p.partition_index, error_code=0, old_style_offsets=_legacy(
                    partition, p.timestamp, p.max_num_offsets, body.replica_id == CONSUMER_REPLICA_ID))
            timestamp, offset, epoch = _lookup(partition, p.timestamp, _last_fetchable(
                partition, body.replica_id, isolation_level))
            return _answer(version, p.partition_index, 0, timestamp, offset, epoch)
        except KafkaError as exc:
            return _answer(version, p.partition_index, exc.code, -1, -1, -1)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return ListOffsetsResponse(throttle_time_ms=0, topics=[
            _TopicResponse(name=t.name, partitions=[
                _answer(request.api_version, p.partition_index, error_code, -1, -1, -1) for p in t.partitions])
            for t in request.body.topics])


def _last_fetchable(partition: "Partition", replica_id: int, isolation_level: int) -> int:
    """Kafka's lastFetchableOffset: the LSO (read_committed) or HW for consumers, else the log end."""
    if replica_id != CONSUMER_REPLICA_ID:
        return partition.log.log_end_offset
    return partition.last_stable_offset if isolation_level == 1 else partition.high_watermark


def _legacy(partition: "Partition", timestamp: int, max_num_offsets: int, from_consumer: bool) -> list[int]:
    """v0: Kafka 2.8's legacyFetchOffsetsBefore, from the segments' base offsets and file modification times
    (plus the log end, now, when the last segment holds data), newest first, at most ``max_num_offsets``; a
    consumer sees nothing past the high watermark."""
    log = partition.log
    segments = log.segments
    pairs = [(max(s.base_offset, log.log_start_offset), s.last_modified_ms) for s in segments]
    if segments and segments[-1].size > 0:
        pairs.append((log.log_end_offset, int(time.time() * 1000)))
    if timestamp == LATEST_TIMESTAMP:
        start = len(pairs) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = len(pairs) - 1
        while start >= 0 and pairs[start][1] > timestamp:
            start -= 1
    offsets = sorted((pairs[start - j][0] for j in range(min(max_num_offsets, start + 1))), reverse=True)
    if from_consumer and any(o > partition.high_watermark for o in offsets):
        high_watermark = partition.high_watermark
        offsets = [high_watermark, *itertools.dropwhile(lambda o: o > high_watermark, offsets)]
    return offsets


def _lookup(partition: "Partition", timestamp: int, last_fetchable: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) for a target timestamp; offset -1 when none qualifies."""
    log = partition.log
    cache = log.leader_epoch_cache
    if timestamp == LATEST_TIMESTAMP:
        return -1, last_fetchable, log.latest_epoch
    if timestamp == EARLIEST_TIMESTAMP:
        offset = log.log_start_offset
        epoch = cache.epoch_for_offset(offset)
        return -1, offset, -1 if epoch is None else epoch
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found[1] >= last_fetchable:
        return -1, -1, -1
    epoch = cache.epoch_for_offset(found[1])
    return found[0], found[1], -1 if epoch is None else epoch


def _answer(version: int, index: int, error: int, timestamp: int, offset: int, epoch: int) -> Any:
    if version == 0:
        return _PartitionResponse(partition_index=index, error_code=error,
                                  old_style_offsets=[offset] if offset >= 0 else [])
    answer = _PartitionResponse(partition_index=index, error_code=error, timestamp=timestamp, offset=offset)
    if version >= 4:  # as Kafka 2.8: leader_epoch exists from v4 on; setting it earlier fails the encoding
        answer.leader_epoch = epoch
    return answer


def register(apis: "KafkaApis", services: "BrokerServices") -> ListOffsetsApi:
    api = ListOffsetsApi(services)
    apis.register(ApiKey.LIST_OFFSETS, api.handle, api.error_response)
    return api

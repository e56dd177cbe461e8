"""OffsetForLeaderEpoch (23): the end offset of a leader epoch, from the leader's epoch cache.

Clients (librdkafka, kafka-python) validate their position with it after a leader change (KIP-320);
followers will use it to truncate safely after failover. Answered by the leader only, as Kafka does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import KafkaError, TopicAuthorizationFailedError  # type: ignore[attr-defined]
from ...protocol.messages import OffsetForLeaderEpochResponse
from .authorization import CLUSTER, TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResult = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_EpochEndOffset = _TopicResult.EpochEndOffset


class OffsetForLeaderEpochApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.auth = services.auth

    def handle(self, request: "Request") -> Any:
        allowed, refused = self._authorized(request)
        topics = [_TopicResult(topic=t.topic, partitions=[
            _EpochEndOffset(error_code=TopicAuthorizationFailedError.code, partition=p.partition)
            for p in t.partitions]) for t in refused]
        for t in allowed:
            parts = []
            for p in t.partitions:
                try:
                    partition = self.replica_manager.leader_partition(t.topic, p.partition, p.current_leader_epoch)
                    epoch, end_offset = partition.end_offset_for_epoch(p.leader_epoch)
                    parts.append(_EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=epoch,
                                                 end_offset=end_offset))
                except KafkaError as exc:
                    parts.append(_EpochEndOffset(error_code=exc.code, partition=p.partition))
            topics.append(_TopicResult(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)

    def _authorized(self, request: "Request") -> tuple[list[Any], list[Any]]:
        """(allowed, refused) topics. Kafka 2.8: ClusterAction (followers) allows every topic, else
        Describe on the topic (KIP-320 clients)."""
        topics = request.body.topics
        if self.auth.authorize(request, AclOperation.CLUSTER_ACTION, CLUSTER, log_denied=False):
            return topics, []
        return self.auth.partition_authorized(request, AclOperation.DESCRIBE, TOPIC, topics, lambda t: t.topic)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[
            _TopicResult(topic=t.topic, partitions=[_EpochEndOffset(error_code=error_code, partition=p.partition)
                                                    for p in t.partitions]) for t in request.body.topics])


def register(apis: "KafkaApis", services: "BrokerServices") -> OffsetForLeaderEpochApi:
    api = OffsetForLeaderEpochApi(services)
    apis.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, api.handle, api.error_response)
    return api

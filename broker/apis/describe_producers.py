"""DescribeProducers (61, v0, KIP-664): the active producers of partitions this broker hosts.

As Kafka 2.8's KafkaApis.handleDescribeProducersRequest: a topic the cluster does not know is
UNKNOWN_TOPIC_OR_PARTITION for each partition asked; a partition this broker does not host is
NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the topic has no such partition). A hosted
partition answers from its local log's producer state whether this broker leads it or follows (2.8's
Partition.activeProducerState reads the local log; clients ask the leader): per producer id its epoch,
last sequence, last timestamp, coordinator epoch and the first offset of its open transaction (-1).
Describing a topic's producers needs Read on it (TOPIC_AUTHORIZATION_FAILED for each partition asked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    KafkaError, TopicAuthorizationFailedError, UnknownTopicOrPartitionError,
)
from ...protocol.messages import DescribeProducersResponse
from ...protocol.error_fields import set_error_codes
from .authorization import TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Topic = DescribeProducersResponse.TopicResponse
_Partition = _Topic.PartitionResponse
_Producer = _Partition.ProducerState


class DescribeProducersApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.cache = services.metadata_cache
        self.replica_manager = services.replica_manager
        self.auth = services.auth

    def handle(self, request: "Request") -> Any:
        topics = []
        readable = self.auth.filter_authorized(request, AclOperation.READ, TOPIC, (t.name for t in request.body.topics))
        for topic in request.body.topics:
            known = self.cache.contains_topic(topic.name)
            error = TopicAuthorizationFailedError.code if topic.name not in readable else \
                None if known else UnknownTopicOrPartitionError.code
            topics.append(_Topic(name=topic.name, partitions=[
                self._partition(topic.name, index) if error is None else _Partition(partition_index=index,
                                                                                    error_code=error)
                for index in topic.partition_indexes]))
        return DescribeProducersResponse(throttle_time_ms=0, topics=topics)

    def _partition(self, topic: str, index: int) -> Any:
        try:
            partition = self.replica_manager.partition_or_error(topic, index)
        except KafkaError as exc:
            return _Partition(partition_index=index, error_code=exc.code)
        return _Partition(partition_index=index, error_code=0, active_producers=[
            _Producer(producer_id=p.producer_id, producer_epoch=p.epoch, last_sequence=p.last_seq,
                      last_timestamp=p.last_timestamp, coordinator_epoch=p.coordinator_epoch,
                      current_txn_start_offset=-1 if p.current_txn_first_offset is None else p.current_txn_first_offset)
            for p in partition.log.active_producers()])

    def error_response(self, request: "Request", error_code: int) -> Any:
        return set_error_codes(DescribeProducersResponse(throttle_time_ms=0, topics=[
            _Topic(name=t.name, partitions=[_Partition(partition_index=i) for i in t.partition_indexes])
            for t in request.body.topics]), error_code)


def register(apis: "KafkaApis", services: "BrokerServices") -> DescribeProducersApi:
    api = DescribeProducersApi(services)
    apis.register(ApiKey.DESCRIBE_PRODUCERS, api.handle, api.error_response)
    return api

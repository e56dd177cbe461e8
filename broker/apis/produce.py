"""Produce (0): validate each partition's batch, append to the local leaders, answer per partition.

The batch is checked as Kafka checks a client's batch (one batch per partition, magic 2, CRC-32C,
counts; zstd only from v7, KIP-110) without decoding its records, copied once into a ``bytearray``
(the frame is read-only) and appended. acks=0 is never answered; acks=-1 may wait in the purgatory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRecordError, InvalidTopicError, KafkaError, UnsupportedCompressionTypeError,
)
from ...protocol.messages import ProduceResponse
from ...protocol.records import Compression, read_produce_batch
from ..metadata_cache import INTERNAL_TOPICS

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
_ZSTD = int(Compression.ZSTD)


class ProduceApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        entries: dict[tuple[str, int], Any] = {}
        for topic in body.topic_data:
            internal = topic.name in INTERNAL_TOPICS
            for part in topic.partition_data:
                entries[(topic.name, part.index)] = _validated(part.records, version, internal)
        result = self.replica_manager.append_records(body.acks, body.timeout_ms, entries)
        if body.acks == 0:
            return None  # never answered (COMPAT G7); an error here closes nothing either
        if isinstance(result, dict):
            return _response(body, result)
        return _respond_when_done(body, result)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return ProduceResponse(responses=[
            _TopicResponse(name=t.name, partition_responses=[
                _PartitionResponse(index=p.index, error_code=error_code, base_offset=-1)
                for p in t.partition_data]) for t in request.body.topic_data], throttle_time_ms=0)


def _validated(records: Any, version: int, internal: bool) -> Any:
    """The batch copied into a bytearray, or the KafkaError explaining why it was refused."""
    if records is None or len(records) == 0:
        return InvalidRecordError("a produce request must carry a record batch")
    if internal:
        return InvalidTopicError("clients may not write to internal topics")
    try:
        batch = read_produce_batch(records)
        if batch.compression == _ZSTD and version < 7:
            raise UnsupportedCompressionTypeError("zstd needs Produce v7 or later")
    except KafkaError as exc:
        return exc
    return bytearray(records)


async def _respond_when_done(body: Any, pending: Any) -> Any:
    return _response(body, await pending)


def _response(body: Any, results: dict) -> Any:
    topics = []
    for topic in body.topic_data:
        parts = []
        for part in topic.partition_data:
            r = results[(topic.name, part.index)]
            parts.append(_PartitionResponse(index=part.index, error_code=r.error_code, base_offset=r.base_offset,
                                            log_append_time_ms=r.log_append_time,
                                            log_start_offset=r.log_start_offset, error_message=r.error_message))
        topics.append(_TopicResponse(name=topic.name, partition_responses=parts))
    return ProduceResponse(responses=topics, throttle_time_ms=0)


def register(apis: "KafkaApis", services: "BrokerServices") -> ProduceApi:
    api = ProduceApi(services)
    apis.register(ApiKey.PRODUCE, api.handle, api.error_response)
    return api

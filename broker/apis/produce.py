"""Produce (0): validate each partition's batch, append to the local leaders, answer per partition.

The batch is checked as Kafka checks a client's batch (one batch per partition, magic 2, CRC-32C,
counts; zstd only from v7, KIP-110) without decoding its records, copied once into a ``bytearray``
(the frame is read-only) and appended. acks=0 is never answered; acks=-1 may wait in the purgatory.

Produce v0-2 may carry a legacy message set (magic 0/1; Kafka checks the magic only from v3): it is
converted to one v2 batch first, as a Kafka 2.8 leader with its default ``log.message.format.version``
does (``protocol/records/legacy_conversion.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRecordError, InvalidTopicError, KafkaError, UnsupportedCompressionTypeError,
)
from ...protocol.messages import ProduceResponse
from ...protocol.records import Compression, read_produce_batch
from ...protocol.records.legacy_conversion import convert_produced_message_set, is_legacy_message_set
from ..metadata_cache import INTERNAL_TOPICS

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
_ZSTD = int(Compression.ZSTD)
MAX_LEGACY_PRODUCE_VERSION = 2  # Kafka's ProduceRequest.validateRecords requires magic 2 from v3


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
                entries[(topic.name, part.index)] = _validated(part.records, version, internal,
                                                               self._max_message_bytes(topic.name, part.index))
        result = self.replica_manager.append_records(body.acks, body.timeout_ms, entries)
        if body.acks == 0:
            return None  # never answered (COMPAT G7); an error here closes nothing either
        if isinstance(result, dict):
            return _response(body, result)
        return _respond_when_done(body, result)

    def _max_message_bytes(self, topic: str, partition: int) -> int | None:
        hosted = self.replica_manager.online_partition(topic, partition)
        return hosted.log.config.max_message_bytes if hosted is not None else None

    def error_response(self, request: "Request", error_code: int) -> Any:
        return ProduceResponse(responses=[
            _TopicResponse(name=t.name, partition_responses=[
                _PartitionResponse(index=p.index, error_code=error_code, base_offset=-1)
                for p in t.partition_data]) for t in request.body.topic_data], throttle_time_ms=0)


def _validated(records: Any, version: int, internal: bool, max_message_bytes: int | None = None) -> Any:
    """The batch copied into a bytearray, or the KafkaError explaining why it was refused."""
    if records is None or len(records) == 0:
        return InvalidRecordError("a produce request must carry a record batch")
    if internal:
        return InvalidTopicError("clients may not write to internal topics")
    try:
        if version <= MAX_LEGACY_PRODUCE_VERSION and is_legacy_message_set(records):
            return bytearray(convert_produced_message_set(records, max_message_bytes=max_message_bytes))
        batch = read_produce_batch(records)
        # Kafka 2.8 refuses zstd only at v3-6 (validateRecords skips v0-2, KIP-110)
        if batch.compression == _ZSTD and 3 <= version < 7:
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

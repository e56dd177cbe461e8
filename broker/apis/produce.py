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
from ...protocol.acl import AclOperation
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRecordError, InvalidTopicError, KafkaError, TopicAuthorizationFailedError, UnknownTopicOrPartitionError,
    TransactionalIdAuthorizationFailedError, UnsupportedCompressionTypeError,
)
from ...protocol.messages import ProduceResponse
from ...protocol.records import Compression, read_produce_batch
from ...protocol.records.legacy_conversion import convert_produced_message_set, is_legacy_message_set
from ...protocol.records.batch import ATTRIBUTES_OFFSET, MAGIC_OFFSET, TRANSACTIONAL_MASK
from ..metadata_cache import INTERNAL_TOPICS
from ..network.request_channel import Response
from .authorization import TOPIC, TRANSACTIONAL_ID

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
_RecordError = _PartitionResponse.BatchIndexAndErrorMessage
_ZSTD = int(Compression.ZSTD)
MAX_LEGACY_PRODUCE_VERSION = 2  # Kafka's ProduceRequest.validateRecords requires magic 2 from v3


class ProduceApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.auth = services.auth
        self.metadata_cache = services.metadata_cache

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        if body.transactional_id is None and any(
                _is_transactional(part.records) for topic in body.topic_data for part in topic.partition_data):
            # Kafka refuses transactional batches without a transactional id, authorizer or not
            raise TransactionalIdAuthorizationFailedError()
        denied = self._unauthorized_topics(request) if self.auth.authorizer is not None else ()
        if version > MAX_LEGACY_PRODUCE_VERSION and any(
                _magic(part.records) not in (2, None) for topic in body.topic_data for part in topic.partition_data):
            # Kafka's ProduceRequest.validateRecords fails the whole request, every partition INVALID_RECORD
            raise InvalidRecordError(f"Produce v{version} requests may only carry record batches of magic 2")
        entries: dict[tuple[str, int], Any] = {}
        for topic in body.topic_data:
            internal = topic.name in INTERNAL_TOPICS
            refused = topic.name in denied
            for part in topic.partition_data:
                # Kafka's order: authorization, the partition in the metadata cache, the records, internal topics
                if refused:
                    entries[(topic.name, part.index)] = TopicAuthorizationFailedError("")
                elif self.metadata_cache.partition(topic.name, part.index) is None:
                    entries[(topic.name, part.index)] = UnknownTopicOrPartitionError("")
                else:
                    entries[(topic.name, part.index)] = _validated(
                        part.records, version, internal, self._max_message_bytes(topic.name, part.index))
        result = self.replica_manager.append_records(body.acks, body.timeout_ms, entries)
        if body.acks == 0:
            # Never answered, as in Kafka; other errors close nothing either. An unauthorized topic
            # closes the connection after the rest was appended, as Kafka answers an acks=0 error.
            return Response.close(request, "acks=0 produce to unauthorized topics") if denied else None
        if isinstance(result, dict):
            return _response(body, result)
        return result.then(lambda results: _response(body, results))

    def _max_message_bytes(self, topic: str, partition: int) -> int | None:
        hosted = self.replica_manager.online_partition(topic, partition)
        return hosted.log.config.max_message_bytes if hosted is not None else None

    def _unauthorized_topics(self, request: "Request") -> set[str]:
        """Kafka's checks: transactional batches need Write on the request's transactional id (else
        the whole request fails), each topic Write on it."""
        body = request.body
        if any(_is_transactional(part.records) for topic in body.topic_data for part in topic.partition_data):
            if body.transactional_id is None or not self.auth.authorize(
                    request, AclOperation.WRITE, TRANSACTIONAL_ID, body.transactional_id):
                raise TransactionalIdAuthorizationFailedError()
        names = [topic.name for topic in body.topic_data]
        return set(names) - self.auth.filter_authorized(request, AclOperation.WRITE, TOPIC, names)

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


def _magic(records: Any) -> int | None:
    return records[MAGIC_OFFSET] if records is not None and len(records) > MAGIC_OFFSET else None


def _is_transactional(records: Any) -> bool:
    """RequestUtils.hasTransactionalRecords for one partition's batch, from its attributes alone (a
    malformed batch is refused later)."""
    return records is not None and len(records) > ATTRIBUTES_OFFSET + 1 and records[MAGIC_OFFSET] == 2 and \
        bool(records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK)


def _response(body: Any, results: dict) -> Any:
    """One answer per distinct partition, grouped by topic (Kafka answers from a map: a partition named twice
    is answered once, a topic without partitions not at all)."""
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), r in results.items():
        by_topic.setdefault(topic, []).append(_PartitionResponse(
            index=index, error_code=r.error_code, base_offset=r.base_offset, log_append_time_ms=r.log_append_time,
            log_start_offset=r.log_start_offset, error_message=r.error_message,
            record_errors=[_RecordError(batch_index=i, batch_index_error_message=m) for i, m in r.record_errors or ()]))
    return ProduceResponse(responses=[_TopicResponse(name=name, partition_responses=parts)
                                      for name, parts in by_topic.items()], throttle_time_ms=0)


def register(apis: "KafkaApis", services: "BrokerServices") -> ProduceApi:
    api = ProduceApi(services)
    apis.register(ApiKey.PRODUCE, api.handle, api.error_response)
    return api

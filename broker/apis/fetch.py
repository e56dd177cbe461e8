"""Fetch (1): whole batches from local leaders, parked in the purgatory until min_bytes or max_wait.

Fetch sessions (KIP-227, ``broker/fetch_session.py``) decide which partitions are read and which are
answered: a sessionless or full fetch answers every requested partition (kafka-python discards a full
answer whose partitions differ from the request's), an incremental
one reads the whole session and answers only the partitions that changed. Session errors
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) are top-level, with no partitions.

zstd needs Fetch v10 (KIP-110). As Kafka 2.8's KafkaApis.maybeConvertFetchedData, a consumer fetching
below v10 from a topic whose ``compression.type`` is zstd gets UNSUPPORTED_COMPRESSION_TYPE for that
partition. Batches a producer compressed with zstd (``compression.type=producer``) are never handed to
such a consumer either: it gets the batches before the first zstd one, or the same error when that one
comes first. Kafka 2.8 does this only for v0-3 (down-conversion cannot convert zstd) and sends v4-9 the
zstd batch, which their clients cannot decompress.

Fetch v0-3 get their records down-converted to magic 0 or 1 (``fetch_down_conversion.py``).

A follower's fetch records the bytes of leader-throttled partitions against the leader's replication
quota once the response is built (Kafka's sizeOfThrottledPartitions / quotas.leader.record).

A consumer's fetch meets the client quotas (broker/quota/) as in Kafka 2.8's handleFetchRequest: its
max_bytes is capped at what the fetch quota allows in one quota window; once read, the response's encoded
size (computed from the session's answer by ``fetch_response.response_size``, without encoding it) is
recorded against the fetch quota and its handler time against the request quota, and if either is
violated the answer is empty (no partitions, and the fetch session, if any, is left as it was, so the
records come in a later fetch) with the throttle time, while the connection is muted for that long.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Iterable

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    FetchSessionIdNotFoundError, InvalidFetchSessionEpochError, TopicAuthorizationFailedError, UnknownServerError,
    UnsupportedCompressionTypeError,
)
from ...protocol.messages import FetchResponse
from ...protocol.records import Compression
from ...protocol.records.batch import ATTRIBUTES_OFFSET, CODEC_MASK
from ..log.segment import walk_headers
from ..delayed_ops import FetchSpec
from ..fetch_session import FetchAnswer, FetchContext, FetchManager, FetchSessionCache
from .fetch_down_conversion import FetchDownConverter
from .fetch_response import fetch_response, response_size
from ..replica_manager import FetchParams, FetchPartitionResult
from ..replica_selector import ClientMetadata
from .authorization import CLUSTER, TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

ZSTD_MIN_FETCH_VERSION = 10


class FetchApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.auth = services.auth
        self.fetch_max_bytes = services.config.get("fetch.max.bytes")
        self.fetch_manager = FetchManager(FetchSessionCache(
            services.config.get("max.incremental.fetch.session.cache.slots")), changes=self.replica_manager)
        self.replica_manager.session_watch_keys = self.fetch_manager.cache.watch_keys_of
        self.client_quotas = getattr(services, "client_quotas", None)  # broker.quota.client_quotas.ClientQuotas, or None
        self.down_converter = FetchDownConverter(self.replica_manager.log_manager)  # Fetch v0-3

    def handle(self, request: "Request") -> Any:
        """One pass: the session's context, the authorization, the read (or a park in the purgatory), then
        the response through the session (``_respond``, now or when the parked fetch completes)."""
        body = request.body
        params = self._fetch_params(request)
        # Before v7 the session fields keep their defaults (0, -1): sessionless, as Kafka.
        context = self.fetch_manager.new_context(
            body.session_id, body.session_epoch,
            [FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                       p.log_start_offset, p.last_fetched_epoch) for t in body.topics for p in t.partitions],
            [(t.topic, p) for t in body.forgotten_topics_data for p in t.partitions],
            is_follower=body.replica_id >= 0)
        params.previous_fetch_ms = context.previous_fetch_ms
        if self.auth.authorizer is not None:
            context.refuse(self._refused(request, context.specs()))
        if body.isolation_level not in (0, 1) and self._any_known(context.specs()):
            # Kafka's IsolationLevel.forId fails the request only once it reads a partition (none known: the
            # partitions are answered as usual, a session error as such).
            raise UnknownServerError(f"unknown isolation level {body.isolation_level}")
        result = self.replica_manager.fetch_messages(params, context.specs(), context.to_read, context.watch_keys,
                                                     context.spec_of)
        if isinstance(result, dict):
            return self._respond(request, context, result)
        return result.then(partial(self._respond, request, context))

    def _fetch_params(self, request: "Request") -> FetchParams:
        body = request.body
        # Kafka 2.8's handleFetch: the broker's fetch.max.bytes caps the request's, and min_bytes never
        # exceeds the cap. A negative max_bytes is kept: partitions that have data then fail alone.
        max_bytes = min(body.max_bytes, self.fetch_max_bytes)
        min_bytes = min(body.min_bytes, max_bytes)
        quotas = self.client_quotas
        if quotas is not None and body.replica_id < 0 and quotas.fetch.quotas_enabled:
            # More than one quota window's worth would be throttled for certain (Kafka's maxQuotaWindowBytes).
            window_bytes = quotas.fetch_max_bytes(request)
            if window_bytes < max_bytes:
                max_bytes = int(window_bytes)
                min_bytes = min(min_bytes, max_bytes)
        # KIP-392: a Fetch v11+ consumer may be sent to a follower, and a follower may serve it
        client = ClientMetadata(body.rack_id or "", request.listener) \
            if request.api_version >= 11 and body.replica_id < 0 else None
        return FetchParams(body.replica_id, body.max_wait_ms, min_bytes, max_bytes,
                           body.isolation_level, hard_max_bytes_limit=request.api_version <= 2, client=client)

    def _any_known(self, specs: Iterable[FetchSpec]) -> bool:
        metadata = self.replica_manager.metadata_cache
        return any(metadata.partition(s.topic, s.partition) is not None for s in specs)

    def _refused(self, request: "Request", specs: Iterable[FetchSpec]) -> dict:
        """Kafka's checks: a follower needs ClusterAction (else every partition is refused), a consumer
        Read on each topic. The refused partitions are answered TOPIC_AUTHORIZATION_FAILED, unread."""
        if request.body.replica_id >= 0:
            allowed = self.auth.authorize(request, AclOperation.CLUSTER_ACTION, CLUSTER)
            return {} if allowed else _unauthorized(specs)
        specs = list(specs)
        readable = self.auth.filter_authorized(request, AclOperation.READ, TOPIC, [s.topic for s in specs])
        return _unauthorized(s for s in specs if s.topic not in readable)

    def _respond(self, request: "Request", context: FetchContext, results: dict) -> Any:
        """The response body, or an awaitable of it (Fetch v0-3 down-conversion, done off the loop)."""
        body, version = request.body, request.api_version
        if body.replica_id >= 0:
            response = fetch_response(body, context.answer(results))
            self._record_leader_throttled_bytes(response)
            return response
        if self._throttled(request, context, results):
            return fetch_response(body, context.throttled_answer())  # KafkaApis puts in the throttle time
        response = fetch_response(body, context.answer(results))
        if version < ZSTD_MIN_FETCH_VERSION:
            for topic in response.responses:
                zstd_topic = self._topic_compression(topic.topic) == "zstd"
                for data in topic.partitions:
                    _refuse_zstd(data, zstd_topic)
        if self.down_converter.has_work(response, version):  # magic 0/1 for Fetch v0-3, after the quota as Kafka
            return self.down_converter.convert_off_loop(response, version, body)
        return response

    def _throttled(self, request: "Request", context: FetchContext, results: dict) -> bool:
        """Kafka's fetch quota check: the size of the response the session would send is recorded, and the
        answer is throttled if the quota is now violated."""
        quotas = self.client_quotas
        if quotas is None or not quotas.fetch_enabled:
            return False
        size = response_size(request.body, context.preview(results), request.api_version)
        return bool(quotas.fetch_throttle_time(request, size))

    def _record_leader_throttled_bytes(self, response: Any) -> None:
        quota = self.replica_manager.replication_quotas.leader
        size = sum(len(data.records or b"") for topic in response.responses for data in topic.partitions
                   if quota.is_throttled((topic.topic, data.partition_index)))
        quota.record(size)

    def _topic_compression(self, topic: str) -> str:
        """The topic's compression.type: its override, else the broker's default (``producer``)."""
        log_manager = self.replica_manager.log_manager
        value = log_manager.topic_configs.get(topic, {}).get("compression.type")
        if value is None:
            value = log_manager.topic_defaults.get("compression.type", "producer")
        return str(value).strip().lower()

    def error_response(self, request: "Request", error_code: int) -> Any:
        """Kafka 2.8's FetchRequest.getErrorResponse: the error at the top (v7+) and on every partition the
        request names (once each, as in its map; no entry for a topic without partitions), the request's
        session id."""
        body = request.body
        if error_code in (FetchSessionIdNotFoundError.code, InvalidFetchSessionEpochError.code) or body is None:
            return FetchResponse(throttle_time_ms=0, error_code=error_code, session_id=0, responses=[])
        named = dict.fromkeys((t.topic, p.partition) for t in body.topics for p in t.partitions)
        return fetch_response(body, FetchAnswer(error_code, body.session_id, [
            (key, FetchPartitionResult(error_code)) for key in named]))


def _unauthorized(specs: Iterable[FetchSpec]) -> dict[tuple[str, int], FetchPartitionResult]:
    """TOPIC_AUTHORIZATION_FAILED with offsets -1 and no records, as Kafka's errorResponse."""
    return {(s.topic, s.partition): FetchPartitionResult(TopicAuthorizationFailedError.code) for s in specs}


def _refuse_zstd(data: Any, zstd_topic: bool) -> None:
    """A consumer below Fetch v10 gets no zstd batch (see the module doc)."""
    if data.error_code:
        return
    keep = None if zstd_topic else _before_first_zstd_batch(data.records)
    if keep is None:
        data.error_code = UnsupportedCompressionTypeError.code
        data.high_watermark = data.last_stable_offset = data.log_start_offset = -1  # Kafka's partitionResponse
        data.aborted_transactions = None
        data.records = b""
    else:
        data.records = keep


def _before_first_zstd_batch(records: Any) -> Any:
    """``records`` up to the first zstd batch; None when the first batch is one."""
    if not records:
        return records
    view = memoryview(records)
    for header in walk_headers(view):
        at = header.position + ATTRIBUTES_OFFSET
        if int.from_bytes(view[at:at + 2], "big") & CODEC_MASK == Compression.ZSTD:
            return view[:header.position] if header.position else None
    return records


def register(apis: "KafkaApis", services: "BrokerServices") -> FetchApi:
    api = FetchApi(services)
    apis.register(ApiKey.FETCH, api.handle, api.error_response)
    return api

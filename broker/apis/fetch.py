"""Fetch (1): whole batches from local leaders, parked in the purgatory until min_bytes or max_wait.

Fetch sessions (KIP-227, ``broker/fetch_session.py``) decide which partitions are read and which are
answered: a sessionless or full fetch answers every requested partition (COMPAT G9), an incremental
one reads the whole session and answers only the partitions that changed. Session errors
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) are top-level, with no partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    FetchSessionIdNotFoundError, InvalidFetchSessionEpochError,
)
from ...protocol.messages import FetchResponse
from ..delayed_ops import FetchSpec
from ..fetch_session import FetchAnswer, FetchContext, FetchManager, FetchSessionCache
from ..replica_manager import FetchParams

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResponse = FetchResponse.FetchableTopicResponse
_PartitionData = _TopicResponse.PartitionData
_DivergingEpoch = _PartitionData.EpochEndOffset
_AbortedTransaction = _PartitionData.AbortedTransaction


class FetchApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.fetch_manager = FetchManager(FetchSessionCache(
            services.config.get("max.incremental.fetch.session.cache.slots")))

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        params = FetchParams(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes,
                             body.isolation_level, hard_max_bytes_limit=version <= 2)
        specs = [FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                           p.log_start_offset, p.last_fetched_epoch)
                 for t in body.topics for p in t.partitions]
        forgotten = [(t.topic, p) for t in body.forgotten_topics_data for p in t.partitions]
        # Before v7 the session fields keep their defaults (0, -1): sessionless, as Kafka.
        context = self.fetch_manager.new_context(body.session_id, body.session_epoch, specs, forgotten,
                                                 is_follower=body.replica_id >= 0)
        result = self.replica_manager.fetch_messages(params, context.specs())
        if isinstance(result, dict):
            return _response(body, context, result)
        return _respond_when_done(body, context, result)

    def error_response(self, request: "Request", error_code: int) -> Any:
        body = request.body
        if error_code in (FetchSessionIdNotFoundError.code, InvalidFetchSessionEpochError.code) or body is None:
            return FetchResponse(throttle_time_ms=0, error_code=error_code, session_id=0, responses=[])
        return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
            _TopicResponse(topic=t.topic, partitions=[
                _PartitionData(partition_index=p.partition, error_code=error_code, high_watermark=-1,
                               records=b"") for p in t.partitions]) for t in body.topics])


async def _respond_when_done(body: Any, context: FetchContext, pending: Any) -> Any:
    return _response(body, context, await pending)


def _response(body: Any, context: FetchContext, results: dict) -> Any:
    answer: FetchAnswer = context.answer(results)
    read_committed = body.isolation_level == 1
    topics: list[Any] = []
    for (topic, partition), r in answer.partitions:
        # Consecutive partitions of one topic share an entry, as Kafka's batchByTopic.
        if not topics or topics[-1].topic != topic:
            topics.append(_TopicResponse(topic=topic, partitions=[]))
        aborted = None  # read_uncommitted: null, as Kafka
        if read_committed:
            aborted = [_AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
                       for t in r.aborted_transactions or ()]
        data = _PartitionData(
            partition_index=partition, error_code=r.error_code, high_watermark=r.high_watermark,
            last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
            aborted_transactions=aborted, records=r.records)
        if r.diverging_epoch is not None:  # a v12 follower whose log diverged from ours (KIP-595 truncation)
            data.diverging_epoch = _DivergingEpoch(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
        topics[-1].partitions.append(data)
    return FetchResponse(throttle_time_ms=0, error_code=answer.error_code, session_id=answer.session_id,
                         responses=topics)


def register(apis: "KafkaApis", services: "BrokerServices") -> FetchApi:
    api = FetchApi(services)
    apis.register(ApiKey.FETCH, api.handle, api.error_response)
    return api

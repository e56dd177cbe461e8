"""Fetch (1): whole batches from local leaders, parked in the purgatory until min_bytes or max_wait.

Every requested partition gets an entry in the response (COMPAT G9), errors included. Fetch sessions
(KIP-227) are not offered: the response's session_id is 0, which tells clients to keep sending full
fetches; a request naming a session gets FETCH_SESSION_ID_NOT_FOUND, as Kafka answers for an
unknown session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import FetchSessionIdNotFoundError  # type: ignore[attr-defined]
from ...protocol.messages import FetchResponse
from ..delayed_ops import FetchSpec
from ..replica_manager import FetchParams

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResponse = FetchResponse.FetchableTopicResponse
_PartitionData = _TopicResponse.PartitionData


class FetchApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        if body.session_id != 0:
            raise FetchSessionIdNotFoundError(f"fetch session {body.session_id} does not exist")
        params = FetchParams(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes,
                             body.isolation_level, hard_max_bytes_limit=version <= 2)
        specs = [FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                           p.log_start_offset)
                 for t in body.topics for p in t.partitions]
        result = self.replica_manager.fetch_messages(params, specs)
        if isinstance(result, dict):
            return _response(body, result)
        return _respond_when_done(body, result)

    def error_response(self, request: "Request", error_code: int) -> Any:
        body = request.body
        if error_code == FetchSessionIdNotFoundError.code or body is None:
            return FetchResponse(throttle_time_ms=0, error_code=error_code, session_id=0, responses=[])
        return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
            _TopicResponse(topic=t.topic, partitions=[
                _PartitionData(partition_index=p.partition, error_code=error_code, high_watermark=-1,
                               records=b"") for p in t.partitions]) for t in body.topics])


async def _respond_when_done(body: Any, pending: Any) -> Any:
    return _response(body, await pending)


def _response(body: Any, results: dict) -> Any:
    aborted = [] if body.isolation_level == 1 else None
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            r = results[(t.topic, p.partition)]
            parts.append(_PartitionData(partition_index=p.partition, error_code=r.error_code,
                                        high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                                        log_start_offset=r.log_start_offset, aborted_transactions=aborted,
                                        records=r.records))
        topics.append(_TopicResponse(topic=t.topic, partitions=parts))
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=topics)


def register(apis: "KafkaApis", services: "BrokerServices") -> FetchApi:
    api = FetchApi(services)
    apis.register(ApiKey.FETCH, api.handle, api.error_response)
    return api

"""ElectLeaders (43, v0-2): preferred or unclean leader elections, through the controller.

As Kafka 2.8's KafkaApis.handleElectReplicaLeader and ReplicaManager.electLeaders: v0 has no election
type (preferred); a null topic list means every partition, and then partitions that needed no
election are left out of the answer. A broker that is not the controller answers NOT_CONTROLLER
for every partition (the Admin client finds the controller and asks again). The answer waits, up to
``timeout_ms``, until this broker's metadata shows the elected leaders (Kafka's DelayedElectLeader);
partitions still waiting then get REQUEST_TIMED_OUT. Elections need Alter on the cluster
(CLUSTER_AUTHORIZATION_FAILED, for the request and each partition named), checked first as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (ElectionNotNeededError, KafkaError,  # type: ignore[attr-defined]
                                NotControllerError, RequestTimedOutError, UnknownServerError)
from ...protocol.messages import ElectLeadersResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResult = ElectLeadersResponse.ReplicaElectionResult
_PartitionResult = _TopicResult.PartitionResult
TopicPartition = tuple[str, int]
PREFERRED, UNCLEAN = 0, 1


class ElectLeadersApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def handle(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.ALTER)
        body, version = request.body, request.api_version
        election_type = body.election_type if version >= 1 else PREFERRED
        if election_type not in (PREFERRED, UNCLEAN):  # Kafka's ElectionType.valueOf fails the request
            raise UnknownServerError(f"election type {election_type} must be one of 0 (preferred), 1 (unclean)")
        asked = None if body.topic_partitions is None else [
            (t.topic, p) for t in body.topic_partitions for p in t.partitions]
        controller = self.services.controller
        results: dict[TopicPartition, Any]
        if controller is None or not controller.is_active:
            results = {tp: NotControllerError() for tp in asked or []}
        else:
            try:
                results = await controller.elect_leaders(election_type, asked)
            except NotControllerError as e:
                results = {tp: e for tp in asked or []}
        if asked is None:
            results = {tp: r for tp, r in results.items() if not isinstance(r, ElectionNotNeededError)}
        elected = {tp: leader for tp, leader in results.items() if isinstance(leader, int)}
        if elected and body.timeout_ms > 0:
            for tp in await self._wait_for_leaders(elected, body.timeout_ms):
                results[tp] = RequestTimedOutError(f"the new leader of {tp[0]}-{tp[1]} was not yet known to this "
                                                   f"broker after {body.timeout_ms} ms")
        return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=_by_topic(results))

    async def _wait_for_leaders(self, elected: dict[TopicPartition, int], timeout_ms: int) -> list[TopicPartition]:
        cache = self.services.metadata_cache
        by_topic: dict[str, dict[int, int]] = {}
        for (topic, partition), leader in elected.items():
            by_topic.setdefault(topic, {})[partition] = leader

        def ready(topic: str) -> bool:
            return all((p := cache.partition(topic, index)) is not None and p.leader == leader
                       for index, leader in by_topic[topic].items())

        late = await cache.wait_until(list(by_topic), ready, timeout_ms)
        return [(topic, p) for topic in late for p in by_topic[topic]]

    def error_response(self, request: "Request", error_code: int) -> Any:
        partitions = request.body.topic_partitions or []
        top_error = error_code if request.api_version >= 1 else 0  # v0 has no top-level error
        return ElectLeadersResponse(throttle_time_ms=0, error_code=top_error, replica_election_results=[
            _TopicResult(topic=t.topic, partition_result=[
                _PartitionResult(partition_id=p, error_code=error_code, error_message=None) for p in t.partitions])
            for t in partitions])


def _by_topic(results: dict[TopicPartition, Any]) -> list[Any]:
    topics: dict[str, list[Any]] = {}
    for (topic, partition), outcome in sorted(results.items()):
        if isinstance(outcome, KafkaError):
            code, message = outcome.code, (outcome.args[0] if outcome.args and outcome.args[0] else None)
        else:
            code, message = 0, None
        topics.setdefault(topic, []).append(_PartitionResult(partition_id=partition, error_code=code,
                                                             error_message=message))
    return [_TopicResult(topic=topic, partition_result=parts) for topic, parts in topics.items()]


def register(apis: "KafkaApis", services: "BrokerServices") -> ElectLeadersApi:
    api = ElectLeadersApi(services)
    apis.register(ApiKey.ELECT_LEADERS, api.handle, api.error_response)
    return api

"""CreatePartitions (37): controller only; grows topics and waits for the new partitions' leaders.

As Kafka 2.8's KafkaApis.handleCreatePartitionsRequest and ZkAdminManager.createPartitions: a topic
named twice gets INVALID_REQUEST, a name that is no ZooKeeper path ("") fails the whole request
with UNKNOWN_SERVER_ERROR (ZooKeeper's client throws in Kafka's), a non-controller answers NOT_CONTROLLER
(clients then find the controller), the admin ZooKeeper client checks and writes the new assignment (the controller's
partition-modification watch creates the partitions), and the answer waits up to ``timeout_ms`` for
the metadata cache to show every partition with a leader (REQUEST_TIMED_OUT after that; the
partitions are still added). Each topic gets its own result. Growing a topic needs Alter on it
(TOPIC_AUTHORIZATION_FAILED "The topic authorization is failed.").
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError,
    KafkaError,
    NotControllerError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownServerError,
)
from ...protocol.messages import CreatePartitionsResponse
from ..zk_path import is_valid_path
from .authorization import TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


class CreatePartitionsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def handle(self, request: "Request") -> Any:
        body = request.body
        services = self.services
        counts = Counter(t.name for t in body.topics)
        errors: dict[str, KafkaError] = {}
        grown: dict[str, int] = {}
        alterable = services.auth.filter_authorized(request, AclOperation.ALTER, TOPIC,
                                                    (t.name for t in body.topics if counts[t.name] == 1))
        controller = services.controller is not None and services.controller.is_active
        if controller and not all(is_valid_path(f"/brokers/topics/{n}") for n in alterable):
            # Kafka 2.8 reads /brokers/topics/<name> of every topic before writing any, outside its per-topic
            # error handling: ZooKeeper's IllegalArgumentException fails the whole request, nothing written.
            return self.error_response(request, UnknownServerError.code)
        for t in body.topics:
            if t.name in errors or t.name in grown:
                continue
            if counts[t.name] > 1:
                errors[t.name] = InvalidRequestError("Duplicate topic in request.")
            elif not controller:
                errors[t.name] = NotControllerError("This is not the correct controller for this cluster.")
            elif t.name not in alterable:
                errors[t.name] = TopicAuthorizationFailedError("The topic authorization is failed.")
            else:
                try:
                    assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
                    await services.in_executor(services.admin.add_partitions, t.name, t.count, assignment,
                                               body.validate_only)
                    grown[t.name] = t.count
                except KafkaError as exc:
                    errors[t.name] = exc
        if grown and body.timeout_ms > 0 and not body.validate_only:
            await self._wait_for_leaders(grown, errors, body.timeout_ms)
        # In request order, each topic once (Kafka answers per topic).
        names = list(dict.fromkeys(t.name for t in body.topics))
        return CreatePartitionsResponse(throttle_time_ms=0, results=[_result(n, errors.get(n)) for n in names])

    async def _wait_for_leaders(self, grown: dict[str, int], errors: dict[str, KafkaError], timeout_ms: int) -> None:
        cache = self.services.metadata_cache

        def ready(topic: str) -> bool:
            return (cache.num_partitions(topic) or 0) >= grown[topic] and cache.has_all_leaders(topic)

        for name in await cache.wait_until(grown, ready, timeout_ms):
            errors[name] = RequestTimedOutError(
                f"the partitions of {name} were added, but their leaders were not elected within {timeout_ms} ms")

    def error_response(self, request: "Request", error_code: int) -> Any:
        return CreatePartitionsResponse(throttle_time_ms=0, results=[
            _Result(name=t.name, error_code=error_code, error_message=None) for t in request.body.topics])


def _result(name: str, error: KafkaError | None) -> Any:
    if error is None:
        return _Result(name=name, error_code=0, error_message=None)
    return _Result(name=name, error_code=error.code, error_message=error.detail or None)


def register(apis: "KafkaApis", services: "BrokerServices") -> CreatePartitionsApi:
    api = CreatePartitionsApi(services)
    apis.register(ApiKey.CREATE_PARTITIONS, api.handle, api.error_response)
    return api

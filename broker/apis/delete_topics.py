"""DeleteTopics (20): controller only; marks topics for deletion and waits until they are gone.

As Kafka 2.8: unknown topics get UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id, v6),
``delete.topic.enable=false`` gets TOPIC_DELETION_DISABLED, and the answer waits up to
``timeout_ms`` for the controller's UpdateMetadata to drop the topic (REQUEST_TIMED_OUT after that).
Deleting needs Delete on the topic (TOPIC_AUTHORIZATION_FAILED, checked before its existence, so a
refused principal cannot probe for names); a topic named by id also needs Describe, else its name is
left out of the answer.
"""

from __future__ import annotations

import logging

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError,
    KafkaError,
    NotControllerError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from ...protocol.messages import DeleteTopicsResponse
from ...protocol.types import ZERO_UUID
from .authorization import TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Result = DeleteTopicsResponse.DeletableTopicResult

log = logging.getLogger(__name__)


class DeleteTopicsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    def _requested(self, request: "Request") -> list[tuple[str | None, Any]]:
        body = request.body
        if request.api_version >= 6:
            by_id = {v: k for k, v in self.services.metadata_cache.topic_ids.items()}
            return [(t.name if t.name is not None else by_id.get(t.topic_id), t.topic_id) for t in body.topics]
        return [(name, ZERO_UUID) for name in body.topic_names]

    async def handle(self, request: "Request") -> Any:
        services = self.services
        cache = services.metadata_cache
        results: list[Any] = []
        deleting: list[str] = []
        requested = self._requested(request)
        named = [name for name, _ in requested if name is not None]
        auth = services.auth
        describable = auth.filter_authorized(request, AclOperation.DESCRIBE, TOPIC, named) if auth.enabled else set()
        deletable = auth.filter_authorized(request, AclOperation.DELETE, TOPIC, named)
        for name, topic_id in requested:
            try:
                # Kafka 2.8's order: controller, delete.topic.enable, then per topic its id, its ACLs, its existence.
                if not services.controller.is_active:
                    raise NotControllerError("this broker is not the controller")
                if not services.config.get("delete.topic.enable"):
                    if request.api_version < 3:  # Kafka's answer to clients that predate the error code
                        raise InvalidRequestError("topic deletion is disabled (delete.topic.enable=false)")
                    raise TopicDeletionDisabledError("topic deletion is disabled (delete.topic.enable=false)")
                if name is None:
                    raise UnknownTopicIdError(f"no topic has the id {topic_id}")
                if auth.enabled and topic_id != ZERO_UUID and name not in describable:
                    results.append(_Result(name=None, topic_id=topic_id, error_code=TopicAuthorizationFailedError.code))
                    continue
                if name not in deletable:
                    raise TopicAuthorizationFailedError("")  # Kafka sends no message
                if not cache.contains_topic(name):
                    raise UnknownTopicOrPartitionError(f"the topic {name} does not exist")
                await services.in_executor(services.admin.delete_topic, name)
                deleting.append(name)
                results.append(_Result(name=name, topic_id=cache.topic_ids.get(name, topic_id), error_code=0))
            except KafkaError as exc:  # Kafka 2.8 sets only the code (the details go to our log)
                log.debug("DeleteTopics %s: %s", name, exc)
                results.append(_Result(name=name, topic_id=topic_id, error_code=exc.code, error_message=None))
        timeout_ms = request.body.timeout_ms
        if deleting and timeout_ms > 0:
            remaining = set(await cache.wait_until(deleting, lambda n: not cache.contains_topic(n), timeout_ms))
            for result in results:
                if result.name in remaining:
                    result.error_code = RequestTimedOutError.code
                    log.info("the topic %s was not deleted within %d ms", result.name, timeout_ms)
        return DeleteTopicsResponse(throttle_time_ms=0, responses=results)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return DeleteTopicsResponse(throttle_time_ms=0, responses=[
            _Result(name=name, topic_id=topic_id, error_code=error_code)
            for name, topic_id in self._requested(request)])


def register(apis: "KafkaApis", services: "BrokerServices") -> DeleteTopicsApi:
    api = DeleteTopicsApi(services)
    apis.register(ApiKey.DELETE_TOPICS, api.handle, api.error_response)
    return api

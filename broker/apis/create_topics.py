"""CreateTopics (19): controller only; writes the assignment to ZooKeeper and waits for the leaders.

As Kafka 2.8's ZkAdminManager: the request is checked (duplicates, partitions/replication factor
against an explicit assignment), each topic is validated and written by the admin ZooKeeper client,
then the response waits up to ``timeout_ms`` for the controller's UpdateMetadata to show every
partition with a leader (REQUEST_TIMED_OUT after that; the topic still gets created). A
non-controller answers NOT_CONTROLLER so clients go to the controller (all three Python clients send
CreateTopics to the controller Metadata names).

Authorization, as Kafka 2.8: Create on the cluster, or else on each topic (TOPIC_AUTHORIZATION_FAILED
"Authorization failed."); the configs, partition count and replication factor of the answer are
given only with DescribeConfigs on the topic (topic_config_error_code TOPIC_AUTHORIZATION_FAILED
otherwise).
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
)
from ...protocol.messages import CreateTopicsResponse
from ...protocol.types import ZERO_UUID
from .authorization import CLUSTER, TOPIC
from .describe_configs import DescribeConfigsApi

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)
_Result = CreateTopicsResponse.CreatableTopicResult
_Config = _Result.CreatableTopicConfigs
DEFAULT_CONFIG = 5  # DescribeConfigs' config_source of a key's default


class CreateTopicsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services
        self.topic_configs = DescribeConfigsApi(services)  # a new topic's configs, as DescribeConfigs lists them

    async def handle(self, request: "Request") -> Any:
        body = request.body
        services = self.services
        counts: dict[str, int] = {}
        for t in body.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        results: dict[str, Any] = {}
        created: list[str] = []
        active = services.controller.is_active
        creatable, describable = self._authorized(request) if active else (set(), set())
        for t in body.topics:
            if t.name in results:
                continue
            if counts[t.name] > 1:
                results[t.name] = _error(t.name, InvalidRequestError(
                    f"Create topics request contains multiple entries for the topic {t.name}"))
                continue
            if not active:
                results[t.name] = _error(t.name, NotControllerError("this broker is not the controller"))
                continue
            if t.name not in creatable:
                results[t.name] = _error(t.name, TopicAuthorizationFailedError("Authorization failed."))
                results[t.name].topic_config_error_code = 0 if t.name in describable else \
                    TopicAuthorizationFailedError.code
                continue
            try:
                results[t.name] = await self._create(t, body.validate_only, t.name in describable)
                if not body.validate_only:
                    created.append(t.name)
            except KafkaError as exc:
                results[t.name] = _error(t.name, exc)
        if created and body.timeout_ms > 0 and not body.validate_only:
            await self._wait_for_leaders(created, results, body.timeout_ms)
        # one result per entry, as Kafka's collection keeps a topic named twice twice
        return CreateTopicsResponse(throttle_time_ms=0, topics=[results[t.name] for t in body.topics])

    def _authorized(self, request: "Request") -> tuple[set[str], set[str]]:
        """(names the request may create, names whose configs it may see)."""
        auth, names = self.services.auth, [t.name for t in request.body.topics]
        if auth.authorize(request, AclOperation.CREATE, CLUSTER, log_denied=False):
            creatable = set(names)
        else:
            creatable = auth.filter_authorized(request, AclOperation.CREATE, TOPIC, names)
        return creatable, auth.filter_authorized(request, AclOperation.DESCRIBE_CONFIGS, TOPIC, names, log_denied=False)

    async def _create(self, t: Any, validate_only: bool, describable: bool = True) -> Any:
        requested = {a.partition_index: list(a.broker_ids) for a in t.assignments} or None
        overrides = {c.name: c.value for c in t.configs}
        assignment = await self.services.in_executor(
            self.services.admin.create_topic, t.name, t.num_partitions, t.replication_factor, overrides,
            requested, validate_only)
        partitions = len(assignment)
        replication = len(next(iter(assignment.values()))) if assignment else 0
        # Kafka's createTopicConfigEntry: the source of a key not overridden is its broker synonym's (a static
        # log.retention.ms makes retention.ms STATIC_BROKER_CONFIG), as DescribeConfigs shows it.
        configs = [_Config(name=name, value=value, read_only=False, is_sensitive=False,
                           config_source=synonyms[0].source if synonyms else DEFAULT_CONFIG)
                   for name, _, value, synonyms in self.topic_configs.topic_configs(overrides)]
        if not describable:
            return _Result(name=t.name, topic_id=ZERO_UUID, error_code=0, error_message=None, configs=[],
                           topic_config_error_code=TopicAuthorizationFailedError.code)
        return _Result(name=t.name, topic_id=ZERO_UUID, error_code=0, error_message=None,
                       num_partitions=partitions, replication_factor=replication, configs=configs)

    async def _wait_for_leaders(self, topics: list[str], results: dict[str, Any], timeout_ms: int) -> None:
        cache = self.services.metadata_cache
        pending = await cache.wait_until(topics, cache.has_all_leaders, timeout_ms)
        for name in topics:
            if name in cache.topic_ids:
                results[name].topic_id = cache.topic_ids[name]
        for name in pending:
            # Kafka's ApiError(REQUEST_TIMED_OUT, null): no message
            log.info("the topic %s was created, but its leaders were not elected within %d ms", name, timeout_ms)
            results[name] = _error(name, RequestTimedOutError(""))

    def error_response(self, request: "Request", error_code: int) -> Any:
        return CreateTopicsResponse(throttle_time_ms=0, topics=[
            _Result(name=t.name, topic_id=ZERO_UUID, error_code=error_code, error_message=None)
            for t in request.body.topics])


def _error(name: str, exc: KafkaError) -> Any:
    return _Result(name=name, topic_id=ZERO_UUID, error_code=exc.code, error_message=exc.detail or None,
                   num_partitions=-1, replication_factor=-1, configs=[])


def register(apis: "KafkaApis", services: "BrokerServices") -> CreateTopicsApi:
    api = CreateTopicsApi(services)
    apis.register(ApiKey.CREATE_TOPICS, api.handle, api.error_response)
    return api

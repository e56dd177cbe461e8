"""AlterConfigs (33) and IncrementalAlterConfigs (44) for topics, brokers and broker loggers, ZooKeeper mode.

As Kafka 2.8's ZkAdminManager.alterConfigs / incrementalAlterConfigs, per resource:
- TOPIC (2), any broker: the topic must exist (UNKNOWN_TOPIC_OR_PARTITION); AlterConfigs replaces the
  topic's whole override set, IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT to the
  stored overrides. The result is validated with the topic key table; unless ``validate_only`` it is
  written to ``/config/topics/<t>`` with a ``/config/changes`` notification, which every broker's
  DynamicConfigManager applies to its live logs.
- BROKER (4): "" is the cluster-wide default, else the name must be this broker's id (clients send a
  broker's resource to that broker). Only the dynamic log keys (dynamic_config.DYNAMIC_BROKER_KEYS,
  with the log cleaner's; log.cleaner.threads within half and double of its current value) may change; any other known key is INVALID_REQUEST "Cannot update these configs dynamically".
  Kafka also allows thread pools, listeners, SSL stores and quotas here: we do not. Listener-prefixed keys
  (listener.name.<l>.ssl.key.password, JAAS entries) are static too: no password is ever stored by AlterConfigs
  (Kafka 2.8 would encrypt it with password.encoder.secret, which Odradek does not have).
- BROKER_LOGGER (8), IncrementalAlterConfigs only (the name "" or this broker's id): SET or DELETE a
  logger's level at run time (broker/broker_loggers.py); AlterConfigs refuses it, as Kafka 2.8's does: the
  whole request, every resource INVALID_REQUEST.
- Others: INVALID_REQUEST.

Errors, as Kafka: a null value in AlterConfigs fails the whole request (UNKNOWN_SERVER_ERROR on every
resource: Kafka's request conversion throws); a null value of an incremental op other than DELETE and
duplicate keys are INVALID_REQUEST, APPEND / SUBTRACT of a non-list key INVALID_REQUEST, an unknown topic key
INVALID_CONFIG "Unknown topic config name". A value that does not parse or is out of range is
INVALID_REQUEST "Invalid config value for resource ...", naming the key and what it accepts, as Kafka 2.8's
ZkAdminManager turns a ConfigException into an InvalidRequestException. Nothing is written when a
resource fails. Changing a broker's configs needs AlterConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED),
a topic's on the topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from ...controller.admin_zk import validate_topic_name
from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from ...protocol.config_resource import BROKER, BROKER_LOGGER, TOPIC
from ...protocol.messages import AlterConfigsResponse, IncrementalAlterConfigsResponse
from .. import broker_loggers
from ..config import ConfigError, KafkaConfig, _format
from ..config_keys import BROKER_KEYS, TOPIC_KEYS, Invalid, Type
from ..dynamic_config import DEFAULT_ENTITY, DYNAMIC_BROKER_KEYS
from ..log.cleaner.config import validate_reconfiguration
from ..security.sensitive_configs import listener_synonyms
from ..zk_path import is_valid_path

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)

_TYPE_NAMES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "BROKER", 8: "BROKER_LOGGER"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def resource_label(resource_type: int, name: str) -> str:
    """Kafka's ConfigResource.toString, which its error messages quote."""
    return f"ConfigResource(type={_TYPE_NAMES.get(resource_type, 'UNKNOWN')}, name='{name}')"


def _scala_set(names: list[str]) -> str:
    return "Set(" + ", ".join(names) + ")"


class AlterConfigsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    # -- AlterConfigs (replace the whole override set) --------------------------------------------

    async def handle_alter(self, request: "Request") -> Any:
        body = request.body
        whole = _whole_request_error(body.resources)
        if whole is not None:
            return AlterConfigsResponse(throttle_time_ms=0, responses=[
                _response_entry(AlterConfigsResponse, r, whole) for r in body.resources])
        results = []
        for resource in body.resources:
            entries = [(c.name, c.value) for c in resource.configs]
            error = self._refusal(request, resource) or await self._guard(
                self._alter, resource.resource_type, resource.resource_name, entries, body.validate_only)
            results.append(_response_entry(AlterConfigsResponse, resource, error))
        return AlterConfigsResponse(throttle_time_ms=0, responses=results)

    async def _alter(self, resource_type: int, name: str, entries: list[tuple[str, str | None]],
                     validate_only: bool) -> None:
        configs = {k: v for k, v in entries if v is not None}  # no nulls: _whole_request_error
        if resource_type == TOPIC:
            await self._check_topic(name)
            await self._write_topic(name, configs, validate_only)
        elif resource_type == BROKER:
            entity = self._broker_entity(name)
            await self._write_broker(resource_type, name, entity, configs, validate_only)
        else:
            raise InvalidRequestError(f"AlterConfigs is only supported for topics and brokers, but resource type "
                                      f"is {_TYPE_NAMES.get(resource_type, resource_type)}")

    # -- IncrementalAlterConfigs ------------------------------------------------------------------

    async def handle_incremental(self, request: "Request") -> Any:
        body = request.body
        results = []
        # Kafka 2.8 makes a map of the resources: one named twice is altered (and answered) once, as last named.
        resources = {(r.resource_type, r.resource_name): r for r in body.resources}
        for resource in resources.values():
            ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
            error = self._refusal(request, resource) or await self._guard(
                self._incremental, resource.resource_type, resource.resource_name, ops, body.validate_only)
            results.append(_response_entry(IncrementalAlterConfigsResponse, resource, error))
        return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=results)

    async def _incremental(self, resource_type: int, name: str, ops: list[tuple[str, int, str | None]],
                           validate_only: bool) -> None:
        duplicates = sorted(k for k, n in Counter(k for k, _, _ in ops).items() if n > 1)
        if duplicates:
            raise InvalidRequestError(f"Error due to duplicate config keys : {','.join(duplicates)}")
        unknown_ops = [f"{op}:{k}" for k, op, _ in ops if op not in _OP_NAMES]
        if unknown_ops:
            raise InvalidRequestError(f"Unknown config operation for : {','.join(unknown_ops)}")
        nulls = [f"{_OP_NAMES[op]}:{k}" for k, op, v in ops if v is None and op != DELETE]
        if nulls:
            raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
        services = self.services
        if resource_type == TOPIC:
            if name == "":
                raise InvalidRequestError("Default topic resources are not allowed.")
            # As Kafka 2.8: the operations are applied to the stored overrides before the topic is looked up
            # (a name that is no ZooKeeper path fails reading them: IllegalArgumentException, INVALID_REQUEST).
            if not is_valid_path(f"/config/topics/{name}"):
                raise InvalidRequestError(f"Invalid path string \"/config/topics/{name}\"")
            current = await services.in_executor(services.zk.get_entity_config, "topics", name)
            defaults = self._effective_config().topic_defaults()
            configs = _apply_ops(current, ops, TOPIC_KEYS, defaults.get, "topic")
            await self._check_topic(name)
            await self._write_topic(name, configs, validate_only)
        elif resource_type == BROKER:
            entity = self._broker_entity(name)
            current = await services.in_executor(services.zk.get_entity_config, "brokers", entity)
            values = self._effective_config().values()
            configs = _apply_ops(current, ops, BROKER_KEYS, lambda k: _format(values.get(k)), "broker")
            await self._write_broker(resource_type, name, entity, configs, validate_only)
        elif resource_type == BROKER_LOGGER:
            self._broker_entity(name)  # "" or this broker's id
            named_ops = [(k, _OP_NAMES[op], v) for k, op, v in ops]
            try:
                broker_loggers.validate(named_ops)
            except broker_loggers.LoggerConfigError as exc:
                raise InvalidRequestError(f"Invalid config value for resource {resource_label(resource_type, name)}"
                                          f": {exc}") from None
            except broker_loggers.LoggerRequestError as exc:
                raise InvalidRequestError(str(exc)) from None
            if not validate_only:
                broker_loggers.apply(named_ops, log)
        else:
            raise InvalidRequestError(f"AlterConfigs is only supported for topics and brokers, but resource type "
                                      f"is {_TYPE_NAMES.get(resource_type, resource_type)}")

    # -- shared -----------------------------------------------------------------------------------

    def _refusal(self, request: "Request", resource: Any) -> KafkaError | None:
        """AlterConfigs on the cluster for a broker, on the topic for a topic (no message, as Kafka)."""
        refused = self.services.auth.config_refusal(request, AclOperation.ALTER_CONFIGS, resource.resource_type,
                                                    resource.resource_name)
        return None if refused is None else refused("")

    async def _guard(self, fn: Any, resource_type: int, name: str, entries: Any, validate_only: bool
                     ) -> KafkaError | None:
        try:
            await fn(resource_type, name, entries, validate_only)
            return None
        except KafkaError as exc:
            log.info("Error altering configs of %s: %s", resource_label(resource_type, name), exc.detail)
            return exc

    def _effective_config(self) -> Any:
        dynamic = self.services.dynamic_config
        return dynamic.effective_config if dynamic is not None else self.services.config

    async def _check_topic(self, topic: str) -> None:
        """Kafka's alterTopicConfigs asks its metadata cache first: a topic it does not know, even one of an
        illegal name, does not exist (ZooKeeper is asked too, for a topic just created)."""
        services = self.services
        if services.metadata_cache.contains_topic(topic):
            return
        try:
            validate_topic_name(topic)
        except KafkaError:
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.") from None
        if not await services.in_executor(services.zk.topic_exists, topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")

    async def _write_topic(self, topic: str, configs: dict[str, str], validate_only: bool) -> None:
        _validate(configs, TOPIC_KEYS, resource_label(TOPIC, topic), "topic")
        if validate_only:
            return
        services = self.services
        log.info("Updating topic %s with new configuration %s", topic, configs)
        await services.in_executor(services.zk.set_entity_config, "topics", topic, configs)
        # This broker applies it at once (the notification will do it again, idempotently).
        if services.dynamic_config is not None:
            await services.in_executor(services.dynamic_config.apply_change, "topics", topic)

    def _broker_entity(self, name: str) -> str:
        """Kafka's getBrokerId: "" is the cluster default, else this broker's id."""
        if name == "":
            return DEFAULT_ENTITY
        try:
            broker_id = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        own = self.services.broker_id
        if broker_id != own:
            raise InvalidRequestError(f"Unexpected broker id, expected {own}, but received {name}")
        return name

    async def _write_broker(self, resource_type: int, name: str, entity: str, configs: dict[str, str],
                            validate_only: bool) -> None:
        label = resource_label(resource_type, name)
        # A listener's override of a known key is a static config here: SSL stores and JAAS entries (passwords)
        # are never changed at run time (Kafka 2.8 stores them encrypted with password.encoder.secret).
        unknown = sorted(k for k in configs if k not in BROKER_KEYS and not listener_synonyms(k))
        if unknown:
            raise InvalidConfigError(f"Unknown broker config name: {', '.join(unknown)}")
        static_only = sorted(k for k in configs if k not in DYNAMIC_BROKER_KEYS)
        if static_only:
            raise InvalidRequestError(f"Invalid config value for resource {label}: Cannot update these configs "
                                      f"dynamically: {_scala_set(static_only)}")
        _validate(configs, BROKER_KEYS, label, "broker")
        self._validate_cleaner_threads(configs, label)
        self._validate_together(configs, label)
        if validate_only:
            return
        services = self.services
        log.info("Updating dynamic broker config %s with %s", entity, configs)
        await services.in_executor(services.zk.set_entity_config, "brokers", entity, configs)
        if services.dynamic_config is not None:
            await services.in_executor(services.dynamic_config.load_broker_configs)

    def _validate_together(self, configs: dict[str, str], label: str) -> None:
        """Kafka validates the whole config the change would make (KafkaConfig.validateValues): a retention of
        0 ms, or a dedupe buffer of 1 MiB or less per cleaner thread, is refused even though each value parses."""
        try:
            KafkaConfig({**self._effective_config().originals, **configs})
        except ConfigError as exc:
            raise InvalidRequestError(f"Invalid config value for resource {label}: {exc}") from None

    def _validate_cleaner_threads(self, configs: dict[str, str], label: str) -> None:
        """Kafka's LogCleaner.validateReconfiguration, against this broker's running cleaner."""
        if "log.cleaner.threads" not in configs:
            return
        cleaner = getattr(getattr(self.services.replica_manager, "log_manager", None), "cleaner", None)
        current = cleaner.config.num_threads if cleaner is not None else None
        error = validate_reconfiguration(current, int(configs["log.cleaner.threads"])) if current else None
        if error is not None:
            raise InvalidRequestError(f"Invalid config value for resource {label}: {error}")

    def error_response_alter(self, request: "Request", error_code: int) -> Any:
        return AlterConfigsResponse(throttle_time_ms=0, responses=[
            _response_entry(AlterConfigsResponse, r, None, error_code) for r in request.body.resources])

    def error_response_incremental(self, request: "Request", error_code: int) -> Any:
        return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=[
            _response_entry(IncrementalAlterConfigsResponse, r, None, error_code) for r in request.body.resources])


def _whole_request_error(resources: list[Any]) -> KafkaError | None:
    """What fails a whole AlterConfigs request in Kafka 2.8, every resource answered with it: a null value
    (its request conversion throws a NullPointerException: UNKNOWN_SERVER_ERROR, no message), then a
    BROKER_LOGGER resource (handleAlterConfigsRequest throws before altering anything)."""
    if any(c.value is None for r in resources for c in r.configs):
        return UnknownServerError("")
    if any(r.resource_type == BROKER_LOGGER for r in resources):
        return InvalidRequestError("AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER")
    return None


def _apply_ops(current: dict[str, str], ops: list[tuple[str, int, str | None]], keys: dict[str, Any],
               default_of: Any, kind: str) -> dict[str, str]:
    """Kafka's prepareIncrementalConfigs: the stored overrides after the operations."""
    configs = dict(current)
    for name, op, value in ops:
        if op == SET:
            configs[name] = value  # type: ignore[assignment]
        elif op == DELETE:
            configs.pop(name, None)
        else:
            spec = keys.get(name)
            if spec is None:
                raise InvalidConfigError(f"Unknown {kind} config name: {name}")
            if spec.type is not Type.LIST:
                verb = "append" if op == APPEND else "subtract"
                raise InvalidRequestError(f"Config value {verb} is not allowed for config key: {name}")
            old = configs.get(name)
            if old is None:
                old = default_of(name) or ""
            items = [i for i in old.split(",") if i]
            given = [i.strip() for i in (value or "").split(",") if i.strip()]
            if op == APPEND:
                items += given
            else:
                for item in given:  # Scala's List.diff: one occurrence per given item
                    if item in items:
                        items.remove(item)
            configs[name] = ",".join(items)
    return configs


def _validate(configs: dict[str, str], keys: dict[str, Any], label: str, kind: str) -> None:
    for name in configs:
        if name not in keys:
            raise InvalidConfigError(f"Unknown {kind} config name: {name}")
    for name, raw in configs.items():
        try:
            keys[name].parse(raw)
        except Invalid as exc:
            raise InvalidRequestError(f"Invalid config value for resource {label}: Invalid value {raw} for "
                                     f"configuration {name}: expected {exc}") from None
    if kind == "topic":
        lo, hi = configs.get("min.compaction.lag.ms"), configs.get("max.compaction.lag.ms")
        if lo is not None and hi is not None and int(lo) > int(hi):
            raise InvalidRequestError(f"Invalid config value for resource {label}: conflict topic config setting "
                                     f"min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})")


def _response_entry(response_cls: Any, resource: Any, error: KafkaError | None, code: int | None = None) -> Any:
    entry_cls = response_cls.AlterConfigsResourceResponse
    if error is not None:
        code, message = error.code, error.detail or None
    else:
        code, message = code or 0, None
    return entry_cls(error_code=code, error_message=message, resource_type=resource.resource_type,
                     resource_name=resource.resource_name)


def register(apis: "KafkaApis", services: "BrokerServices") -> AlterConfigsApi:
    api = AlterConfigsApi(services)
    apis.register(ApiKey.ALTER_CONFIGS, api.handle_alter, api.error_response_alter)
    apis.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, api.handle_incremental, api.error_response_incremental)
    return api

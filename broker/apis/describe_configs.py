"""DescribeConfigs (32): the effective configuration of topics and of this broker, and its loggers' levels.

As Kafka 2.8's ZkAdminManager.describeConfigs, per resource:
- TOPIC (2): every topic-level key, the topic's override from /config/topics/<t> (source
  DYNAMIC_TOPIC_CONFIG) or else the broker's value for the key's synonym: its dynamic per-broker
  config (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG),
  its properties (STATIC_BROKER_CONFIG), else DEFAULT_CONFIG; an unknown topic is
  UNKNOWN_TOPIC_OR_PARTITION.
- BROKER (4): this broker's keys when the name is its id, with the dynamic values in force; "" lists
  the cluster-wide dynamic defaults that are set; another id is INVALID_REQUEST (clients send a
  broker's resource to that broker). Keys that cannot change at run time are read-only
  (dynamic_config.DYNAMIC_BROKER_KEYS are the ones that can).
- BROKER_LOGGER (8): every logger of the broker and its level (broker/broker_loggers.py), source
  DYNAMIC_BROKER_LOGGER_CONFIG; the name must be this broker's id.
- Others: INVALID_REQUEST "Unsupported resource type".
A broker's configs need DescribeConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED), a topic's on
the topic (TOPIC_AUTHORIZATION_FAILED), each with the error's default message, as Kafka 2.8.
``configuration_keys`` null or empty means every key. Synonyms (v1+, when asked) list the sources in
precedence order: topic override, then the broker's static settings of each synonym key, then defaults.

Secrets never leave the broker (Kafka's maybeSensitive, broker/security/sensitive_configs.py): a broker key of
type PASSWORD (ssl.key.password, ssl.keystore.key, sasl.jaas.config, ...) or of a type that cannot be known (a
listener-prefixed override of an unknown key, a key Odradek does not know) has a null value, null synonym
values and ``is_sensitive`` true, in every version. As Kafka, a broker's own resource lists every key it knows
and every key of its properties, listener-prefixed ones (``listener.name.<l>.<key>``) included: those have
their base key as a synonym and its type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...controller.admin_zk import validate_topic_name
from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from ...protocol.config_resource import BROKER, BROKER_LOGGER, TOPIC
from ...protocol.messages import DescribeConfigsResponse
from .. import broker_loggers
from ..config import _format
from ..config_keys import BROKER_KEYS, TOPIC_KEYS, TOPIC_SYNONYMS, Type
from ..dynamic_config import DYNAMIC_BROKER_KEYS
from ..replication_quota import RATES as REPLICATION_RATES
from ..unimplemented_keys import UNIMPLEMENTED_BROKER_KEYS, UnimplementedKey
from ..security.sensitive_configs import config_type, is_sensitive, listener_synonyms

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Synonym = _Entry.DescribeConfigsSynonym

# ConfigSource ids (DescribeConfigsResponse.json)
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG = 4, 5, 6
_CONFIG_TYPES = {Type.BOOLEAN: 1, Type.STRING: 2, Type.INT: 3, Type.SHORT: 4, Type.LONG: 5, Type.DOUBLE: 6,
                 Type.LIST: 7, "class": 8, "password": 9}  # 0: UNKNOWN
# Broker keys that are not KafkaConfig's (the authorizer's; the replication throttles, which Kafka keeps as
# dynamic-only configs): listed only when the properties or a dynamic config set them, as Kafka lists them.
# The throttle rates are Kafka's DynamicConfig.Broker keys, not KafkaConfig's: it lists them read-only (they are
# not in its reconfigurable set, though AlterConfigs changes them) and without a default synonym.
_DYNAMIC_ONLY = frozenset(REPLICATION_RATES)
_LISTED_WHEN_SET = frozenset({"super.users", "allow.everyone.if.no.acl.found"}) | _DYNAMIC_ONLY
# The order Kafka 2.8.2 lists a topic's configs in (its LogConfig's hash map order), which the tools show.
_KAFKA_TOPIC_ORDER = (
    "compression.type", "leader.replication.throttled.replicas", "message.downconversion.enable",
    "min.insync.replicas", "segment.jitter.ms", "cleanup.policy", "flush.ms", "follower.replication.throttled.replicas",
    "segment.bytes", "retention.ms", "flush.messages", "message.format.version", "max.compaction.lag.ms",
    "file.delete.delay.ms", "max.message.bytes", "min.compaction.lag.ms", "message.timestamp.type", "preallocate",
    "min.cleanable.dirty.ratio", "index.interval.bytes", "unclean.leader.election.enable", "retention.bytes",
    "delete.retention.ms", "segment.ms", "message.timestamp.difference.max.ms", "segment.index.bytes")
_TOPIC_ORDER = tuple(k for k in _KAFKA_TOPIC_ORDER if k in TOPIC_KEYS) + tuple(
    k for k in TOPIC_KEYS if k not in _KAFKA_TOPIC_ORDER)
# KafkaConfig's broker synonyms (DynamicBrokerConfig.brokerConfigSynonyms): the finer unit wins.
_BROKER_SYNONYMS = {
    "log.roll.ms": ["log.roll.ms", "log.roll.hours"],
    "log.roll.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    "log.retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    "log.flush.interval.ms": ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
}


class DescribeConfigsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        include_synonyms = version >= 1 and body.include_synonyms
        include_docs = version >= 3 and body.include_documentation
        results = []
        if any(r.resource_type not in (TOPIC, BROKER, BROKER_LOGGER) for r in body.resources):
            # Kafka 2.8 throws while sorting the resources by type: the whole request fails
            return self.error_response(request, InvalidRequestError.code, InvalidRequestError.message)
        for resource in body.resources:
            wanted = set(resource.configuration_keys or ())  # null or empty: every key
            try:
                refused = self.services.auth.config_refusal(request, AclOperation.DESCRIBE_CONFIGS,
                                                            resource.resource_type, resource.resource_name)
                if refused is not None:
                    raise refused()
                if resource.resource_type == TOPIC:
                    entries = await self._topic(version, resource.resource_name, include_synonyms, include_docs)
                elif resource.resource_type == BROKER:
                    entries = self._broker(version, resource.resource_name, include_synonyms, include_docs)
                elif resource.resource_type == BROKER_LOGGER:
                    entries = self._broker_loggers(version, resource.resource_name)
                else:
                    raise InvalidRequestError(f"Unsupported resource type: {resource.resource_type}")
            except KafkaError as exc:
                results.append(_Result(error_code=exc.code, error_message=exc.args[0] if exc.args else "",
                                       resource_type=resource.resource_type,
                                       resource_name=resource.resource_name, configs=[]))
                continue
            results.append(_Result(error_code=0, error_message="", resource_type=resource.resource_type,
                                   resource_name=resource.resource_name,
                                   configs=[e for e in entries if not wanted or e.name in wanted]))
        return DescribeConfigsResponse(throttle_time_ms=0, results=results)

    async def _topic(self, version: int, topic: str, include_synonyms: bool, include_docs: bool) -> list[Any]:
        services = self.services
        validate_topic_name(topic)  # INVALID_TOPIC_EXCEPTION first, as Kafka's ConfigHelper
        if not services.metadata_cache.contains_topic(topic):
            raise UnknownTopicOrPartitionError("")  # Kafka sets only the code: the message is ""
        overrides = await services.in_executor(services.zk.get_entity_config, "topics", topic)
        return [_entry(version, name, value, _CONFIG_TYPES.get(key.type, 0), key.doc, False, False, synonyms,
                       include_synonyms, include_docs)
                for name, key, value, synonyms in self.topic_configs(overrides)]

    def topic_configs(self, overrides: dict[str, str]) -> list[tuple[str, Any, str | None, list[Any]]]:
        """(name, key, value, synonyms) of every topic key, in Kafka's order: the topic's override, else the
        broker's value of the key's synonym, each source in precedence order (Kafka's createTopicConfigEntry,
        which CreateTopics v5+ answers with too)."""
        defaults = self._effective_config().topic_defaults()
        configs = []
        for name in _TOPIC_ORDER:
            synonyms = []
            if name in overrides:
                synonyms.append(_Synonym(name=name, value=overrides[name], source=DYNAMIC_TOPIC_CONFIG))
            broker_key = TOPIC_SYNONYMS[name]
            if broker_key is not None:
                synonyms += self._broker_synonyms(broker_key)
            value = overrides[name] if name in overrides else defaults.get(name)
            configs.append((name, TOPIC_KEYS[name], value, synonyms))
        return configs

    def _effective_config(self) -> Any:
        dynamic = self.services.dynamic_config
        return dynamic.effective_config if dynamic is not None else self.services.config

    def _dynamic_layers(self) -> tuple[dict[str, str], dict[str, str]]:
        """(per-broker, cluster default) dynamic broker configs in force."""
        dynamic = self.services.dynamic_config
        if dynamic is None:
            return {}, {}
        return ({k: v for k, v in dynamic.dynamic_broker.items() if k in DYNAMIC_BROKER_KEYS},
                {k: v for k, v in dynamic.dynamic_default.items() if k in DYNAMIC_BROKER_KEYS})

    def _broker(self, version: int, name: str, include_synonyms: bool, include_docs: bool) -> list[Any]:
        broker_id = self.services.broker_id
        if name == "":
            # Kafka: the cluster-wide dynamic defaults that are set, without the per-broker layer.
            _, defaults = self._dynamic_layers()
            return [self._broker_entry(version, key, value, include_synonyms, include_docs, per_broker=False)
                    for key, value in sorted(defaults.items()) if key in BROKER_KEYS]
        if name != str(broker_id):
            raise InvalidRequestError(f"Unexpected broker id, expected {broker_id} or empty string, but received {name}")
        values = self._effective_config().values()
        # Kafka's allConfigs: the properties as given (listener-prefixed keys too), then every known key's value
        # (the keys that are not KafkaConfig's only when set, as Kafka shows them).
        originals = self.services.config.originals
        listed = {k: v for k, v in originals.items() if v is not None}
        dynamic_broker, dynamic_default = self._dynamic_layers()
        listed.update((key, _format(values.get(key))) for key in BROKER_KEYS
                      if key not in _LISTED_WHEN_SET or key in dynamic_broker or key in dynamic_default)
        entries = [self._broker_entry(version, key, value, include_synonyms, include_docs)
                   for key, value in sorted(listed.items())]
        # Kafka's keys of features Odradek does not have, at the defaults that say so (unimplemented_keys.py).
        entries += [_unimplemented_entry(version, key, spec, include_synonyms, include_docs)
                    for key, spec in UNIMPLEMENTED_BROKER_KEYS.items() if key not in listed]
        return sorted(entries, key=lambda e: e.name)

    def _broker_loggers(self, version: int, name: str) -> list[Any]:
        """Every logger and its level (broker/broker_loggers.py), as Kafka 2.8 lists its log4j loggers."""
        broker_id = self.services.broker_id
        if not name:
            raise InvalidRequestError("Broker id must not be empty")
        try:
            asked = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        if asked != broker_id:
            raise InvalidRequestError(f"Unexpected broker id, expected {broker_id} but received {name}")
        entries = []
        for logger, level in broker_loggers.loggers().items():
            entry = _Entry(name=logger, value=level, read_only=False, is_sensitive=False)
            if version == 0:
                entry.is_default = False
            else:
                entry.config_source, entry.synonyms = DYNAMIC_BROKER_LOGGER_CONFIG, []
            entries.append(entry)
        return entries

    def _broker_entry(self, version: int, name: str, value: str | None, include_synonyms: bool,
                      include_docs: bool, per_broker: bool = True) -> Any:
        """ConfigHelper.createBrokerConfigEntry: a sensitive key shows no value, nor do its synonyms (_entry)."""
        sensitive = is_sensitive(name)
        spec = BROKER_KEYS.get(name)
        return _entry(version, name, value, _CONFIG_TYPES.get(config_type(name), 0),
                      spec.doc if spec is not None else None,
                      name not in DYNAMIC_BROKER_KEYS or name in _DYNAMIC_ONLY, sensitive,
                      self._broker_synonyms(name, per_broker), include_synonyms, include_docs)

    def _broker_synonyms(self, broker_key: str, per_broker: bool = True) -> list[Any]:
        """Kafka's configSynonyms: each layer in precedence order, the synonym keys in order within it; a
        listener-prefixed key has the key it overrides as its synonym."""
        config = self.services.config
        keys = listener_synonyms(broker_key) or _BROKER_SYNONYMS.get(broker_key, [broker_key])
        dynamic_broker, dynamic_default = self._dynamic_layers()
        if not per_broker:  # the cluster default's synonyms are its own layer only (ConfigHelper's filter)
            return [_Synonym(name=k, value=dynamic_default[k], source=DYNAMIC_DEFAULT_BROKER_CONFIG)
                    for k in keys if k in dynamic_default]
        layers: list[tuple[dict[str, str], int]] = [(dynamic_broker, DYNAMIC_BROKER_CONFIG),
                                                    (dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                                                    (config.originals, STATIC_BROKER_CONFIG)]
        synonyms = [_Synonym(name=k, value=layer[k], source=source)
                    for layer, source in layers for k in keys if k in layer]
        for k in keys:
            spec = BROKER_KEYS.get(k)
            if spec is not None and spec.default is not None and not spec.required and k not in _DYNAMIC_ONLY:
                synonyms.append(_Synonym(name=k, value=_format(spec.default), source=DEFAULT_CONFIG))
        # Kafka's configSynonyms ends with dropWhile(_.name != name): synonyms before the first one of the key
        # itself go (retention.ms with only log.retention.hours' default has none)
        while synonyms and synonyms[0].name != broker_key:
            synonyms.pop(0)
        return synonyms

    def error_response(self, request: "Request", error_code: int, message: str | None = None) -> Any:
        return DescribeConfigsResponse(throttle_time_ms=0, results=[
            _Result(error_code=error_code, error_message=message, resource_type=r.resource_type,
                    resource_name=r.resource_name, configs=[]) for r in request.body.resources])


def _unimplemented_entry(version: int, name: str, spec: UnimplementedKey, include_synonyms: bool,
                         include_docs: bool) -> Any:
    synonyms = [] if spec.default is None else [_Synonym(name=name, value=spec.default, source=DEFAULT_CONFIG)]
    return _entry(version, name, spec.default, spec.config_type, None, True, spec.sensitive, synonyms,
                  include_synonyms, include_docs)


def _entry(version: int, name: str, value: str | None, config_type: int, doc: str | None, read_only: bool,
           sensitive: bool, synonyms: list[Any], include_synonyms: bool, include_docs: bool) -> Any:
    """Fields a version lacks keep their defaults (the encoder refuses anything else, as Kafka's does):
    is_default only in v0, config_source and synonyms from v1, config_type and documentation from v3.
    A sensitive entry never carries a value, nor do its synonyms (whatever the caller passed)."""
    source = synonyms[0].source if synonyms else DEFAULT_CONFIG
    if sensitive:
        value = None
        synonyms = [_Synonym(name=s.name, value=None, source=s.source) for s in synonyms]
    entry = _Entry(name=name, value=value, read_only=read_only, is_sensitive=sensitive)
    if version == 0:
        entry.is_default = source == DEFAULT_CONFIG
    else:
        entry.config_source = source
        entry.synonyms = synonyms if include_synonyms else []
    if version >= 3:
        entry.config_type = config_type
        entry.documentation = doc if include_docs else None
    return entry


def register(apis: "KafkaApis", services: "BrokerServices") -> DescribeConfigsApi:
    api = DescribeConfigsApi(services)
    apis.register(ApiKey.DESCRIBE_CONFIGS, api.handle, api.error_response)
    return api

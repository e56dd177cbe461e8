"""Which broker configs are secrets, as Kafka 2.8 decides (KafkaConfig.configType and maybeSensitive).

A config is sensitive when its type is PASSWORD or cannot be determined: DescribeConfigs then answers
its value (and every synonym's) as null with ``is_sensitive`` true, and logs show ``[hidden]``. The type
of a listener-prefixed key (``listener.name.<l>.<key>``) is that of the key it overrides; the
mechanism-scoped ones (``listener.name.<l>.<mechanism>.sasl.jaas.config``) are typed by the config they end
with (DynamicBrokerConfig.brokerConfigSynonyms). Keys Odradek does not know are treated as unknown, so
sensitive, including some Kafka knows: safe, never a leak.
"""

from __future__ import annotations

import re
from typing import Mapping

from ...clients.security.scram import MECHANISMS as SCRAM_MECHANISMS
from ...protocol.config_resource import BROKER, BROKER_LOGGER, TOPIC
from ..config_keys import BROKER_KEYS, TOPIC_KEYS, Type

__all__ = ["PASSWORD_KEYS", "HIDDEN", "is_sensitive", "config_type", "listener_synonyms", "loggable",
           "loggable_value", "loggable_entity_config"]

HIDDEN = "[hidden]"  # Kafka's Password.HIDDEN
# KafkaConfig 2.8's keys of type PASSWORD.
PASSWORD_KEYS = frozenset({
    "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.truststore.password", "ssl.truststore.certificates", "sasl.jaas.config",
    "zookeeper.ssl.keystore.password", "zookeeper.ssl.truststore.password",
    "delegation.token.master.key", "delegation.token.secret.key",
    "password.encoder.secret", "password.encoder.old.secret",
})
# Configs set per listener and mechanism: listener.name.<l>.<mechanism>.<config> (ListenerMechanismConfigs).
_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                      "sasl.server.callback.handler.class", "connections.max.reauth.ms")
_LISTENER_KEY = re.compile(r"listener\.name\.[^.]*\.(.*)", re.S)


def listener_synonyms(name: str) -> list[str] | None:
    """``[name, the key it overrides]`` for a listener-prefixed key, else None (brokerConfigSynonyms)."""
    m = _LISTENER_KEY.fullmatch(name)
    if m is None:
        return None
    base = m.group(1)
    return [name, next((c for c in _MECHANISM_CONFIGS if base.endswith(c)), base)]


# Where KafkaConfig 2.8 declares another type than the one Odradek parses the value as: log.dirs is a STRING
# there (split on commas later), and a class key is a CLASS.
_KAFKA_TYPES: dict[str, "Type | str"] = {"log.dirs": Type.STRING, "ssl.engine.factory.class": "class"}


def _type_of(name: str) -> "Type | str | None":
    if name in PASSWORD_KEYS:
        return "password"
    if name in _KAFKA_TYPES:
        return _KAFKA_TYPES[name]
    spec = BROKER_KEYS.get(name)
    return spec.type if spec is not None else None


def config_type(name: str) -> "Type | str | None":
    """The key's type as Kafka declares it, ``"password"`` for its PASSWORD keys and ``"class"`` for its CLASS
    ones, None when it cannot be known."""
    found = _type_of(name)
    if found is not None:
        return found
    synonyms = listener_synonyms(name)
    return _type_of(synonyms[1]) if synonyms is not None else None


def is_sensitive(name: str) -> bool:
    """KafkaConfig.maybeSensitive(configType(name)): a password, or a key whose type is unknown."""
    found = config_type(name)
    return found is None or found == "password"


def loggable(configs: Mapping[str, str | None]) -> dict[str, str | None]:
    """A broker config map fit for a log line: sensitive values as ``[hidden]`` (KafkaConfig.loggableValue)."""
    return {k: HIDDEN if v is not None and is_sensitive(k) else v for k, v in configs.items()}


def loggable_value(resource_type: int, name: str, value: str | None) -> str | None:
    """A value an AlterConfigs request sets, fit for the request log (KafkaConfig.loggableValue): ``[hidden]``
    when it may be a secret: a broker key as ``is_sensitive`` decides, a topic key Kafka does not know (its
    type is unknown), any key of a resource type other than these and the broker loggers."""
    if resource_type == BROKER:
        sensitive = is_sensitive(name)
    elif resource_type == TOPIC:
        sensitive = name not in TOPIC_KEYS
    else:
        sensitive = resource_type != BROKER_LOGGER
    return HIDDEN if sensitive else value


def loggable_entity_config(config: Mapping[str, str]) -> dict[str, str]:
    """A user's or client's config (``/config/users/<u>``) fit for a log line: its SCRAM credentials (salt,
    stored and server keys) as ``[hidden]``, as Kafka's DynamicConfigManager logs them."""
    return {k: HIDDEN if k in SCRAM_MECHANISMS else v for k, v in config.items()}

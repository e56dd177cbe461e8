"""Kafka 2.8 broker keys that Odradek does not implement, listed by DescribeConfigs as Kafka lists them.

Kafka's DescribeConfigs of a broker lists every key of its KafkaConfig. The keys below belong to features
Odradek does not have (KRaft, delegation tokens, password encoding, ZooKeeper TLS, pluggable policies,
callbacks and reporters); each one's Kafka default is what Odradek does (the feature off, nothing plugged
in), so it is listed read-only at that default, with Kafka's type. They are not accepted in the broker's
properties: a file that sets one is warned that Odradek does not support it (config_keys.UNSUPPORTED_PREFIXES),
or refused for the security ones (config_keys.FAIL_CLOSED); the listing then shows the value as given.

Kafka keys left out on purpose, because their default would claim something Odradek does not do, are listed
with their reasons in tests/differential/ACCEPTED.md (section "Broker keys").
"""

from __future__ import annotations

from typing import NamedTuple

# Kafka's ConfigDef.Type ids, as DescribeConfigs v3+ sends them.
BOOLEAN, STRING, INT, LONG, LIST, CLASS, PASSWORD = 1, 2, 3, 5, 7, 8, 9


class UnimplementedKey(NamedTuple):
    default: str | None  # Kafka 2.8's default, as DescribeConfigs shows it
    config_type: int

    @property
    def sensitive(self) -> bool:
        return self.config_type == PASSWORD


def _keys(config_type: int, defaults: dict[str, str | None]) -> dict[str, UnimplementedKey]:
    return {name: UnimplementedKey(default, config_type) for name, default in defaults.items()}


UNIMPLEMENTED_BROKER_KEYS: dict[str, UnimplementedKey] = {
    # Deprecated listener keys: Odradek reads only ``listeners`` (Kafka ignores these when it is set).
    **_keys(STRING, {"advertised.host.name": None, "host.name": ""}),
    **_keys(INT, {"advertised.port": None}),
    # KRaft (KIP-500), inert in ZooKeeper mode, in Kafka 2.8 as here.
    **_keys(INT, {"broker.heartbeat.interval.ms": "2000", "broker.session.timeout.ms": "9000",
                  "controller.quorum.append.linger.ms": "25", "controller.quorum.election.backoff.max.ms": "1000",
                  "controller.quorum.election.timeout.ms": "1000", "controller.quorum.fetch.timeout.ms": "2000",
                  "controller.quorum.request.timeout.ms": "2000", "controller.quorum.retry.backoff.ms": "20",
                  "initial.broker.registration.timeout.ms": "60000", "node.id": "-1"}),
    **_keys(STRING, {"controller.listener.names": None, "metadata.log.dir": None,
                     "sasl.mechanism.controller.protocol": "GSSAPI"}),
    **_keys(LIST, {"controller.quorum.voters": "", "process.roles": ""}),
    # Delegation tokens: off without a master key.
    **_keys(PASSWORD, {"delegation.token.master.key": None, "delegation.token.secret.key": None}),
    **_keys(LONG, {"delegation.token.expiry.check.interval.ms": "3600000",
                   "delegation.token.expiry.time.ms": "86400000", "delegation.token.max.lifetime.ms": "604800000"}),
    # Password encoding of dynamic configs: Odradek never stores a password through AlterConfigs.
    **_keys(PASSWORD, {"password.encoder.secret": None, "password.encoder.old.secret": None}),
    **_keys(STRING, {"password.encoder.cipher.algorithm": "AES/CBC/PKCS5Padding",
                     "password.encoder.keyfactory.algorithm": None}),
    **_keys(INT, {"password.encoder.iterations": "4096", "password.encoder.key.length": "128"}),
    # Nothing plugged in: policies, callbacks, principal builder, security providers, metrics reporters.
    **_keys(CLASS, {"alter.config.policy.class.name": None, "create.topic.policy.class.name": None,
                    "client.quota.callback.class": None, "principal.builder.class": None,
                    "sasl.client.callback.handler.class": None, "sasl.login.callback.handler.class": None,
                    "sasl.login.class": None, "sasl.server.callback.handler.class": None}),
    **_keys(STRING, {"security.providers": None, "control.plane.listener.name": None,
                     "metrics.recording.level": "INFO"}),
    **_keys(LIST, {"metric.reporters": "", "kafka.metrics.reporters": ""}),
    # KIP-599's controller mutation quota is not enforced (broker/quota/client_quotas.py): its windows are inert.
    **_keys(INT, {"controller.quota.window.num": "11", "controller.quota.window.size.seconds": "1"}),
    **_keys(INT, {"kafka.metrics.polling.interval.secs": "10",
                  "max.connection.creation.rate": "2147483647"}),  # no limit on new connections
    # ZooKeeper over TLS: off.
    **_keys(BOOLEAN, {"zookeeper.ssl.client.enable": "false", "zookeeper.ssl.crl.enable": "false",
                      "zookeeper.ssl.ocsp.enable": "false"}),
    **_keys(STRING, {"zookeeper.clientCnxnSocket": None, "zookeeper.ssl.endpoint.identification.algorithm": "HTTPS",
                     "zookeeper.ssl.keystore.location": None, "zookeeper.ssl.keystore.type": None,
                     "zookeeper.ssl.protocol": "TLSv1.2", "zookeeper.ssl.truststore.location": None,
                     "zookeeper.ssl.truststore.type": None}),
    **_keys(PASSWORD, {"zookeeper.ssl.keystore.password": None, "zookeeper.ssl.truststore.password": None}),
    **_keys(LIST, {"zookeeper.ssl.cipher.suites": None, "zookeeper.ssl.enabled.protocols": None}),
    **_keys(INT, {"zookeeper.sync.time.ms": "2000"}),  # unused by Kafka 2.8's broker too
}

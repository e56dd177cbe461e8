"""Secrets in the broker's configuration never leave it: DescribeConfigs answers them as Kafka 2.8 does (null
value, null synonym values, is_sensitive true, every version), listener-prefixed keys are listed with their
base key's type, and the log lines about users' configs hide their SCRAM credentials."""

import asyncio
import logging
from types import SimpleNamespace

import pytest

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.describe_configs import DescribeConfigsApi
from odradek.broker.config import KafkaConfig
from odradek.broker.dynamic_config import DynamicConfigManager
from odradek.broker.security.sensitive_configs import is_sensitive, loggable_entity_config
from odradek.clients.security.client_security import ClientSecurity
from odradek.clients.security.jaas import parse_jaas
from odradek.clients.security.scram import MECHANISMS, make_credential
from odradek.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
        'password="admin-secret";')
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_alice="alice-secret";')
SECRETS = ("admin-secret", "alice-secret", "key-secret", "BEGIN PRIVATE KEY", "typo-secret")
PROPS = {
    "zookeeper.connect": "localhost:2181",
    "listeners": "INTERNAL://127.0.0.1:9191,OPEN://127.0.0.1:9193",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,OPEN:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
    "listener.name.internal.scram-sha-512.sasl.jaas.config": JAAS,
    "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
    "ssl.key.password": "key-secret",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
    "some.typo.kee": "typo-secret",
}


@pytest.mark.parametrize("name, sensitive", [
    ("ssl.key.password", True), ("ssl.keystore.password", True), ("ssl.truststore.password", True),
    ("ssl.keystore.key", True), ("ssl.keystore.certificate.chain", True), ("sasl.jaas.config", True),
    ("password.encoder.secret", True), ("listener.name.internal.scram-sha-512.sasl.jaas.config", True),
    ("listener.name.external.ssl.key.password", True), ("listener.name.external.ssl.nonsense", True),
    ("scram-sha-512.sasl.jaas.config", True), ("some.typo.kee", True),
    ("ssl.keystore.location", False), ("listener.name.external.ssl.keystore.location", False),
    ("listener.name.internal.sasl.enabled.mechanisms", False), ("log.retention.ms", False),
])
def test_sensitive_keys_are_kafkas(name, sensitive):
    assert is_sensitive(name) is sensitive


def describe(version: int, keys=None, synonyms=True):
    services = SimpleNamespace(config=KafkaConfig(PROPS), broker_id=0, dynamic_config=None, auth=AuthHelper())
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=4, resource_name="0", configuration_keys=keys)], include_synonyms=synonyms,
        include_documentation=version >= 3)
    response = asyncio.run(DescribeConfigsApi(services).handle(SimpleNamespace(api_version=version, body=body)))
    (result,) = response.results
    assert result.error_code == 0
    return response, {entry.name: entry for entry in result.configs}


@pytest.mark.parametrize("version", range(5))
def test_describe_configs_never_answers_a_secret(version):
    response, entries = describe(version)
    shown = repr(response)
    assert not any(secret in shown for secret in SECRETS), [s for s in SECRETS if s in shown]
    for name in ("ssl.key.password", "ssl.keystore.key", "listener.name.internal.scram-sha-512.sasl.jaas.config",
                 "listener.name.internal.plain.sasl.jaas.config", "some.typo.kee", "ssl.truststore.password"):
        assert entries[name].value is None and entries[name].is_sensitive, name
        assert all(s.value is None for s in entries[name].synonyms or []), name
    mechanisms = entries["listener.name.internal.sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.is_sensitive, mechanisms.read_only) == ("SCRAM-SHA-512,PLAIN", False, True)
    assert entries["zookeeper.connect"].value == "localhost:2181" and not entries["zookeeper.connect"].is_sensitive


def test_listener_keys_have_their_base_key_as_synonym_and_type():
    _, entries = describe(3)
    jaas = entries["listener.name.internal.scram-sha-512.sasl.jaas.config"]
    assert [(s.name, s.value, s.source) for s in jaas.synonyms] == [
        ("listener.name.internal.scram-sha-512.sasl.jaas.config", None, 4)]  # STATIC_BROKER_CONFIG
    assert (jaas.config_source, jaas.config_type) == (4, 9)  # PASSWORD
    mechanisms = entries["listener.name.internal.sasl.enabled.mechanisms"]
    assert [(s.name, s.source) for s in mechanisms.synonyms] == [
        ("listener.name.internal.sasl.enabled.mechanisms", 4), ("sasl.enabled.mechanisms", 5)]
    assert mechanisms.config_type == 7 and entries["some.typo.kee"].config_type == 0  # LIST, UNKNOWN
    key = entries["ssl.key.password"]
    assert [(s.name, s.value, s.source) for s in key.synonyms] == [("ssl.key.password", None, 4)]


def test_a_named_sensitive_key_is_still_hidden():
    response, entries = describe(1, keys=["ssl.key.password"], synonyms=False)
    assert list(entries) == ["ssl.key.password"] and entries["ssl.key.password"].value is None
    assert "key-secret" not in repr(response)


def test_users_scram_credentials_are_not_logged(caplog):
    credential = make_credential(MECHANISMS["SCRAM-SHA-256"], "alice-secret").to_text()
    config = {"SCRAM-SHA-256": credential, "producer_byte_rate": "1024"}
    assert loggable_entity_config(config) == {"SCRAM-SHA-256": "[hidden]", "producer_byte_rate": "1024"}
    zk = SimpleNamespace(get_entity_config=lambda entity_type, name: dict(config))
    manager = DynamicConfigManager(zk, 0, KafkaConfig(PROPS), None)
    manager.client_quotas = SimpleNamespace(apply_entity_config=lambda *args: None)
    manager.credentials = SimpleNamespace(load_user=lambda zk, name: None)
    with caplog.at_level(logging.INFO):
        manager.apply_change("users", "alice")
    assert "users/alice" in caplog.text and "[hidden]" in caplog.text
    assert "stored_key" not in caplog.text and credential.split(",")[1] not in caplog.text


def test_security_objects_do_not_show_passwords_in_their_repr():
    from odradek.clients.admin.scram import UserScramCredentialUpsertion
    shown = repr((ClientSecurity("SASL_SSL", None, "PLAIN", "alice", "alice-secret"), parse_jaas(PLAIN_JAAS),
                  UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret"),
                  make_credential(MECHANISMS["SCRAM-SHA-512"], "alice-secret"),
                  KafkaConfig(PROPS).listener_security()["INTERNAL"]))
    assert "alice-secret" not in shown and "admin-secret" not in shown and "stored_key" not in shown
    assert "alice" in shown


def test_altering_a_users_quota_does_not_log_its_scram_credentials(caplog):
    from odradek.broker.apis.client_quotas import ClientQuotasApi
    credential = make_credential(MECHANISMS["SCRAM-SHA-512"], "alice-secret").to_text()
    stored = {"SCRAM-SHA-512": credential}
    written = {}
    zk = SimpleNamespace(get_entity_config=lambda entity_type, path: dict(stored),
                         set_entity_config=lambda entity_type, path, config: written.update(config))
    api = ClientQuotasApi(SimpleNamespace(zk=zk, auth=AuthHelper()))
    with caplog.at_level(logging.INFO):
        api._alter_entity((("user", "alice"),), [SimpleNamespace(key="producer_byte_rate", value=1024.0,
                                                                  remove=False)], False)
    assert written == {"SCRAM-SHA-512": credential, "producer_byte_rate": "1024"}  # kept, and the quota added
    assert "users/alice" in caplog.text and "[hidden]" in caplog.text and "stored_key" not in caplog.text

"""Listener security from Kafka's keys: the issue's example configuration as written, per-listener overrides,
JAAS entries, and the settings refused by name (fail closed)."""

import ssl

import pytest

from odradek.broker.config import ConfigError, KafkaConfig, parse_properties
from odradek.tools.local_ca import LocalCA

EXAMPLE = """\
listeners=INTERNAL://127.0.0.1:9191,EXTERNAL://127.0.0.1:9192,OPEN://127.0.0.1:9193
advertised.listeners=INTERNAL://127.0.0.1:9191,EXTERNAL://localhost:9192,OPEN://127.0.0.1:9193
listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL,OPEN:PLAINTEXT
inter.broker.listener.name=INTERNAL
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";
listener.name.external.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
ssl.keystore.type=PEM
ssl.keystore.location={keystore}
ssl.truststore.type=PEM
ssl.truststore.location={truststore}
authorizer.class.name=kafka.security.authorizer.AclAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
"""
ZK = {"zookeeper.connect": "localhost:2181"}


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    ca = LocalCA(tmp_path_factory.mktemp("ca"))
    ca.issue("broker")
    return ca


def config(**props):
    return KafkaConfig({**ZK, **{k if "." in k else k.replace("_", "."): v for k, v in props.items()}})


def test_the_issues_example_is_accepted_as_written(ca):
    # The issue's "# PKCS#8 key followed by the certificate chain" after the keystore path is an annotation:
    # Java's .properties (and ours) has no end-of-line comments, so it is left out here, as from a real file.
    text = EXAMPLE.format(keystore=ca.directory / "broker.pem", truststore=ca.cert_path)
    c = KafkaConfig({**ZK, **{k: v for k, v, _ in parse_properties(text)}})
    assert {e.name: e.security_protocol for e in c.listeners} == {
        "INTERNAL": "SASL_PLAINTEXT", "EXTERNAL": "SASL_SSL", "OPEN": "PLAINTEXT"}
    listeners = c.listener_security()
    assert listeners["INTERNAL"].sasl_mechanisms == ["SCRAM-SHA-512"]
    assert listeners["EXTERNAL"].sasl_mechanisms == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert isinstance(listeners["EXTERNAL"].ssl_context, ssl.SSLContext) and listeners["INTERNAL"].ssl_context is None
    inter = c.inter_broker_client_security()
    assert (inter.protocol, inter.sasl_mechanism, inter.sasl_username, inter.sasl_password) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "admin", "admin-secret")
    assert not any("listener" in w or "ssl." in w or "sasl." in w for w in c.warnings), c.warnings


def test_per_listener_keys_override_the_broker_wide_ones(ca):
    c = config(listeners="A://:1,B://:2", listener_security_protocol_map="A:SSL,B:SSL", inter_broker_listener_name="A",
               ssl_keystore_type="PEM", ssl_keystore_location=str(ca.directory / "broker.pem"),
               ssl_truststore_type="PEM", ssl_truststore_location=str(ca.cert_path),
               **{"listener.name.b.ssl.client.auth": "required"})
    security = c.listener_security()
    assert security["A"].ssl_context.verify_mode == ssl.CERT_NONE
    assert security["B"].ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_plain_users_come_from_the_listeners_jaas_entry():
    c = config(listeners="SASL_PLAINTEXT://:1", security_inter_broker_protocol="SASL_PLAINTEXT",
               sasl_enabled_mechanisms="PLAIN", sasl_mechanism_inter_broker_protocol="PLAIN", **{
                   "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                   'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                   'password="a\\"b" user_admin="a\\"b" user_alice=alice-pw;'})
    assert c.listener_security()["SASL_PLAINTEXT"].plain_users == {"admin": 'a"b', "alice": "alice-pw"}


@pytest.mark.parametrize("props, key, says", [
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL"}, "ssl.keystore.location",
     "needs a key store"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.location": "/k.jks"},
     "ssl.keystore.type", "expected PEM"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/k.pem", "ssl.keystore.password": "x"}, "ssl.keystore.password", "PEM"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/k.pem", "ssl.enabled.protocols": "TLSv1.2,SSLv3"}, "ssl.enabled.protocols",
     "TLSv1.3"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/k.pem", "ssl.cipher.suites": "TLS_NOPE_WITH_NOTHING"}, "ssl.cipher.suites",
     "not a cipher suite"),
    ({"listeners": "SASL_PLAINTEXT://:1", "security.inter.broker.protocol": "SASL_PLAINTEXT"},
     "sasl.enabled.mechanisms", "GSSAPI not supported"),
    ({"listeners": "SASL_PLAINTEXT://:1", "security.inter.broker.protocol": "SASL_PLAINTEXT",
      "sasl.enabled.mechanisms": "PLAIN"}, "sasl.mechanism.inter.broker.protocol", "expected one of the mechanisms"),
    ({"listeners": "SASL_PLAINTEXT://:1", "security.inter.broker.protocol": "SASL_PLAINTEXT",
      "sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
     "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config", "brokers need its username and password"),
    ({"listeners": "SASL_PLAINTEXT://:1", "security.inter.broker.protocol": "SASL_PLAINTEXT",
      "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'PlainLoginModule required username="a"'},
     "listener.name.sasl_plaintext.plain.sasl.jaas.config", "expected ';'"),
    ({"connections.max.reauth.ms": "3600000"}, "connections.max.reauth.ms", "KIP-368"),
    ({"listener.name.plaintext.scram-sha-256.connections.max.reauth.ms": "3600000"},
     "listener.name.plaintext.scram-sha-256.connections.max.reauth.ms", "KIP-368"),
    ({"listener.name.plaintext.ssl.engine.factory.class": "com.example.Engine"},
     "listener.name.plaintext.ssl.engine.factory.class", "expected no value"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/k.pem", "ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}, "ssl.enabled.protocols",
     "expected consecutive versions"),
    ({"listeners": "SASL_PLAINTEXT://:1", "security.inter.broker.protocol": "SASL_PLAINTEXT",
      "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'PlainLoginModule required username="a" password="b";',
      "listener.name.sasl_plaintext.sasl.server.max.receive.size": "big"},
     "listener.name.sasl_plaintext.sasl.server.max.receive.size", "expected an integer >= 1"),
    ({"listeners": "SSL://:1", "security.inter.broker.protocol": "SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/k.pem", "ssl.principal.mapping.rules": "RULE:broken"},
     "ssl.principal.mapping.rules", "Invalid rule"),
])
def test_bad_security_settings_are_refused_naming_the_key(props, key, says):
    with pytest.raises(ConfigError) as info:
        KafkaConfig({**ZK, **props})
    message = str(info.value)
    assert key in message and says in message and "\n" not in message


def test_unreadable_stores_fail_when_loaded_naming_the_key(tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    c = config(listeners="SSL://:1", security_inter_broker_protocol="SSL", ssl_keystore_type="PEM",
               ssl_keystore_location=str(bad))
    with pytest.raises(ConfigError, match="ssl.keystore.location"):
        c.listener_security()


def test_java_only_knobs_are_warned_and_listener_keys_for_unknown_listeners_too():
    c = config(ssl_provider="SunJSSE", **{"listener.name.nope.ssl.client.auth": "required",
                                          "listener.name.plaintext.foo": "1",
                                          "listener.name.plaintext.ssl.keymanager.algorithm": "PKIX",
                                          "listener.name.plaintext.sasl.login.class": "com.example.Login",
                                          "listener.name.plaintext.ssl.client.auth": "none",
                                          "listener.name.plaintext.scram-sha-256.connections.max.reauth.ms": "0"})
    assert any("'ssl.provider' is a Java setting" in w for w in c.warnings)
    assert any("names listener nope" in w for w in c.warnings)
    assert any("Unknown configuration 'listener.name.plaintext.foo'" in w for w in c.warnings)
    # a listener key Odradek does not read is never taken silently
    assert any("'listener.name.plaintext.ssl.keymanager.algorithm' is a Java setting" in w for w in c.warnings)
    assert any("'listener.name.plaintext.sasl.login.class' is a Kafka setting Odradek does not support" in w
               for w in c.warnings)
    assert not any("plaintext.ssl.client.auth" in w or "reauth" in w for w in c.warnings), c.warnings


def test_sasl_ssl_listeners_take_client_auth_from_their_own_key_only(ca):
    # Kafka 2.8 (KIP-684): the broker-wide ssl.client.auth is for SSL listeners; a SASL_SSL listener asks for
    # certificates only through listener.name.<l>.ssl.client.auth, and its principal stays the SASL user.
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";'
    c = config(listeners="S://:1,T://:2,U://:3", listener_security_protocol_map="S:SSL,T:SASL_SSL,U:SASL_SSL",
               inter_broker_listener_name="S", ssl_keystore_type="PEM",
               ssl_keystore_location=str(ca.directory / "broker.pem"), ssl_truststore_type="PEM",
               ssl_truststore_location=str(ca.cert_path), ssl_client_auth="required", sasl_enabled_mechanisms="PLAIN",
               **{"plain.sasl.jaas.config": jaas, "listener.name.u.ssl.client.auth": "requested"})
    security = c.listener_security()
    assert security["S"].ssl_context.verify_mode == ssl.CERT_REQUIRED and security["S"].principal_mapper is not None
    assert security["T"].ssl_context.verify_mode == ssl.CERT_NONE and security["T"].principal_mapper is None
    assert security["U"].ssl_context.verify_mode == ssl.CERT_OPTIONAL and security["U"].principal_mapper is None
    assert any("'ssl.client.auth' is applied only to SSL listeners" in w for w in c.warnings)


def test_a_client_on_ssl_protocol_tlsv12_does_not_use_tlsv13(ca):
    from odradek.clients.security.tls import SslSettings, client_context
    settings = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.cert_path)}
    assert client_context(SslSettings.from_lookup(settings.get)).maximum_version == ssl.TLSVersion.TLSv1_3
    capped = client_context(SslSettings.from_lookup({**settings, "ssl.protocol": "TLSv1.2"}.get))
    assert (capped.minimum_version, capped.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)


def test_sasl_server_max_receive_size_is_read_per_listener():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
    c = config(listeners="A://:1,B://:2", listener_security_protocol_map="A:SASL_PLAINTEXT,B:SASL_PLAINTEXT",
               inter_broker_listener_name="A", sasl_enabled_mechanisms="PLAIN",
               sasl_mechanism_inter_broker_protocol="PLAIN", sasl_server_max_receive_size="65536",
               **{"plain.sasl.jaas.config": jaas, "listener.name.b.sasl.server.max.receive.size": "1024"})
    security = c.listener_security()
    assert (security["A"].max_receive_size, security["B"].max_receive_size) == (65536, 1024)
    assert not any("sasl.server.max.receive.size" in w for w in c.warnings), c.warnings

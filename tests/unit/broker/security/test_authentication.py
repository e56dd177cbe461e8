"""The broker's side of authentication, without sockets: the SASL state machine frame by frame (as Kafka 2.8's
SaslServerAuthenticator), PLAIN, certificate subjects in Java's RFC 2253 form and the principal mapping rules,
JAAS text and cipher-suite names."""

import datetime
import struct

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from odradek.broker.security.credential_cache import CredentialCache
from odradek.broker.security.listener_config import ListenerSecurity
from odradek.broker.security.sasl_authenticator import SaslAuthenticator
from odradek.broker.security.sasl_server import ClientVisibleFailure, PlainServer
from odradek.broker.security.ssl_principal import NoMatchingRule, SslPrincipalMapper, distinguished_name
from odradek.clients.security.jaas import JaasError, parse_jaas
from odradek.clients.security.scram import MECHANISMS, ScramClient, make_credential
from odradek.clients.security.tls import SslSettings, _openssl_name
from odradek.protocol.header import decode_response, encode_request
from odradek.protocol.messages import (ApiVersionsRequest, MetadataRequest, SaslAuthenticateRequest,
                                       SaslHandshakeRequest)


def frame(body, version, correlation_id=1):
    return encode_request(body, version, correlation_id, "test")[4:]


def answer(step, api_key, version):
    return decode_response(b"".join(bytes(p) for p in step.response)[4:], api_key, version)[1]


@pytest.fixture
def authenticator():
    cache = CredentialCache()
    cache.update_user("alice", {"SCRAM-SHA-256": make_credential(MECHANISMS["SCRAM-SHA-256"], "pw").to_text()})
    listener = ListenerSecurity("EXTERNAL", "SASL_SSL", sasl_mechanisms=["PLAIN", "SCRAM-SHA-256"],
                                plain_users={"bob": "bob-pw"})
    return SaslAuthenticator(listener, cache)


def test_scram_exchange_with_framed_tokens_gives_the_principal(authenticator):
    assert authenticator.receive(frame(ApiVersionsRequest(), 3)).dispatch  # the normal handler answers it
    step = authenticator.receive(frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1))
    assert answer(step, 17, 1).mechanisms == ["PLAIN", "SCRAM-SHA-256"] and not step.close
    client = ScramClient(MECHANISMS["SCRAM-SHA-256"], "alice", "pw")
    step = authenticator.receive(frame(SaslAuthenticateRequest(auth_bytes=client.first()), 2))
    server_first = answer(step, 36, 2).auth_bytes
    step = authenticator.receive(frame(SaslAuthenticateRequest(auth_bytes=client.final(server_first)), 2))
    client.verify(answer(step, 36, 2).auth_bytes)
    assert str(step.principal) == "User:alice" and authenticator.state == "COMPLETE"


def test_wrong_password_gets_kafkas_message_and_fails(authenticator):
    authenticator.receive(frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1))
    client = ScramClient(MECHANISMS["SCRAM-SHA-256"], "alice", "nope")
    step = authenticator.receive(frame(SaslAuthenticateRequest(auth_bytes=client.first()), 1))
    step = authenticator.receive(frame(SaslAuthenticateRequest(auth_bytes=client.final(answer(step, 36, 1).auth_bytes)), 1))
    response = answer(step, 36, 1)
    assert response.error_code == 58 and step.fail and step.principal is None
    assert response.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                      "SASL mechanism SCRAM-SHA-256")


def test_legacy_v0_handshake_takes_bare_tokens(authenticator):
    step = authenticator.receive(frame(SaslHandshakeRequest(mechanism="PLAIN"), 0))
    assert answer(step, 17, 0).error_code == 0
    step = authenticator.receive(b"\0bob\0bob-pw")  # no Kafka header: the token itself
    assert step.response == [struct.pack(">i", 0), b""] and str(step.principal) == "User:bob"


def test_requests_before_the_handshake_close_the_connection(authenticator):
    step = authenticator.receive(frame(MetadataRequest(topics=None), 9))
    assert step.close and "Unexpected Kafka request of type METADATA during SASL handshake" in step.close
    assert authenticator.state == "FAILED"


def test_unknown_mechanism_and_a_second_api_versions(authenticator):
    step = authenticator.receive(frame(SaslHandshakeRequest(mechanism="GSSAPI"), 1))
    assert answer(step, 17, 1).error_code == 33 and step.fail
    other = SaslAuthenticator(authenticator.listener, authenticator.credentials)
    other.receive(frame(ApiVersionsRequest(), 3))
    assert other.receive(frame(ApiVersionsRequest(), 3)).close


def test_plain_messages_are_kafkas():
    server = PlainServer({"bob": "pw"})
    for token, message in ((b"\0bob\0bad", "Invalid username or password"), (b"\0eve\0pw", "Invalid username"),
                           (b"\0\0pw", "username not specified"), (b"x\0bob\0pw", "authorization id"),
                           (b"bob", "expected 3 tokens")):
        with pytest.raises(ClientVisibleFailure, match=message):
            PlainServer({"bob": "pw"}).evaluate(token)
    assert server.evaluate(b"\0bob\0pw") == b"" and server.authorization_id == "bob"


def _certificate(attributes):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(attributes)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


def test_certificate_subjects_read_as_java_prints_them():
    der = _certificate([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc."),
                        x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b"),
                        x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    # most specific first, ',' escaped, emailAddress as its OID and the hex of its DER value (IA5String)
    assert distinguished_name(der) == "CN=alice,1.2.840.113549.1.9.1=#1603614062,O=Acme\\, Inc.,C=US"


def test_principal_mapping_rules_as_kafkas_tests():
    rules = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
             "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT")
    mapper = SslPrincipalMapper(rules)
    assert mapper.name("CN=kafka-server1,OU=ServiceUsers,O=org,C=US") == "kafka-server1"
    assert mapper.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Mountain View,ST=CA,C=US") == "duke@javasoft"
    assert mapper.name("CN=adminUser,OU=Admin,O=Apache") == "ADMINUSER"
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=a$/b/").name("CN=c")
    with pytest.raises(ValueError):
        SslPrincipalMapper("RULE:^CN=a$/b/L,junk")


def test_jaas_text():
    jaas = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required\n  username="a b" '
                      'password="q\\"x" user_c=d;')
    assert (jaas.username, jaas.password, jaas.plain_users()) == ("a b", 'q"x', {"c": "d"})
    for bad in ("", "Module required username=a", "Module maybe;", "M required; N required;", "M required a;"):
        with pytest.raises(JaasError):
            parse_jaas(bad)


def test_cipher_suites_take_kafkas_names():
    assert _openssl_name("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"
    assert _openssl_name("TLS_RSA_WITH_AES_256_CBC_SHA") == "AES256-SHA"
    assert _openssl_name("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    settings = SslSettings.from_lookup({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}.get)
    assert settings.openssl_ciphers() == "ECDHE-RSA-AES128-GCM-SHA256"
    assert any("TLS 1.3" in w for w in settings.warnings)

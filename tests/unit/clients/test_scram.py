"""SCRAM against the RFC test vectors (RFC 7677 for SHA-256, RFC 5802 for the SHA-1 formulas), both sides,
and Kafka's message grammar and credential text."""

import base64

import pytest

from odradek.broker.security.sasl_server import ScramServer, SaslFailure
from odradek.clients.security import scram
from odradek.clients.security.scram import (
    ClientFirst, ClientFinal, ScramClient, ScramCredential, ScramError, ScramMechanism, ServerFinal, ServerFirst,
    make_credential, sasl_name, username_of,
)

SHA1 = ScramMechanism("SCRAM-SHA-1", "sha1", 0)

# RFC 7677 section 3 (SCRAM-SHA-256) and RFC 5802 section 5 (SCRAM-SHA-1): user "user", password "pencil".
VECTORS = [
    (scram.MECHANISMS["SCRAM-SHA-256"], "rOprNGfwEbeRWgbNEkqO",
     "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
     "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
     "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
    (SHA1, "fyko+d2lbbFgONRv9qkxdawL",
     "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
     "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
     "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
]


@pytest.mark.parametrize("mechanism,nonce,server_first,client_final,server_final", VECTORS,
                         ids=["rfc7677-sha256", "rfc5802-sha1"])
def test_client_produces_the_rfc_messages(mechanism, nonce, server_first, client_final, server_final):
    client = ScramClient(mechanism, "user", "pencil", nonce=nonce)
    assert client.first() == f"n,,n=user,r={nonce}".encode()
    assert client.final(server_first.encode()) == client_final.encode()
    client.verify(server_final.encode())  # the server's signature checks out
    with pytest.raises(ScramError):
        client.verify(b"v=" + base64.b64encode(b"\0" * len(base64.b64decode(server_final[2:]))))


@pytest.mark.parametrize("mechanism,nonce,server_first,client_final,server_final", VECTORS,
                         ids=["rfc7677-sha256", "rfc5802-sha1"])
def test_server_accepts_the_rfc_exchange_and_signs_as_the_rfc(mechanism, nonce, server_first, client_final,
                                                             server_final, monkeypatch):
    first = ServerFirst.parse(server_first.encode())
    credential = make_credential(mechanism, "pencil", first.iterations, salt=first.salt)
    monkeypatch.setitem(scram.MECHANISMS, mechanism.name, mechanism)
    server = ScramServer(mechanism.name, lambda m, u: credential if (m, u) == (mechanism.name, "user") else None)
    monkeypatch.setattr("odradek.broker.security.sasl_server.random_nonce", lambda: first.nonce[len(nonce):])
    assert server.evaluate(f"n,,n=user,r={nonce}".encode()) == server_first.encode()
    assert server.evaluate(client_final.encode()) == server_final.encode()
    assert server.complete and server.authorization_id == "user"


def test_server_refuses_a_wrong_proof_an_unknown_user_and_a_tampered_final_message():
    mechanism = scram.MECHANISMS["SCRAM-SHA-512"]
    credential = make_credential(mechanism, "right", 4096)
    lookup = {("SCRAM-SHA-512", "alice"): credential}.get

    def exchange(user, password, tamper_nonce=False):
        server = ScramServer("SCRAM-SHA-512", lambda m, u: lookup((m, u)))
        client = ScramClient(mechanism, user, password)
        final = client.final(server.evaluate(client.first()))
        if tamper_nonce:
            parsed = ClientFinal.parse(final)
            final = ClientFinal.build(b"n,,", parsed.nonce + "x", parsed.proof).to_bytes()
        return client, server.evaluate(final)

    client, reply = exchange("alice", "right")
    client.verify(reply)
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        exchange("alice", "wrong")
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        exchange("mallory", "right")
    with pytest.raises(SaslFailure, match="Invalid client credentials"):  # the proof covered the real nonce
        exchange("alice", "right", tamper_nonce=True)


def test_messages_follow_kafkas_grammar():
    first = ClientFirst.parse(b"n,,n=al=2Cice,r=abc,tokenauth=true")
    assert username_of(first.sasl_name) == "al,ice" and first.extensions == (("tokenauth", "true"),)
    assert first.bare == "n=al=2Cice,r=abc,tokenauth=true"
    for bad in (b"y,,n=u,r=abc", b"n,,n=u", b"n,,n=u,r=a,b", b"p=tls-unique,,n=u,r=abc"):
        with pytest.raises(ScramError):
            ClientFirst.parse(bad)
    assert ServerFinal.parse(b"e=invalid-proof").error == "invalid-proof"
    with pytest.raises(ScramError):
        ServerFirst.parse(b"r=abc,s=!!,i=4096")
    with pytest.raises(ScramError):
        username_of("a=b")
    assert sasl_name("a=b,c") == "a=3Db=2Cc"


def test_credential_text_is_kafkas():
    credential = make_credential(scram.MECHANISMS["SCRAM-SHA-256"], "secret", 4096, salt=b"salt")
    text = credential.to_text()
    assert text.startswith("salt=c2FsdA==,stored_key=") and text.endswith(",iterations=4096")
    assert ScramCredential.from_text(text) == credential
    for bad in ("salt=a,stored_key=b", "salt=c2FsdA==,stored_key=x,server_key=y,iterations=z", "junk"):
        with pytest.raises(ScramError):
            ScramCredential.from_text(bad)


def test_kafka_salts_are_base36_text():
    salt = scram.random_salt()
    assert salt.decode().isalnum() and salt.decode() == salt.decode().lower()

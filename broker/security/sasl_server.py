"""The broker's SASL mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, 7677).

Each server takes the client's tokens one by one (``evaluate``) until ``complete``; then
``authorization_id`` is the user. As in Kafka, failures come in two kinds: ``ClientVisibleFailure``
carries a message the client may see ("Authentication failed: Invalid username or password", as
PlainSaslServer says), any other ``SaslFailure`` gets the generic "Authentication failed during
authentication due to invalid credentials with SASL mechanism <M>", so that an unknown user and a
wrong password look the same to a SCRAM client.
"""

from __future__ import annotations

import hmac
from typing import Callable

from ...clients.security.scram import (
    MECHANISMS, ClientFinal, ClientFirst, ScramCredential, ScramError, ServerFinal, ServerFirst, auth_message,
    random_nonce, server_signature, username_of, verify_proof,
)

__all__ = ["SaslFailure", "ClientVisibleFailure", "PlainServer", "ScramServer", "create_server"]


class SaslFailure(Exception):
    """Authentication failed; the client gets Kafka's generic message."""


class ClientVisibleFailure(SaslFailure):
    """Authentication failed with a message meant for the client."""


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise ClientVisibleFailure("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = text.split("\0", 3)
        if len(parts) != 3:
            raise ClientVisibleFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, username, password = parts
        if not username:
            raise ClientVisibleFailure("Authentication failed: username not specified")
        if not password:
            raise ClientVisibleFailure("Authentication failed: password not specified")
        expected = self.users.get(username)
        # compare_digest even for an unknown user, so timing does not tell which users exist
        if not hmac.compare_digest((expected or "\0").encode(), password.encode()) or expected is None:
            raise ClientVisibleFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise ClientVisibleFailure("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        self.complete = True
        self.authorization_id = username
        return b""


class ScramServer:
    """Kafka's ScramSaslServer: client-first -> server-first, client-final -> server-final. Extensions are
    read and ignored, except ``tokenauth`` (delegation tokens, which Odradek does not have): it fails."""

    def __init__(self, mechanism: str, credentials: Callable[[str, str], ScramCredential | None]) -> None:
        self.mechanism_info = MECHANISMS[mechanism]
        self.mechanism = mechanism
        self.credentials = credentials  # (mechanism, user) -> credential
        self.complete = False
        self.authorization_id: str | None = None
        self._client_first: ClientFirst | None = None
        self._server_first: ServerFirst | None = None
        self._credential: ScramCredential | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._client_first is None:
                return self._first(token)
            if self._server_first is not None and not self.complete:
                return self._final(token)
        except ScramError as exc:
            raise SaslFailure(str(exc)) from None
        raise SaslFailure(f"Unexpected challenge in Sasl server state "
                          f"{'COMPLETE' if self.complete else 'FAILED'}")

    def _first(self, token: bytes) -> bytes:
        first = self._client_first = ClientFirst.parse(token)
        username = username_of(first.sasl_name)
        if dict(first.extensions).get("tokenauth", "").lower() == "true":
            raise SaslFailure(f"Token Authentication failed: Invalid tokenId : {username}")
        credential = self.credentials(self.mechanism, username)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        if first.authzid and username_of(first.authzid) != username:
            raise ClientVisibleFailure("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        if credential.iterations < self.mechanism_info.min_iterations:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum "
                              f"{self.mechanism_info.min_iterations} for {self.mechanism}")
        self._credential = credential
        self.authorization_id = username
        self._server_first = ServerFirst(first.nonce + random_nonce(), credential.salt, credential.iterations)
        return self._server_first.to_bytes()

    def _final(self, token: bytes) -> bytes:
        assert self._client_first is not None and self._server_first is not None and self._credential is not None
        final = ClientFinal.parse(token)
        # Kafka 2.8 does not compare the final message's nonce with its own (the proof covers the message as
        # sent); librdkafka < 2.2 (kcat 1.7) sends client nonce + server nonce there, so checking would lock it out.
        message = auth_message(self._client_first, self._server_first, final.without_proof)
        if not verify_proof(self.mechanism_info, self._credential, message, final.proof):
            raise SaslFailure("Invalid client credentials")
        signature = server_signature(self.mechanism_info, self._credential.server_key, message)
        self._credential = None
        self.complete = True
        return ServerFinal(signature=signature).to_bytes()


def create_server(mechanism: str, plain_users: dict[str, str],
                  scram_credentials: Callable[[str, str], ScramCredential | None]) -> PlainServer | ScramServer:
    if mechanism == "PLAIN":
        return PlainServer(plain_users)
    return ScramServer(mechanism, scram_credentials)

"""One connection's SASL authentication on the broker, as Kafka 2.8's SaslServerAuthenticator.

Until it completes, a SASL connection may send only:
  1. ApiVersions (first, at most once; answered by the normal handler, so the ranges are the broker's);
  2. SaslHandshake naming an enabled mechanism. v1 (KIP-152): the tokens then come in SaslAuthenticate
     requests, answered with SaslAuthenticate responses. v0: the legacy flow of old clients, each token a
     bare size-prefixed frame without a Kafka header, answered the same way;
  3. the mechanism's tokens, until the mechanism completes: the connection's principal becomes
     ``User:<authorization id>`` and it serves every API from then on.
Anything else closes the connection without an answer (IllegalSaslStateException in Kafka). A failed
authentication is answered (SASL_AUTHENTICATION_FAILED with Kafka's message, or UNSUPPORTED_SASL_MECHANISM)
after ``connection.failed.authentication.delay.ms``, and the connection is then closed.

``receive(frame)`` returns a ``Step`` the connection carries out; nothing here touches the socket.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Any

from ...protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    IllegalSaslStateError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
)
from ...protocol.header import decode_request, encode_response_parts
from ...protocol.messages import RESPONSES, SaslAuthenticateResponse, SaslHandshakeResponse
from ...protocol.error_fields import set_error_codes
from .credential_cache import CredentialCache
from .listener_config import ListenerSecurity
from .principal import USER_TYPE, KafkaPrincipal
from .sasl_server import ClientVisibleFailure, SaslFailure, create_server

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">hh")
_SIZE = struct.Struct(">i")
_API_VERSIONS, _HANDSHAKE, _AUTHENTICATE = int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE), \
    int(ApiKey.SASL_AUTHENTICATE)


@dataclass
class Step:
    """What the connection does with one frame: ``dispatch`` it as a normal request (ApiVersions), write
    ``response``; then ``principal`` set means authenticated, ``fail`` means close after the delay (the
    response goes out just before), ``close`` means close now without an answer."""
    dispatch: bool = False
    response: list[Any] | None = None
    principal: KafkaPrincipal | None = None
    fail: str = ""
    close: str = ""


class SaslAuthenticator:
    INITIAL, HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = "INITIAL", "HANDSHAKE", "AUTHENTICATE", "COMPLETE", "FAILED"

    def __init__(self, listener: ListenerSecurity, credentials: CredentialCache) -> None:
        self.listener = listener
        self.credentials = credentials
        self.state = self.INITIAL
        self.mechanism: str | None = None
        self.framed = True  # SaslHandshake v1: tokens in SaslAuthenticate requests; v0: bare tokens
        self._server: Any = None

    def receive(self, frame: Any) -> Step:
        try:
            if self.state == self.AUTHENTICATE:
                return self._token(frame)
            if self.state in (self.INITIAL, self.HANDSHAKE):
                return self._kafka_request(frame)
            return Step(close=f"unexpected frame in SASL state {self.state}")
        except Exception as exc:  # a malformed request: Kafka closes the connection
            self.state = self.FAILED
            return Step(close=f"invalid SASL request: {type(exc).__name__}: {exc}")

    # -- before the mechanism is chosen ------------------------------------------------------------
    def _kafka_request(self, frame: Any) -> Step:
        if len(frame) < _HEADER.size:
            self.state = self.FAILED
            return Step(close="not a Kafka request during SASL handshake")
        api_key, version = _HEADER.unpack_from(frame)
        if api_key == _API_VERSIONS and self.state == self.INITIAL:
            low, high = KAFKA_2_8_VERSIONS[_API_VERSIONS]
            if low <= version <= high:  # answered by the handler; an unsupported version may be retried
                self.state = self.HANDSHAKE
            return Step(dispatch=True)
        if api_key != _HANDSHAKE:
            self.state = self.FAILED
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
            return Step(close=f"Unexpected Kafka request of type {name} during SASL handshake")
        header, body = decode_request(frame)
        mechanisms = list(self.listener.sasl_mechanisms)
        if body.mechanism not in mechanisms:
            self.state = self.FAILED
            response = SaslHandshakeResponse(error_code=UnsupportedSaslMechanismError.code, mechanisms=mechanisms)
            return Step(response=encode_response_parts(response, header.api_version, header.correlation_id),
                        fail=f"Unsupported SASL mechanism {body.mechanism}")
        self.mechanism = body.mechanism
        self.framed = header.api_version >= 1
        self._server = create_server(body.mechanism, self.listener.plain_users, self.credentials.get)
        self.state = self.AUTHENTICATE
        response = SaslHandshakeResponse(error_code=0, mechanisms=mechanisms)
        return Step(response=encode_response_parts(response, header.api_version, header.correlation_id))

    # -- the mechanism's tokens ---------------------------------------------------------------------
    def _token(self, frame: Any) -> Step:
        if not self.framed:
            return self._legacy_token(bytes(frame))
        header, body = decode_request(frame)
        version, correlation_id = header.api_version, header.correlation_id
        if header.api_key != _AUTHENTICATE:
            self.state = self.FAILED
            response = set_error_codes(RESPONSES[header.api_key].cls(), IllegalSaslStateError.code)
            return Step(response=encode_response_parts(response, version, correlation_id),
                        fail=f"Unexpected Kafka request of type {header.api_key} during SASL authentication")
        try:
            token = self._server.evaluate(bytes(body.auth_bytes or b""))
        except SaslFailure as exc:
            self.state = self.FAILED
            message = str(exc) if isinstance(exc, ClientVisibleFailure) else (
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}")
            log.info("Failed authentication with SASL mechanism %s: %s", self.mechanism, exc)
            response = SaslAuthenticateResponse(error_code=SaslAuthenticationFailedError.code, error_message=message,
                                                auth_bytes=b"", session_lifetime_ms=0)
            return Step(response=encode_response_parts(response, version, correlation_id), fail=message)
        response = SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=token, session_lifetime_ms=0)
        return self._after_token(Step(response=encode_response_parts(response, version, correlation_id)))

    def _legacy_token(self, token: bytes) -> Step:
        try:
            reply = self._server.evaluate(token)
        except SaslFailure as exc:  # v0 has no way to say why: the connection just closes
            self.state = self.FAILED
            log.info("Failed authentication with SASL mechanism %s: %s", self.mechanism, exc)
            return Step(fail=str(exc))
        return self._after_token(Step(response=[_SIZE.pack(len(reply)), reply]))

    def _after_token(self, step: Step) -> Step:
        if self._server.complete:
            self.state = self.COMPLETE
            step.principal = KafkaPrincipal(USER_TYPE, self._server.authorization_id)
        return step

"""The client side of SASL on a Kafka connection: SaslHandshake v1, then SaslAuthenticate frames.

As the Java client after KIP-152: ApiVersions first (done by the connection), the handshake naming the
mechanism, then each token in a SaslAuthenticate request. PLAIN sends one token
(``\\0username\\0password``); SCRAM sends client-first and client-final and checks the server's signature.
A broker's error (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED with its message) is raised
as that Kafka error; the caller closes the connection.
"""

from __future__ import annotations

from typing import Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import IllegalSaslStateError, SaslAuthenticationFailedError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from .client_security import ClientSecurity
from .scram import MECHANISMS as SCRAM_MECHANISMS, ScramClient, ScramError

__all__ = ["authenticate"]


async def authenticate(conn: Any, security: ClientSecurity, timeout: float | None = None) -> None:
    """Authenticate ``conn`` (a negotiated BrokerConnection) with ``security``'s mechanism and credentials."""
    mechanism = security.sasl_mechanism or ""
    if conn.version_for(ApiKey.SASL_HANDSHAKE) < 1:
        raise IllegalSaslStateError(f"{conn.host}:{conn.port} has no SaslHandshake v1 (pre-1.0 brokers are not "
                                    "supported)")
    handshake = await conn.send(SaslHandshakeRequest(mechanism=mechanism), version=1, timeout=timeout)
    if handshake.error_code:
        raise for_code(handshake.error_code)(  # type: ignore[misc]
            f"{conn.host}:{conn.port} does not take SASL mechanism {mechanism}; it enables "
            f"{', '.join(handshake.mechanisms) or 'none'}")
    if mechanism == "PLAIN":
        token = b"\0" + (security.sasl_username or "").encode() + b"\0" + (security.sasl_password or "").encode()
        await _exchange(conn, token, timeout)
        return
    scram_mechanism = SCRAM_MECHANISMS.get(mechanism)
    if scram_mechanism is None:
        raise ValueError(f"unsupported SASL mechanism {mechanism!r}")
    client = ScramClient(scram_mechanism, security.sasl_username or "", security.sasl_password or "")
    server_first = await _exchange(conn, client.first(), timeout)
    try:
        final = client.final(server_first)
    except ScramError as exc:
        raise SaslAuthenticationFailedError(str(exc)) from None
    server_final = await _exchange(conn, final, timeout)
    try:
        client.verify(server_final)
    except ScramError as exc:
        raise SaslAuthenticationFailedError(str(exc)) from None


async def _exchange(conn: Any, token: bytes, timeout: float | None) -> bytes:
    response = await conn.send(SaslAuthenticateRequest(auth_bytes=token), timeout=timeout)
    if response.error_code:
        raise for_code(response.error_code)(response.error_message or "")  # type: ignore[misc]
    return bytes(response.auth_bytes or b"")

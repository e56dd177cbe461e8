"""SaslHandshake (17) and SaslAuthenticate (36) reaching the request handlers: ILLEGAL_SASL_STATE.

Kafka 2.8 advertises both APIs on every listener. On a SASL listener the authenticator consumes them
before a connection is authenticated; whatever reaches KafkaApis (any request on a PLAINTEXT listener, or
a repeated handshake after authentication) is answered ILLEGAL_SASL_STATE (KafkaApis
handleSaslHandshakeRequest / handleSaslAuthenticateRequest). On SASL listeners the connection's
authenticator (broker/security/sasl_authenticator.py) answers them until the connection is authenticated;
re-authentication (KIP-368) is not implemented, so a later handshake lands here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import IllegalSaslStateError  # type: ignore[attr-defined]
from ...protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def sasl_handshake(request: "Request", error_code: int = IllegalSaslStateError.code) -> Any:
    return SaslHandshakeResponse(error_code=error_code, mechanisms=[])


def sasl_authenticate(request: "Request", error_code: int = IllegalSaslStateError.code) -> Any:
    message = _AFTER_AUTHENTICATION if error_code == IllegalSaslStateError.code else None
    return SaslAuthenticateResponse(error_code=error_code, error_message=message, auth_bytes=b"")


def register(apis: "KafkaApis", services: "BrokerServices") -> None:
    apis.register(ApiKey.SASL_HANDSHAKE, sasl_handshake, sasl_handshake)
    apis.register(ApiKey.SASL_AUTHENTICATE, sasl_authenticate, sasl_authenticate)

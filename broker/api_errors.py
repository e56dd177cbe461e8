"""The error bodies and codes shared by the switchboard (kafka_apis.py) and the API handlers (apis/).

Below both, so that a handler registering the generic error body, or turning an exception into a code,
does not import the switchboard that calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.error_fields import set_error_codes
from ..protocol.errors import KafkaError, UnknownServerError
from ..protocol.messages import RESPONSES

if TYPE_CHECKING:
    from .network.request_channel import Request


def generic_error_response(request: "Request", code: int) -> Any:
    """A default response of the request's API with every error_code set.

    Good for APIs with a top-level error code; APIs answering per topic or partition should register
    a builder that mirrors the request's topics and partitions, then calls ``set_error_codes``.
    """
    body = RESPONSES[request.api_key].cls()
    return set_error_codes(body, code)


def error_code_of(exc: BaseException) -> int:
    """A KafkaError's own code; anything else is UNKNOWN_SERVER_ERROR (-1)."""
    return exc.code if isinstance(exc, KafkaError) else UnknownServerError.code

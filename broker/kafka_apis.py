"""KafkaApis: the switchboard from api key to handler, and the one error path.

A handler takes a ``Request`` and returns (or, if async or parked in the purgatory, resolves to) one of:
- a response body (a ``*Response`` data class): encoded at the request's version and sent;
- ``None``: nothing is sent and the connection is unmuted (acks=0 Produce);
- a ``Response`` (e.g. ``Response.close``) for anything else.

Any exception a handler raises (or one raised while encoding its answer) becomes that request's error
response: a ``KafkaError`` gives its code, anything else UNKNOWN_SERVER_ERROR (-1) and a logged
traceback. The body comes from the error builder registered with the handler,
``error_response(request, error_code)``, or from ``api_errors.generic_error_response``. A request that
gets no response (acks=0 Produce) cannot carry an error, so the connection is closed instead, as Kafka
does.

Every API, ApiVersions included (``apis/api_versions.py``, which reads the live ``handlers`` table), is
registered by the composition root (broker/server.py); this module imports none of them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable

from ..protocol.errors import KafkaError
from ..protocol.header import encode_response_parts
from ..protocol.schema import Struct
from ..protocol.error_fields import clip_error_messages, set_error_codes  # noqa: F401 (re-exported)
from .api_errors import error_code_of, generic_error_response
from .network.request_channel import Request, Response
from .purgatory.completion import Completion

log = logging.getLogger(__name__)

Handler = Callable[[Request], Any]
ErrorBuilder = Callable[[Request, int], Any]


class KafkaApis:
    def __init__(self) -> None:
        self.handlers: dict[int, Handler] = {}
        self.error_builders: dict[int, ErrorBuilder] = {}
        self.errors = 0  # handler exceptions turned into error responses
        # (request, response body) before encoding: broker/metrics counts the error codes (ErrorsPerSec)
        self.on_response: Callable[[Request, Any], None] | None = None
        # (request, response body or None) before encoding: client quotas (broker/quota) may mute the
        # connection and set the body's throttle_time_ms
        self.throttle: Callable[[Request, Any], None] | None = None

    def register(self, api_key: int, handler: Handler, error_response: ErrorBuilder | None = None) -> None:
        self.handlers[int(api_key)] = handler
        if error_response is not None:
            self.error_builders[int(api_key)] = error_response
        else:
            self.error_builders.pop(int(api_key), None)

    def served(self) -> set[int]:
        return set(self.handlers)

    def dispatch(self, request: Request) -> Response | Completion | Awaitable[Response]:
        """Run the handler. A handler that has to wait gives back a ``Completion`` (a fetch or acks=-1
        produce parked in the purgatory: the response is built and sent in the call that completes it) or
        another awaitable (a ZooKeeper call), which the handler pool finishes in its own task; either way no
        request-handler task is held while a request waits."""
        try:
            result = self.handlers[request.header.api_key](request)
            if type(result) is Completion:
                return result.then(lambda body: self._answer(request, body),
                                   lambda exc: self.error_response(request, exc))
            if not isinstance(result, Struct) and inspect.isawaitable(result):
                return self._finish(request, result)
            return self._to_response(request, result)
        except Exception as exc:
            return self.error_response(request, exc)

    def _answer(self, request: Request, body: Any) -> Response | Awaitable[Response]:
        """A parked request's body, once its Completion is set: the response, or (a body still to be
        computed off the loop, e.g. Fetch v0-3 down-conversion) an awaitable of it."""
        if not isinstance(body, Struct) and inspect.isawaitable(body):
            return self._finish(request, body)
        try:
            return self._to_response(request, body)
        except Exception as exc:
            return self.error_response(request, exc)

    async def _finish(self, request: Request, pending: Awaitable[Any]) -> Response:
        try:
            return self._to_response(request, await pending)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self.error_response(request, exc)

    async def handle(self, request: Request) -> Response:
        result: Any = self.dispatch(request)
        while not isinstance(result, Response):  # a Completion may resolve to a coroutine still to await
            result = await result
        return result

    def _to_response(self, request: Request, result: Any) -> Response:
        if isinstance(result, Response):
            return result
        if self.throttle is not None:
            self.throttle(request, result)  # an acks=0 Produce (None) may still be throttled
        if result is None or not request.expects_response:
            return Response.noop(request)  # acks=0: never answered, whatever the handler built
        if self.on_response is not None:
            self.on_response(request, result)
        return Response.send(request, _encode(request, result))

    def error_response(self, request: Request, exc: BaseException) -> Response:
        """The one error path: the request's own error response, or CLOSE when there is none."""
        self.errors += 1
        code = error_code_of(exc)
        if isinstance(exc, KafkaError):
            log.debug("%r failed: %s", request, exc)
        else:
            log.exception("%r failed with an unexpected error", request)
        if not request.expects_response:
            return Response.close(request, f"acks=0 request failed: {exc}")
        builder = self.error_builders.get(request.header.api_key, generic_error_response)
        try:
            body = builder(request, code)
            if self.throttle is not None:
                self.throttle(request, body)
            if self.on_response is not None:
                self.on_response(request, body)
            return Response.send(request, _encode(request, body))
        except Exception:
            log.exception("Cannot build the error response of %r; closing its connection", request)
            return Response.close(request, "no error response could be built")


def _encode(request: Request, body: Any) -> list[Any]:
    version = 0 if request.unsupported_version else request.header.api_version
    try:
        return encode_response_parts(body, version, request.header.correlation_id)
    except ValueError:
        if not clip_error_messages(body):
            raise
        return encode_response_parts(body, version, request.header.correlation_id)

"""JSON endpoints: each answers its data, or its own error, so one failing admin call spoils only the panel
of the page that asked for it."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import Any, Awaitable, Callable

from aiohttp import web

from ..protocol.errors import KafkaError

log = logging.getLogger(__name__)


class BadRequest(Exception):
    """The request itself is wrong (400): a missing field, a value that is not a number..."""


def dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), default=str)


def error_text(exc: BaseException) -> str:
    if isinstance(exc, KafkaError):
        detail = exc.args[0] if exc.args and exc.args[0] else ""
        return f"{type(exc).__name__}: {detail}".rstrip(": ") if detail else type(exc).__name__
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def endpoint(fn: Callable[[web.Request], Awaitable[Any]]) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Wrap a handler returning plain data: 200 with its JSON, 400 for a BadRequest, 502 with
    ``{"error": ...}`` when the cluster answered an error or could not be reached."""
    @functools.wraps(fn)
    async def handler(request: web.Request) -> web.Response:
        try:
            data = await fn(request)
        except web.HTTPException:
            raise
        except BadRequest as exc:
            return web.Response(text=dumps({"error": str(exc)}), status=400, content_type="application/json")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the panel shows it; the console goes on
            log.info("%s %s failed: %s", request.method, request.path, error_text(exc))
            return web.Response(text=dumps({"error": error_text(exc), "kind": type(exc).__name__}), status=502,
                                content_type="application/json")
        return web.Response(text=dumps(data), content_type="application/json")
    return handler


async def body(request: web.Request) -> dict[str, Any]:
    # Only JSON bodies: a page of another site can send a form or text/plain to 127.0.0.1 without asking,
    # but not application/json (the browser's CORS preflight, which this server never allows, comes first).
    if request.content_type != "application/json":
        raise BadRequest("the request body must be JSON, sent as Content-Type: application/json")
    try:
        data = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the request body must be a JSON object") from None
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    return data


def integer(value: Any, what: str, default: int | None = None) -> int:
    if value in (None, ""):
        if default is None:
            raise BadRequest(f"{what} is required")
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{what} must be an integer, not {value!r}") from None


def text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{what} is required")
    return value

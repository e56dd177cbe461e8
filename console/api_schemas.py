"""Schemas: the subjects of a schema registry (``--schema-registry URL``, Confluent's REST API, such as
odradek-schema-registry) and each subject's versions. The console asks the registry over HTTP as any of
its clients does; it never reads ``_schemas`` itself."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import aiohttp
import yarl
from aiohttp import web

from .context import console_of
from .json_api import BadRequest, endpoint

_ACCEPT = {"Accept": "application/vnd.schemaregistry.v1+json"}
_TIMEOUT = aiohttp.ClientTimeout(total=10)


class RegistryError(Exception):
    """The registry answered an error (its error_code and message) or could not be reached."""


async def _get(base: str, path: str, auth: aiohttp.BasicAuth | None, **params: str) -> Any:
    try:
        async with aiohttp.ClientSession(timeout=_TIMEOUT, auth=auth) as session:
            async with session.get(base.rstrip("/") + path, params=params, headers=_ACCEPT) as answer:
                data = await answer.json(content_type=None)
                if answer.status >= 400:
                    detail = data if isinstance(data, dict) else {}
                    raise RegistryError(f"{detail.get('error_code', answer.status)} {detail.get('message', '')}"
                                        .strip())
                return data
    except aiohttp.ClientError as exc:
        raise RegistryError(f"schema registry {base} unreachable: {exc}") from None


def _registry(request: web.Request) -> tuple[str, aiohttp.BasicAuth | None]:
    """The registry's URL, and the basic auth its user:password@ part names (if any)."""
    url = console_of(request).schema_registry_url
    if not url:
        raise BadRequest("no schema registry: start the console with --schema-registry URL")
    parsed = yarl.URL(url)
    auth = aiohttp.BasicAuth(parsed.user, parsed.password or "") if parsed.user else None
    return str(parsed.with_user(None)), auth


@endpoint
async def subjects(request: web.Request) -> dict[str, Any]:
    base, auth = _registry(request)
    names = await _get(base, "/subjects", auth)
    rows = []
    for name in sorted(names):
        latest = await _get(base, f"/subjects/{quote(name, safe='')}/versions/latest", auth)
        versions = await _get(base, f"/subjects/{quote(name, safe='')}/versions", auth)
        rows.append({"subject": name, "versions": len(versions), "latest": latest["version"],
                     "id": latest["id"], "type": latest.get("schemaType", "AVRO")})
    config = await _get(base, "/config", auth)
    return {"url": base, "compatibility": config.get("compatibilityLevel"), "subjects": rows}


@endpoint
async def subject(request: web.Request) -> dict[str, Any]:
    base, auth = _registry(request)
    name = quote(request.match_info["subject"], safe="")
    versions = []
    for version in await _get(base, f"/subjects/{name}/versions", auth):
        found = await _get(base, f"/subjects/{name}/versions/{version}", auth)
        versions.append({"version": found["version"], "id": found["id"], "type": found.get("schemaType", "AVRO"),
                         "schema": found["schema"], "references": found.get("references", [])})
    try:
        compatibility = (await _get(base, f"/config/{name}", auth, defaultToGlobal="true")).get("compatibilityLevel")
    except RegistryError:
        compatibility = None
    return {"subject": request.match_info["subject"], "compatibility": compatibility, "versions": versions}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/schemas", subjects),
    ("GET", "/api/schemas/{subject}", subject),
]

"""Schemas: the subjects of a schema registry (``--schema-registry URL``, Confluent's REST API, such as
odradek-schema-registry) and each subject's versions. The console asks the registry over HTTP as any of
its clients does; it never reads ``_schemas`` itself."""

from __future__ import annotations

import asyncio
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


class _Registry:
    """One HTTP session to the registry for the requests of one console call."""

    def __init__(self, request: web.Request) -> None:
        url = console_of(request).schema_registry_url
        if not url:
            raise BadRequest("no schema registry: start the console with --schema-registry URL")
        parsed = yarl.URL(url)
        auth = aiohttp.BasicAuth(parsed.user, parsed.password or "") if parsed.user else None
        self.base = str(parsed.with_user(None))
        self.session = aiohttp.ClientSession(timeout=_TIMEOUT, auth=auth)

    async def __aenter__(self) -> "_Registry":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.session.close()

    async def get(self, path: str, **params: str) -> Any:
        try:
            async with self.session.get(self.base.rstrip("/") + path, params=params, headers=_ACCEPT) as answer:
                data = await answer.json(content_type=None)
                if answer.status >= 400:
                    detail = data if isinstance(data, dict) else {}
                    raise RegistryError(f"{detail.get('error_code', answer.status)} {detail.get('message', '')}"
                                        .strip())
                return data
        except aiohttp.ClientError as exc:
            raise RegistryError(f"schema registry {self.base} unreachable: {exc}") from None


async def _subject_row(registry: _Registry, name: str) -> dict[str, Any]:
    path = f"/subjects/{quote(name, safe='')}/versions"
    latest, versions = await asyncio.gather(registry.get(path + "/latest"), registry.get(path))
    return {"subject": name, "versions": len(versions), "latest": latest["version"], "id": latest["id"],
            "type": latest.get("schemaType", "AVRO")}


@endpoint
async def subjects(request: web.Request) -> dict[str, Any]:
    async with _Registry(request) as registry:
        names = await registry.get("/subjects")
        # every subject's two requests at once, over one session: a page of many subjects is one round trip deep
        rows = await asyncio.gather(*(_subject_row(registry, name) for name in sorted(names)))
        config = await registry.get("/config")
    return {"url": registry.base, "compatibility": config.get("compatibilityLevel"), "subjects": list(rows)}


async def _version(registry: _Registry, name: str, version: int) -> dict[str, Any]:
    found = await registry.get(f"/subjects/{name}/versions/{version}")
    return {"version": found["version"], "id": found["id"], "type": found.get("schemaType", "AVRO"),
            "schema": found["schema"], "references": found.get("references", [])}


@endpoint
async def subject(request: web.Request) -> dict[str, Any]:
    name = quote(request.match_info["subject"], safe="")
    async with _Registry(request) as registry:
        numbers = await registry.get(f"/subjects/{name}/versions")
        versions = await asyncio.gather(*(_version(registry, name, number) for number in numbers))
        try:
            compatibility = (await registry.get(f"/config/{name}", defaultToGlobal="true")).get("compatibilityLevel")
        except RegistryError:
            compatibility = None
    return {"subject": request.match_info["subject"], "compatibility": compatibility, "versions": list(versions)}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/schemas", subjects),
    ("GET", "/api/schemas/{subject}", subject),
]

"""The REST API (Confluent Schema Registry v1) on aiohttp: routes, JSON bodies with Confluent's content type,
error answers, optional HTTP basic auth, and forwarding of writes to the writer process."""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from typing import Any, Awaitable, Callable

import aiohttp
from aiohttp import web

from . import errors
from .election import WriterElection
from .formats import SCHEMA_TYPES
from .service import SchemaService, schema_json

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
FORWARDED = "X-Odradek-Forwarded"
WRITER_WAIT = 15.0  # seconds a write waits for an election in progress
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def reply(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


def _subject(request: web.Request) -> str:
    return request.match_info["subject"]


def _schema_id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise errors.schema_not_found() from None


async def _body(request: web.Request) -> Any:
    text = await request.text()
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as exc:
        raise errors.RestError(400, 400, f"Unrecognized request body: {exc}") from None


class RestApi:
    def __init__(self, service: SchemaService, election: WriterElection, basic_auth: str | None = None,
                 after_forward: Callable[[], Awaitable[None]] | None = None) -> None:
        self.service = service
        self.election = election
        self.after_forward = after_forward  # reads `_schemas` to the end, so a write forwarded is then seen here
        self.basic_auth = basic_auth  # "user:password", or None for no authentication
        self._http: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors])
        app.on_cleanup.append(self._close_http)
        get, post, put, delete = web.get, web.post, web.put, web.delete
        s = "/subjects/{subject}"
        app.add_routes([
            get("/", self.root),
            get("/schemas/types", self.schema_types),
            get("/schemas", self.all_schemas),
            get("/schemas/ids/{id}", self.schema_by_id),
            get("/schemas/ids/{id}/schema", self.raw_schema_by_id),
            get("/schemas/ids/{id}/subjects", self.subjects_of_id),
            get("/schemas/ids/{id}/versions", self.versions_of_id),
            get("/subjects", self.subjects),
            post(s, self.lookup),
            delete(s, self.write(self.delete_subject)),
            get(s + "/versions", self.versions),
            post(s + "/versions", self.write(self.register)),
            get(s + "/versions/{version}", self.version),
            get(s + "/versions/{version}/schema", self.raw_version),
            get(s + "/versions/{version}/referencedby", self.referenced_by),
            delete(s + "/versions/{version}", self.write(self.delete_version)),
            post("/compatibility" + s + "/versions/{version}", self.check),
            post("/compatibility" + s + "/versions", self.check),
            get("/config", self.get_config), put("/config", self.write(self.set_config)),
            delete("/config", self.write(self.delete_config)),
            get("/config/{subject}", self.get_config), put("/config/{subject}", self.write(self.set_config)),
            delete("/config/{subject}", self.write(self.delete_config)),
            get("/mode", self.get_mode), put("/mode", self.write(self.set_mode)),
            get("/odradek/writer", self.writer),
            get("/mode/{subject}", self.get_mode), put("/mode/{subject}", self.write(self.set_mode)),
            delete("/mode/{subject}", self.write(self.delete_mode)),
        ])
        return app

    # -- middleware: errors, authentication, forwarding ------------------------------------------------------
    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if self.basic_auth is not None and not self._authorized(request):
                return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="SchemaRegistry"'},
                                    content_type=CONTENT_TYPE,
                                    text=json.dumps({"error_code": 401, "message": "Unauthorized"}))
            return await handler(request)
        except errors.RestError as exc:
            return reply(exc.body(), exc.status)
        except web.HTTPNotFound:
            return reply(errors.not_found().body(), 404)
        except web.HTTPMethodNotAllowed:
            return reply({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405)
        except Exception as exc:  # the store failing, a timeout: Confluent's 50001 / 50002
            log.exception("%s %s failed", request.method, request.path)
            error = errors.operation_timeout(str(exc) or type(exc).__name__) if isinstance(exc, TimeoutError) \
                else errors.store_error(str(exc) or type(exc).__name__)
            return reply(error.body(), error.status)

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            given = base64.b64decode(header[6:]).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(given, self.basic_auth or "")

    def write(self, handler: Handler) -> Handler:
        """A write runs on the writer: here when this process is it, else forwarded there."""
        async def run(request: web.Request) -> web.StreamResponse:
            await self.election.wait_for_writer(WRITER_WAIT)
            if self.election.is_writer:
                return await handler(request)
            if request.headers.get(FORWARDED) or self.election.writer_url is None:
                raise errors.unknown_writer()
            return await self._forward(request, self.election.writer_url)
        return run

    async def _forward(self, request: web.Request, writer_url: str) -> web.Response:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        headers = {"Content-Type": request.headers.get("Content-Type", CONTENT_TYPE), FORWARDED: "1"}
        if "Authorization" in request.headers:
            headers["Authorization"] = request.headers["Authorization"]
        try:
            async with self._http.request(request.method, writer_url + request.path_qs, data=await request.read(),
                                          headers=headers) as answer:
                text = await answer.text()
                if answer.status == 200 and self.after_forward is not None:
                    await self.after_forward()
                return web.Response(text=text, status=answer.status, content_type=CONTENT_TYPE)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise errors.forwarding_failed(str(exc) or type(exc).__name__) from None

    async def _close_http(self, app: web.Application) -> None:
        if self._http is not None:
            await self._http.close()

    # -- handlers -----------------------------------------------------------------------------------------
    async def root(self, request: web.Request) -> web.Response:
        return reply({})

    async def writer(self, request: web.Request) -> web.Response:
        """Ours, not Confluent's: which process writes (for operators and the fail-over tests)."""
        return reply({"writer": self.election.writer_url, "is_writer": self.election.is_writer})

    async def schema_types(self, request: web.Request) -> web.Response:
        return reply(sorted(SCHEMA_TYPES))

    async def all_schemas(self, request: web.Request) -> web.Response:
        prefix, deleted = request.query.get("subjectPrefix", ""), _flag(request, "deleted")
        latest_only = _flag(request, "latestOnly")
        found = []
        for subject in self.service.subjects(deleted, prefix):
            versions = self.service.state.versions(subject, deleted)
            found += [schema_json(v) for v in (versions[-1:] if latest_only else versions)]
        return reply(found)

    async def schema_by_id(self, request: web.Request) -> web.Response:
        return reply(self.service.schema_by_id(_schema_id(request), request.query.get("format")))

    async def raw_schema_by_id(self, request: web.Request) -> web.Response:
        content = self.service.content(_schema_id(request))
        return web.Response(text=self.service.formatted(content, request.query.get("format")),
                            content_type=CONTENT_TYPE)

    async def subjects_of_id(self, request: web.Request) -> web.Response:
        return reply(self.service.subjects_of(_schema_id(request), _flag(request, "deleted")))

    async def versions_of_id(self, request: web.Request) -> web.Response:
        return reply(self.service.versions_of(_schema_id(request), _flag(request, "deleted")))

    async def subjects(self, request: web.Request) -> web.Response:
        return reply(self.service.subjects(_flag(request, "deleted"), request.query.get("subjectPrefix", "")))

    async def lookup(self, request: web.Request) -> web.Response:
        return reply(self.service.lookup(_subject(request), await _body(request), _flag(request, "deleted")))

    async def delete_subject(self, request: web.Request) -> web.Response:
        return reply(await self.service.delete_subject(_subject(request), _flag(request, "permanent")))

    async def versions(self, request: web.Request) -> web.Response:
        return reply(self.service.version_numbers(_subject(request), _flag(request, "deleted")))

    async def register(self, request: web.Request) -> web.Response:
        return reply(await self.service.register(_subject(request), await _body(request)))

    async def version(self, request: web.Request) -> web.Response:
        value = self.service.get_version(_subject(request), request.match_info["version"], _flag(request, "deleted"))
        content = self.service.state.contents[value.id]
        return reply(schema_json(value, self.service.formatted(content, request.query.get("format"))))

    async def raw_version(self, request: web.Request) -> web.Response:
        value = self.service.get_version(_subject(request), request.match_info["version"], _flag(request, "deleted"))
        return web.Response(text=value.schema, content_type=CONTENT_TYPE)

    async def referenced_by(self, request: web.Request) -> web.Response:
        return reply(self.service.referenced_by(_subject(request), request.match_info["version"]))

    async def delete_version(self, request: web.Request) -> web.Response:
        return reply(await self.service.delete_version(_subject(request), request.match_info["version"],
                                                       _flag(request, "permanent")))

    async def check(self, request: web.Request) -> web.Response:
        return reply(self.service.check(_subject(request), request.match_info.get("version"), await _body(request),
                                        _flag(request, "verbose")))

    async def get_config(self, request: web.Request) -> web.Response:
        return reply(self.service.get_config(request.match_info.get("subject"), _flag(request, "defaultToGlobal")))

    async def set_config(self, request: web.Request) -> web.Response:
        return reply(await self.service.set_config(request.match_info.get("subject"), await _body(request)))

    async def delete_config(self, request: web.Request) -> web.Response:
        return reply(await self.service.delete_config(request.match_info.get("subject")))

    async def get_mode(self, request: web.Request) -> web.Response:
        return reply(self.service.get_mode(request.match_info.get("subject"), _flag(request, "defaultToGlobal")))

    async def set_mode(self, request: web.Request) -> web.Response:
        return reply(await self.service.set_mode(request.match_info.get("subject"), await _body(request),
                                                 _flag(request, "force")))

    async def delete_mode(self, request: web.Request) -> web.Response:
        return reply(await self.service.delete_mode(request.match_info["subject"]))

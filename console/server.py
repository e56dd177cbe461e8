"""``odradek-console``: the web console's process.

    odradek-console --bootstrap-server 127.0.0.1:9092 [--command-config client.properties] [--port 8080]
                    [--host 127.0.0.1] [--metrics 127.0.0.1:7071,...] [--schema-registry URL]
                    [--basic-auth-file FILE]

It is an admin client of the cluster (its own process, never inside a broker), serving the pages under
``static/`` and the JSON endpoints of ``api_*.py``. It listens on 127.0.0.1 unless told otherwise; with
``--basic-auth-file`` (one ``user:password`` line) every request needs HTTP basic auth.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hmac
import logging
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from aiohttp import web

from ..clients.java_properties import parse_properties
from ..clients.security.client_security import security_kwargs_from_properties

from . import api_controller, api_groups, api_messages, api_schemas, api_search, api_security, api_topics
from .context import CONSOLE_KEY, Console

STATIC = Path(__file__).resolve().parent / "static"
PROG = "odradek-console"


def build_app(console: Console, credentials: tuple[str, str] | None = None) -> web.Application:
    middlewares = [_basic_auth(*credentials)] if credentials else []
    app = web.Application(middlewares=middlewares)
    app[CONSOLE_KEY] = console
    for module in (api_topics, api_messages, api_search, api_groups, api_security, api_controller, api_schemas):
        for method, path, handler in module.ROUTES:
            app.router.add_route(method, path, handler)

    async def index(_: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def no_icon(_: web.Request) -> web.Response:
        return web.Response(status=204)

    app.router.add_get("/", index)
    app.router.add_get("/favicon.ico", no_icon)
    app.router.add_static("/static/", STATIC)

    async def on_startup(_: web.Application) -> None:
        await console.start()

    async def on_cleanup(_: web.Application) -> None:
        await console.stop()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


def _basic_auth(user: str, password: str) -> Any:
    expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "basic" or not hmac.compare_digest(given.strip(), expected):
            return web.Response(status=401, text="authentication required",
                                headers={"WWW-Authenticate": 'Basic realm="odradek-console"'})
        return await handler(request)
    return check


async def serve(console: Console, host: str = "127.0.0.1", port: int = 8080,
                credentials: tuple[str, str] | None = None) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner (``await runner.cleanup()`` stops) and the bound port."""
    runner = web.AppRunner(build_app(console, credentials), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    return runner, sockets[0].getsockname()[1] if sockets else port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Odradek's web console: see and operate the "
                                     "cluster in a browser.")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]",
                        help="the cluster's brokers")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client settings (security.protocol, sasl.*, ssl.*), as Kafka's tools take them")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080; 0: any free)")
    parser.add_argument("--metrics", default="", metavar="HOST:PORT,...",
                        help="the brokers' Prometheus endpoints, sampled for the Overview's plots")
    parser.add_argument("--metrics-interval", type=float, default=5.0, metavar="SECONDS",
                        help="how often the metrics are sampled (default 5)")
    parser.add_argument("--schema-registry", metavar="URL",
                        help="a schema registry (Confluent's REST API, e.g. odradek-schema-registry) whose subjects "
                             "and versions the Schemas page shows; http://user:password@host:port for basic auth")
    parser.add_argument("--basic-auth-file", metavar="FILE",
                        help="a file holding one user:password line; every request then needs basic auth")
    return parser


def _read_text(path: str, flag: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"{PROG}: cannot read {flag} {path}: {exc.strerror}") from None


def console_from_args(args: argparse.Namespace) -> Console:
    security: dict[str, Any] = {}
    if args.command_config:
        props = {k: v for k, v, _ in parse_properties(_read_text(args.command_config, "--command-config"))}
        try:
            security = security_kwargs_from_properties(props)
        except ValueError as exc:
            raise SystemExit(f"{PROG}: --command-config {args.command_config}: {exc}") from None
    endpoints = [e.strip() for e in args.metrics.split(",") if e.strip()]
    return Console(args.bootstrap_server, security=security, metrics=endpoints,
                   metrics_interval_s=args.metrics_interval, schema_registry_url=args.schema_registry)


def credentials_from_args(args: argparse.Namespace) -> tuple[str, str] | None:
    if not args.basic_auth_file:
        return None
    lines = _read_text(args.basic_auth_file, "--basic-auth-file").strip().splitlines()
    line = lines[0] if lines else ""
    user, sep, password = line.partition(":")
    if not sep or not user:
        raise SystemExit(f"{PROG}: --basic-auth-file must hold one user:password line")
    return user, password


async def _main(args: argparse.Namespace) -> None:
    console = console_from_args(args)
    runner, port = await serve(console, args.host, args.port, credentials_from_args(args))
    print(f"Odradek console on http://{args.host}:{port}/ (cluster {args.bootstrap_server})", flush=True)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)
    await stopped.wait()
    await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_main(args))
    except OSError as exc:  # the port is taken, most often
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""odradek-schema-registry: one registry process (see the package's docstring)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from typing import Sequence

from aiohttp import web

from ..clients.java_properties import parse_properties
from ..clients.security.client_security import ClientSecurity
from ..clients.simple_client import SimpleClient
from .election import WriterElection
from .kafka_store import KafkaStore
from .rest import RestApi
from .service import SchemaService
from .state import RegistryState

log = logging.getLogger("odradek.schema_registry")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="odradek-schema-registry",
                                     description="A schema registry speaking Confluent's REST API, stored in "
                                                 "the cluster's _schemas topic")
    parser.add_argument("--bootstrap-server", required=True, help="brokers to connect to, host:port[,...]")
    parser.add_argument("--command-config", help="Kafka client properties (security.protocol, sasl.*, ssl.*)")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8081, help="HTTP port (default 8081; 0 picks a free one)")
    parser.add_argument("--advertised-url", help="the URL other registry processes forward writes to "
                                                 "(default http://<hostname>:<port>)")
    parser.add_argument("--topic", default="_schemas", help="the topic the schemas are stored in")
    parser.add_argument("--group-id", default="schema-registry", help="the group electing the writer")
    parser.add_argument("--session-timeout-ms", type=int, default=10000,
                        help="how long a writer that stopped answering keeps the role")
    parser.add_argument("--basic-auth", metavar="USER:PASSWORD", help="require HTTP basic authentication")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def _client(opts: argparse.Namespace, client_id: str) -> SimpleClient:
    security = None
    if opts.command_config:
        with open(opts.command_config, encoding="utf-8") as f:
            props = {key: value for key, value, _ in parse_properties(f.read())}
        security = ClientSecurity.from_properties(props)
    return SimpleClient(opts.bootstrap_server, client_id=client_id, security=security)


async def serve(opts: argparse.Namespace) -> None:
    client = _client(opts, "odradek-schema-registry")
    reader_client = _client(opts, "odradek-schema-registry-reader")
    state = RegistryState()
    store = KafkaStore(client, reader_client, state, opts.topic)
    await store.start()
    service = SchemaService(state, store.append)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((opts.host, opts.port))
    port = listener.getsockname()[1]
    host = socket.gethostname() if opts.host in ("0.0.0.0", "::", "") else opts.host
    url = opts.advertised_url or f"http://{host}:{port}"
    election = WriterElection(client, opts.group_id, url, store.append_noop,
                              session_timeout_ms=opts.session_timeout_ms)
    api = RestApi(service, election, opts.basic_auth, after_forward=store.catch_up)
    runner = web.AppRunner(api.app(), access_log=None)
    await runner.setup()
    await web.SockSite(runner, listener).start()
    election.start()
    print(f"Schema registry listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await election.close()
        await runner.cleanup()
        await store.close()
        await client.close()
        await reader_client.close()


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    logging.basicConfig(level=opts.log_level.upper(), stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(opts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A console served from a thread of the test process (its own event loop), so a test can reach into it:
run a coroutine on its loop, or make one admin call fail."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from typing import Any

from odradek.console.context import Console
from odradek.console.server import serve

# The console tests' brokers: an authorizer (so the ACL calls work) whose super user is the PLAINTEXT
# clients' ANONYMOUS, and internal topics that a two-broker cluster can host with one broker down.
CONSOLE_BROKER_OVERRIDES = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


class ConsoleThread:
    def __init__(self, bootstrap_servers: str, metrics: list[str] | None = None,
                 credentials: tuple[str, str] | None = None, schema_registry_url: str | None = None) -> None:
        self.console = Console(bootstrap_servers, metrics=metrics, metrics_interval_s=0.5, watch_interval_s=0.5,
                               lag_interval_s=0.5, topics_interval_s=0.5, schema_registry_url=schema_registry_url)
        self.credentials = credentials
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="console", daemon=True)
        self._runner: Any = None
        self.url = ""

    def start(self) -> "ConsoleThread":
        self._thread.start()
        self._runner, port = self.run(serve(self.console, "127.0.0.1", 0, self.credentials))
        self.url = f"http://127.0.0.1:{port}"
        return self

    def run(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self._runner is not None:
            self.run(self._runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def call(self, method: str, path: str, body: Any = None, headers: dict | None = None) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body) of one request to the console."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            text = exc.read()
            try:
                return exc.code, json.loads(text)
            except ValueError:
                return exc.code, text.decode(errors="replace")

    def get(self, path: str) -> Any:
        status, data = self.call("GET", path)
        assert status == 200, (path, status, data)
        return data

    def post(self, path: str, body: Any) -> Any:
        status, data = self.call("POST", path, body)
        assert status == 200, (path, status, data)
        return data

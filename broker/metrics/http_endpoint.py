"""The ``/metrics`` HTTP endpoint, served on the broker's event loop.

Serving on the loop (not prometheus_client's HTTP thread) means the collectors read the replica manager,
controller and coordinators between two events, never in the middle of one, so they need no locks. A
scrape costs the loop the time to format the text (a few milliseconds for thousands of series).
"""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

_MAX_HEADER_BYTES = 16384


class MetricsEndpoint:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        """Listen (port 0 picks a free one); returns the bound port."""
        self._server = await asyncio.start_server(self._serve, self.host or None, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def addresses(self) -> list[str]:
        """host:port of every socket listening (an empty host binds every IPv4 and IPv6 interface)."""
        if self._server is None:
            return []
        found = []
        for sock in self._server.sockets:
            host, port = sock.getsockname()[:2]
            found.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return found

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10.0):  # not wait_for: DESIGN.md, "Deadlines"
                head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEADER_BYTES:
                raise ValueError("header too large")
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, body, ctype = "405 Method Not Allowed", b"Only GET\n", "text/plain"
            elif path in ("/metrics", "/"):
                status, body, ctype = "200 OK", generate_latest(self.registry), CONTENT_TYPE_LATEST
            else:
                status, body, ctype = "404 Not Found", b"Try /metrics\n", "text/plain"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode("latin-1"))
            if method != "HEAD":
                writer.write(body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ConnectionError,
                ValueError):
            pass
        except Exception:
            log.exception("Metrics endpoint failed to answer a scrape")
        finally:
            writer.close()

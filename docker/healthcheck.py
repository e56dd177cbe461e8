#!/usr/bin/env python3
"""Docker HEALTHCHECK with no extra tools: ApiVersions to the broker's first listener must answer error 0.

The address comes from ``ODRADEK_HEALTHCHECK_ADDRESS`` (host:port) or else the first listener of the
entrypoint's server.properties (``ODRADEK_CONFIG_FILE``), on 127.0.0.1 when it binds all interfaces.
Exit code 0 = healthy, 1 = not (Docker's convention), with one line saying why.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

from odradek.broker.config import parse_properties
from odradek.protocol.header import decode_response, encode_request
from odradek.protocol.messages import REQUESTS

CONFIG_FILE = "/opt/odradek/config/server.properties"
TIMEOUT_S = 5.0


def address_from_config(path: str) -> tuple[str, int]:
    with open(path, encoding="latin-1") as f:
        props = {k: v for k, v, _ in parse_properties(f.read())}
    first = props.get("listeners", "PLAINTEXT://:9092").split(",")[0].strip()
    hostport = first.split("://", 1)[1]
    host, _, port = hostport.rpartition(":")
    host = host.strip("[]")
    return (host if host and host != "0.0.0.0" else "127.0.0.1"), int(port)


def check(host: str, port: int, timeout: float = TIMEOUT_S) -> str | None:
    """None when healthy, else what is wrong."""
    request = REQUESTS[18].cls()  # ApiVersions v0: no fields, understood by every version of every broker
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(encode_request(request, 0, 1, "odradek-healthcheck"))
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return f"{host}:{port} closed the connection"
                data += chunk
    except OSError as e:
        return f"cannot reach {host}:{port}: {e}"
    _, body = decode_response(memoryview(data)[4:], 18, 0)
    return None if body.error_code == 0 else f"ApiVersions answered error {body.error_code}"


def main() -> int:
    address = os.environ.get("ODRADEK_HEALTHCHECK_ADDRESS")
    try:
        if address:
            host, _, port = address.rpartition(":")
            target = (host or "127.0.0.1", int(port))
        else:
            target = address_from_config(os.environ.get("ODRADEK_CONFIG_FILE", CONFIG_FILE))
    except (OSError, ValueError, IndexError) as e:
        print(f"unhealthy: no broker address ({e})")
        return 1
    problem = check(*target)
    if problem:
        print(f"unhealthy: {problem}")
        return 1
    print(f"healthy: {target[0]}:{target[1]} answered ApiVersions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

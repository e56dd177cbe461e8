#!/usr/bin/env python3
"""Container entrypoint: the environment becomes server.properties, then the broker replaces this process.

    KAFKA_CFG_LOG_RETENTION_HOURS=72     -> log.retention.hours=72         (bitnami: `_` -> `.`, lowercase)
    KAFKA_BROKER_ID=1                    -> broker.id=1                    (Confluent: `_` -> `.`, `__` -> `_`,
    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP -> listener.security.protocol.map   `___` -> `-`)

Layers, later wins: the image's defaults (below), a mounted base file (``ODRADEK_BASE_CONFIG``, default
/opt/odradek/config/base.properties, when it exists), bare ``KAFKA_*`` variables, then ``KAFKA_CFG_*``. The
mapping is the broker's own (odradek.broker.config.env_to_properties), so the file says exactly what the
broker would read from the environment; variables of the images' scripts (KAFKA_HEAP_OPTS, KAFKA_OPTS,
KAFKA_LOG4J_*, ...) are not properties. The result is written to ``ODRADEK_CONFIG_FILE`` (default
/opt/odradek/config/server.properties).

Arguments: none or ``odradek-server [--override k=v ...]`` (or just ``--override ...``) start the broker with
that file; anything else (``odradek-topics ...``, ``bash``) is run as given, as the Kafka images do. The
broker is exec'd, not spawned: it is PID 1, so ``docker stop``'s SIGTERM reaches it and it shuts down under
control (leaderships move away first).
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

from odradek.broker.config import env_to_properties, parse_properties

CONFIG_FILE = "/opt/odradek/config/server.properties"
BASE_CONFIG = "/opt/odradek/config/base.properties"
SERVER = "odradek-server"

# What the image sets before any file or variable: data in the volume, one listener, metrics on the port
# operators know from the JMX exporter agent.
IMAGE_DEFAULTS = (
    ("log.dirs", "/var/lib/odradek/data"),
    ("listeners", "PLAINTEXT://:9092"),
    ("metrics.port", "7071"),  # odradek.metrics.port, when set, wins
    ("odradek.state.change.log.dir", "/var/lib/odradek/logs"),
)


def escape_key(key: str) -> str:
    out = []
    for ch in key:
        if ch in "=: #!\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def escape_value(value: str) -> str:
    """java.util.Properties escaping: backslashes, line breaks, and a leading space (otherwise stripped)."""
    text = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if text.startswith(" "):
        text = "\\" + text
    return text


def build_properties(environ: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(key, value, source) in file order: each key once, where its winning layer set it."""
    entries: list[tuple[str, str, str]] = [(k, v, "image default") for k, v in IMAGE_DEFAULTS]
    base = environ.get("ODRADEK_BASE_CONFIG", BASE_CONFIG)
    if os.path.isfile(base):
        with open(base, encoding="latin-1") as f:
            entries += [(k, v, f"{base} line {n}") for k, v, n in parse_properties(f.read())]
    entries += env_to_properties(environ)
    chosen: dict[str, tuple[str, str]] = {}
    for key, value, source in entries:
        chosen.pop(key, None)  # re-insert: the file lists keys in the order they were last set
        chosen[key] = (value, source)
    return [(k, v, s) for k, (v, s) in chosen.items()]


def render(entries: list[tuple[str, str, str]]) -> str:
    lines = ["# Written by the Odradek image's entrypoint from its defaults, the base file and the environment.",
             "# Edit the environment (KAFKA_CFG_* or KAFKA_*), not this file: it is rewritten at every start."]
    for key, value, source in entries:
        lines.append(f"# from {source}")
        lines.append(f"{escape_key(key)}={escape_value(value)}")
    return "\n".join(lines) + "\n"


def write_config(environ: Mapping[str, str]) -> str:
    path = environ.get("ODRADEK_CONFIG_FILE", CONFIG_FILE)
    entries = build_properties(environ)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(render(entries))
    os.replace(tmp, path)
    print(f"odradek entrypoint: wrote {len(entries)} settings to {path}", file=sys.stderr, flush=True)
    return path


def main(argv: list[str], environ: Mapping[str, str]) -> None:
    if not argv or argv[0] == SERVER or argv[0].startswith("-"):
        extra = argv[1:] if argv and argv[0] == SERVER else argv
        path = write_config(environ)
        os.execvp(SERVER, [SERVER, path, *extra])
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:], os.environ)

"""What our Kafka-style admin tools share: usage errors as one line, the argparse wrapper that raises
them, leftover-argument checks, --command-config reading and Kafka's way of printing an error."""

from __future__ import annotations

import argparse
from typing import Sequence

from ...protocol.errors import KafkaError  # type: ignore[attr-defined]


class UsageError(Exception):
    """A bad command line: printed as one line on stderr, exit code 1 (CommandLineUtils.printUsageAndDie)."""


class Parser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing the usage block and exiting 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse_known(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; anything left over is a usage error in jopt-simple's words."""
    opts, extra = parser.parse_known_args(argv)
    if extra:
        unknown = next((a for a in extra if a.startswith("-")), extra[0])
        raise UsageError(f"{unknown.lstrip('-')} is not a recognized option" if unknown.startswith("-")
                         else f"Found non-option argument {unknown!r}; options start with --")
    return opts


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file's key=value lines (comments and blank lines skipped)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read --command-config {path}: {exc.strerror}") from None
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.lstrip().startswith(("#", "!")))
    return {key.strip(): value.strip() for key, value in pairs}


def client_id(command_config: str | None, default: str) -> str:
    """The client.id of --command-config (the one admin-client setting we take from it), else ``default``."""
    if command_config is None:
        return default
    return read_properties(command_config).get("client.id", default)


def error_message(exc: BaseException) -> str:
    """The exception's own message, without our "[Error N NAME]" prefix (Kafka prints getMessage)."""
    if isinstance(exc, KafkaError):
        detail = exc.args[0] if exc.args and exc.args[0] else type(exc).message
        return str(detail)
    return str(exc) or type(exc).__name__

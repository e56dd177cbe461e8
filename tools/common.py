"""What all our Kafka-style tools share: usage errors as one line, the argparse wrapper that raises
them, leftover-argument checks, --command-config reading, Kafka's way of printing an error, the
tools' common ``main`` (``run_tool``) and the admin-client session the admin tools run in."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, Awaitable, Callable, Sequence, TextIO, Union

from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from ..clients.admin.client import AIOAdmin
from ..clients.java_properties import parse_properties
from ..clients.security.client_security import (
    SECURITY_PROPERTY_PREFIXES, security_kwargs_from_properties, unread_security_properties,
)
from ..clients.types import KafkaConfigurationError
from .tool_log import log_line

KAFKA_VERSION = "2.8.0 (Odradek)"  # what --version prints (AppInfoParser's version, then ours)
# The admin client's timing in --command-config, Kafka's AdminClientConfig names -> AIOAdmin's keywords
_ADMIN_TIMING = {"request.timeout.ms": "request_timeout_ms", "default.api.timeout.ms": "default_api_timeout_ms",
                 "retries": "retries", "retry.backoff.ms": "retry_backoff_ms"}

ExceptionTypes = Union[type, tuple]
# (exception types, report or None): run_tool's "this failure ends the tool with exit code 1"
Failure = tuple[ExceptionTypes, Union[Callable[[BaseException], None], None]]


class UsageError(Exception):
    """A bad command line: printed as one line on stderr, exit code 1 (CommandLineUtils.printUsageAndDie)."""


class InvalidConfiguration(Exception):
    """Kafka's InvalidConfigurationException raised by a tool itself: one line on stderr, exit 1."""


class Parser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing the usage block and exiting 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """--version, for the tools that have it: ``run_tool`` prints ``KAFKA_VERSION`` and exits 0."""
    parser.add_argument("--version", action="store_true", help="Display Kafka version.")


def parse_known(parser: argparse.ArgumentParser, argv: Sequence[str],
                check: Callable[[argparse.Namespace], None] | None = None) -> argparse.Namespace:
    """Parse ``argv``; anything left over is a usage error in jopt-simple's words. ``check`` then
    validates the options (the tool's checkArgs), raising ``UsageError``."""
    opts, extra = parser.parse_known_args(argv)
    if extra:
        unknown = next((a for a in extra if a.startswith("-")), extra[0])
        raise UsageError(f"{unknown.lstrip('-')} is not a recognized option" if unknown.startswith("-")
                         else f"Found non-option argument {unknown!r}; options start with --")
    if check is not None:
        check(opts)
    return opts


def read_properties(path: str, flag: str = "--command-config") -> dict[str, str]:
    """A Java properties file (``java_properties.parse_properties``); the last value of a repeated key wins."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror}") from None
    return {key: value for key, value, _ in parse_properties(text)}


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


class AdminCommand:
    """An admin tool's command (Kafka's TopicService, ConsumerGroupService...): the parsed options,
    the admin client, and where its output (``emit``) and its notes (``note``) go."""

    def __init__(self, opts: argparse.Namespace, admin: AIOAdmin, out: Any = sys.stdout, err: Any = sys.stderr) -> None:
        self.opts = opts
        self.admin = admin
        self.out = out
        self.err = err

    def emit(self, line: str = "") -> None:
        print(line, file=self.out)

    def note(self, line: str) -> None:
        print(line, file=self.err)


def tool_args(argv: Sequence[str] | None) -> list[str]:
    """The command line a tool's ``main(argv)`` works on: ``argv``, else the process's arguments."""
    return list(sys.argv[1:] if argv is None else argv)


def run_tool(parse: Callable[[list[str]], Any], run: Callable[[Any], int | None], argv: Sequence[str] | None,
             *failures: Failure) -> int:
    """Every tool's ``main``: parse the command line, then run; returns the exit code.

    * a ``UsageError``, while parsing or running: its one line on stderr, exit 1 (Kafka's
      ``CommandLineUtils.printUsageAndDie`` minus the usage dump);
    * ``--version`` (tools that have it): Kafka's version line, exit 0 (printVersionAndDieIfNeeded);
    * Ctrl-C: exit 130;
    * an exception matching one of ``failures``, tried in order: its report (``None``: the tool
      already printed what went wrong), exit 1; anything else is a bug and propagates.
    ``run`` returns the exit code (``None``: 0).
    """
    try:
        opts = parse(tool_args(argv))
        if getattr(opts, "version", False) is True:
            print(KAFKA_VERSION)
            return 0
        return run(opts) or 0
    except KeyboardInterrupt:
        return 130
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 1
    except Exception as exc:
        for kinds, report in failures:
            if isinstance(exc, kinds):
                if report is not None:
                    report(exc)
                return 1
        raise


def failure_report(template: str, stderr: bool = False) -> Callable[[BaseException], None]:
    """A report for ``run_tool``'s failures: ``template`` filled with {exc} (the exception as str()),
    {message} (``error_message``) and {kind} (its class name), printed on stdout or stderr."""
    def report(exc: BaseException) -> None:
        print(template.format(exc=exc, message=error_message(exc), kind=type(exc).__name__),
              file=sys.stderr if stderr else sys.stdout)
    return report


def print_metrics(metrics: dict[str, float]) -> None:
    """Kafka's ToolsUtils.printMetrics (the perf tools' --print-metrics): a blank line, a header, then one
    ``name : value`` line per metric sorted by name, the name column as wide as the longest name."""
    width = max(len(name) for name in metrics)
    print(f"\n{'Metric Name':<{width}}   Value")
    for name in sorted(metrics):
        print(f"{name:<{width}} : {metrics[name]:.3f}")


def _command_config(opts: argparse.Namespace) -> dict[str, str]:
    """The tool's --command-config (--admin.config) properties; {} without one."""
    path = getattr(opts, "command_config", None) or getattr(opts, "admin_config", None)
    if not path:
        return {}
    return read_properties(path)


def command_config_security(opts: argparse.Namespace) -> dict[str, Any]:
    """The security keywords (TLS, SASL) of the tool's --command-config (--admin.config) properties,
    in Kafka's client names: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*..."""
    props = _command_config(opts)
    if not props:
        return {}
    return security_kwargs(props)


def command_config_admin_timing(opts: argparse.Namespace) -> dict[str, int]:
    """request.timeout.ms, default.api.timeout.ms, retries and retry.backoff.ms of the tool's
    --command-config, as AIOAdmin's keywords (Kafka's tools hand the whole file to their AdminClient)."""
    timing = {}
    for name, value in _command_config(opts).items():
        if name in _ADMIN_TIMING:
            try:
                timing[_ADMIN_TIMING[name]] = int(value)
            except ValueError:
                raise UsageError(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    return timing


def run_admin(opts: argparse.Namespace, work: Callable[[AIOAdmin], Awaitable[Any]], **admin_options: Any) -> Any:
    """Run ``work(admin)`` with an admin client on the tool's --bootstrap-server and client.id
    (``opts.client_id``) and the security and timing of its --command-config (the tool's own
    ``admin_options`` first), closed afterwards; returns what ``work`` returned."""
    options = {**command_config_security(opts), **command_config_admin_timing(opts), **admin_options}

    async def session() -> Any:
        async with AIOAdmin(opts.bootstrap_server, client_id=opts.client_id, **options) as admin:
            return await work(admin)
    return asyncio.run(session())


def security_kwargs(props: dict[str, str], warn: TextIO | None = sys.stderr) -> dict[str, Any]:
    """The security.protocol / ssl.* / sasl.* properties as our clients' keywords ({} for PLAINTEXT);
    a bad one raises KafkaConfigurationError naming it, one our clients do not read is warned about."""
    security = {k: v for k, v in props.items() if k.startswith(SECURITY_PROPERTY_PREFIXES)}
    for name in unread_security_properties(security):
        if warn is not None:
            log_line("WARN", f"The configuration '{name}' was supplied but Odradek's clients do not support it; "
                     "it was ignored.", "org.apache.kafka.common.config.AbstractConfig", file=warn)
    try:
        kwargs = security_kwargs_from_properties(security)
    except ValueError as exc:
        raise KafkaConfigurationError(str(exc)) from None
    return {} if kwargs["security_protocol"] == "PLAINTEXT" else kwargs

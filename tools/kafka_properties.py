"""What the console and perf tools share: Kafka-style flag parsing and Kafka property names.

* ``ToolParser``: common.Parser (every usage mistake is a ``UsageError``: one line on stderr, exit
  code 1, as Kafka's ``CommandLineUtils.printUsageAndDie`` minus the usage dump).
* ``key_values`` / ``load_properties``: ``--property k=v`` lists and Java ``.properties`` files.
* ``producer_kwargs`` / ``consumer_kwargs``: Kafka client property names (``linger.ms``,
  ``compression.type``, ``group.id``...) mapped onto our clients' keyword arguments (``linger_ms``...).
  A name our client does not know is reported as Kafka's ``AbstractConfig.logUnused`` does (a WARN
  line) and dropped, so a config file written for the Java client still works. ``security.protocol``,
  ``ssl.*`` and ``sasl.*`` become the security keywords (``security_kwargs``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Iterable, Sequence, TextIO

from ..clients.consumer.consumer import DEFAULT_CONFIG as CONSUMER_DEFAULTS
from ..clients.producer.producer import _DEFAULTS as PRODUCER_DEFAULTS  # the producer's accepted kwargs and their defaults
from ..clients.security.client_security import SECURITY_PROPERTY_PREFIXES
from .common import Parser, UsageError, parse_known, read_properties as load_properties, security_kwargs
from .tool_log import log_line

__all__ = ["UsageError", "ToolParser", "require", "bootstrap_servers", "key_values", "load_properties",
           "producer_kwargs", "consumer_kwargs"]


class ToolParser(Parser):
    """common.Parser without abbreviations; leftovers are usage errors in jopt-simple's words."""

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description, allow_abbrev=False)

    def parse_strict(self, argv: Sequence[str],
                     check: Callable[[argparse.Namespace], None] | None = None) -> argparse.Namespace:
        """Parse, then ``check`` the options unless --version was asked for (Kafka prints the version
        before checking anything else)."""
        opts = parse_known(self, list(argv))
        if check is not None and not getattr(opts, "version", False):
            check(opts)
        return opts


def require(opts: argparse.Namespace, *names: str) -> None:
    """jopt-simple's wording for a missing required option."""
    for name in names:
        if getattr(opts, name.replace("-", "_").replace(".", "_")) is None:
            raise UsageError(f'Missing required argument "[{name}]"')


def bootstrap_servers(opts: argparse.Namespace) -> str:
    """--bootstrap-server, else the deprecated --broker-list (ignored when both are given, as Kafka 2.8)."""
    servers = opts.bootstrap_server or opts.broker_list
    if not servers:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    for address in servers.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not port.isdigit():  # ToolsUtils.validatePortOrDie
            raise UsageError(f"Please provide valid host:port like host1:9091,host2:9092 (got {address.strip()!r})")
    return servers


def key_values(items: Iterable[str], flag: str) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}`` (CommandLineUtils.parseKeyValueArgs)."""
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"Invalid {flag} {item!r}: expected key=value")
        result[key.strip()] = value
    return result


# Settings of the Java clients that have no meaning here (bytes in, bytes out; socket sizes left to the OS).
_IGNORED = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer", "send.buffer.bytes",
    "receive.buffer.bytes", "check.crcs", "interceptor.classes", "metric.reporters",
})
# Settings whose values stay strings even when they look like numbers.
_STRINGS = frozenset({"bootstrap.servers", "client.id", "group.id", "group.instance.id", "transactional.id",
                      "acks", "compression.type", "auto.offset.reset", "isolation.level",
                      "partition.assignment.strategy", "client.rack"})


def _convert(name: str, value: str) -> Any:
    value = value.strip()
    if name in _STRINGS:
        return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return int(value)
    except ValueError:
        return value


def _kwargs(props: dict[str, str], known: dict[str, Any], warn: TextIO | None, config_class: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = security_kwargs(props, warn)
    for name, value in props.items():
        if name.startswith(SECURITY_PROPERTY_PREFIXES):
            continue
        kwarg = name.replace(".", "_")
        if name in _IGNORED:  # before the known names: key_serializer takes a function, not a Java class
            continue
        if kwarg in known:
            kwargs[kwarg] = _convert(name, value)
        elif warn is not None:
            log_line("WARN", f"The configuration '{name}' was supplied but isn't a known config.", config_class,
                     file=warn)
    return kwargs


def producer_kwargs(props: dict[str, str], warn: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Kafka producer properties -> AIOProducer/Producer kwargs (``compression.type=none`` kept as is)."""
    return _kwargs(props, PRODUCER_DEFAULTS, warn, "org.apache.kafka.clients.producer.ProducerConfig")


def consumer_kwargs(props: dict[str, str], warn: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Kafka consumer properties -> AIOConsumer/Consumer kwargs."""
    return _kwargs(props, CONSUMER_DEFAULTS, warn, "org.apache.kafka.clients.consumer.ConsumerConfig")


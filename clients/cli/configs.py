"""odradek-configs: describe and alter topic and broker configs, as Kafka's kafka-configs.sh.

Kafka 2.8's ConfigCommand in its --bootstrap-server mode (CONVENTIONS.md §1), for the entity types this
cluster keeps configs for: topics and brokers (``--entity-type``/``--entity-name``/``--entity-default``
or the shortcuts ``--topic``, ``--broker``, ``--broker-defaults``). As Kafka 2.8: topics are altered
with IncrementalAlterConfigs (SET and DELETE), brokers with the legacy AlterConfigs carrying the
broker's whole new dynamic set; --describe shows the dynamic configs (--all: every config) as
"  key=value sensitive=false synonyms={SOURCE:key=value, ...}". Usage mistakes print one line on
stderr and exit 1; a failed request prints "Error while executing config command with args '...'"
and the error on stderr and exits 1.

Users, clients, IPs and broker loggers are not kept by this cluster: naming them is a usage error.
``--zookeeper`` is refused: this cluster is administered through brokers.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Sequence

from ...protocol.errors import KafkaError  # type: ignore[attr-defined]
from ..admin import AlterConfigOp, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigResourceType
from .common import (
    AdminCommand, Parser, UsageError, client_id, error_message, failure_report, parse_known, read_properties,
    run_admin, run_tool, tool_args,
)

SUPPORTED_TYPES = ("topics", "brokers")
KAFKA_ONLY_TYPES = ("users", "clients", "broker-loggers", "ips")
# ConfigEntry.ConfigSource names by wire id
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER = 1, 2, 3
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidConfiguration(Exception):
    """Kafka's InvalidConfigurationException raised by the tool itself: one line on stderr, exit 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-configs", allow_abbrev=False,
                    description="This tool helps to manipulate and describe entity config for a topic or broker.")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>", help="The Kafka server to connect to.")
    add("--zookeeper", help=argparse.SUPPRESS)
    add("--command-config", metavar="<String: command config property file>",
        help="Property file containing configs to be passed to Admin Client (client.id is used).")
    add("--alter", action="store_true", help="Alter the configuration for the entity.")
    add("--describe", action="store_true", help="List configs for the given entity.")
    add("--all", action="store_true", help="List all configs for the given topic or broker entity (includes static "
                                           "configuration when the entity type is brokers)")
    add("--entity-type", action="append", default=[], metavar="<String>", help="Type of entity (topics/brokers)")
    add("--entity-name", action="append", default=[], metavar="<String>", help="Name of entity (topic name/broker id)")
    add("--entity-default", action="store_true", help="Default entity name for brokers (the cluster-wide default)")
    add("--add-config", metavar="<String>",
        help="Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: "
             "'k1=v1,k2=[v1,v2,v2],k3=v3'.")
    add("--add-config-file", metavar="<String>", help="Path to a properties file with configs to add.")
    add("--delete-config", action="append", default=[], metavar="<String>", help="config keys to remove 'k1,k2'")
    add("--force", action="store_true", help="Suppress console prompts")
    add("--topic", metavar="<String>", help="The topic's name.")
    add("--broker", metavar="<String>", help="The broker's ID.")
    add("--broker-defaults", action="store_true", help="The config defaults for all brokers.")
    for flag in ("client", "user", "ip", "broker-logger"):
        add(f"--{flag}", help=argparse.SUPPRESS)
    for flag in ("client-defaults", "user-defaults", "ip-defaults"):
        add(f"--{flag}", action="store_true", help=argparse.SUPPRESS)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return parse_known(build_parser(), argv, _check)


def _check(opts: argparse.Namespace) -> None:
    """ConfigCommandOptions.checkArgs (Kafka 2.8), for --bootstrap-server."""
    if opts.zookeeper is not None:
        raise UsageError("--zookeeper is not supported: this cluster is administered through brokers; "
                         "use --bootstrap-server")
    if opts.alter == opts.describe:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if opts.describe and (opts.add_config is not None or opts.add_config_file is not None or opts.delete_config):
        flag = "add-config" if opts.add_config is not None else "add-config-file" if opts.add_config_file else \
            "delete-config"
        raise UsageError(f'Option "[describe]" can\'t be used with option "[{flag}]"')
    shortcuts = [t for flag, t in (("topic", "topics"), ("broker", "brokers"), ("broker_defaults", "brokers"),
                                   ("client", "clients"), ("user", "users"), ("ip", "ips"),
                                   ("broker_logger", "broker-loggers"), ("client_defaults", "clients"),
                                   ("user_defaults", "users"), ("ip_defaults", "ips"))
                 if getattr(opts, flag) not in (None, False)]
    types = list(opts.entity_type) + shortcuts
    if len(types) != len(set(types)):
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(sorted({t for t in types if types.count(t) > 1}))}")
    for entity_type in types:
        if entity_type not in SUPPORTED_TYPES:
            raise UsageError(f"Invalid entity type {entity_type}, the entity type must be one of "
                             f"{','.join(SUPPORTED_TYPES)} with the --bootstrap-server argument"
                             + (" (this cluster keeps no configs for it)" if entity_type in KAFKA_ONLY_TYPES else ""))
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    if (opts.entity_name or opts.entity_type or opts.entity_default) and shortcuts:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    if not opts.bootstrap_server:
        raise UsageError("One of the required --bootstrap-server or --zookeeper arguments must be specified")
    if len(opts.entity_name) + opts.entity_default > 1:
        raise UsageError("Only one of --entity-name or --entity-default may be given for one entity type")
    opts.entity = types[0]
    names = opts.entity_name or ([""] if opts.entity_default or opts.broker_defaults else
                                 [n for n in (opts.topic, opts.broker) if n is not None])
    opts.name = names[0] if names else None  # None: every entity of the type (--describe only)
    if opts.entity == "topics" and opts.name == "":
        raise UsageError("--entity-default is not supported for topics")
    if opts.entity == "brokers" and opts.name:
        try:
            int(opts.name)
        except ValueError:
            raise UsageError(f"The entity name for brokers must be a valid integer broker id, but it is: "
                             f"{opts.name}") from None
    if opts.entity == "topics" and opts.name and not _LEGAL_TOPIC.fullmatch(opts.name):
        raise UsageError(f'Topic name "{opts.name}" is illegal, it contains a character other than ASCII '
                         "alphanumerics, '.', '_' and '-'")
    if opts.alter:
        if opts.name is None:
            raise UsageError("an entity name must be specified with --alter of topics" if opts.entity == "topics"
                             else "an entity-name or default entity must be specified with --alter of users, "
                                  "clients, brokers or ips")
        if opts.add_config is not None and opts.add_config_file is not None:
            raise UsageError("Only one of --add-config or --add-config-file must be specified")
        if opts.add_config is None and opts.add_config_file is None and not opts.delete_config:
            raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be "
                             "specified with --alter")
    opts.to_add = parse_configs_to_add(opts.add_config, opts.add_config_file)
    opts.to_delete = [key.strip() for item in opts.delete_config for key in item.split(",") if key.strip()]
    opts.client_id = client_id(opts.command_config, "odradek-configs")


_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def parse_configs_to_add(text: str | None, path: str | None = None) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: 'k1=v1,k2=[a,b]' -> {'k1': 'v1', 'k2': 'a,b'} (commas inside
    [] stay, brackets are dropped, an empty value is allowed), after the --add-config-file's pairs."""
    configs = read_properties(path) if path else {}
    if text is not None:
        for item in re.split("," + _OUTSIDE_BRACKETS, text):
            pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
            if len(pair) != 2:
                raise UsageError('Invalid entity config: all configs to be added must be in the format "key=val".')
            configs[pair[0].strip()] = re.sub(r"[\[\]]", "", pair[1]).strip()
    return configs


def entry_line(entry: ConfigEntry) -> str:
    """'  key=value sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:key=value, DEFAULT_CONFIG:key2=value}'"""
    synonyms = ", ".join(f"{CONFIG_SOURCES.get(source, 'UNKNOWN')}:{name}={_java(value)}"
                         for name, value, source in entry.synonyms)
    return f"  {entry.name}={_java(entry.value)} sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"


def _java(value: str | None) -> str:
    return "null" if value is None else value


class ConfigCommand(AdminCommand):
    async def run(self) -> None:
        await (self._alter() if self.opts.alter else self._describe())

    def _resource(self, name: str) -> ConfigResource:
        kind = ConfigResourceType.TOPIC if self.opts.entity == "topics" else ConfigResourceType.BROKER
        return ConfigResource(kind, name)

    async def _entries(self, name: str, describe_all: bool) -> list[ConfigEntry]:
        """getResourceConfig: the entity's dynamic entries (their source), or all with --all."""
        resource = self._resource(name)
        entries = (await self.admin.describe_configs([resource], include_synonyms=True))[resource]
        dynamic = DYNAMIC_TOPIC if self.opts.entity == "topics" else DYNAMIC_DEFAULT_BROKER if name == "" \
            else DYNAMIC_BROKER
        return [e for e in entries.values() if describe_all or e.source == dynamic]

    async def _describe(self) -> None:
        opts = self.opts
        if opts.name is not None:
            names = [opts.name]
        elif opts.entity == "topics":
            names = await self.admin.list_topics(include_internal=True)
        else:
            names = [str(b.node_id) for b in (await self.admin.describe_cluster()).brokers] + [""]
        for name in names:
            if name == "":
                self.emit(f"Default configs for {opts.entity} in the cluster are:")
            else:
                self.emit(f"{'All' if opts.all else 'Dynamic'} configs for {opts.entity[:-1]} {name} are:")
            for entry in await self._entries(name, opts.all):
                self.emit(entry_line(entry))

    async def _alter(self) -> None:
        opts, name = self.opts, self.opts.name
        old = {e.name: e for e in await self._entries(name, describe_all=False)}
        invalid = [key for key in opts.to_delete if key not in old]
        if invalid:  # Kafka fails the command if a config to delete is not set
            raise InvalidConfiguration(f"Invalid config(s): {','.join(invalid)}")
        resource = self._resource(name)
        if opts.entity == "topics":
            ops = [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in opts.to_add.items()]
            ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in opts.to_delete]
            await self.admin.incremental_alter_configs({resource: ops})
        else:  # Kafka 2.8 alters brokers with the legacy AlterConfigs: the whole new dynamic set
            new = {k: e.value for k, e in old.items() if k not in opts.to_delete}
            new.update(opts.to_add)
            sensitive = sorted(k for k, v in new.items() if v is None)
            if sensitive:
                raise InvalidConfiguration("All sensitive broker config entries must be specified for --alter, "
                                           f"missing entries: {set(sensitive)}")
            await self.admin.alter_configs({resource: new})
        if name:
            self.emit(f"Completed updating config for {opts.entity[:-1]} {name}.")
        else:
            self.emit(f"Completed updating default config for {opts.entity} in the cluster.")


def main(argv: Sequence[str] | None = None) -> int:
    args = tool_args(argv)

    def report(exc: BaseException) -> None:
        print(f"Error while executing config command with args '{' '.join(args)}'", file=sys.stderr)
        print(f"{type(exc).__name__}: {error_message(exc)}", file=sys.stderr)

    return run_tool(parse_args, lambda opts: run_admin(opts, lambda admin: ConfigCommand(opts, admin).run()), args,
                    (InvalidConfiguration, failure_report("{exc}", stderr=True)),
                    ((KafkaError, OSError, ValueError), report))


if __name__ == "__main__":
    sys.exit(main())

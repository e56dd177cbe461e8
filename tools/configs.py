"""odradek-configs: describe and alter topic, broker, broker logger, user and client configs, as Kafka's
kafka-configs.sh.

Kafka 2.8's ConfigCommand in its --bootstrap-server mode (CONVENTIONS.md §1), for the entity types this
cluster keeps configs for: topics, brokers, broker-loggers, users and clients (``--entity-type``/
``--entity-name``/``--entity-default`` or the shortcuts ``--topic``, ``--broker``, ``--broker-defaults``,
``--broker-logger``, ``--user``, ``--user-defaults``, ``--client``, ``--client-defaults``). As Kafka 2.8:
topics and broker loggers (their levels, which must name loggers the broker has) are altered with
IncrementalAlterConfigs (SET and DELETE), brokers with the legacy AlterConfigs carrying the broker's whole
new dynamic set; --describe shows the dynamic configs (--all: every config; every logger of a broker) as
"  key=value sensitive=false synonyms={SOURCE:key=value, ...}". Usage mistakes print one line on
stderr and exit 1; a failed request prints "Error while executing config command with args '...'"
and the error on stderr and exits 1.

Users and clients hold client quotas (producer_byte_rate, consumer_byte_rate, request_percentage), read and
written with DescribeClientQuotas / AlterClientQuotas; ``users`` and ``clients`` may be named together for a
user's quota on one client-id. --describe prints "Quota configs for user-principal 'u', client-id 'c' are
k=v, ..." (values as Java prints doubles). Users also hold SCRAM credentials, through brokers (KIP-554's
Describe/AlterUserScramCredentials) or, before any broker runs, with ``--zookeeper``, which keeps nothing
else here (tools/configs_scram.py). IPs are not kept by this cluster: naming them is an error.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from decimal import Decimal
from typing import Sequence

from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from ..clients.admin.client import AlterConfigOp, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigResourceType
from ..clients.admin.quotas import ClientQuotaAlteration, ClientQuotaEntity, ClientQuotaFilter, ClientQuotaFilterComponent
from . import configs_scram
from .common import (
    AdminCommand, InvalidConfiguration, Parser, UsageError, client_id, error_message, failure_report, parse_known,
    read_properties, run_admin, run_tool, tool_args,
)

SUPPORTED_TYPES = ("topics", "clients", "users", "brokers", "broker-loggers")
KAFKA_ONLY_TYPES = ("ips",)
QUOTA_TYPES = ("users", "clients")
QUOTA_KEYS = ("consumer_byte_rate", "controller_mutation_rate", "producer_byte_rate", "request_percentage")
# Kafka's entityFlags and entityDefaultsFlags, in its order: entity types and names are listed in it.
ENTITY_FLAGS = (("topic", "topics"), ("client", "clients"), ("user", "users"), ("broker", "brokers"),
                ("broker_logger", "broker-loggers"), ("ip", "ips"))
DEFAULT_FLAGS = (("client_defaults", "clients"), ("user_defaults", "users"), ("broker_defaults", "brokers"),
                 ("ip_defaults", "ips"))
# ConfigEntry.ConfigSource names by wire id
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                  4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER = 1, 2, 3
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-configs", allow_abbrev=False,
                    description="This tool helps to manipulate and describe entity config for a topic, client, user "
                                "or broker")
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>", help="The Kafka server to connect to.")
    add("--zookeeper", metavar="<String: urls>", help="The ZooKeeper connection string; only for users' SCRAM "
        "credentials (Kafka's bootstrap step before brokers run).")
    add("--command-config", metavar="<String: command config property file>",
        help="Property file containing configs to be passed to Admin Client (client.id is used).")
    add("--alter", action="store_true", help="Alter the configuration for the entity.")
    add("--describe", action="store_true", help="List configs for the given entity.")
    add("--all", action="store_true", help="List all configs for the given topic or broker entity (includes static "
                                           "configuration when the entity type is brokers)")
    add("--entity-type", action="append", default=[], metavar="<String>",
        help="Type of entity (topics/clients/users/brokers)")
    # --entity-name and --entity-default share one list, in command-line order (Kafka pairs them with the types)
    add("--entity-name", action="append", dest="names", default=[], metavar="<String>",
        help="Name of entity (topic name/client id/user principal name/broker id)")
    add("--entity-default", action="append_const", dest="names", const="",
        help="Default entity name for clients/users/brokers (applies to corresponding entity type in command line)")
    add("--add-config", metavar="<String>",
        help="Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: "
             "'k1=v1,k2=[v1,v2,v2],k3=v3'. For entity types 'users' and 'clients': consumer_byte_rate, "
             "producer_byte_rate, request_percentage. Entity types 'users' and 'clients' may be specified together "
             "to update config for clients of a specific user.")
    add("--add-config-file", metavar="<String>", help="Path to a properties file with configs to add.")
    add("--delete-config", action="append", default=[], metavar="<String>", help="config keys to remove 'k1,k2'")
    add("--force", action="store_true", help="Suppress console prompts")
    add("--topic", metavar="<String>", help="The topic's name.")
    add("--broker", metavar="<String>", help="The broker's ID.")
    add("--broker-defaults", action="store_true", help="The config defaults for all brokers.")
    add("--client", metavar="<String>", help="The client's ID.")
    add("--client-defaults", action="store_true", help="The config defaults for all clients.")
    add("--user", metavar="<String>", help="The user's principal name.")
    add("--user-defaults", action="store_true", help="The config defaults for all users.")
    add("--broker-logger", metavar="<String>", help="The broker's ID for its logger config.")
    add("--ip", help=argparse.SUPPRESS)
    add("--ip-defaults", action="store_true", help=argparse.SUPPRESS)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return parse_known(build_parser(), argv, _check)


def _check(opts: argparse.Namespace) -> None:
    """ConfigCommandOptions.checkArgs (Kafka 2.8)."""
    if opts.alter == opts.describe:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if opts.describe and (opts.add_config is not None or opts.add_config_file is not None or opts.delete_config):
        flag = "add-config" if opts.add_config is not None else "add-config-file" if opts.add_config_file else \
            "delete-config"
        raise UsageError(f'Option "[describe]" can\'t be used with option "[{flag}]"')
    shortcut_types = [t for flag, t in ENTITY_FLAGS if getattr(opts, flag) is not None]
    shortcut_types += [t for flag, t in DEFAULT_FLAGS if getattr(opts, flag)]
    types = list(opts.entity_type) + shortcut_types
    names = list(opts.names) + [getattr(opts, flag) for flag, _ in ENTITY_FLAGS if getattr(opts, flag) is not None]
    names += ["" for flag, _ in DEFAULT_FLAGS if getattr(opts, flag)]
    if len(types) != len(set(types)):
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(sorted({t for t in types if types.count(t) > 1}))}")
    if opts.zookeeper is not None:
        configs_scram.check_zookeeper_options(opts, types)
    for entity_type in types:
        if entity_type not in SUPPORTED_TYPES:
            raise UsageError(f"Invalid entity type {entity_type}, the entity type must be one of "
                             f"{','.join(SUPPORTED_TYPES)} with the --bootstrap-server argument"
                             + (" (this cluster keeps no configs for it)" if entity_type in KAFKA_ONLY_TYPES else ""))
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != set(QUOTA_TYPES):
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    if (opts.names or opts.entity_type) and shortcut_types:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    if not opts.bootstrap_server and opts.zookeeper is None:
        raise UsageError("One of the required --bootstrap-server or --zookeeper arguments must be specified")
    opts.entity, opts.entity_types, opts.entity_names = types[0], types, names
    if opts.entity in QUOTA_TYPES:
        if len(names) > len(types):
            raise UsageError("More entity names specified than entity types")
        if opts.alter and len(names) != len(types):
            raise UsageError("--entity-name or --entity-default must be specified with each --entity-type for --alter")
    elif len(names) > 1:
        raise UsageError("Only one of --entity-name or --entity-default may be given for one entity type")
    opts.name = names[0] if names else None  # None: every entity of the type (--describe only)
    if opts.entity == "topics" and opts.name == "":
        raise UsageError("--entity-default is not supported for topics")
    if opts.entity in ("brokers", "broker-loggers") and opts.name:
        try:
            int(opts.name)
        except ValueError:
            raise UsageError(f"The entity name for {opts.entity} must be a valid integer broker id, but it is: "
                             f"{opts.name}") from None
    if opts.entity == "broker-loggers" and opts.describe and not opts.name:
        raise UsageError("an entity name must be specified with --describe of broker-loggers")
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
    configs = read_properties(path, "--add-config-file") if path else {}
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


def java_double(value: float) -> str:
    """Java's Double.toString, as Kafka's tool prints quota values: 200000.0, 12.5, 1.0E7."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "." in text else text + ".0"
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = len(digits) - 1 + int(digits_tuple.exponent)
    return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _scala_collection(kind: str, names: Sequence[str]) -> str:
    return f"{kind}({', '.join(names)})"


class ConfigCommand(AdminCommand):
    async def run(self) -> None:
        if configs_scram.is_credential_command(self.opts):  # users' SCRAM credentials (KIP-554)
            run = configs_scram.alter_user_credentials if self.opts.alter else configs_scram.describe_user_credentials
            await run(self.admin, self.opts, self.emit)
        elif self.opts.entity in QUOTA_TYPES:
            await (self._alter_quotas() if self.opts.alter else self._describe_quotas())
            if self.opts.describe:  # users: their quotas, then their SCRAM credentials (as Kafka 2.8)
                await configs_scram.describe_user_credentials(self.admin, self.opts, self.emit)
        else:
            await (self._alter() if self.opts.alter else self._describe())

    # -- users and clients: client quotas ---------------------------------------------------------------

    def _quota_filter(self) -> ClientQuotaFilter:
        """getAllClientQuotasConfigs: each entity type with its name, the default, or any name (strict)."""
        names = self.opts.entity_names
        components = []
        for i, entity_type in enumerate(self.opts.entity_types):
            kind = ClientQuotaEntity.USER if entity_type == "users" else ClientQuotaEntity.CLIENT_ID
            if i >= len(names):
                components.append(ClientQuotaFilterComponent.of_entity_type(kind))
            elif names[i] == "":
                components.append(ClientQuotaFilterComponent.of_default_entity(kind))
            else:
                components.append(ClientQuotaFilterComponent.of_entity(kind, names[i]))
        return ClientQuotaFilter.contains_only(components)

    async def _describe_quotas(self) -> None:
        quotas = await self.admin.describe_client_quotas(self._quota_filter())
        for entity, values in sorted(quotas.items(), key=lambda item: _entity_sort_key(item[0])):
            parts = []
            for kind, label in ((ClientQuotaEntity.USER, "user-principal"), (ClientQuotaEntity.CLIENT_ID, "client-id")):
                if kind in entity.entries:
                    name = entity.entries[kind]
                    parts.append(f"{label} '{name}'" if name is not None else f"the default {label}")
            values_text = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items()))
            self.emit(f"Quota configs for {', '.join(parts)} are {values_text}")

    async def _alter_quotas(self) -> None:
        opts = self.opts
        unknown_add = [k for k in opts.to_add if k not in QUOTA_KEYS]
        unknown_delete = [k for k in opts.to_delete if k not in QUOTA_KEYS]
        kind = "clients" if opts.entity == "clients" or len(opts.entity_types) == 2 else "users"
        if unknown_add:
            raise InvalidConfiguration(f"Only quota configs can be added for '{kind}' using --bootstrap-server. "
                                       f"Unexpected config names: {_scala_collection('Set', unknown_add)}")
        if unknown_delete:
            raise InvalidConfiguration(f"Only quota configs can be deleted for '{kind}' using --bootstrap-server. "
                                       f"Unexpected config names: {_scala_collection('ArrayBuffer', unknown_delete)}")
        found = await self.admin.describe_client_quotas(self._quota_filter())
        old = next(iter(found.values()), {})
        invalid = [key for key in opts.to_delete if key not in old]
        if invalid:  # Kafka fails the command if a config to delete is not set
            raise InvalidConfiguration(f"Invalid config(s): {','.join(invalid)}")
        ops = []
        for key, value in opts.to_add.items():
            try:
                ops.append(ClientQuotaAlteration.Op(key, float(value)))
            except ValueError:
                raise InvalidConfiguration(f"Cannot parse quota configuration value for {key}: {value}") from None
        ops += [ClientQuotaAlteration.Op(key, None) for key in opts.to_delete]
        entity = ClientQuotaEntity({
            ClientQuotaEntity.USER if entity_type == "users" else ClientQuotaEntity.CLIENT_ID: name or None
            for entity_type, name in zip(opts.entity_types, opts.entity_names)})
        await self.admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)])
        self._completed()

    def _completed(self) -> None:
        opts = self.opts
        if opts.name:
            self.emit(f"Completed updating config for {opts.entity[:-1]} {opts.name}.")
        else:
            self.emit(f"Completed updating default config for {opts.entity} in the cluster.")

    # -- topics, brokers and broker loggers -----------------------------------------------------------------

    def _resource(self, name: str) -> ConfigResource:
        kind = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER,
                "broker-loggers": ConfigResourceType.BROKER_LOGGER}[self.opts.entity]
        return ConfigResource(kind, name)

    async def _entries(self, name: str, describe_all: bool) -> list[ConfigEntry]:
        """getResourceConfig: the entity's dynamic entries (their source), or all with --all; every
        logger of a broker, by name."""
        resource = self._resource(name)
        entries = (await self.admin.describe_configs([resource], include_synonyms=True))[resource]
        if self.opts.entity == "broker-loggers":
            return sorted(entries.values(), key=lambda e: e.name)
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
        resource = self._resource(name)
        if opts.entity == "broker-loggers":  # set or unset levels of loggers the broker has
            unknown = [k for k in [*opts.to_delete, *opts.to_add] if k not in old]
            if unknown:
                raise InvalidConfiguration(f"Invalid broker logger(s): {','.join(unknown)}")
        elif invalid := [key for key in opts.to_delete if key not in old]:
            raise InvalidConfiguration(f"Invalid config(s): {','.join(invalid)}")  # Kafka: only set configs
        if opts.entity in ("topics", "broker-loggers"):
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
        self._completed()


def _entity_sort_key(entity: ClientQuotaEntity) -> tuple:
    return tuple((kind, name is not None, name or "") for kind, name in sorted(entity.entries.items()))


def main(argv: Sequence[str] | None = None) -> int:
    args = tool_args(argv)

    def report(exc: BaseException) -> None:
        print(f"Error while executing config command with args '{' '.join(args)}'", file=sys.stderr)
        print(f"{type(exc).__name__}: {error_message(exc)}", file=sys.stderr)

    def run(opts: argparse.Namespace) -> None:
        if opts.zookeeper is not None:
            configs_scram.run_with_zookeeper(opts)
        else:
            run_admin(opts, lambda admin: ConfigCommand(opts, admin).run())

    return run_tool(parse_args, run, args,
                    ((InvalidConfiguration, configs_scram.InvalidCredential), failure_report("{exc}", stderr=True)),
                    ((KafkaError, OSError, ValueError), report))


if __name__ == "__main__":
    sys.exit(main())

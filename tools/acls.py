"""odradek-acls: add, remove and list ACLs, as Kafka 2.8's kafka-acls.sh (AclCommand).

Two ways to reach the ACLs, as Kafka's tool:
- ``--bootstrap-server`` (``--command-config`` for the client's settings): through a broker's
  CreateAcls/DescribeAcls/DeleteAcls, so the caller needs Alter (Describe to list) on the cluster;
- ``--authorizer-properties zookeeper.connect=host:port[/chroot]`` (``--authorizer`` may name
  kafka.security.authorizer.AclAuthorizer or the legacy SimpleAclAuthorizer): straight into
  ZooKeeper, with the brokers' own znode layout and change notifications, e.g. before any broker runs.

Exactly one of ``--add``, ``--remove``, ``--list``. Resources: ``--topic``, ``--group``,
``--transactional-id``, ``--delegation-token`` (repeatable), ``--cluster``, with
``--resource-pattern-type literal|prefixed`` (adding) or also ``any|match`` (listing, removing).
ACLs: ``--allow-principal``/``--deny-principal`` x ``--operation`` (default All) x
``--allow-host``/``--deny-host`` (default ``*``); ``--producer`` (Write, Describe, Create on the topics,
Write and Describe on the transactional ids, IdempotentWrite on the cluster with ``--idempotent``)
and ``--consumer`` (Read and Describe on the topics, Read on the groups) build them for you.
``--remove`` asks for confirmation unless ``--force``; ``--list --principal P`` shows one principal's.

Output as Kafka's (users grep it)::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

Usage mistakes print one line on stderr and exit 1; a failed request prints "Error while executing
ACL command: <message>" and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, Iterable, Sequence

from ..protocol.acl import (
    CLUSTER_NAME, WILDCARD_HOST, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter,
    AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
    parse_principal, supported_operations,
)
from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from .common import Parser, UsageError, client_id, failure_report, parse_known, run_admin, run_tool

__all__ = ["main", "parse_args"]

AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")
CLUSTER_FILTER = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
O = AclOperation


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="odradek-acls", allow_abbrev=False, description="This tool helps to manage acls on kafka.")
    add = parser.add_argument
    many = {"action": "append", "default": []}
    add("--bootstrap-server", metavar="<String: server to connect to>",
        help="A list of host/port pairs to use for establishing the connection to the Kafka cluster.")
    add("--command-config", metavar="<String: command-config>",
        help="A property file containing configs to be passed to Admin Client.")
    add("--authorizer", metavar="<String: authorizer>",
        help="Fully qualified class name of the authorizer, defaults to kafka.security.authorizer.AclAuthorizer.")
    add("--authorizer-properties", metavar="<String: authorizer-properties>", **many,
        help="key=val properties to configure the authorizer, e.g. zookeeper.connect=localhost:2181")
    add("--topic", metavar="<String: topic>", **many, help="topic to which ACLs should be added or removed.")
    add("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    add("--group", metavar="<String: group>", **many, help="Consumer Group to which the ACLs should be added or removed.")
    add("--transactional-id", metavar="<String: transactional-id>", **many,
        help="The transactionalId to which ACLs should be added or removed.")
    add("--delegation-token", metavar="<String: delegation-token>", **many,
        help="Delegation token to which ACLs should be added or removed.")
    add("--idempotent", action="store_true", help="Enable idempotence for the producer (with --producer).")
    add("--resource-pattern-type", metavar="<ANY|MATCH|LITERAL|PREFIXED>", default="literal",
        help="The type of the resource pattern or pattern filter (default: LITERAL).")
    add("--add", action="store_true", help="Indicates you are trying to add ACLs.")
    add("--remove", action="store_true", help="Indicates you are trying to remove ACLs.")
    add("--list", action="store_true", help="List ACLs for the specified resource.")
    add("--operation", metavar="<String>", **many, help="Operation that is being allowed or denied (default: All).")
    add("--allow-principal", metavar="<String: allow-principal>", **many, help="principal in principalType:name format.")
    add("--deny-principal", metavar="<String: deny-principal>", **many, help="principal in principalType:name format.")
    add("--principal", metavar="<String: principal>", **many, help="List ACLs for the specified principal.")
    add("--allow-host", metavar="<String: allow-host>", **many, help="Host from which --allow-principal has access.")
    add("--deny-host", metavar="<String: deny-host>", **many, help="Host from which --deny-principal is denied.")
    add("--producer", action="store_true", help="Convenience option to add/remove ACLs for producer role.")
    add("--consumer", action="store_true", help="Convenience option to add/remove ACLs for consumer role.")
    add("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    add("--zk-tls-config-file", help=argparse.SUPPRESS)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return parse_known(build_parser(), argv, _check)


def _invalid_with(opts: argparse.Namespace, used: str, others: Iterable[str]) -> None:
    """CommandLineUtils.checkInvalidArgs' wording."""
    if _given(opts, used):
        for other in others:
            if _given(opts, other):
                raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')


def _given(opts: argparse.Namespace, name: str) -> bool:
    return getattr(opts, name.replace("-", "_")) not in (None, False, [])


def _check(opts: argparse.Namespace) -> None:
    """AclCommandOptions.checkArgs (Kafka 2.8)."""
    if opts.zk_tls_config_file is not None:
        raise UsageError("--zk-tls-config-file is not supported: ZooKeeper over TLS is not implemented")
    if opts.bootstrap_server and opts.authorizer:
        raise UsageError("Only one of --bootstrap-server or --authorizer must be specified")
    if not opts.bootstrap_server and not opts.authorizer_properties:
        raise UsageError('Missing required argument "[authorizer-properties]"')
    if opts.command_config and not opts.bootstrap_server:
        raise UsageError("The --command-config option can only be used with --bootstrap-server option")
    if opts.authorizer_properties and opts.bootstrap_server:
        raise UsageError("The --authorizer-properties option can only be used with --authorizer option")
    if opts.authorizer and opts.authorizer not in AUTHORIZERS:
        raise UsageError(f"Authorizer {opts.authorizer} is not supported: use {' or '.join(AUTHORIZERS)}")
    if [opts.add, opts.remove, opts.list].count(True) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    _invalid_with(opts, "list", ("producer", "consumer", "allow-host", "allow-principal", "deny-host",
                                 "deny-principal"))
    for role in ("producer", "consumer"):
        _invalid_with(opts, role, ("operation", "deny-principal", "deny-host"))
    if opts.principal and not opts.list:
        raise UsageError("The --principal option is only available if --list is set")
    if opts.producer and not opts.topic:
        raise UsageError("With --producer you must specify a --topic")
    if opts.idempotent and not opts.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if opts.consumer and (not opts.topic or not opts.group or (
            not opts.producer and (opts.cluster or opts.transactional_id))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")
    pattern_type = PatternType.parse(opts.resource_pattern_type.upper())
    if pattern_type in (PatternType.UNKNOWN,):
        raise UsageError(f"Unknown resource-pattern-type: {opts.resource_pattern_type} (ANY|MATCH|LITERAL|PREFIXED)")
    opts.pattern_type = pattern_type
    opts.client_id = client_id(opts.command_config, "adminclient-acls")
    opts.zk_connect = _zookeeper_connect(opts.authorizer_properties)
    opts.filters_to_acls = _filters_to_acls(opts)


def _zookeeper_connect(properties: list[str]) -> str | None:
    if not properties:
        return None
    pairs = {}
    for item in properties:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"Invalid argument {item!r} of --authorizer-properties: expected key=value")
        pairs[key.strip()] = value.strip()
    connect = pairs.get("zookeeper.connect")
    if not connect:
        raise UsageError("--authorizer-properties must give zookeeper.connect=host:port[/chroot]")
    return connect


# -- what the options ask for (AclCommand.getResourceFilterToAcls) ----------------------------------

def _principals(values: list[str]) -> list[str]:
    found = []
    for value in values:
        try:
            principal_type, name = parse_principal(value.strip())
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        found.append(f"{principal_type}:{name}")
    return list(dict.fromkeys(found))


def _hosts(hosts: list[str], principals: list[str]) -> list[str]:
    if hosts:
        return list(dict.fromkeys(h.strip() for h in hosts))
    return [WILDCARD_HOST] if principals else []


def _acls(opts: argparse.Namespace, operations: Iterable[AclOperation]) -> set[AccessControlEntry]:
    allowed, denied = _principals(opts.allow_principal), _principals(opts.deny_principal)
    acls = set()
    for principals, hosts, permission in ((allowed, _hosts(opts.allow_host, allowed), AclPermissionType.ALLOW),
                                          (denied, _hosts(opts.deny_host, denied), AclPermissionType.DENY)):
        acls |= {AccessControlEntry(p, h, op, permission) for p in principals for op in operations for h in hosts}
    return acls


def resource_filters(opts: argparse.Namespace, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    pattern_type = opts.pattern_type
    filters = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in opts.topic]
    if pattern_type == PatternType.LITERAL and (opts.cluster or opts.idempotent):
        filters.append(CLUSTER_FILTER)
    filters += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in opts.group]
    filters += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pattern_type) for t in opts.transactional_id]
    filters += [ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, t.strip(), pattern_type)
                for t in opts.delegation_token]
    if not filters and die_if_none:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                         "or --delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(filters))


def _filters_to_acls(opts: argparse.Namespace) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    if opts.list:
        return {}
    found: dict[ResourcePatternFilter, set[AccessControlEntry]] = {}
    filters = resource_filters(opts)
    if not opts.producer and not opts.consumer:
        operations = {AclOperation.parse(op.strip()) for op in opts.operation} or {O.ALL}
        found = {f: _acls(opts, operations) for f in filters}
    if opts.producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                found[f] = _acls(opts, (O.WRITE, O.DESCRIBE, O.CREATE))
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                found[f] = _acls(opts, (O.WRITE, O.DESCRIBE))
        if opts.idempotent:
            found[CLUSTER_FILTER] = _acls(opts, (O.IDEMPOTENT_WRITE,))
    if opts.consumer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                found[f] = found.get(f, set()) | _acls(opts, (O.READ, O.DESCRIBE))
            elif f.resource_type == ResourceType.GROUP:
                found[f] = found.get(f, set()) | _acls(opts, (O.READ,))
    for f, acls in found.items():  # validateOperation
        valid = supported_operations(f.resource_type) | {O.ALL}
        if any(acl.operation not in valid for acl in acls):
            raise UsageError(f"ResourceType {f.resource_type} only supports operations "
                             f"{','.join(str(op) for op in sorted(valid))}")
    if opts.add:
        if not opts.pattern_type.is_specific:
            raise UsageError(f"A '--resource-pattern-type' value of '{opts.pattern_type}' is not valid when "
                             f"adding acls.")
        if any(not acls for acls in found.values()):
            raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return found


# -- where the ACLs live ----------------------------------------------------------------------------

class AdminAcls:
    """Through a broker (AdminClientService): the first failure ends the command, as Kafka's .all().get()."""

    def __init__(self, admin: Any) -> None:
        self.admin = admin

    async def create(self, bindings: list[AclBinding]) -> None:
        failed = (await self.admin.create_acls(bindings))["failed"]
        if failed:
            raise failed[0][1]

    async def delete(self, filters: list[AclBindingFilter]) -> None:
        for _, deleted, error in await self.admin.delete_acls(filters):
            failure = error or next((e for _, e in deleted if e is not None), None)
            if failure is not None:
                raise failure

    async def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return await self.admin.describe_acls(binding_filter)


class ZooKeeperAcls:
    """Straight into ZooKeeper (AuthorizerService): failures are printed and the command goes on."""

    def __init__(self, authorizer: Any) -> None:
        self.authorizer = authorizer

    async def create(self, bindings: list[AclBinding]) -> None:
        for error in self.authorizer.create_acls(bindings):
            if error is not None:
                print(f"Error while adding ACLs: {error.detail or error}")

    async def delete(self, filters: list[AclBindingFilter]) -> None:
        for deleted in self.authorizer.delete_acls(filters):
            for _, error in deleted:
                if error is not None:
                    print(f"Error while removing ACLs: {error.detail or error}")

    async def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return self.authorizer.acls(binding_filter)


# -- the command --------------------------------------------------------------------------------------

def _entries_block(acls: Iterable[Any]) -> str:
    """Kafka's "$Newline ${acls.map("\\t" + _).mkString(Newline)} $Newline"."""
    return "\n " + "\n".join("\t" + str(a) for a in sorted(acls, key=str)) + " \n"


def _confirm(opts: argparse.Namespace, message: str) -> bool:
    if opts.force:
        return True
    print(message)
    return sys.stdin.readline().strip().lower() == "y"


async def run_command(opts: argparse.Namespace, acls: Any) -> None:
    if opts.add:
        for f, entries in opts.filters_to_acls.items():
            pattern = ResourcePattern(f.resource_type, f.name, f.pattern_type)  # type: ignore[arg-type]
            print(f"Adding ACLs for resource `{pattern}`: {_entries_block(entries)}")
            await acls.create([AclBinding(pattern, e) for e in sorted(entries, key=str)])
    elif opts.remove:
        for f, entries in opts.filters_to_acls.items():
            if not entries:
                if _confirm(opts, f"Are you sure you want to delete all ACLs for resource filter `{f}`? (y/n)"):
                    await acls.delete([AclBindingFilter(f, AccessControlEntryFilter())])
            elif _confirm(opts, f"Are you sure you want to remove ACLs: {_entries_block(entries)} from resource "
                                f"filter `{f}`? (y/n)"):
                await acls.delete([AclBindingFilter(f, e.to_filter()) for e in sorted(entries, key=str)])
    await _list(opts, acls)


async def _list(opts: argparse.Namespace, acls: Any) -> None:
    filters = resource_filters(opts, die_if_none=False)
    if filters:
        bindings = [b for f in filters for b in await acls.describe(AclBindingFilter(f, AccessControlEntryFilter()))]
    else:
        bindings = await acls.describe(AclBindingFilter())
    by_resource: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for binding in bindings:
        by_resource.setdefault(binding.pattern, set()).add(binding.entry)
    principals = _principals(opts.principal)
    if not principals:
        _print_resources(by_resource)
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        _print_resources({r: {e for e in entries if e.principal == principal} for r, entries in by_resource.items()})


def _print_resources(by_resource: dict[ResourcePattern, set[AccessControlEntry]]) -> None:
    for resource in sorted(by_resource, key=lambda r: (r.resource_type, r.pattern_type, r.name)):
        if by_resource[resource]:
            print(f"Current ACLs for resource `{resource}`: {_entries_block(by_resource[resource])}")


def _run(opts: argparse.Namespace) -> None:
    if opts.zk_connect is None:
        run_admin(opts, lambda admin: run_command(opts, AdminAcls(admin)))
        return
    from ..broker.security.acl_authorizer import AclAuthorizer
    from ..broker.security.zk_acl_store import ZkAclStore
    from ..controller.zk_client import KafkaZkClient
    zk = KafkaZkClient(opts.zk_connect, session_timeout_ms=30000, connection_timeout_ms=30000)
    zk.start()
    try:
        authorizer = AclAuthorizer(ZkAclStore(zk))
        authorizer.load()
        asyncio.run(run_command(opts, ZooKeeperAcls(authorizer)))
    finally:
        zk.close()


def main(argv: Sequence[str] | None = None) -> int:
    from ..controller.zk_client import ZkError
    return run_tool(parse_args, _run, argv, ((KafkaError, OSError, ValueError, ZkError),
                                             failure_report("Error while executing ACL command: {message}")))


if __name__ == "__main__":
    sys.exit(main())

"""odradek-acls without a cluster: what the flags turn into (kafka-acls.sh's getResourceFilterToAcls) and
what it prints (AclCommand's formats), over an in-memory ACL service."""

from __future__ import annotations

import asyncio

import pytest

from odradek.tools.acls import parse_args, run_command
from odradek.tools.common import UsageError
from odradek.protocol.acl import AclOperation, AclPermissionType, PatternType, ResourceType

O = AclOperation
BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:9092"]


def acls_of(*args: str) -> dict:
    return {(f.resource_type, f.name, f.pattern_type): {(a.principal, a.host, a.operation, a.permission_type)
                                                        for a in acls}
            for f, acls in parse_args(BOOTSTRAP + list(args)).filters_to_acls.items()}


def test_operations_times_principals_times_hosts():
    found = acls_of("--add", "--allow-principal", "User:a", "--allow-principal", "User:b", "--allow-host",
                    "10.0.0.1", "--operation", "Read", "--operation", "WRITE", "--deny-principal", "User:c",
                    "--topic", "t")
    allow = AclPermissionType.ALLOW
    assert found == {(ResourceType.TOPIC, "t", PatternType.LITERAL): {
        (p, "10.0.0.1", op, allow) for p in ("User:a", "User:b") for op in (O.READ, O.WRITE)} | {
        ("User:c", "*", op, AclPermissionType.DENY) for op in (O.READ, O.WRITE)}}


def test_producer_and_consumer_roles():
    found = acls_of("--add", "--allow-principal", "User:p", "--producer", "--consumer", "--idempotent", "--topic",
                    "t", "--transactional-id", "tx", "--group", "g")
    ops = {key: {op for _, _, op, _ in entries} for key, entries in found.items()}
    literal = PatternType.LITERAL
    assert ops == {(ResourceType.TOPIC, "t", literal): {O.WRITE, O.DESCRIBE, O.CREATE, O.READ},
                   (ResourceType.TRANSACTIONAL_ID, "tx", literal): {O.WRITE, O.DESCRIBE},
                   (ResourceType.CLUSTER, "kafka-cluster", literal): {O.IDEMPOTENT_WRITE},
                   (ResourceType.GROUP, "g", literal): {O.READ}}


@pytest.mark.parametrize("args,message", [
    (["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (["--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"],
     "ResourceType GROUP only supports operations"),
    (["--list", "--producer", "--topic", "t"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"], "With --consumer you must specify"),
    (["--add", "--idempotent", "--topic", "t"], "The --idempotent option is only available if --producer is set"),
    (["--list", "--resource-pattern-type", "regex"], "Unknown resource-pattern-type: regex"),
])
def test_usage_mistakes(args, message):
    with pytest.raises(UsageError) as refused:
        parse_args(BOOTSTRAP + args)
    assert message in str(refused.value)


class MemoryAcls:
    def __init__(self) -> None:
        self.bindings: list = []

    async def create(self, bindings):
        self.bindings += bindings

    async def delete(self, filters):
        self.bindings = [b for b in self.bindings if not any(f.matches(b) for f in filters)]

    async def describe(self, binding_filter):
        return [b for b in self.bindings if binding_filter.matches(b)]


def test_add_list_remove_print_as_kafka_acls(capsys):
    service = MemoryAcls()
    asyncio.run(run_command(parse_args(BOOTSTRAP + ["--add", "--allow-principal", "User:alice", "--operation",
                                                    "Read", "--topic", "fin", "--resource-pattern-type",
                                                    "prefixed"]), service))
    resource = "ResourcePattern(resourceType=TOPIC, name=fin, patternType=PREFIXED)"
    entry = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert capsys.readouterr().out == (f"Adding ACLs for resource `{resource}`: \n \t{entry} \n\n"
                                       f"Current ACLs for resource `{resource}`: \n \t{entry} \n\n")
    asyncio.run(run_command(parse_args(BOOTSTRAP + ["--list", "--topic", "finance", "--resource-pattern-type",
                                                    "match"]), service))
    assert capsys.readouterr().out == f"Current ACLs for resource `{resource}`: \n \t{entry} \n\n"
    asyncio.run(run_command(parse_args(BOOTSTRAP + ["--remove", "--force", "--topic", "fin",
                                                    "--resource-pattern-type", "prefixed"]), service))
    assert capsys.readouterr().out == "" and service.bindings == []

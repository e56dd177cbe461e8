"""AclAuthorizer's decisions as tables (Kafka 2.8's rules): literal, prefixed and wildcard patterns,
Deny before Allow, implied operations, hosts, super users, allow.everyone.if.no.acl.found; then
authorizeByResourceType, createAcls/deleteAcls with their filters, and the version-conditional
write retry. The store is an in-memory stand-in for the ZooKeeper one (tested against a real
ZooKeeper in tests/integration/test_acl_store.py)."""

from __future__ import annotations

import pytest

from odradek.broker.security.acl_authorizer import AclAuthorizer, parse_super_users
from odradek.broker.security.zk_acl_store import NO_ACLS, VersionedAcls
from odradek.protocol.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)
from odradek.protocol.errors import InvalidRequestError, UnknownServerError

TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
O = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"


class MemoryStore:
    """ZkAclStore's interface over a dict; ``conflicts`` makes the next writes fail as if another
    broker had changed the znode first."""

    def __init__(self) -> None:
        self.znodes: dict[ResourcePattern, VersionedAcls] = {}
        self.notifications: list[ResourcePattern] = []
        self.conflicts = 0

    def read(self, pattern):
        return self.znodes.get(pattern, NO_ACLS)

    def write(self, pattern, entries, current):
        stored = self.read(pattern)
        if self.conflicts or stored.version != current.version:
            self.conflicts = max(0, self.conflicts - 1)
            return None
        if not entries:
            self.znodes.pop(pattern, None)
            return 0
        version = stored.version + 1 if stored.exists else 0
        self.znodes[pattern] = VersionedAcls(entries, version)
        return version

    def notify_change(self, pattern):
        self.notifications.append(pattern)


def binding(principal, operation, permission=ALLOW, resource_type=TOPIC, name="t", pattern_type=LIT, host="*"):
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, host, operation, permission))


def authorizer(*bindings, super_users="", allow_everyone=False) -> AclAuthorizer:
    auth = AclAuthorizer(MemoryStore(), parse_super_users(super_users), allow_everyone)
    assert auth.create_acls(list(bindings)) == [None] * len(bindings)
    return auth


# (ACLs, principal, host, operation, resource type, name, allowed)
AUTHORIZE_CASES = [
    # no ACL on the resource: allow.everyone.if.no.acl.found decides (False here)
    ([], ALICE, "1.1.1.1", O.READ, TOPIC, "t", False),
    # literal pattern: that principal, that operation, that resource only
    ([binding(ALICE, O.READ)], ALICE, "1.1.1.1", O.READ, TOPIC, "t", True),
    ([binding(ALICE, O.READ)], BOB, "1.1.1.1", O.READ, TOPIC, "t", False),
    ([binding(ALICE, O.READ)], ALICE, "1.1.1.1", O.WRITE, TOPIC, "t", False),
    ([binding(ALICE, O.READ)], ALICE, "1.1.1.1", O.READ, TOPIC, "u", False),
    ([binding(ALICE, O.READ, resource_type=GROUP)], ALICE, "1.1.1.1", O.READ, TOPIC, "t", False),
    # implied operations: Read/Write/Delete/Alter grant Describe, AlterConfigs grants DescribeConfigs
    ([binding(ALICE, O.READ)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", True),
    ([binding(ALICE, O.WRITE)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", True),
    ([binding(ALICE, O.DELETE)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", True),
    ([binding(ALICE, O.ALTER)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", True),
    ([binding(ALICE, O.CREATE)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", False),
    ([binding(ALICE, O.DESCRIBE)], ALICE, "1.1.1.1", O.READ, TOPIC, "t", False),
    ([binding(ALICE, O.ALTER_CONFIGS)], ALICE, "1.1.1.1", O.DESCRIBE_CONFIGS, TOPIC, "t", True),
    ([binding(ALICE, O.DESCRIBE_CONFIGS)], ALICE, "1.1.1.1", O.ALTER_CONFIGS, TOPIC, "t", False),
    ([binding(ALICE, O.ALL)], ALICE, "1.1.1.1", O.DELETE, TOPIC, "t", True),
    # wildcards: resource "*", principal User:*, host "*"
    ([binding(ALICE, O.READ, name="*")], ALICE, "1.1.1.1", O.READ, TOPIC, "anything", True),
    ([binding("User:*", O.READ)], BOB, "1.1.1.1", O.READ, TOPIC, "t", True),
    ([binding("Group:*", O.READ)], BOB, "1.1.1.1", O.READ, TOPIC, "t", False),
    # prefixed patterns match names starting with them, literal ones only the name itself
    ([binding(ALICE, O.READ, name="fin", pattern_type=PRE)], ALICE, "1.1.1.1", O.READ, TOPIC, "finance", True),
    ([binding(ALICE, O.READ, name="fin", pattern_type=PRE)], ALICE, "1.1.1.1", O.READ, TOPIC, "fin", True),
    ([binding(ALICE, O.READ, name="fin", pattern_type=PRE)], ALICE, "1.1.1.1", O.READ, TOPIC, "fi", False),
    ([binding(ALICE, O.READ, name="fin", pattern_type=PRE)], ALICE, "1.1.1.1", O.READ, TOPIC, "refinance", False),
    ([binding(ALICE, O.READ, name="fin")], ALICE, "1.1.1.1", O.READ, TOPIC, "finance", False),
    ([binding(ALICE, O.READ, name="*", pattern_type=PRE)], ALICE, "1.1.1.1", O.READ, TOPIC, "t", False),
    # Deny before Allow, whatever pattern carries it
    ([binding("User:*", O.READ, name="*"), binding(ALICE, O.READ, DENY)], ALICE, "1.1.1.1", O.READ, TOPIC, "t",
     False),
    ([binding("User:*", O.READ, name="*"), binding(ALICE, O.READ, DENY)], ALICE, "1.1.1.1", O.READ, TOPIC, "u",
     True),
    ([binding(ALICE, O.READ), binding(ALICE, O.ALL, DENY, name="t", pattern_type=PRE)], ALICE, "1.1.1.1",
     O.READ, TOPIC, "t", False),
    ([binding(ALICE, O.ALL), binding("User:*", O.WRITE, DENY)], ALICE, "1.1.1.1", O.WRITE, TOPIC, "t", False),
    ([binding(ALICE, O.ALL), binding("User:*", O.WRITE, DENY)], ALICE, "1.1.1.1", O.READ, TOPIC, "t", True),
    # a Deny of Read does not deny the Describe that Read would have implied
    ([binding(ALICE, O.WRITE), binding(ALICE, O.READ, DENY)], ALICE, "1.1.1.1", O.DESCRIBE, TOPIC, "t", True),
    # hosts: an exact address, or "*"; a Deny for another host does not apply
    ([binding(ALICE, O.READ, host="10.0.0.1")], ALICE, "10.0.0.1", O.READ, TOPIC, "t", True),
    ([binding(ALICE, O.READ, host="10.0.0.1")], ALICE, "10.0.0.2", O.READ, TOPIC, "t", False),
    ([binding(ALICE, O.READ), binding(ALICE, O.READ, DENY, host="10.0.0.9")], ALICE, "10.0.0.1", O.READ, TOPIC,
     "t", True),
    ([binding(ALICE, O.READ), binding(ALICE, O.READ, DENY, host="10.0.0.9")], ALICE, "10.0.0.9", O.READ, TOPIC,
     "t", False),
    # cluster and transactional id resources
    ([binding(ALICE, O.CLUSTER_ACTION, resource_type=CLUSTER, name="kafka-cluster")], ALICE, "1.1.1.1",
     O.CLUSTER_ACTION, CLUSTER, "kafka-cluster", True),
    ([binding(ALICE, O.WRITE, resource_type=TXN, name="tx")], ALICE, "1.1.1.1", O.WRITE, TXN, "tx", True),
    ([binding(ALICE, O.WRITE, resource_type=TXN, name="tx")], ALICE, "1.1.1.1", O.WRITE, TXN, "tx2", False),
]


@pytest.mark.parametrize("acls,principal,host,operation,resource_type,name,allowed", AUTHORIZE_CASES)
def test_authorize(acls, principal, host, operation, resource_type, name, allowed):
    assert authorizer(*acls).authorize(principal, host, operation, resource_type, name) is allowed


def test_super_users_may_do_anything_even_when_denied():
    auth = authorizer(binding("User:*", O.ALL, DENY, name="*"), super_users="User:admin; User:broker;")
    assert auth.super_users == {"User:admin", "User:broker"}
    assert auth.authorize("User:broker", "1.1.1.1", O.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not auth.authorize(ALICE, "1.1.1.1", O.READ, TOPIC, "t")


def test_allow_everyone_applies_only_to_resources_without_acls():
    auth = authorizer(binding(BOB, O.READ), allow_everyone=True)
    assert auth.authorize(ALICE, "1.1.1.1", O.WRITE, TOPIC, "other")  # no ACL on "other"
    assert not auth.authorize(ALICE, "1.1.1.1", O.READ, TOPIC, "t")    # "t" has an ACL, not for alice


def test_super_users_parsing():
    assert parse_super_users("") == frozenset()
    assert parse_super_users("User:CN=broker,O=org:x") == {"User:CN=broker,O=org:x"}
    with pytest.raises(ValueError):
        parse_super_users("User:a;;User:b")
    with pytest.raises(ValueError):
        parse_super_users("alice")


def test_authorized_operations_of_a_topic():
    auth = authorizer(binding(ALICE, O.READ), binding(ALICE, O.ALTER_CONFIGS))
    assert auth.authorized_operations(ALICE, "h", TOPIC, "t") == {O.READ, O.DESCRIBE, O.ALTER_CONFIGS,
                                                                   O.DESCRIBE_CONFIGS}


# (ACLs, operation, allow_everyone, allowed): may alice Write to some topic? (idempotent producers)
BY_TYPE_CASES = [
    ([], False, False),
    ([], True, True),
    ([binding(ALICE, O.WRITE)], False, True),
    ([binding(ALICE, O.READ)], False, False),       # the operation itself, no implication
    ([binding(ALICE, O.ALL)], False, True),
    ([binding("User:*", O.WRITE, name="p", pattern_type=PRE)], False, True),
    ([binding(ALICE, O.WRITE), binding(ALICE, O.WRITE, DENY)], False, False),
    ([binding(ALICE, O.WRITE, DENY, name="*")], True, False),  # a wildcard Deny beats allow.everyone
    ([binding(ALICE, O.WRITE, name="*"), binding(ALICE, O.WRITE, DENY)], False, True),
    ([binding(ALICE, O.WRITE, name="pre", pattern_type=PRE), binding(ALICE, O.WRITE, DENY, name="pr",
                                                                        pattern_type=PRE)], False, False),
    ([binding(ALICE, O.WRITE, name="pre", pattern_type=PRE), binding(ALICE, O.WRITE, DENY, name="prefix",
                                                                        pattern_type=PRE)], False, True),
    ([binding(ALICE, O.WRITE, name="preview"), binding(ALICE, O.WRITE, DENY, name="pre", pattern_type=PRE)],
     False, False),
    ([binding(BOB, O.WRITE)], False, False),
    ([binding(ALICE, O.WRITE, host="10.0.0.9")], False, False),
]


@pytest.mark.parametrize("acls,allow_everyone,allowed", BY_TYPE_CASES)
def test_authorize_by_resource_type(acls, allow_everyone, allowed):
    auth = authorizer(*acls, allow_everyone=allow_everyone)
    assert auth.authorize_by_resource_type(ALICE, "1.1.1.1", O.WRITE, TOPIC) is allowed


def test_create_refuses_unknown_elements_and_bad_principals():
    auth = authorizer()
    results = auth.create_acls([binding(ALICE, O.UNKNOWN), binding("alice", O.READ), binding(BOB, O.READ),
                                binding(ALICE, O.READ, name="u")])
    assert isinstance(results[0], InvalidRequestError)
    # Kafka's AclEntry cannot parse "alice": a server error for every ACL of that resource
    assert isinstance(results[1], UnknownServerError) and isinstance(results[2], UnknownServerError)
    assert results[3] is None
    assert auth.acls(AclBindingFilter()) == [binding(ALICE, O.READ, name="u")]


def test_every_change_is_written_conditionally_and_announced_once():
    auth = authorizer()
    store = auth.store
    auth.create_acls([binding(ALICE, O.READ), binding(BOB, O.READ), binding(ALICE, O.READ, name="p",
                                                                           pattern_type=PRE)])
    assert store.znodes[ResourcePattern(TOPIC, "t")].entries == {binding(ALICE, O.READ).entry,
                                                                  binding(BOB, O.READ).entry}
    assert store.notifications == [ResourcePattern(TOPIC, "t"), ResourcePattern(TOPIC, "p", PRE)]
    auth.create_acls([binding(ALICE, O.READ)])  # already there: no change, no notification
    assert len(store.notifications) == 2


def test_a_conflicting_write_is_retried_from_what_the_store_has():
    auth = authorizer(binding(ALICE, O.READ))
    store = auth.store
    pattern = ResourcePattern(TOPIC, "t")
    # Another broker added bob's ACL behind our cache's back: the conditional write fails, we re-read.
    store.znodes[pattern] = VersionedAcls(store.znodes[pattern].entries | {binding(BOB, O.READ).entry}, 1)
    store.conflicts = 2
    assert auth.create_acls([binding("User:carol", O.READ)]) == [None]
    assert {e.principal for e in store.znodes[pattern].entries} == {ALICE, BOB, "User:carol"}
    assert auth.authorize(BOB, "h", O.READ, TOPIC, "t")


def test_delete_with_filters_reports_each_binding_under_the_first_matching_filter():
    auth = authorizer(binding(ALICE, O.READ), binding(BOB, O.WRITE), binding(ALICE, O.READ, name="t2"),
                      binding(ALICE, O.READ, name="t", pattern_type=PRE))
    by_alice = AclBindingFilter(ResourcePatternFilter(TOPIC, None, PatternType.ANY), AccessControlEntryFilter(ALICE))
    literal_t = AclBindingFilter(ResourcePatternFilter(TOPIC, "t", LIT))
    results = auth.delete_acls([by_alice, literal_t])
    assert {b for b, e in results[0]} == {binding(ALICE, O.READ), binding(ALICE, O.READ, name="t2"),
                                          binding(ALICE, O.READ, name="t", pattern_type=PRE)}
    assert [b for b, e in results[1]] == [binding(BOB, O.WRITE)]
    assert all(e is None for r in results for _, e in r)
    assert auth.acls(AclBindingFilter()) == []
    assert auth.store.znodes == {}


def test_match_filter_finds_every_pattern_that_applies_to_a_resource():
    auth = authorizer(binding(ALICE, O.READ, name="*"), binding(ALICE, O.READ, name="fin", pattern_type=PRE),
                      binding(ALICE, O.READ, name="finance"), binding(ALICE, O.READ, name="other"))
    found = auth.acls(AclBindingFilter(ResourcePatternFilter(TOPIC, "finance", PatternType.MATCH)))
    assert {b.pattern.name for b in found} == {"*", "fin", "finance"}
    any_pattern = auth.acls(AclBindingFilter(ResourcePatternFilter(TOPIC, "fin", PatternType.ANY)))
    assert [b.pattern for b in any_pattern] == [ResourcePattern(TOPIC, "fin", PRE)]


def test_a_change_notification_replaces_the_cached_acls_of_that_resource():
    auth = authorizer(binding(ALICE, O.READ))
    pattern = ResourcePattern(TOPIC, "t")
    auth.store.znodes[pattern] = VersionedAcls(frozenset({binding(BOB, O.READ).entry}), 5)
    auth.process_change(pattern)
    assert not auth.authorize(ALICE, "h", O.READ, TOPIC, "t")
    assert auth.authorize(BOB, "h", O.READ, TOPIC, "t")
    del auth.store.znodes[pattern]
    auth.process_change(pattern)
    assert auth.acls(AclBindingFilter()) == []

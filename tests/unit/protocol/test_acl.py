"""ACL data model (protocol/acl.py): Kafka's names and codes, filter matching, and the toString forms
kafka-acls.sh prints."""

from __future__ import annotations

import pytest

from odradek.protocol.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourcePatternFilter, ResourceType, operations_bitfield, operations_from_bitfield, supported_operations,
)

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE, ANY, MATCH = PatternType.LITERAL, PatternType.PREFIXED, PatternType.ANY, PatternType.MATCH


def test_names_and_codes_are_kafkas():
    assert [(t.name, int(t)) for t in ResourceType][2:] == [
        ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4), ("TRANSACTIONAL_ID", 5), ("DELEGATION_TOKEN", 6)]
    assert ResourceType.TRANSACTIONAL_ID.kafka_name == "TransactionalId"
    assert AclOperation.parse("IdempotentWrite") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("IDEMPOTENT_WRITE") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("idempotentwrite") is AclOperation.UNKNOWN  # SecurityUtils is that strict
    assert AclPermissionType.from_code(99) is AclPermissionType.UNKNOWN
    assert int(AclOperation.IDEMPOTENT_WRITE) == 12 and int(PatternType.PREFIXED) == 4


def test_authorized_operations_bitfield():
    topic_ops = supported_operations(TOPIC)
    field = operations_bitfield(topic_ops)
    assert field == sum(1 << int(op) for op in topic_ops)
    assert operations_from_bitfield(field) == set(topic_ops)
    assert operations_from_bitfield(-2147483648) == set()


# (filter, pattern, matches): ResourcePatternFilter.matches
FILTER_CASES = [
    (ResourcePatternFilter(TOPIC, "t", LIT), ResourcePattern(TOPIC, "t", LIT), True),
    (ResourcePatternFilter(TOPIC, "t", LIT), ResourcePattern(TOPIC, "t", PRE), False),
    (ResourcePatternFilter(TOPIC, "t", LIT), ResourcePattern(GROUP, "t", LIT), False),
    (ResourcePatternFilter(TOPIC, "t", ANY), ResourcePattern(TOPIC, "t", PRE), True),
    (ResourcePatternFilter(TOPIC, "t", ANY), ResourcePattern(TOPIC, "*", LIT), False),
    (ResourcePatternFilter(TOPIC, "tea", MATCH), ResourcePattern(TOPIC, "*", LIT), True),
    (ResourcePatternFilter(TOPIC, "tea", MATCH), ResourcePattern(TOPIC, "te", PRE), True),
    (ResourcePatternFilter(TOPIC, "tea", MATCH), ResourcePattern(TOPIC, "tea", LIT), True),
    (ResourcePatternFilter(TOPIC, "tea", MATCH), ResourcePattern(TOPIC, "team", PRE), False),
    (ResourcePatternFilter(ResourceType.ANY, None, ANY), ResourcePattern(GROUP, "g", PRE), True),
    (ResourcePatternFilter(TOPIC, None, PRE), ResourcePattern(TOPIC, "x", LIT), False),
]


@pytest.mark.parametrize("pattern_filter,pattern,matches", FILTER_CASES)
def test_resource_pattern_filter(pattern_filter, pattern, matches):
    assert pattern_filter.matches(pattern) is matches


def test_entry_filter_and_to_string():
    entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert AccessControlEntryFilter().matches(entry)
    assert AccessControlEntryFilter("User:alice", None, AclOperation.READ).matches(entry)
    assert not AccessControlEntryFilter(None, "10.0.0.1").matches(entry)
    assert not AccessControlEntryFilter(permission_type=AclPermissionType.DENY).matches(entry)
    assert str(entry) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert str(ResourcePattern(TOPIC, "t", PRE)) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)"
    assert str(ResourcePatternFilter(GROUP, None, ANY)) == \
        "ResourcePattern(resourceType=GROUP, name=<any>, patternType=ANY)"
    with pytest.raises(ValueError):
        ResourcePattern(TOPIC, "t", MATCH)
    with pytest.raises(ValueError):
        AccessControlEntry("User:a", "*", AclOperation.ANY, AclPermissionType.ALLOW)

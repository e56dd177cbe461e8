"""Access control lists, as Kafka's ``org.apache.kafka.common.acl`` and ``resource`` packages (sans-IO).

Shared by the broker's authorizer, the ACL APIs, our Admin client and ``odradek-acls``:

- the four enums with Kafka's wire codes (``ResourceType``, ``PatternType``, ``AclOperation``,
  ``AclPermissionType``) and Kafka's names for them (``Topic``, ``TransactionalId``, ``IdempotentWrite``:
  PascalCase of the enum name, as SecurityUtils; parsing also takes the upper-case name);
- a binding (``ResourcePattern`` + ``AccessControlEntry`` = ``AclBinding``) and its filter
  (``ResourcePatternFilter`` + ``AccessControlEntryFilter`` = ``AclBindingFilter``), with Kafka's
  ``matches`` rules and ``toString`` forms (which kafka-acls.sh prints);
- which operations each resource type supports (``supported_operations``) and the 32-bit field of
  operation codes the ``*_authorized_operations`` response fields carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable

CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name (Resource.CLUSTER_NAME)
WILDCARD_RESOURCE = "*"         # a literal pattern matching every resource of its type
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class _Named(IntEnum):
    """An enum with Kafka's display name (``Topic``) and a parser that takes it or the upper-case name."""

    @property
    def kafka_name(self) -> str:
        return _pascal(self.name)

    @classmethod
    def parse(cls, text: str) -> "_Named":
        """SecurityUtils' lookup: 'IdempotentWrite' or 'IDEMPOTENT_WRITE'; anything else is UNKNOWN."""
        for member in cls:
            if text in (member.kafka_name, member.name):
                return member
        return cls(0)

    @classmethod
    def from_code(cls, code: int) -> "_Named":
        """Kafka's fromCode: an unknown code is UNKNOWN."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    def __str__(self) -> str:  # Java's Enum.toString: the constant's name
        return self.name


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# The concrete values (no UNKNOWN/ANY/MATCH): what an ACL may name (AclEntry.ResourceTypes/AclOperations).
RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID,
                  ResourceType.DELEGATION_TOKEN)
ACL_OPERATIONS = tuple(op for op in AclOperation if op > AclOperation.ANY)

_O = AclOperation
_SUPPORTED: dict[ResourceType, frozenset[AclOperation]] = {  # AclEntry.supportedOperations (Kafka 2.8)
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
}

# An Allow for any of these grants the key (AclAuthorizer.authorizeAction): Read, Write, Delete or
# Alter imply Describe; AlterConfigs implies DescribeConfigs.
IMPLIED_BY: dict[AclOperation, tuple[AclOperation, ...]] = {
    _O.DESCRIBE: (_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER),
    _O.DESCRIBE_CONFIGS: (_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
}


def supported_operations(resource_type: ResourceType) -> frozenset[AclOperation]:
    return _SUPPORTED[resource_type]


def operations_bitfield(operations: Iterable[AclOperation]) -> int:
    """Utils.to32BitField: bit ``code`` set for each operation (the *_authorized_operations fields)."""
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field - (1 << 32) if field >= 1 << 31 else field


def operations_from_bitfield(field: int) -> set[AclOperation]:
    return {op for op in AclOperation if field >= 0 and field & (1 << int(op))}


def parse_principal(text: str) -> tuple[str, str]:
    """SecurityUtils.parseKafkaPrincipal: 'User:alice' -> ('User', 'alice'), split at the first ':'."""
    principal_type, sep, name = (text or "").partition(":")
    if not sep:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return principal_type, name


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        if self.resource_type == ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.MATCH, PatternType.ANY):
            raise ValueError(f"patternType must not be {self.pattern_type}")

    def to_filter(self) -> "ResourcePatternFilter":
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)

    @property
    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type}, name={self.name}, patternType={self.pattern_type})"


@dataclass(frozen=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        if self.operation == AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type == AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")

    def to_filter(self) -> "AccessControlEntryFilter":
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation}, "
                f"permissionType={self.permission_type})")


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    @property
    def is_unknown(self) -> bool:
        return self.pattern.is_unknown or self.entry.is_unknown

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True)
class ResourcePatternFilter:
    """``name`` None matches any name; pattern type ANY matches any pattern with exactly this name,
    MATCH every pattern that applies to the named resource (literal, wildcard or prefix of it)."""
    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:  # MATCH
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)  # MATCH against a PREFIXED pattern

    @property
    def matches_at_most_one(self) -> bool:
        return (self.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN) and self.name is not None
                and self.pattern_type not in (PatternType.MATCH, PatternType.UNKNOWN))

    @property
    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return f"ResourcePattern(resourceType={self.resource_type}, name={name}, patternType={self.pattern_type})"


@dataclass(frozen=True)
class AccessControlEntryFilter:
    """None principal/host and ANY operation/permission match anything."""
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN

    def __str__(self) -> str:
        principal = "<any>" if self.principal is None else self.principal
        host = "<any>" if self.host is None else self.host
        return f"(principal={principal}, host={host}, operation={self.operation}, permissionType={self.permission_type})"


@dataclass(frozen=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    @property
    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown or self.entry_filter.is_unknown

    def __str__(self) -> str:
        return f"(patternFilter={self.pattern_filter}, entryFilter={self.entry_filter})"


ANY_BINDING = AclBindingFilter()  # AclBindingFilter.ANY: every ACL

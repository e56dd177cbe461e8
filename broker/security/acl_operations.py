"""ACL operations (Kafka's AclOperation codes) and the "authorized operations" bit fields of responses.

DescribeCluster, Metadata and DescribeGroups may report which operations the caller may perform on a
resource as a 32-bit field with bit ``code`` set per allowed operation (Kafka's Utils.to32BitField).
Without an authorizer Kafka 2.8 reports every operation the resource type supports
(AuthHelper.authorizedOperations with ``authorizer = None``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Iterable

# The value of an ``*_authorized_operations`` field when the client did not ask for them.
AUTHORIZED_OPERATIONS_OMITTED = -(1 << 31)


class AclOperation(IntEnum):
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


_O = AclOperation
# Kafka 2.8's AclEntry.supportedOperations per resource type
SUPPORTED_OPERATIONS: dict[str, frozenset[AclOperation]] = {
    "topic": frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                        _O.ALTER_CONFIGS}),
    "group": frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    "cluster": frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                          _O.ALTER, _O.DESCRIBE}),
    "transactional_id": frozenset({_O.DESCRIBE, _O.WRITE}),
}


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's Utils.to32BitField: bit ``code`` set for each operation."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field


def authorized_operations_without_authorizer(resource_type: str) -> int:
    """What Kafka 2.8 reports when no authorizer is configured: everything the resource type supports."""
    return operations_bit_field(SUPPORTED_OPERATIONS[resource_type])

"""ACL administration for ``AIOAdmin`` (mixed in): Kafka's Admin.createAcls/describeAcls/deleteAcls with
kafka-python's method names and result shapes, over the types of ``odradek.protocol.acl``:

    topic = ResourcePattern(ResourceType.TOPIC, "events")              # LITERAL unless told PREFIXED
    read = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    await admin.create_acls([AclBinding(topic, read)])                 # {"succeeded": [...], "failed": []}
    await admin.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "events",
                                                                     PatternType.MATCH)))
    await admin.delete_acls([AclBindingFilter(topic.to_filter(), read.to_filter())])

Each call is one request to any broker (the Java Admin's least loaded node), retried while the error
is retriable (``admin_calls``). A broker without an authorizer answers SECURITY_DISABLED; a principal without Describe
(listing) or Alter (changing) on the cluster CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any, Iterable, TypeVar

from ...protocol.acl import (
    ANY_BINDING, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)
from ...protocol.errors import KafkaError, for_code  # type: ignore[attr-defined]
from ...protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from .calls import ANY, AdminCalls, Try

T = TypeVar("T")
DeleteResult = tuple[AclBindingFilter, list[tuple[AclBinding, "KafkaError | None"]], "KafkaError | None"]


class AclAdmin:
    """The ACL part of ``AIOAdmin``; needs ``self._calls``."""

    _calls: AdminCalls

    async def create_acls(self, acls: Iterable[AclBinding]) -> dict[str, list]:
        """Add ACLs: ``{"succeeded": [binding, ...], "failed": [(binding, KafkaError), ...]}``."""
        bindings = list(acls)
        creation = CreateAclsRequest.AclCreation
        request = CreateAclsRequest(creations=[creation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type)) for b in bindings])
        response = await self._calls.run("createAcls", ANY, lambda t: _send(t, request))
        outcome: dict[str, list] = {"succeeded": [], "failed": []}
        for binding, result in zip(bindings, response.results):
            if result.error_code:
                outcome["failed"].append((binding, _error(result.error_code, result.error_message)))
            else:
                outcome["succeeded"].append(binding)
        return outcome

    async def describe_acls(self, acl_filter: AclBindingFilter = ANY_BINDING) -> list[AclBinding]:
        """The ACLs the filter matches (all of them by default); raises the broker's error."""
        pattern, entry = acl_filter.pattern_filter, acl_filter.entry_filter
        request = DescribeAclsRequest(
            resource_type_filter=int(pattern.resource_type), resource_name_filter=pattern.name,
            pattern_type_filter=int(pattern.pattern_type), principal_filter=entry.principal,
            host_filter=entry.host, operation=int(entry.operation), permission_type=int(entry.permission_type))

        async def attempt(t: Try) -> Any:
            response = await _send(t, request)
            if response.error_code:
                raise _error(response.error_code, response.error_message)
            return response
        response = await self._calls.run("describeAcls", ANY, attempt)
        return [AclBinding(_pattern(r.resource_type, r.resource_name, r.pattern_type),
                           _entry(a.principal, a.host, a.operation, a.permission_type))
                for r in response.resources for a in r.acls]

    async def delete_acls(self, acl_filters: Iterable[AclBindingFilter]) -> list[DeleteResult]:
        """Remove what each filter matches: per filter ``(filter, [(deleted binding, error or None)], error or None)``."""
        filters = list(acl_filters)
        request = DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=int(f.pattern_filter.resource_type), resource_name_filter=f.pattern_filter.name,
            pattern_type_filter=int(f.pattern_filter.pattern_type), principal_filter=f.entry_filter.principal,
            host_filter=f.entry_filter.host, operation=int(f.entry_filter.operation),
            permission_type=int(f.entry_filter.permission_type)) for f in filters])
        response = await self._calls.run("deleteAcls", ANY, lambda t: _send(t, request))
        results: list[DeleteResult] = []
        for acl_filter, result in zip(filters, response.filter_results):
            deleted = [(AclBinding(_pattern(m.resource_type, m.resource_name, m.pattern_type),
                                   _entry(m.principal, m.host, m.operation, m.permission_type)),
                        _error(m.error_code, m.error_message) if m.error_code else None)
                       for m in result.matching_acls]
            results.append((acl_filter, deleted,
                            _error(result.error_code, result.error_message) if result.error_code else None))
        return results


async def _send(t: Try, request: Any) -> Any:
    assert t.conn is not None
    return await t.conn.send(request, timeout=t.timeout)


def _error(code: int, message: str | None) -> KafkaError:
    return for_code(code)(message) if message else for_code(code)()


def _pattern(resource_type: int, name: str, pattern_type: int) -> ResourcePattern:
    return ResourcePattern(ResourceType.from_code(resource_type), name,  # type: ignore[arg-type]
                           PatternType.from_code(pattern_type))  # type: ignore[arg-type]


def _entry(principal: str, host: str, operation: int, permission: int) -> AccessControlEntry:
    return AccessControlEntry(principal, host, AclOperation.from_code(operation),  # type: ignore[arg-type]
                              AclPermissionType.from_code(permission))  # type: ignore[arg-type]


__all__ = ["AclAdmin", "AccessControlEntry", "AccessControlEntryFilter", "AclBinding", "AclBindingFilter",
           "AclOperation", "AclPermissionType", "PatternType", "ResourcePattern", "ResourcePatternFilter",
           "ResourceType"]

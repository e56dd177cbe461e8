"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), as Kafka 2.8's KafkaApis.

- Describing needs Describe on the cluster, creating and deleting Alter (CLUSTER_AUTHORIZATION_FAILED
  otherwise); without an authorizer the answer is SECURITY_DISABLED ("No Authorizer is configured on
  the broker"), after that check, as Kafka.
- Requests Kafka refuses while parsing close the connection: an unknown resource type, pattern type,
  operation or permission code, or v0 with a pattern type other than LITERAL (a v0 filter of ANY
  means LITERAL, since v0 predates pattern types).
- CreateAcls: a Cluster ACL must name ``kafka-cluster`` and a name must not be empty (INVALID_REQUEST
  for that ACL); ANY/MATCH where a concrete value is needed fails the whole request, as Kafka's
  AclBinding constructor does (UNKNOWN_SERVER_ERROR). Writes happen in ZooKeeper (executor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from ...protocol.acl import (
    CLUSTER_NAME, AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError, SecurityDisabledError, UnknownServerError,
)
from ...protocol.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse
from ..network.request_channel import Response
from .authorization import AuthHelper

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

NO_AUTHORIZER = "No Authorizer is configured on the broker"
_Resource = DescribeAclsResponse.DescribeAclsResource
_Description = _Resource.AclDescription
_Creation = CreateAclsResponse.AclCreationResult
_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = _FilterResult.DeleteAclsMatchingAcl


class _BadRequest(Exception):
    """What Kafka's request parser refuses: the connection is closed."""


def _codes(item: Any, version: int, filter_names: bool) -> tuple[ResourceType, PatternType, AclOperation,
                                                                   AclPermissionType]:
    """The enum fields of one filter or creation, checked as the *AclsRequest constructors do."""
    prefix = "_filter" if filter_names else ""
    raw = (getattr(item, f"resource_type{prefix}"),
           getattr(item, "pattern_type_filter" if filter_names else "resource_pattern_type"),
           item.operation, item.permission_type)
    resource_type = ResourceType.from_code(raw[0])
    pattern_type = PatternType.from_code(raw[1])
    operation = AclOperation.from_code(raw[2])
    permission = AclPermissionType.from_code(raw[3])
    if version == 0:
        if filter_names and pattern_type == PatternType.ANY:
            pattern_type = PatternType.LITERAL
        elif pattern_type != PatternType.LITERAL:
            raise _BadRequest(f"Version 0 only supports literal resource pattern types, got {pattern_type}")
    # Kafka compares the codes as sent with UNKNOWN's code (0): a code it has no name for (-1, 99) passes
    # this check, and then means UNKNOWN (matching nothing, refused by the authorizer)
    unknown = (ResourceType.UNKNOWN, PatternType.UNKNOWN, AclOperation.UNKNOWN, AclPermissionType.UNKNOWN)
    if any(code == int(u) for code, u in zip(raw, unknown)):
        raise _BadRequest("the request contains UNKNOWN elements")
    return resource_type, pattern_type, operation, permission  # type: ignore[return-value]


def _binding_filter(item: Any, version: int) -> AclBindingFilter:
    resource_type, pattern_type, operation, permission = _codes(item, version, True)
    return AclBindingFilter(ResourcePatternFilter(resource_type, item.resource_name_filter, pattern_type),
                            AccessControlEntryFilter(item.principal_filter, item.host_filter, operation, permission))


class AclApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    @property
    def auth(self) -> AuthHelper:
        return self.services.auth

    # -- DescribeAcls -----------------------------------------------------------------------------

    def describe_acls(self, request: "Request") -> Any:
        try:
            binding_filter = _binding_filter(request.body, request.api_version)
        except _BadRequest as exc:
            return Response.close(request, f"DescribeAcls: {exc}")
        self.auth.authorize_cluster(request, AclOperation.DESCRIBE)
        authorizer = self.auth.authorizer
        if authorizer is None:
            return DescribeAclsResponse(throttle_time_ms=0, error_code=SecurityDisabledError.code,
                                        error_message=NO_AUTHORIZER, resources=[])
        return DescribeAclsResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                    resources=describe_acls_resources(authorizer.acls(binding_filter)))

    def describe_acls_error(self, request: "Request", error_code: int) -> Any:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=error_code, resources=[])

    # -- CreateAcls -------------------------------------------------------------------------------

    async def create_acls(self, request: "Request") -> Any:
        creations = request.body.creations
        try:
            codes = [_codes(c, request.api_version, False) for c in creations]
        except _BadRequest as exc:
            return Response.close(request, f"CreateAcls: {exc}")
        self.auth.authorize_cluster(request, AclOperation.ALTER)
        authorizer = self.auth.authorizer
        if authorizer is None:
            return _create_response([SecurityDisabledError(NO_AUTHORIZER + ".")] * len(creations))
        try:
            bindings = [AclBinding(ResourcePattern(rt, c.resource_name, pt),
                                   AccessControlEntry(c.principal, c.host, op, perm))
                        for c, (rt, pt, op, perm) in zip(creations, codes)]
        except ValueError as exc:  # ANY or MATCH where a value is needed: Kafka's IllegalArgumentException
            raise UnknownServerError(str(exc)) from None
        errors: list[Any] = [_invalid_name(b.pattern) for b in bindings]
        valid = [b for b, e in zip(bindings, errors) if e is None]
        results = iter(await self.services.in_executor(authorizer.create_acls, valid) if valid else [])
        return _create_response([e if e is not None else next(results) for e in errors])

    def create_acls_error(self, request: "Request", error_code: int) -> Any:
        return CreateAclsResponse(throttle_time_ms=0, results=[
            _Creation(error_code=error_code) for _ in request.body.creations])

    # -- DeleteAcls -------------------------------------------------------------------------------

    async def delete_acls(self, request: "Request") -> Any:
        try:
            filters = [_binding_filter(f, request.api_version) for f in request.body.filters]
        except _BadRequest as exc:
            return Response.close(request, f"DeleteAcls: {exc}")
        self.auth.authorize_cluster(request, AclOperation.ALTER)
        authorizer = self.auth.authorizer
        if authorizer is None:
            return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
                _FilterResult(error_code=SecurityDisabledError.code, error_message=NO_AUTHORIZER + ".",
                              matching_acls=[]) for _ in filters])
        results = await self.services.in_executor(authorizer.delete_acls, filters) if filters else []
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            _FilterResult(error_code=0, error_message=None, matching_acls=[_matching(b, e) for b, e in deleted])
            for deleted in results])

    def delete_acls_error(self, request: "Request", error_code: int) -> Any:
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            _FilterResult(error_code=error_code, matching_acls=[]) for _ in request.body.filters])


def describe_acls_resources(bindings: Iterable[AclBinding]) -> list[Any]:
    """DescribeAclsResponse.aclsResources: the bindings grouped by resource pattern."""
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in bindings:
        by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    return [_Resource(resource_type=int(p.resource_type), resource_name=p.name, pattern_type=int(p.pattern_type),
                      acls=[_Description(principal=e.principal, host=e.host, operation=int(e.operation),
                                         permission_type=int(e.permission_type)) for e in entries])
            for p, entries in by_pattern.items()]


def _invalid_name(pattern: ResourcePattern) -> InvalidRequestError | None:
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        return InvalidRequestError("Invalid empty resource name")
    return None


def _message(error: Any) -> str | None:
    """ApiError.fromThrowable: no message for UNKNOWN_SERVER_ERROR, so that a server-side failure (ZooKeeper's,
    a parser's) tells the client nothing of the broker's insides."""
    return None if error is None or error.code == UnknownServerError.code else (error.detail or None)


def _create_response(errors: list[Any]) -> Any:
    return CreateAclsResponse(throttle_time_ms=0, results=[
        _Creation(error_code=e.code if e is not None else 0, error_message=_message(e)) for e in errors])


def _matching(binding: AclBinding, error: Any) -> Any:
    p, e = binding.pattern, binding.entry
    return _Matching(error_code=error.code if error else 0, error_message=_message(error),
                     resource_type=int(p.resource_type), resource_name=p.name, pattern_type=int(p.pattern_type),
                     principal=e.principal, host=e.host, operation=int(e.operation),
                     permission_type=int(e.permission_type))


def register(apis: "KafkaApis", services: "BrokerServices") -> AclApis:
    api = AclApis(services)
    apis.register(ApiKey.DESCRIBE_ACLS, api.describe_acls, api.describe_acls_error)
    apis.register(ApiKey.CREATE_ACLS, api.create_acls, api.create_acls_error)
    apis.register(ApiKey.DELETE_ACLS, api.delete_acls, api.delete_acls_error)
    return api

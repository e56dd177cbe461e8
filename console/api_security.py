"""Security and quotas: ACLs (list, add, remove), SCRAM users (list, set a password, remove), client quotas
(list, set, remove). Each list is its own endpoint: a cluster without an authorizer answers
SECURITY_DISABLED to the ACL calls, and only the ACL panel says so."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..clients.admin.quotas import ClientQuotaAlteration, ClientQuotaEntity
from ..clients.admin.scram import UserScramCredentialDeletion, UserScramCredentialUpsertion
from ..protocol.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)

from .context import console_of
from .json_api import BadRequest, body, endpoint, error_text, integer, text


def _binding_json(b: AclBinding) -> dict[str, Any]:
    return {"resource_type": b.pattern.resource_type.kafka_name, "name": b.pattern.name,
            "pattern_type": b.pattern.pattern_type.kafka_name, "principal": b.entry.principal,
            "host": b.entry.host, "operation": b.entry.operation.kafka_name,
            "permission": b.entry.permission_type.kafka_name}


def _enum(cls: Any, value: Any, what: str) -> Any:
    member = cls.parse(str(value or ""))
    if not member:
        raise BadRequest(f"{what} {value!r} is not one of {', '.join(m.kafka_name for m in cls if m > 1)}")
    return member


def _binding(data: dict[str, Any]) -> AclBinding:
    return AclBinding(
        ResourcePattern(_enum(ResourceType, data.get("resource_type"), "resource_type"), text(data.get("name"), "name"),
                        _enum(PatternType, data.get("pattern_type") or "Literal", "pattern_type")),
        AccessControlEntry(text(data.get("principal"), "principal"), data.get("host") or "*",
                           _enum(AclOperation, data.get("operation"), "operation"),
                           _enum(AclPermissionType, data.get("permission") or "Allow", "permission")))


@endpoint
async def acls(request: web.Request) -> dict[str, Any]:
    bindings = await console_of(request).admin.describe_acls()
    return {"acls": sorted((_binding_json(b) for b in bindings),
                           key=lambda a: (a["resource_type"], a["name"], a["principal"], a["operation"]))}


# How long an added ACL may take to show in the list: the page lists ACLs right after the answer, from whichever
# broker the admin client asks, and a broker that did not create it learns of it from ZooKeeper's change
# notification a moment later (Kafka's AclAuthorizer the same).
ACL_LISTED_WITHIN_S = 5.0


@endpoint
async def add_acl(request: web.Request) -> dict[str, Any]:
    binding = _binding(await body(request))
    admin = console_of(request).admin
    outcome = await admin.create_acls([binding])
    if outcome["failed"]:
        raise outcome["failed"][0][1]
    deadline = asyncio.get_running_loop().time() + ACL_LISTED_WITHIN_S
    while binding not in await admin.describe_acls() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return {"created": _binding_json(binding)}


@endpoint
async def remove_acl(request: web.Request) -> dict[str, Any]:
    """Removes exactly the ACL described (a literal filter of every field)."""
    b = _binding(await body(request))
    acl_filter = AclBindingFilter(
        ResourcePatternFilter(b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type),
        AccessControlEntryFilter(b.entry.principal, b.entry.host, b.entry.operation, b.entry.permission_type))
    [(_, deleted, error)] = await console_of(request).admin.delete_acls([acl_filter])
    if error is not None:
        raise error
    return {"deleted": [_binding_json(binding) for binding, e in deleted if e is None]}


@endpoint
async def scram_users(request: web.Request) -> dict[str, Any]:
    users = await console_of(request).admin.describe_user_scram_credentials()
    return {"users": [{"user": name, "error": error_text(d.error) if d.error else None,
                       "credentials": [{"mechanism": c.mechanism, "iterations": c.iterations}
                                       for c in d.credential_infos]}
                      for name, d in sorted(users.items())]}


@endpoint
async def set_scram_user(request: web.Request) -> dict[str, Any]:
    """``{"user", "mechanism", "password", "iterations"}``: add or change a credential."""
    data = await body(request)
    user = text(data.get("user"), "user")
    upsert = UserScramCredentialUpsertion(user, data.get("mechanism") or "SCRAM-SHA-256",
                                          text(data.get("password"), "password"),
                                          integer(data.get("iterations"), "iterations", 4096))
    errors = await console_of(request).admin.alter_user_scram_credentials([upsert])
    if errors.get(user) is not None:
        raise errors[user]
    return {"user": user}


@endpoint
async def delete_scram_user(request: web.Request) -> dict[str, Any]:
    user = request.match_info["user"]
    mechanism = request.query.get("mechanism") or "SCRAM-SHA-256"
    errors = await console_of(request).admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, mechanism)])
    if errors.get(user) is not None:
        raise errors[user]
    return {"deleted": user}


@endpoint
async def quotas(request: web.Request) -> dict[str, Any]:
    found = await console_of(request).admin.describe_client_quotas()
    return {"quotas": sorted(({"entity": entity.entries, "values": values} for entity, values in found.items()),
                             key=lambda q: sorted((k, v or "") for k, v in q["entity"].items()))}


@endpoint
async def alter_quota(request: web.Request) -> dict[str, Any]:
    """``{"entity": {"user": name|null, "client-id": ...}, "set": {key: value}, "remove": [key]}``
    (a null name is the entity type's default)."""
    data = await body(request)
    entity = data.get("entity")
    if not isinstance(entity, dict) or not entity:
        raise BadRequest("entity is required, e.g. {\"user\": \"alice\"}")
    ops = [ClientQuotaAlteration.Op(k, float(v)) for k, v in (data.get("set") or {}).items()]
    ops += [ClientQuotaAlteration.Op(k, None) for k in data.get("remove") or []]
    if not ops:
        raise BadRequest("nothing to change: give set and/or remove")
    await console_of(request).admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity(entity), ops)])
    return {"altered": len(ops)}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/acls", acls),
    ("POST", "/api/acls", add_acl),
    ("POST", "/api/acls/delete", remove_acl),
    ("GET", "/api/scram-users", scram_users),
    ("POST", "/api/scram-users", set_scram_user),
    ("DELETE", "/api/scram-users/{user}", delete_scram_user),
    ("GET", "/api/quotas", quotas),
    ("POST", "/api/quotas", alter_quota),
]

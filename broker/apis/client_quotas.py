"""DescribeClientQuotas (48) and AlterClientQuotas (49), ZooKeeper mode, as Kafka 2.8's ZkAdminManager.

Quotas live in ``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>`` and
``/config/clients/<client-id>`` (names sanitized, ``<default>`` for a null name); every broker applies them
from the ``/config/changes`` notification the write adds (broker/dynamic_config.py).

Describe takes filter components (entity type ``user`` or ``client-id``; match 0 = that name, 1 = the
default, 2 = any name) and ``strict`` (entities with other entity types are left out). It reads only the
znodes the filter can match, as Kafka does, and answers every matching entity that has a quota key.
A bad filter is a top-level error: a duplicate or empty entity type INVALID_REQUEST, another entity type
UNSUPPORTED_VERSION, a match type other than 0-2 UNKNOWN_SERVER_ERROR (Kafka's IllegalArgumentException).

Alter applies each entry's operations to the entity's stored config (``remove`` deletes a key) and writes
it unless ``validate_only``; each entry answers its own error: an empty entity, an unknown entity type, an
empty name, an unknown key (INVALID_REQUEST "Invalid configuration key ..."), a non-integral value for a
LONG key ("Configuration ... must be a LONG value").

Deliberate differences from Kafka 2.8: a value <= 0 is INVALID_REQUEST "Quota <key> must be greater than
0" (what later Kafka releases answer; 2.8 stores it and then throttles nonsensically); the ``ip`` entity
type (connection-rate quotas) and ``controller_mutation_rate`` (KIP-599) are refused, because this broker
does not enforce them.

Describing needs DescribeConfigs on the cluster, altering AlterConfigs (CLUSTER_AUTHORIZATION_FAILED, for
every entry of an alter), as Kafka 2.8.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidRequestError, KafkaError, UnknownServerError, UnsupportedVersionError,
)
from ...protocol.messages import AlterClientQuotasResponse, DescribeClientQuotasResponse
from ..quota.client_quotas import CONTROLLER_MUTATION_RATE, QUOTA_KEY_TYPES
from ..quota.entity import DEFAULT, desanitize, sanitize
from ..security.sensitive_configs import loggable_entity_config

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"  # Kafka's ClientQuotaEntity types
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
_EPSILON = 1e-6
_LONG_MAX = 2**63 - 1
_ANY = object()  # a filter component that matches any specified name (MATCH_SPECIFIED)

Entity = tuple[tuple[str, Any], ...]  # ((entity type, name or None for the default), ...)


def _sanitized(name: str | None) -> str:
    """The znode name of a user or client id. Kafka's sanitizer keeps dots, and ZooKeeper refuses "." and
    ".." as path elements (Kafka then answers UNKNOWN_SERVER_ERROR)."""
    if name is None:
        return DEFAULT
    sanitized = sanitize(name)
    if sanitized in (".", ".."):
        raise UnknownServerError(f"Invalid path element {name!r} for a quota entity")
    return sanitized


def _desanitized(name: str) -> str | None:
    return None if name == DEFAULT else desanitize(name)


def _match(component: Any) -> Any:
    if component.match_type == MATCH_EXACT:
        if component.match is None:
            raise UnknownServerError("an exact match of null")
        return component.match
    if component.match_type == MATCH_DEFAULT:
        return None
    if component.match_type == MATCH_SPECIFIED:
        return _ANY
    raise UnknownServerError(f"Unexpected match type: {component.match_type}")


class _Filter:
    """The user and client-id components of a DescribeClientQuotas filter: absent, _ANY, or a name
    (None for the default entity)."""

    def __init__(self, components: list[Any], strict: bool) -> None:
        self.strict = strict
        found: dict[str, Any] = {}
        # Kafka's DescribeClientQuotasRequest.filter() converts every component before any is checked: an
        # unknown match type, or an exact match of null (a NullPointerException), fails the request first.
        matches = [_match(component) for component in components]
        for component, match in zip(components, matches):
            entity_type = component.entity_type
            if entity_type in (USER, CLIENT_ID, IP):
                if entity_type in found:
                    kind = "client" if entity_type == CLIENT_ID else entity_type
                    raise InvalidRequestError(f"Duplicate {kind} filter component entity type")
                found[entity_type] = match
            elif entity_type == "":
                raise InvalidRequestError("Unexpected empty filter component entity type")
            else:
                raise UnsupportedVersionError(f"Custom entity type '{entity_type}' not supported")
        if IP in found:
            raise UnsupportedVersionError("Entity type 'ip' (connection-rate quotas) is not supported by this broker")
        self.user = found.get(USER, _MISSING)
        self.client = found.get(CLIENT_ID, _MISSING)

    def exact(self, component: Any) -> bool:
        return component is not _MISSING and component is not _ANY

    def excluded(self, component: Any) -> bool:
        return self.strict and component is _MISSING

    def matches(self, component: Any, name: Any) -> bool:
        """Kafka's matches(): ``name`` is _MISSING when the entity lacks that type, else a name or None."""
        if component is _MISSING:
            return name is _MISSING or not self.strict
        if component is _ANY:
            return name is not _MISSING
        return name is not _MISSING and name == component


_MISSING = object()


class ClientQuotasApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    # -- DescribeClientQuotas ---------------------------------------------------------------------------

    async def handle_describe(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.DESCRIBE_CONFIGS)
        body = request.body
        try:
            quota_filter = _Filter(body.components, body.strict)
            found = await self.services.in_executor(self._describe, quota_filter)
        except KafkaError as exc:
            # Kafka's ApiError.fromThrowable sends no message with UNKNOWN_SERVER_ERROR (an unknown match type)
            message = None if exc.code == UnknownServerError.code else exc.detail
            return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=exc.code, error_message=message,
                                                entries=None)
        entry_cls = DescribeClientQuotasResponse.EntryData
        entries = [entry_cls(
            entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[entry_cls.ValueData(key=k, value=v) for k, v in sorted(values.items())])
            for entity, values in found.items()]
        # Kafka leaves the message at its generated default, the empty string
        return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=0, error_message="", entries=entries)

    def _describe(self, f: _Filter) -> dict[Entity, dict[str, float]]:
        """ZkAdminManager.handleDescribeClientQuotas (blocking: ZooKeeper reads)."""
        zk = self.services.zk
        exact_user, exact_client = f.exact(f.user), f.exact(f.client)
        exclude_user, exclude_client = f.excluded(f.user), f.excluded(f.client)
        candidates: list[tuple[Any, Any, dict[str, str]]] = []  # (user, client-id, stored config)
        if exact_user and exclude_client:
            candidates.append((f.user, _MISSING, zk.get_entity_config("users", _sanitized(f.user))))
        elif not exclude_user and not exact_client:
            candidates += [(_desanitized(n), _MISSING, c) for n, c in zk.get_all_entity_configs("users").items()]
        if exclude_user and exact_client:
            candidates.append((_MISSING, f.client, zk.get_entity_config("clients", _sanitized(f.client))))
        elif not exact_user and not exclude_client:
            candidates += [(_MISSING, _desanitized(n), c) for n, c in zk.get_all_entity_configs("clients").items()]
        if exact_user and exact_client:
            path = f"{_sanitized(f.user)}/clients/{_sanitized(f.client)}"
            candidates.append((f.user, f.client, zk.get_entity_config("users", path)))
        elif not exclude_user and not exclude_client:
            for name, config in zk.get_all_child_entity_configs("users", "clients").items():
                user, _, client = name.split("/")
                candidates.append((_desanitized(user), _desanitized(client), config))
        found: dict[Entity, dict[str, float]] = {}
        for user, client, config in candidates:
            values = {k: v for k, v in config.items() if k in QUOTA_KEY_TYPES}
            if values and f.matches(f.user, user) and f.matches(f.client, client):
                entity = tuple((t, n) for t, n in ((USER, user), (CLIENT_ID, client)) if n is not _MISSING)
                try:
                    found[entity] = {k: float(v) for k, v in values.items()}
                except ValueError:
                    raise UnknownServerError(f"Unexpected client quota configuration value: {values}") from None
        return found

    # -- AlterClientQuotas ------------------------------------------------------------------------------

    async def handle_alter(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.ALTER_CONFIGS)
        body = request.body
        results: dict[Entity, KafkaError | None] = {}
        for entry in body.entries:
            entity = _entity_of(entry.entity)
            try:
                await self.services.in_executor(self._alter_entity, entity, entry.ops, body.validate_only)
                results[entity] = None
            except KafkaError as exc:
                log.info("Error encountered while updating client quotas of %s: %s", entity, exc.detail)
                results[entity] = exc
        entry_cls = AlterClientQuotasResponse.EntryData
        return AlterClientQuotasResponse(throttle_time_ms=0, entries=[
            entry_cls(error_code=error.code if error else 0, error_message=error.detail if error else None,
                      entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in entity])
            for entity, error in results.items()])

    def _alter_entity(self, entity: Entity, ops: list[Any], validate_only: bool) -> None:
        """ZkAdminManager.alterClientQuotas for one entity (blocking: ZooKeeper)."""
        entity_type, path = _quota_path(entity)
        zk = self.services.zk
        config = zk.get_entity_config(entity_type, path)
        for op in ops:
            if op.remove:
                config.pop(op.key, None)
                continue
            kind = QUOTA_KEY_TYPES.get(op.key)
            if kind is None:
                raise InvalidRequestError(f"Invalid configuration key {op.key}")
            if op.key == CONTROLLER_MUTATION_RATE:
                raise InvalidRequestError(f"{op.key} quotas are not supported by this broker")
            value = op.value
            if not math.isfinite(value):
                raise InvalidRequestError(f"Configuration {op.key} must be a {'LONG' if kind is int else 'DOUBLE'} "
                                          "value")
            if kind is int:
                integral = min(int(value + _EPSILON), _LONG_MAX)  # Java's toLong saturates
                if abs(integral - value) > _EPSILON:
                    raise InvalidRequestError(f"Configuration {op.key} must be a LONG value")
                text = str(integral)
            else:
                text = repr(float(value))
            if not value > 0:
                raise InvalidRequestError(f"Quota {op.key} must be greater than 0")
            config[op.key] = text
        if not validate_only:
            log.info("Updating client quotas of %s/%s with %s", entity_type, path, loggable_entity_config(config))
            zk.set_entity_config(entity_type, path, config)

    def error_response_describe(self, request: "Request", error_code: int) -> Any:
        return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=error_code, error_message=None,
                                            entries=None)

    def error_response_alter(self, request: "Request", error_code: int) -> Any:
        entry_cls = AlterClientQuotasResponse.EntryData
        return AlterClientQuotasResponse(throttle_time_ms=0, entries=[
            entry_cls(error_code=error_code, error_message=None,
                      entity=[entry_cls.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                              for e in entry.entity]) for entry in request.body.entries])


def _entity_of(entity_data: list[Any]) -> Entity:
    """The request's entity as a map (Kafka's ClientQuotaEntity: a repeated type keeps its last name)."""
    return tuple({e.entity_type: e.entity_name for e in entity_data}.items())


def _quota_path(entity: Entity) -> tuple[str, str]:
    """parseAndSanitizeQuotaEntity: (root entity type, sanitized path under it)."""
    if not entity:
        raise InvalidRequestError("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for entity_type, name in entity:
        if entity_type not in (USER, CLIENT_ID, IP):
            raise InvalidRequestError(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise InvalidRequestError(f"Empty {entity_type} not supported")
        names[entity_type] = _sanitized(name)
    user, client = names.get(USER), names.get(CLIENT_ID)
    if IP in names:
        if user is not None or client is not None:
            raise InvalidRequestError("Invalid quota entity combination, IP entity should not be used with "
                                      "user/client ID entity.")
        raise InvalidRequestError("IP connection-rate quotas are not supported by this broker")
    if user is not None:
        return "users", user if client is None else f"{user}/clients/{client}"
    return "clients", client  # type: ignore[return-value]


def register(apis: "KafkaApis", services: "BrokerServices") -> ClientQuotasApi:
    api = ClientQuotasApi(services)
    apis.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, api.handle_describe, api.error_response_describe)
    apis.register(ApiKey.ALTER_CLIENT_QUOTAS, api.handle_alter, api.error_response_alter)
    return api

"""Kafka 2.8's AclAuthorizer: who may do what, from ACLs kept in ZooKeeper and cached on every broker.

``authorize(principal, host, operation, resource type, name)``, for a literal resource:

1. a super user (``super.users``) may do anything;
2. the ACLs that apply are those of the literal resource, of the wildcard resource ``*`` of its type,
   and of every prefixed pattern that is a prefix of its name;
3. none: ``allow.everyone.if.no.acl.found`` decides;
4. a Deny for the principal (or ``User:*``), the operation (or ``All``) and the client's host (or
   ``*``) refuses, whatever else allows;
5. otherwise an Allow likewise matching is needed, where Read, Write, Delete and Alter also grant
   Describe and AlterConfigs grants DescribeConfigs.

``authorize_by_resource_type`` answers "may the principal do this to some resource of the type?"
(Kafka's authorizeByResourceType, used for idempotent producers). ``create_acls`` / ``delete_acls``
update ZooKeeper with version-conditional writes (retried on conflict) and announce each change;
every broker's ``AclChangeListener`` re-reads the resource, so all caches follow within moments.

Threads: the cache is read on the event loop without locks. Writers (the ACL APIs, run in the
executor, and the change listeners' threads) hold ``_lock`` and replace the per-type tables
instead of changing them in place, so a reader always sees one consistent table.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ...protocol.acl import (
    IMPLIED_BY, WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AccessControlEntry, AclBinding,
    AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType, parse_principal,
    supported_operations,
)
from ...protocol.errors import InvalidRequestError, KafkaError, UnknownServerError  # type: ignore[attr-defined]
from ..config_keys import parse_super_users
from .zk_acl_store import (
    EXTENDED_CHANGES_PATH, LITERAL_CHANGES_PATH, AclChangeListener, VersionedAcls, ZkAclStore,
)

if TYPE_CHECKING:
    from ...controller.zk_client import KafkaZkClient

log = logging.getLogger(__name__)
audit = logging.getLogger("kafka.authorizer.logger")  # Kafka's audit logger, by its name

MAX_UPDATE_RETRIES = 10
_ALLOW, _DENY, _ALL = AclPermissionType.ALLOW, AclPermissionType.DENY, AclOperation.ALL


@dataclass(frozen=True)
class _TypeAcls:
    """One resource type's ACLs: literal and prefixed patterns by name, and the prefix lengths in use."""
    literal: dict[str, frozenset[AccessControlEntry]] = field(default_factory=dict)
    prefixed: dict[str, frozenset[AccessControlEntry]] = field(default_factory=dict)
    prefix_lengths: tuple[int, ...] = ()


def _decide(acls: list[frozenset[AccessControlEntry]], principal: str, host: str, operation: AclOperation,
            implied: tuple[AclOperation, ...]) -> bool:
    """Steps 4 and 5 in one pass (this runs for every partition of every request): a matching Deny of the
    operation refuses at once; otherwise a matching Allow of it or of an operation implying it is needed."""
    allowed = False
    for entries in acls:
        for e in entries:
            if (e.principal != principal and e.principal != WILDCARD_PRINCIPAL) or \
                    (e.host != host and e.host != WILDCARD_HOST):
                continue
            op = e.operation
            if e.permission_type == _DENY:
                if op == operation or op == _ALL:
                    return False
            elif op == _ALL or op in implied:
                allowed = True
    return allowed


def _matches(entry: AccessControlEntry, permission: AclPermissionType, operations: Iterable[AclOperation],
             principal: str, host: str) -> bool:
    return (entry.permission_type == permission
            and (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL)
            and (entry.operation in operations or entry.operation == _ALL)
            and (entry.host == host or entry.host == WILDCARD_HOST))


class AclAuthorizer:
    def __init__(self, store: ZkAclStore | None, super_users: frozenset[str] = frozenset(),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.store = store
        self.super_users = super_users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._tables: dict[ResourceType, _TypeAcls] = {}
        self._versions: dict[ResourcePattern, VersionedAcls] = {}
        self._lock = Lock()
        self._listeners: list[AclChangeListener] = []

    @classmethod
    def from_config(cls, config: Any, zk: KafkaZkClient) -> "AclAuthorizer":
        return cls(ZkAclStore(zk), parse_super_users(config.get("super.users")),
                   bool(config.get("allow.everyone.if.no.acl.found")))

    # -- lifecycle (blocking) ---------------------------------------------------------------------

    def start(self) -> None:
        """AclAuthorizer.configure: change listeners first, then the cache, so no change is missed."""
        assert self.store is not None
        for root in (LITERAL_CHANGES_PATH, EXTENDED_CHANGES_PATH):
            listener = AclChangeListener(self.store.zk, root, self.process_change)
            listener.start()
            self._listeners.append(listener)
        self.load()

    def load(self) -> None:
        """Read every stored ACL into the cache (without listening for changes: odradek-acls' use)."""
        assert self.store is not None
        self.store.create_paths()
        with self._lock:
            for pattern, versioned in self.store.read_all().items():
                self._update_cache(pattern, versioned)

    def close(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()

    # -- authorization (event loop, no I/O) -------------------------------------------------------

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str, *, log_denied: bool = True, request: str = "") -> bool:
        if principal in self.super_users:
            return True
        acls = self._matching_acls(resource_type, name)
        allowed = self.allow_everyone_if_no_acl_found if not acls else \
            _decide(acls, principal, host, operation, IMPLIED_BY.get(operation) or (operation,))
        if not allowed and log_denied:
            audit.info("Principal = %s is Denied Operation = %s from host = %s on resource = %s:LITERAL:%s "
                       "for request = %s", principal, operation.kafka_name, host, resource_type.kafka_name, name,
                       request)
        elif allowed and audit.isEnabledFor(logging.DEBUG):
            audit.debug("Principal = %s is Allowed Operation = %s from host = %s on resource = %s:LITERAL:%s "
                        "for request = %s", principal, operation.kafka_name, host, resource_type.kafka_name, name,
                        request)
        return allowed

    def _matching_acls(self, resource_type: ResourceType, name: str) -> list[frozenset[AccessControlEntry]]:
        table = self._tables.get(resource_type)
        if table is None:
            return []
        found = []
        for key in (WILDCARD_RESOURCE, name) if name != WILDCARD_RESOURCE else (name,):
            entries = table.literal.get(key)
            if entries:
                found.append(entries)
        for length in table.prefix_lengths:
            if length > len(name):
                break
            entries = table.prefixed.get(name[:length])
            if entries:
                found.append(entries)
        return found

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str
                              ) -> set[AclOperation]:
        """The supported operations ``authorize`` allows (AuthHelper.authorizedOperations), unlogged."""
        return {op for op in supported_operations(resource_type)
                if self.authorize(principal, host, op, resource_type, name, log_denied=False)}

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May ``principal`` do ``operation`` on at least one resource of the type? As Kafka 2.8: an
        Allow (literal or prefixed, exact operation or All) that no Deny covers: a literal Deny of
        the same name or of ``*``, or a prefixed Deny that is a prefix of the allowed name."""
        if principal in self.super_users:
            return True
        table = self._tables.get(resource_type, _TypeAcls())

        def names(patterns: dict[str, frozenset[AccessControlEntry]], permission: AclPermissionType) -> set[str]:
            return {n for n, entries in patterns.items()
                    if any(_matches(e, permission, (operation,), principal, host) for e in entries)}

        deny_literals = names(table.literal, _DENY)
        if WILDCARD_RESOURCE in deny_literals:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixes = names(table.prefixed, _DENY)
        allow_literals, allow_prefixes = names(table.literal, _ALLOW), names(table.prefixed, _ALLOW)
        if not deny_literals and not deny_prefixes:
            return bool(allow_literals or allow_prefixes)

        def dominated(n: str) -> bool:
            return any(n[:i] in deny_prefixes for i in range(1, len(n) + 1))

        return (any(not dominated(p) for p in allow_prefixes)
                or any(n == WILDCARD_RESOURCE or (n not in deny_literals and not dominated(n)) for n in allow_literals))

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Every cached binding the filter matches (DescribeAcls)."""
        found = []
        for pattern, versioned in list(self._versions.items()):
            for entry in versioned.entries:
                binding = AclBinding(pattern, entry)
                if binding_filter.matches(binding):
                    found.append(binding)
        return found

    # -- changes (blocking: ZooKeeper) ------------------------------------------------------------

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[KafkaError | None]:
        """Add the bindings; one result per binding, None for success (AclAuthorizer.createAcls)."""
        results: list[KafkaError | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            if binding.is_unknown:
                results[i] = InvalidRequestError("Failed to create ACL: ACL binding contains unknown elements")
            else:
                by_pattern.setdefault(binding.pattern, []).append(i)
        with self._lock:
            for pattern, indexes in by_pattern.items():
                new = frozenset(bindings[i].entry for i in indexes)
                try:
                    for entry in new:
                        parse_principal(entry.principal)  # AclEntry's constructor parses it (Kafka: a server error)
                    self._update_resource(pattern, lambda current, new=new: current | new)  # type: ignore[misc]
                except Exception as exc:
                    error = _as_kafka_error(exc)
                    for i in indexes:
                        results[i] = error
        return results

    def delete_acls(self, filters: Sequence[AclBindingFilter]
                    ) -> list[list[tuple[AclBinding, KafkaError | None]]]:
        """Remove what each filter matches: per filter, the bindings deleted (each reported under the
        first filter that matched it) with None or the error that kept it (AclAuthorizer.deleteAcls)."""
        deleted: dict[AclBinding, int] = {}
        errors: dict[AclBinding, KafkaError] = {}
        with self._lock:
            resources = set(self._versions)
            for f in filters:
                if f.pattern_filter.matches_at_most_one:  # maybe stored but not yet in our cache
                    resources |= _filter_to_resources(f)
            for resource in resources:
                matching = [(i, f) for i, f in enumerate(filters) if f.pattern_filter.matches(resource)]
                if not matching:
                    continue
                being_deleted: list[AclBinding] = []

                def remaining(current: frozenset[AccessControlEntry], resource: ResourcePattern = resource,
                              matching: list = matching, being_deleted: list = being_deleted
                              ) -> frozenset[AccessControlEntry]:
                    keep = set()
                    for entry in current:
                        hit = next((i for i, f in matching if f.entry_filter.matches(entry)), None)
                        if hit is None:
                            keep.add(entry)
                        else:
                            binding = AclBinding(resource, entry)
                            deleted.setdefault(binding, hit)
                            being_deleted.append(binding)
                    return frozenset(keep)
                try:
                    self._update_resource(resource, remaining)
                except Exception as exc:
                    for binding in being_deleted:
                        errors.setdefault(binding, _as_kafka_error(exc))
        results: list[list[tuple[AclBinding, KafkaError | None]]] = [[] for _ in filters]
        for binding, index in deleted.items():
            results[index].append((binding, errors.get(binding)))
        return results

    def process_change(self, pattern: ResourcePattern) -> None:
        """A change notification (listener thread): re-read the resource and cache what ZooKeeper has."""
        assert self.store is not None
        with self._lock:
            versioned = self.store.read(pattern)
            log.info("Processing Acl change notification for %s, versionedAcls : %s, zkVersion : %d",
                     pattern, sorted(map(str, versioned.entries)), versioned.version)
            self._update_cache(pattern, versioned)

    def _update_resource(self, pattern: ResourcePattern, new_acls: Any) -> None:
        """AclAuthorizer.updateResourceAcls: read-modify-write conditional on the znode version, retried
        with a short jittered backoff when another broker wrote in between; caller holds ``_lock``."""
        assert self.store is not None
        current = self._versions.get(pattern) or self.store.read(pattern)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            entries = new_acls(current.entries)
            version = self.store.write(pattern, entries, current)
            if version is not None:
                break
            time.sleep((100 + random.randrange(50)) / 1000)
            current = self.store.read(pattern)
        else:
            raise RuntimeError(f"Failed to update ACLs for {pattern} after trying a maximum of "
                               f"{MAX_UPDATE_RETRIES} times")
        self._update_cache(pattern, VersionedAcls(entries, version))
        if entries != current.entries:
            log.info("Updated ACLs for %s with new version %d", pattern, version)
            self.store.notify_change(pattern)

    def _update_cache(self, pattern: ResourcePattern, versioned: VersionedAcls) -> None:
        """Swap in new tables for the pattern's type (readers never see a half-changed one)."""
        versions = dict(self._versions)
        if versioned.entries:
            versions[pattern] = versioned
        else:
            versions.pop(pattern, None)
        self._versions = versions
        old = self._tables.get(pattern.resource_type, _TypeAcls())
        literal, prefixed = dict(old.literal), dict(old.prefixed)
        target = literal if pattern.pattern_type == PatternType.LITERAL else prefixed
        if versioned.entries:
            target[pattern.name] = versioned.entries
        else:
            target.pop(pattern.name, None)
        tables = dict(self._tables)
        tables[pattern.resource_type] = _TypeAcls(literal, prefixed, tuple(sorted({len(n) for n in prefixed})))
        self._tables = tables


def _filter_to_resources(binding_filter: AclBindingFilter) -> set[ResourcePattern]:
    f = binding_filter.pattern_filter
    assert f.name is not None
    if f.pattern_type == PatternType.ANY:
        return {ResourcePattern(f.resource_type, f.name, PatternType.LITERAL),
                ResourcePattern(f.resource_type, f.name, PatternType.PREFIXED)}
    return {ResourcePattern(f.resource_type, f.name, f.pattern_type)}


def _as_kafka_error(exc: BaseException) -> KafkaError:
    """Kafka's apiException: an ApiException as it is, anything else a server error carrying its message."""
    return exc if isinstance(exc, KafkaError) else UnknownServerError(str(exc) or type(exc).__name__)

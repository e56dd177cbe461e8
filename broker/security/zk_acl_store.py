"""ACLs in ZooKeeper, laid out exactly as Kafka 2.8 (ZkData.scala's ZkAclStore and ZkAclChangeStore).

- A literal pattern's ACLs live in ``/kafka-acl/<ResourceType>/<name>``, a prefixed pattern's in
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (``Topic``, ``Group``, ``Cluster``,
  ``TransactionalId``, ``DelegationToken``), as JSON:
  ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}``.
  Writes are conditional on the znode's version, so two brokers changing one resource at once never
  lose an update (the loser re-reads and retries).
- Every change adds a sequential ``acl_changes_<seq>`` under ``/kafka-acl-changes`` (literal
  patterns; data ``TOPIC:<name>``) or ``/kafka-acl-extended-changes`` (JSON
  ``{"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}``); brokers re-read
  the named resource when they see it (``AclChangeListener``).

Blocking (ZooKeeper round trips): called from threads, never on the event loop.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Callable, NamedTuple

from ...protocol.acl import (
    RESOURCE_TYPES, AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
    parse_principal,
)

if TYPE_CHECKING:
    from ...controller.zk_client import KafkaZkClient

log = logging.getLogger(__name__)

LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_CHANGES_PATH = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # ZkNodeChangeNotificationListener's changeExpirationMs
NO_VERSION = -1  # ZkVersion.UnknownVersion: the resource's znode does not exist
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


class VersionedAcls(NamedTuple):
    entries: frozenset[AccessControlEntry]
    version: int

    @property
    def exists(self) -> bool:
        return self.version != NO_VERSION


NO_ACLS = VersionedAcls(frozenset(), NO_VERSION)


def acl_root(pattern_type: PatternType) -> str:
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_PATH
    return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}"


def resource_path(pattern: ResourcePattern) -> str:
    return f"{acl_root(pattern.pattern_type)}/{pattern.resource_type.kafka_name}/{pattern.name}"


def changes_path(pattern_type: PatternType) -> str:
    return LITERAL_CHANGES_PATH if pattern_type == PatternType.LITERAL else EXTENDED_CHANGES_PATH


def encode_acls(entries: frozenset[AccessControlEntry] | set[AccessControlEntry]) -> bytes:
    """AclEntry.toJsonCompatibleMap, compact as Kafka's Json.encodeAsBytes."""
    acls = [{"principal": e.principal, "permissionType": e.permission_type.kafka_name,
             "operation": e.operation.kafka_name, "host": e.host}
            for e in sorted(entries, key=lambda e: (e.principal, e.host, e.operation, e.permission_type))]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """AclEntry.fromBytes: version 1 only; an entry with an unknown operation or permission is refused."""
    if not data:
        return frozenset()
    document = json.loads(data)
    if document.get("version") != 1:
        raise ValueError(f"unsupported ACL znode version {document.get('version')!r}")
    entries = set()
    for item in document["acls"]:
        principal = item["principal"]
        parse_principal(principal)
        operation = AclOperation.parse(item["operation"])
        permission = AclPermissionType.parse(item["permissionType"])
        if operation in (AclOperation.UNKNOWN, AclOperation.ANY) or \
                permission in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
            raise ValueError(f"invalid ACL entry {item!r}")
        entries.add(AccessControlEntry(principal, item["host"], operation, permission))  # type: ignore[arg-type]
    return frozenset(entries)


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type == PatternType.LITERAL:  # LiteralAclChangeStore: "<ResourceType enum name>:<name>"
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return json.dumps({"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
                       "patternType": pattern.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(changes_root: str, data: bytes) -> ResourcePattern:
    text = data.decode()
    if changes_root == LITERAL_CHANGES_PATH:
        resource_type, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return ResourcePattern(_resource_type(resource_type), name, PatternType.LITERAL)
    event = json.loads(text)
    if event.get("version", 0) > 1:
        raise ValueError(f"Acl change event received for unsupported version: {event.get('version')}")
    pattern_type = PatternType[event["patternType"].upper()]
    return ResourcePattern(_resource_type(event["resourceType"]), event["name"], pattern_type)


def _resource_type(text: str) -> ResourceType:
    """ResourceType.fromString: the enum name, any case."""
    return ResourceType[text.upper()]


class ZkAclStore:
    """Reads and conditional writes of the ACL znodes over a ``KafkaZkClient``."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def create_paths(self) -> None:
        """KafkaZkClient.createAclPaths: both roots with one child per resource type, and both change roots."""
        for pattern_type in STORED_PATTERN_TYPES:
            for resource_type in RESOURCE_TYPES:
                self.zk.ensure_path(f"{acl_root(pattern_type)}/{resource_type.kafka_name}")
        for path in (LITERAL_CHANGES_PATH, EXTENDED_CHANGES_PATH):
            self.zk.ensure_path(path)

    def read_all(self) -> dict[ResourcePattern, VersionedAcls]:
        """Every stored resource's ACLs (AclAuthorizer.loadCache); an unknown resource type is skipped."""
        found = {}
        for pattern_type in STORED_PATTERN_TYPES:
            root = acl_root(pattern_type)
            for type_name in self.zk.get_children(root):
                resource_type = ResourceType.parse(type_name)
                if resource_type not in RESOURCE_TYPES:
                    log.warning("Ignoring unknown ResourceType: %s", type_name)
                    continue
                for name in self.zk.get_children(f"{root}/{type_name}"):
                    pattern = ResourcePattern(resource_type, name, pattern_type)  # type: ignore[arg-type]
                    found[pattern] = self.read(pattern)
        return found

    def read(self, pattern: ResourcePattern) -> VersionedAcls:
        data, version, _ = self.zk.get_data_version_ctime(resource_path(pattern))
        if version == NO_VERSION:
            return NO_ACLS
        return VersionedAcls(decode_acls(data), version)

    def write(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], current: VersionedAcls
              ) -> int | None:
        """Replace the ACLs if the znode is still at ``current``'s version (created if it did not exist,
        deleted when ``entries`` is empty): the new version, None if someone else changed it first."""
        path = resource_path(pattern)
        if not entries:
            return 0 if self.zk.delete_if_version(path, current.version) else None
        if current.exists:
            return self.zk.set_if_version(path, encode_acls(entries), current.version)
        return 0 if self.zk.create_if_absent(path, encode_acls(entries)) else None

    def notify_change(self, pattern: ResourcePattern) -> None:
        self.zk.create_sequential(f"{changes_path(pattern.pattern_type)}/{CHANGE_PREFIX}", encode_change(pattern))


class AclChangeListener:
    """Kafka's ZkNodeChangeNotificationListener for one change root: a thread that, whenever the
    root's children change (and once at start), hands each notification newer than the last one
    processed to ``on_change(pattern)``, in sequence order, then deletes notifications older than
    15 minutes."""

    def __init__(self, zk: KafkaZkClient, root: str, on_change: Callable[[ResourcePattern], None],
                 expiration_ms: int = CHANGE_EXPIRATION_MS) -> None:
        self.zk = zk
        self.root = root
        self.on_change = on_change
        self.expiration_ms = expiration_ms
        self.last_executed = -1
        self._wakeups: queue.Queue[bool] = queue.Queue(maxsize=1)
        self._closed = False
        self._unwatch: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, name=f"{root}-event-process-thread", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._unwatch = self.zk.watch_children(self.root, lambda _children: self._wake())  # fires once now

    def close(self) -> None:
        self._closed = True
        if self._unwatch is not None:
            self._unwatch()
        try:
            self._wakeups.put_nowait(False)
        except queue.Full:
            pass
        self._thread.join(timeout=10)

    def _wake(self) -> None:
        """Kazoo's thread: at most one pending pass (a pass reads every child anyway)."""
        try:
            self._wakeups.put_nowait(True)
        except queue.Full:
            pass

    def _run(self) -> None:
        while not self._closed:
            self._wakeups.get()
            if self._closed:
                return
            try:
                self.process_notifications()
            except Exception:
                log.exception("Error while processing notification change for path = %s", self.root)

    def process_notifications(self) -> None:
        children = self.zk.get_children(self.root)
        if not children:
            return
        now = time.time() * 1000
        for child in children:
            sequence = int(child[len(CHANGE_PREFIX):])
            if sequence <= self.last_executed:
                continue
            data, _, _ = self.zk.get_data_version_ctime(f"{self.root}/{child}")
            if data is None:
                log.warning("read null data from %s/%s", self.root, child)
            else:
                try:
                    self.on_change(decode_change(self.root, data))
                except Exception:
                    log.exception("error processing change notification %r from %s/%s", data, self.root, child)
            self.last_executed = sequence
        for child in children:  # purgeObsoleteNotifications
            path = f"{self.root}/{child}"
            data, _, ctime = self.zk.get_data_version_ctime(path)
            if data is not None and now - ctime > self.expiration_ms:
                self.zk.delete_path(path)

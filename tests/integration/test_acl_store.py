"""AclAuthorizer over a real ZooKeeper: Kafka's znodes and JSON, change notifications that every other
authorizer follows within moments, version-conditional writes that lose nothing when two brokers change
one resource at once, and the purge of old notifications."""

from __future__ import annotations

import json
import threading

import pytest

from odradek.broker.security.acl_authorizer import AclAuthorizer
from odradek.broker.security.zk_acl_store import AclChangeListener, ZkAclStore
from odradek.protocol.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)

from .helpers import wait_until

pytestmark = pytest.mark.timeout(120)

TOPIC = ResourceType.TOPIC


def allow(principal: str, name: str, pattern_type: PatternType = PatternType.LITERAL,
          operation: AclOperation = AclOperation.READ) -> AclBinding:
    return AclBinding(ResourcePattern(TOPIC, name, pattern_type),
                      AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW))


@pytest.fixture
def authorizers(zk_client_factory):
    started = []

    def make() -> AclAuthorizer:
        authorizer = AclAuthorizer(ZkAclStore(zk_client_factory()))
        authorizer.start()
        started.append(authorizer)
        return authorizer

    yield make
    for authorizer in started:
        authorizer.close()


def test_acls_are_stored_as_kafka_stores_them(authorizers, zk_client_factory):
    authorizer = authorizers()
    assert authorizer.create_acls([allow("User:alice", "orders"), allow("User:bob", "fin", PatternType.PREFIXED)]) \
        == [None, None]
    zk = zk_client_factory()
    data, version = zk.get_data("/kafka-acl/Topic/orders")
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    assert version == 0
    assert json.loads(zk.get_data("/kafka-acl-extended/prefixed/Topic/fin")[0])["acls"][0]["principal"] == "User:bob"
    assert set(zk.get_children("/kafka-acl")) == {"Topic", "Group", "Cluster", "TransactionalId", "DelegationToken"}
    [literal_change] = zk.get_children("/kafka-acl-changes")
    assert literal_change.startswith("acl_changes_") and len(literal_change) == len("acl_changes_") + 10
    assert zk.get_data(f"/kafka-acl-changes/{literal_change}")[0] == b"TOPIC:orders"
    [extended_change] = zk.get_children("/kafka-acl-extended-changes")
    assert json.loads(zk.get_data(f"/kafka-acl-extended-changes/{extended_change}")[0]) == {
        "version": 1, "resourceType": "TOPIC", "name": "fin", "patternType": "PREFIXED"}
    # A broker starting later loads them all.
    assert authorizers().authorize("User:bob", "h", AclOperation.WRITE, TOPIC, "finance") is False
    assert authorizers().authorize("User:bob", "h", AclOperation.READ, TOPIC, "finance") is True


def test_every_authorizer_follows_another_ones_changes(authorizers):
    writer, reader = authorizers(), authorizers()
    writer.create_acls([allow("User:alice", "t"), allow("User:alice", "pre", PatternType.PREFIXED)])
    wait_until(lambda: reader.authorize("User:alice", "h", AclOperation.READ, TOPIC, "prefixed-topic")
               and reader.authorize("User:alice", "h", AclOperation.READ, TOPIC, "t"),
               timeout=10, what="the other authorizer to see the new ACLs")
    [deleted] = writer.delete_acls([AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
                                                     AccessControlEntryFilter("User:alice"))])
    assert len(deleted) == 2
    wait_until(lambda: reader.acls(AclBindingFilter()) == [], timeout=10, what="the deletion to reach the other")


def test_two_authorizers_adding_to_one_resource_at_once_lose_nothing(authorizers):
    first, second = authorizers(), authorizers()
    barrier = threading.Barrier(2)

    def add(authorizer: AclAuthorizer, prefix: str) -> None:
        barrier.wait()
        for i in range(10):
            assert authorizer.create_acls([allow(f"User:{prefix}{i}", "contended")]) == [None]

    threads = [threading.Thread(target=add, args=(a, p)) for a, p in ((first, "a"), (second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = {f"User:{p}{i}" for p in "ab" for i in range(10)}
    for authorizer in (first, second, authorizers()):
        wait_until(lambda a=authorizer: {b.entry.principal for b in a.acls(AclBindingFilter())} == expected,
                   timeout=10, what="all 20 ACLs in every cache")


def test_notifications_older_than_the_expiration_are_purged(authorizers, zk_client_factory):
    authorizers().create_acls([allow("User:alice", "a"), allow("User:alice", "b")])
    zk = zk_client_factory()
    assert len(zk.get_children("/kafka-acl-changes")) == 2
    seen = []
    listener = AclChangeListener(zk, "/kafka-acl-changes", seen.append, expiration_ms=0)
    listener.process_notifications()
    assert {p.name for p in seen} == {"a", "b"} and zk.get_children("/kafka-acl-changes") == []

"""What the authorizer reads and writes: Kafka's ZooKeeper paths and JSON (zk_acl_store.py), and client
addresses written as Java's InetAddress.getHostAddress writes them (the form ACL hosts are compared with)."""

from __future__ import annotations

import json

import pytest

from odradek.broker.apis.authorization import host_address
from odradek.broker.security.zk_acl_store import (
    EXTENDED_CHANGES_PATH, LITERAL_CHANGES_PATH, decode_acls, decode_change, encode_acls, encode_change,
    resource_path,
)
from odradek.protocol.acl import (
    AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
)

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def test_zookeeper_layout_and_json_are_kafkas():
    assert resource_path(ResourcePattern(TOPIC, "t", LIT)) == "/kafka-acl/Topic/t"
    assert resource_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PRE)) == \
        "/kafka-acl-extended/prefixed/TransactionalId/tx"
    entry = AccessControlEntry("User:alice", "*", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.DENY)
    data = encode_acls({entry})
    assert data == (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Deny",'
                    b'"operation":"IdempotentWrite","host":"*"}]}')
    assert decode_acls(data) == {entry}
    with pytest.raises(ValueError):
        decode_acls(json.dumps({"version": 2, "acls": []}).encode())
    literal, prefixed = ResourcePattern(GROUP, "g:1", LIT), ResourcePattern(TOPIC, "fin", PRE)
    assert encode_change(literal) == b"GROUP:g:1"
    assert decode_change(LITERAL_CHANGES_PATH, b"Group:g:1") == literal  # any case, as ResourceType.fromString
    assert json.loads(encode_change(prefixed)) == {"version": 1, "resourceType": "TOPIC", "name": "fin",
                                                   "patternType": "PREFIXED"}
    assert decode_change(EXTENDED_CHANGES_PATH, encode_change(prefixed)) == prefixed


@pytest.mark.parametrize("address,java", [
    ("127.0.0.1", "127.0.0.1"), ("::1", "0:0:0:0:0:0:0:1"), ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
    ("2001:db8::abcd:12", "2001:db8:0:0:0:0:abcd:12"), ("::ffff:10.1.2.3", "10.1.2.3"),
])
def test_client_address_is_written_as_java_writes_it(address, java):
    assert host_address(address) == java

"""On a cluster with SASL and ACLs the registry connects as its own principal (--command-config), and needs the
ACLs Confluent's registry needs: on the `_schemas` topic and on its group; a principal without them fails to
start with the broker's authorization error."""

from __future__ import annotations

import uuid

import pytest

from odradek.tools.local_cluster import ClusterStartError
from odradek.tools.local_zookeeper import free_port

from ..conftest import new_cluster
from ..integration.helpers import console_tool
from .conftest import call, start_registry

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required"


def jaas(user: str) -> str:
    return f'{SCRAM_MODULE} username="{user}" password="{user}-secret";'


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory):
    work = tmp_path_factory.mktemp("secured-registry")
    sasl_port = free_port()
    cluster = new_cluster(work / "cluster", zookeeper, 1, {
        "listeners": f"OPEN://127.0.0.1:{{port}},INTERNAL://127.0.0.1:{sasl_port}",
        "advertised.listeners": f"OPEN://127.0.0.1:{{port}},INTERNAL://127.0.0.1:{sasl_port}",
        "listener.security.protocol.map": "OPEN:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": jaas("admin"),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
    })
    for user in ("admin", "registry", "stranger"):
        console_tool("configs", "--zookeeper", cluster.zookeeper_connect, "--alter", "--add-config",
                     f"SCRAM-SHA-512=[password={user}-secret]", "--entity-type", "users", "--entity-name", user)
    configs = {}
    for user in ("admin", "registry", "stranger"):
        configs[user] = work / f"{user}.properties"
        configs[user].write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                                 f"sasl.jaas.config={jaas(user)}\n")
    cluster.start()
    bootstrap = f"127.0.0.1:{sasl_port}"
    acl = ["acls", "--bootstrap-server", bootstrap, "--command-config", str(configs["admin"]), "--add",
           "--allow-principal", "User:registry"]
    console_tool(*acl, "--operation", "Create", "--operation", "Read", "--operation", "Write", "--operation",
                 "Describe", "--topic", "_schemas")
    console_tool(*acl, "--operation", "Read", "--group", "schema-registry")
    try:
        yield bootstrap, configs, work
    finally:
        cluster.stop(timeout=15.0)


def test_the_registry_principal_with_its_acls_serves(secured):
    bootstrap, configs, work = secured
    registry = start_registry(bootstrap, work / "registry.log", "--command-config", str(configs["registry"]))
    try:
        subject = f"secured-{uuid.uuid4().hex[:6]}"
        assert call(f"{registry.url}/subjects/{subject}/versions", "POST", {"schema": '"string"'})[0] == 200
        assert call(f"{registry.url}/subjects")[1] == [subject]
    finally:
        registry.stop()


def test_a_principal_without_acls_on_schemas_cannot_start(secured):
    bootstrap, configs, work = secured
    with pytest.raises(ClusterStartError) as failed:
        start_registry(bootstrap, work / "stranger.log", "--command-config", str(configs["stranger"]))
    assert "error 29" in str(failed.value) or "TOPIC_AUTHORIZATION_FAILED" in str(failed.value)

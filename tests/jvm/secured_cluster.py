"""A 3-broker cluster with two secured listeners and the ACL authorizer on, and one ordinary user on it.

Each broker listens with SASL_SSL (``odradek-cluster --security sasl_ssl``: SCRAM, the brokers talk to each
other there as the super user ``admin``) and with SSL on a port of its own, where a client certificate is
required and its common name is the principal (``ssl.principal.mapping.rules``). ``alice`` is the same
principal on both: a certificate with CN=alice and SCRAM-SHA-512 credentials. She holds exactly the ACLs of
ALICE_ACLS; allow.everyone.if.no.acl.found is false, so anything else is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from odradek.clients.admin.client import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, Admin, ResourcePattern,
    ResourceType,
)
from odradek.clients.admin.scram import UserScramCredentialUpsertion
from odradek.clients.security.client_security import ClientSecurity
from odradek.clients.simple_client import SyncSimpleClient
from odradek.protocol.acl import PatternType
from odradek.protocol.messages import DescribeAclsRequest
from odradek.tools.local_cluster import BrokerSlot, LocalCluster
from odradek.tools.local_zookeeper import free_port
from tests.integration.helpers import wait_until
from tests.integration.security_clients import Profile

USER, PASSWORD, KEY_PASSWORD = "alice", "alice-secret", "alice-key"
PREFIX = "alice-"  # every topic, group and transactional id of hers begins so
WAIT_S = 60.0  # upper bound for the brokers to learn of credentials and ACLs; never a speed assertion


def _alice_acls() -> list[AclBinding]:
    def allow(resource: ResourceType, name: str, pattern: PatternType, *operations: AclOperation) -> list[AclBinding]:
        return [AclBinding(ResourcePattern(resource, name, pattern),
                           AccessControlEntry(f"User:{USER}", "*", op, AclPermissionType.ALLOW)) for op in operations]

    return [
        *allow(ResourceType.TOPIC, PREFIX, PatternType.PREFIXED,
               AclOperation.CREATE, AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE),
        *allow(ResourceType.GROUP, PREFIX, PatternType.PREFIXED, AclOperation.READ),
        *allow(ResourceType.TRANSACTIONAL_ID, PREFIX, PatternType.PREFIXED, AclOperation.WRITE),
        # createAcls, deleteAcls and alterUserScramCredentials; Alter implies Describe (describeAcls ...)
        *allow(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, AclOperation.ALTER),
    ]


ALICE_ACLS = _alice_acls()


class TwoListenerCluster(LocalCluster):
    """A ``security="sasl_ssl"`` cluster whose brokers also listen with SSL (mutual TLS) on ``ssl_ports``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ssl_ports: dict[int, int] = {}

    def broker_command(self, broker: BrokerSlot) -> list[str]:
        command = super().broker_command(broker)
        port = self.ssl_ports.setdefault(broker.broker_id, free_port(broker.host))
        listeners = f"SASL_SSL://{broker.host}:{broker.port},SSL://{broker.host}:{port}"
        return [f"listeners={listeners}" if arg.startswith("listeners=") else arg for arg in command]

    @property
    def ssl_bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{self.ssl_ports[b.broker_id]}" for b in self.brokers)


SSL_LISTENER_OVERRIDES = {"listener.name.ssl.ssl.client.auth": "required",
                          "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"}


@dataclass
class SecuredCluster:
    cluster: TwoListenerCluster
    profiles: dict[str, Profile]  # alice on "SSL" and on "SASL_SSL"
    properties: dict[str, Path]   # the same as Java client properties files

    def admin(self) -> Admin:
        """Our Admin as the super user."""
        return Admin(self.cluster.bootstrap_servers, **self.cluster.security.client_kwargs())


def prepare(cluster: TwoListenerCluster, work: Path) -> SecuredCluster:
    """Alice's certificate, credentials and ACLs on a started cluster; returns once every broker knows them."""
    security = cluster.security
    cafile = str(security.ca.cert_path)
    keystore = str(security.ca.issue(USER, client=True))
    profiles = {
        "SSL": Profile("ssl", cluster.ssl_bootstrap_servers, "SSL", cafile, keystore=keystore),
        "SASL_SSL": Profile("sasl_ssl", cluster.bootstrap_servers, "SASL_SSL", cafile, mechanism="SCRAM-SHA-512",
                            username=USER, password=PASSWORD),
    }
    properties = {}
    for protocol, profile in profiles.items():
        properties[protocol] = work / f"alice-{protocol.lower()}.properties"
        text = profile.with_(keystore=None).properties()
        if profile.keystore:
            text += java_keystore(Path(profile.keystore), work / "alice.p12")
        properties[protocol].write_text(text)
    secured = SecuredCluster(cluster, profiles, properties)
    with secured.admin() as admin:
        assert admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(USER, "SCRAM-SHA-512", iterations=4096, password=PASSWORD)]) == {USER: None}
        created = admin.create_acls(ALICE_ACLS)
        assert not created["failed"], created["failed"]
    for protocol, profile in profiles.items():
        for broker in cluster.brokers:
            wait_until(lambda: _alice_sees_her_acls(profile, broker.broker_id), WAIT_S,
                       f"broker {broker.broker_id} to let alice in over {protocol} and know her ACLs")
    return secured


def java_keystore(pem: Path, out: Path) -> str:
    """The Java client's key store settings for a PEM key store, as PKCS12 with a password: kafka-clients 2.8
    refuses a PEM key store whose key has no password (KAFKA-12703, fixed in 3.3), and Java 17 cannot read the
    PBES2 encryption of an encrypted PKCS#8 PEM key (JDK-8231581), whereas it reads PBES2 in PKCS12."""
    data = pem.read_bytes()
    key = serialization.load_pem_private_key(data, None)
    certificate, *chain = x509.load_pem_x509_certificates(data)
    out.write_bytes(pkcs12.serialize_key_and_certificates(
        USER.encode(), key, certificate, chain, serialization.BestAvailableEncryption(KEY_PASSWORD.encode())))
    return (f"ssl.keystore.type=PKCS12\nssl.keystore.location={out}\nssl.keystore.password={KEY_PASSWORD}\n"
            f"ssl.key.password={KEY_PASSWORD}\n")


def _alice_sees_her_acls(profile: Profile, broker_id: int) -> bool:
    """Alice logs in to the broker and its DescribeAcls answer (from its own cache) holds all her ACLs."""
    security = ClientSecurity.from_kwargs(**profile.ours())
    try:
        with SyncSimpleClient(profile.bootstrap, security=security, retries=0, connect_timeout=5.0) as client:
            answer = client.send(broker_id, DescribeAclsRequest(
                resource_type_filter=int(ResourceType.ANY), resource_name_filter=None,
                pattern_type_filter=int(PatternType.ANY), principal_filter=f"User:{USER}", host_filter=None,
                operation=int(AclOperation.ANY), permission_type=int(AclPermissionType.ANY)))
    except Exception:  # noqa: BLE001 - credentials not there yet: the login fails until they are
        return False
    listed = {(r.resource_type, r.resource_name, r.pattern_type, a.operation)
              for r in answer.resources for a in r.acls}
    wanted = {(int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type), int(b.entry.operation))
              for b in ALICE_ACLS}
    return answer.error_code == 0 and listed == wanted

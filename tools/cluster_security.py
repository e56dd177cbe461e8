"""Security for a local cluster (``odradek-cluster start --security ssl|sasl_plaintext|sasl_ssl``).

Everything lives under ``<data dir>/security``: a local CA (``ca/ca.pem``, the trust store), the brokers' PEM
key store (``ca/broker.pem``, valid for the cluster's host, localhost and 127.0.0.1), the admin's client
certificate (``ca/admin.pem``, for mutual TLS), the generated admin password (``credentials.json``, mode
0600) and ``client.properties``: Kafka client properties for the tools' --command-config.

Each broker has one listener, named after its protocol, which is also the inter-broker listener:
* ``ssl``: mutual TLS (``ssl.client.auth=required``); principals are certificate common names
  (``ssl.principal.mapping.rules``): ``User:broker`` for the brokers, ``User:admin`` for the admin.
* ``sasl_plaintext`` / ``sasl_ssl``: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the brokers authenticate as
  ``admin`` with SCRAM-SHA-512, whose credentials are written into ZooKeeper before any broker starts
  (Kafka's bootstrap step); PLAIN knows ``admin`` from the listener's JAAS entry.

Every mode turns Kafka's AclAuthorizer on, with the brokers' and the admin's principals as super users: an
authenticated cluster whose authorizer is off lets any user send controller requests (StopReplica,
LeaderAndIsr ...). Other users need ACLs (``odradek-acls --command-config client.properties ...``).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from ..broker.config_keys import ACL_AUTHORIZER
from ..controller.zk_client import KafkaZkClient
from ..clients.security.client_security import SASL_PROTOCOLS, TLS_PROTOCOLS, ClientSecurity
from ..clients.security.jaas import PLAIN_MODULE, client_jaas
from ..clients.security.scram import MECHANISMS, make_credential
from .local_ca import LocalCA

__all__ = ["ClusterSecurity", "MODES", "ADMIN_USER"]

MODES = {"ssl": "SSL", "sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL"}
ADMIN_USER = "admin"
BROKER_USER = "broker"  # the brokers' certificate common name
INTER_BROKER_MECHANISM = "SCRAM-SHA-512"
PRINCIPAL_RULES = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"  # CN=admin,OU=...,O=Odradek -> admin


class ClusterSecurity:
    def __init__(self, directory: str | os.PathLike, mode: str, host: str = "127.0.0.1") -> None:
        if mode not in MODES:
            raise ValueError(f"security mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.directory = Path(directory)
        self.mode = mode
        self.protocol = MODES[mode]
        self.host = host
        self.directory.mkdir(parents=True, exist_ok=True)
        self.admin_password = self._password(ADMIN_USER)
        self.ca: LocalCA | None = None
        if self.uses_ssl:
            self.ca = LocalCA(self.directory / "ca")
            self.keystore = self.directory / "ca" / "broker.pem"
            if not self.keystore.exists():
                self.ca.issue(BROKER_USER, hosts=sorted({host, "localhost", "127.0.0.1"}))
            self.admin_keystore = self.directory / "ca" / f"{ADMIN_USER}.pem"
            if not self.admin_keystore.exists():
                self.ca.issue(ADMIN_USER, client=True)
        self.properties_path = self.write_client_properties()

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in TLS_PROTOCOLS

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    def _password(self, user: str) -> str:
        path = self.directory / "credentials.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        if user not in stored:
            stored[user] = secrets.token_urlsafe(18)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(stored, f, indent=2)
        return stored[user]

    # -- brokers ---------------------------------------------------------------------------------------
    def broker_overrides(self, port: int) -> dict[str, str]:
        name, prefix = self.protocol, f"listener.name.{self.protocol.lower()}."
        overrides = {"listeners": f"{name}://{self.host}:{port}", "security.inter.broker.protocol": name,
                     "authorizer.class.name": ACL_AUTHORIZER, "super.users": self.super_users}
        if self.uses_ssl:
            assert self.ca is not None
            overrides.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.keystore),
                              "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca.cert_path)})
        if self.protocol == "SSL":
            overrides.update({"ssl.client.auth": "required", "ssl.principal.mapping.rules": PRINCIPAL_RULES})
        if self.uses_sasl:
            password = self.admin_password
            overrides.update({
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol": INTER_BROKER_MECHANISM,
                prefix + "scram-sha-512.sasl.jaas.config": client_jaas(INTER_BROKER_MECHANISM, ADMIN_USER, password),
                prefix + "plain.sasl.jaas.config": f'{PLAIN_MODULE} required username="{ADMIN_USER}" '
                                                   f'password="{password}" user_{ADMIN_USER}="{password}";',
            })
        return overrides

    @property
    def super_users(self) -> str:
        """The brokers' principal (User:broker over mutual TLS; over SASL they log in as admin) and the admin's."""
        return ";".join(f"User:{user}" for user in ([BROKER_USER] if self.protocol == "SSL" else []) + [ADMIN_USER])

    def prepare(self, zookeeper_connect: str) -> None:
        """Kafka's bootstrap step: the admin's SCRAM credentials in ZooKeeper before any broker runs."""
        if not self.uses_sasl:
            return
        zk = KafkaZkClient(zookeeper_connect, session_timeout_ms=30000, connection_timeout_ms=30000)
        zk.start()
        try:
            zk.create_top_level_paths()
            if set(zk.get_entity_config("users", ADMIN_USER)) >= set(MECHANISMS):
                return  # a restart: keep them
            zk.set_entity_config("users", ADMIN_USER, {
                m: make_credential(MECHANISMS[m], self.admin_password).to_text() for m in MECHANISMS})
        finally:
            zk.close()

    # -- clients ---------------------------------------------------------------------------------------
    def client_kwargs(self) -> dict[str, Any]:
        """Our clients' keywords for the admin (kafka-python's names)."""
        kwargs: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_ssl:
            assert self.ca is not None
            kwargs["ssl_cafile"] = str(self.ca.cert_path)
        if self.protocol == "SSL":
            kwargs.update(ssl_certfile=str(self.admin_keystore), ssl_keyfile=str(self.admin_keystore))
        if self.uses_sasl:
            kwargs.update(sasl_mechanism=INTER_BROKER_MECHANISM, sasl_plain_username=ADMIN_USER,
                          sasl_plain_password=self.admin_password)
        return kwargs

    def client_security(self) -> ClientSecurity:
        return ClientSecurity.from_kwargs(**self.client_kwargs())

    def write_client_properties(self) -> Path:
        """client.properties: the admin's settings in Kafka's client property names (--command-config)."""
        lines = [f"security.protocol={self.protocol}"]
        if self.uses_ssl:
            assert self.ca is not None
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca.cert_path}"]
        if self.protocol == "SSL":
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.admin_keystore}"]
        if self.uses_sasl:
            lines += [f"sasl.mechanism={INTER_BROKER_MECHANISM}",
                      f"sasl.jaas.config={client_jaas(INTER_BROKER_MECHANISM, ADMIN_USER, self.admin_password)}"]
        path = self.directory / "client.properties"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

#!/usr/bin/env python3
"""One-shot set-up of docker-compose's ``secure`` profile, before its broker starts (Kafka's bootstrap step).

1. A local CA and the broker's PEM key store in the secrets volume (``ODRADEK_SECRETS_DIR``, default
   /var/lib/odradek/secrets): ``ca.pem`` (clients' trust store) and ``broker.pem`` (PKCS#8 key + chain, for
   the host names in ``ODRADEK_BROKER_HOSTS``). Kept across runs: made only when missing.
2. The SCRAM users, written to ZooKeeper with ``odradek-configs --zookeeper`` as Kafka's docs do it:
   ``admin`` (SCRAM-SHA-512, the brokers' own user) and ``client`` (SCRAM-SHA-256 and -512).
3. ``client.properties`` next to them: a host client's settings for the EXTERNAL SASL_SSL listener.

Passwords come from ``ODRADEK_ADMIN_PASSWORD`` / ``ODRADEK_CLIENT_PASSWORD``; compose sets demo values.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

from odradek.tools import configs
from odradek.tools.local_ca import LocalCA
from odradek.clients.security.jaas import client_jaas


def prepare(env: Mapping[str, str]) -> Path:
    secrets = Path(env.get("ODRADEK_SECRETS_DIR", "/var/lib/odradek/secrets"))
    ca = LocalCA(secrets)
    if not (secrets / "broker.pem").exists():
        hosts = [h.strip() for h in env.get("ODRADEK_BROKER_HOSTS", "localhost").split(",") if h.strip()]
        ca.issue("broker", hosts=hosts)
    zookeeper = env["ODRADEK_ZOOKEEPER"]
    users = (("admin", env["ODRADEK_ADMIN_PASSWORD"], "SCRAM-SHA-512=[password={}]"),
             ("client", env["ODRADEK_CLIENT_PASSWORD"], "SCRAM-SHA-256=[password={0}],SCRAM-SHA-512=[password={0}]"))
    for user, password, template in users:
        code = configs.main(["--zookeeper", zookeeper, "--alter", "--add-config", template.format(password),
                             "--entity-type", "users", "--entity-name", user])
        if code:
            raise SystemExit(code)
    properties = secrets / "client.properties"
    properties.write_text("\n".join([
        "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-256",
        f"sasl.jaas.config={client_jaas('SCRAM-SHA-256', 'client', env['ODRADEK_CLIENT_PASSWORD'])}",
        "ssl.truststore.type=PEM", "ssl.truststore.location=ca.pem", ""]))
    return secrets


if __name__ == "__main__":
    print(f"Secrets in {prepare(os.environ)}", file=sys.stderr)

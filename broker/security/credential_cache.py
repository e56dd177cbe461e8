"""The SCRAM credentials of every user, as stored in ZooKeeper, held in memory for the SASL servers.

Kafka keeps them in ``/config/users/<sanitized user>`` next to the user's quotas:
``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}``.
Every broker loads all users at start-up and re-reads a user when a ``/config/changes`` notification
names ``users/<user>`` (broker/dynamic_config.py), so a new or changed password works at once, without a
restart. Reads happen on the event loop (dict lookups); loads in the executor.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from ...clients.security.scram import MECHANISMS, ScramCredential, ScramError
from ...controller.zk_data import desanitize_entity_name

if TYPE_CHECKING:
    from ...controller.zk_client import KafkaZkClient

log = logging.getLogger(__name__)

USERS_PATH = "/config/users"


class CredentialCache:
    def __init__(self) -> None:
        self._credentials: dict[str, dict[str, ScramCredential]] = {}  # user -> mechanism -> credential

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._credentials)

    def update_user(self, user: str, config: Mapping[str, str]) -> None:
        """Replace ``user``'s credentials with the SCRAM entries of its config ({} removes them all)."""
        credentials: dict[str, ScramCredential] = {}
        for mechanism in MECHANISMS:
            text = config.get(mechanism)
            if text is None:
                continue
            try:
                credentials[mechanism] = ScramCredential.from_text(text)
            except ScramError:  # never log the text: it is a credential
                log.warning("Ignoring the malformed %s credential of user %s in ZooKeeper", mechanism, user)
        if credentials:
            self._credentials[user] = credentials
        else:
            self._credentials.pop(user, None)

    def load_user(self, zk: KafkaZkClient, sanitized_user: str) -> None:
        """Blocking: re-read one user (named as in ZooKeeper, e.g. from a change notification)."""
        if "/" in sanitized_user:  # users/<user>/clients/<client>: a quota entity, no credential
            return
        user = desanitize_entity_name(sanitized_user)
        self.update_user(user, zk.get_entity_config("users", sanitized_user))
        log.info("SCRAM credentials of user %s: %s", user, sorted(self._credentials.get(user, {})) or "none")

    def load_all(self, zk: KafkaZkClient) -> None:
        """Blocking: every user's credentials (at start-up)."""
        for sanitized in zk.get_children(USERS_PATH):
            self.update_user(desanitize_entity_name(sanitized), zk.get_entity_config("users", sanitized))

"""Quota entities and Kafka 2.8's precedence among them (ClientQuotaManager.DefaultQuotaCallback).

Quotas are set for a user, a client-id, or a (user, client-id) pair, each name possibly ``<default>``.
For one request, the most specific quota that matches its user principal and client-id applies:

    1. /config/users/<user>/clients/<client-id>      5. /config/users/<default>/clients/<default>
    2. /config/users/<user>/clients/<default>        6. /config/users/<default>
    3. /config/users/<user>                          7. /config/clients/<client-id>
    4. /config/users/<default>/clients/<client-id>   8. /config/clients/<default>

and last the static ``quota.producer.default`` / ``quota.consumer.default`` (client-id level).

Clients that share a quota share one sensor, named by metric tags (user, client-id), where an empty tag
means "any": with client-id quotas only, every connection with the same client-id is measured together
whatever its user; with user quotas only, every client of a user together. ``metric_tags`` chooses the
tags from the levels that are in use, ``limit`` finds the bound for a pair of tags.

User names are sanitized (URL-encoded, Kafka's Sanitizer) in ZooKeeper paths and in the user tag;
client-ids are sanitized in paths only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional
from urllib.parse import quote, unquote_plus

DEFAULT = "<default>"  # Kafka's ConfigEntityName.Default, in ZooKeeper paths and notifications
UNLIMITED = float(2**63 - 1)  # Long.MaxValue: no quota

# Kafka's QuotaTypes: which kinds of entities have (ever) had a quota on this broker.
NO_QUOTAS, CLIENT_ID_QUOTAS, USER_QUOTAS, USER_CLIENT_ID_QUOTAS = 0, 1, 2, 4


class _DefaultName:
    """The <default> entity: a name of its own, never equal to a client-id that reads "<default>"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


DEFAULT_NAME = _DefaultName()
Name = Optional[object]  # None (not part of the entity), DEFAULT_NAME, or a str
QuotaKey = tuple[Name, Name]  # (sanitized user, client-id), as Kafka's KafkaQuotaEntity


@lru_cache(maxsize=4096)
def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: Java's URLEncoder (UTF-8), with '*' and ' ' percent-encoded."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Kafka's Sanitizer.desanitize (Java's URLDecoder: '+' is a space)."""
    return unquote_plus(name)


def key_from_path(sanitized_user: str | None, sanitized_client_id: str | None) -> QuotaKey:
    """The entity of a ZooKeeper path's names ("<default>" is the default entity)."""
    user: Name = None if sanitized_user is None else DEFAULT_NAME if sanitized_user == DEFAULT else sanitized_user
    client: Name = None
    if sanitized_client_id is not None:
        client = DEFAULT_NAME if sanitized_client_id == DEFAULT else desanitize(sanitized_client_id)
    return (user, client)


class QuotaStore:
    """The quotas of one quota type (produce, fetch or request) and Kafka's precedence among them."""

    def __init__(self, static_client_quota: float = UNLIMITED) -> None:
        self.overrides: dict[QuotaKey, float] = {}
        self.static_client_quota = static_client_quota
        # A static default quota counts as a client-id quota (Kafka's initial quotaTypesEnabled).
        self.types_enabled = NO_QUOTAS if static_client_quota >= UNLIMITED else CLIENT_ID_QUOTAS

    @property
    def enabled(self) -> bool:
        """True once any quota of this type was configured, until a restart (as Kafka)."""
        return self.types_enabled != NO_QUOTAS

    def update(self, key: QuotaKey, bound: float | None) -> None:
        """Set (or with None remove) the quota of an entity."""
        user, client = key
        if user is not None:
            self.types_enabled |= USER_CLIENT_ID_QUOTAS if client is not None else USER_QUOTAS
        elif client is not None:
            self.types_enabled |= CLIENT_ID_QUOTAS
        if bound is None:
            self.overrides.pop(key, None)
        else:
            self.overrides[key] = bound

    def limit(self, user_tag: str, client_tag: str) -> float | None:
        """The bound of a sensor with these metric tags (DefaultQuotaCallback.quotaLimit); None: none."""
        get = self.overrides.get
        if user_tag and client_tag:
            for key in ((user_tag, client_tag), (user_tag, DEFAULT_NAME), (DEFAULT_NAME, client_tag),
                        (DEFAULT_NAME, DEFAULT_NAME)):
                if key in self.overrides:
                    return self.overrides[key]
            return None
        if user_tag:
            found = get((user_tag, None))
            return found if found is not None else get((DEFAULT_NAME, None))
        if client_tag:
            found = get((None, client_tag))
            if found is None:
                found = get((None, DEFAULT_NAME))
            return found if found is not None else self.static_client_quota
        return None

    def metric_tags(self, sanitized_user: str, client_id: str) -> tuple[str, str]:
        """The (user, client-id) tags of the sensor a request is measured by (quotaMetricTags)."""
        enabled = self.types_enabled
        if enabled in (NO_QUOTAS, CLIENT_ID_QUOTAS):
            return "", client_id
        if enabled == USER_QUOTAS:
            return sanitized_user, ""
        if enabled == USER_CLIENT_ID_QUOTAS:
            return sanitized_user, client_id
        # Several levels in use: the first that has a quota decides which tags the sensor carries.
        overrides = self.overrides
        both = (sanitized_user, client_id)
        for key, tags in (((sanitized_user, client_id), both), ((sanitized_user, DEFAULT_NAME), both),
                          ((sanitized_user, None), (sanitized_user, "")), ((DEFAULT_NAME, client_id), both),
                          ((DEFAULT_NAME, DEFAULT_NAME), both), ((DEFAULT_NAME, None), (sanitized_user, ""))):
            if key in overrides:
                return tags
        return "", client_id

"""Which broker id this broker is, and whether its log dirs belong to it: Kafka 2.8's start-up checks.

Kafka's KafkaServer.startup reads ``meta.properties`` of every log dir before it opens any log:

- the dirs must agree (InconsistentBrokerMetadataException: "BrokerMetadata is not consistent across
  log.dirs"), and only version 0 exists for a ZooKeeper-mode broker;
- a stored ``cluster.id`` must be the cluster's (``/cluster/id``; InconsistentClusterIdException: the
  broker is trying to join the wrong cluster);
- a configured ``broker.id`` (>= 0) must be the stored one (InconsistentBrokerIdException); with
  ``broker.id`` -1 (or unset) the stored id is used, and only without one a new id is generated from
  ``/brokers/seqid`` (its new znode version + ``reserved.broker.max.id``, so generated ids never clash
  with configured ones) — getOrGenerateBrokerId.

Each failure is a ``FatalStartupError``: the broker logs it as one line and exits with code 1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from .log.log_manager import (
    META_PROPERTIES, InconsistentBrokerMetadataError, LogDirLockedError, read_properties,
)

if TYPE_CHECKING:
    from .config import KafkaConfig


class FatalStartupError(Exception):
    """A start-up check failed: one line in the log (no traceback) and exit code 1."""


class InconsistentBrokerIdError(FatalStartupError):
    """Kafka's InconsistentBrokerIdException."""


class InconsistentClusterIdError(FatalStartupError):
    """Kafka's InconsistentClusterIdException."""


class UnsupportedMetaPropertiesError(FatalStartupError):
    """meta.properties of a version a ZooKeeper-mode broker does not know (Kafka accepts only 0)."""


# Errors the server prints as one line without a traceback.
ONE_LINE_STARTUP_ERRORS: tuple[type[Exception], ...] = (
    FatalStartupError, InconsistentBrokerMetadataError, LogDirLockedError)


@dataclass(frozen=True)
class StoredBrokerMetadata:
    """What the log dirs' meta.properties say (all None when no dir has one yet)."""
    broker_id: int | None = None
    cluster_id: str | None = None
    files: tuple[str, ...] = ()  # the meta.properties files read, for messages


def _describe(props: dict[str, str]) -> str:
    return ", ".join(f"{k}={props[k]}" for k in ("version", "broker.id", "cluster.id") if k in props)


def read_stored_metadata(log_dirs: Iterable[str]) -> StoredBrokerMetadata:
    """Read meta.properties of every log dir that has one; they must all say the same."""
    found: dict[str, dict[str, str]] = {}
    for d in log_dirs:
        path = os.path.join(os.path.abspath(d), META_PROPERTIES)
        if os.path.isfile(path):
            props = read_properties(path)
            found[path] = {k: props[k] for k in ("version", "broker.id", "cluster.id") if k in props}
    if not found:
        return StoredBrokerMetadata()
    if len({tuple(sorted(p.items())) for p in found.values()}) > 1:
        listing = "; ".join(f"{path} -> {_describe(p)}" for path, p in found.items())
        raise InconsistentBrokerMetadataError(
            "BrokerMetadata is not consistent across log.dirs. This could happen if multiple brokers shared a "
            f"log directory (log.dirs) or partial data was manually copied from another broker. Found: {listing}")
    path, props = next(iter(found.items()))
    if props.get("version") != "0":
        raise UnsupportedMetaPropertiesError(
            f"{path} has version {props.get('version')!r}; a ZooKeeper-based broker supports only version 0")
    stored_id = props.get("broker.id")
    try:
        broker_id = int(stored_id) if stored_id is not None else None
    except ValueError:
        raise InconsistentBrokerMetadataError(f"{path}: broker.id {stored_id!r} is not an integer") from None
    return StoredBrokerMetadata(broker_id, props.get("cluster.id"), tuple(found))


def check_cluster_id(stored: StoredBrokerMetadata, cluster_id: str) -> None:
    if stored.cluster_id is not None and stored.cluster_id != cluster_id:
        raise InconsistentClusterIdError(
            f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored.cluster_id} in meta.properties "
            f"({', '.join(stored.files)}). The broker is trying to join the wrong cluster. Configured "
            "zookeeper.connect may be wrong.")


def get_or_generate_broker_id(configured_id: int, generation_enabled: bool, stored: StoredBrokerMetadata,
                              generate: Callable[[], int]) -> int:
    """Kafka's getOrGenerateBrokerId: configured (must match the stored id), else stored, else generated."""
    if configured_id >= 0 and stored.broker_id is not None and stored.broker_id != configured_id:
        raise InconsistentBrokerIdError(
            f"Configured broker.id {configured_id} doesn't match stored broker.id {stored.broker_id} in "
            f"meta.properties ({', '.join(stored.files)}). If you moved your data, make sure your configured "
            "broker.id matches. If you intend to create a new broker, you should remove all data in your data "
            "directories (log.dirs).")
    if stored.broker_id is not None:
        return stored.broker_id
    if configured_id < 0 and generation_enabled:
        return generate()
    return configured_id


def resolve_broker_id(config: KafkaConfig, cluster_id: str, generate: Callable[[], int]) -> int:
    """All of the start-up checks for ``config`` (a KafkaConfig) against ``cluster_id``; returns the id.
    ``generate`` asks ZooKeeper for a new id (called only when one is needed)."""
    stored = read_stored_metadata(config.log_dirs)
    check_cluster_id(stored, cluster_id)
    return get_or_generate_broker_id(config.broker_id, bool(config.get("broker.id.generation.enable")), stored,
                                     generate)

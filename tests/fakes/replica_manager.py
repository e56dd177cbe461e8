"""Real ReplicaManagers on disk for the unit tests, and the LeaderAndIsr partition states that drive them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterable

from odradek.broker.log import LogManager
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.replica_manager import ReplicaManager


def partition_state(partition: int = 0, *, leader: int, replicas: Iterable[int], isr: Iterable[int] | None = None,
                    leader_epoch: int = 0, partition_epoch: int = 0, controller_epoch: int = 1,
                    is_new: bool = True) -> SimpleNamespace:
    """One partition of a LeaderAndIsr request, as ``become_leader_or_follower`` reads it (the ISR defaults
    to every replica)."""
    return SimpleNamespace(partition_index=partition, controller_epoch=controller_epoch, leader=leader,
                           leader_epoch=leader_epoch, isr=list(replicas if isr is None else isr),
                           partition_epoch=partition_epoch, replicas=list(replicas), is_new=is_new)


class ReplicaManagers:
    """Builds ReplicaManagers, each on a LogManager of its own in a new directory under ``root`` (real logs,
    real purgatories); ``shutdown`` stops every one built, managers before their logs."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.built: list[tuple[ReplicaManager, LogManager]] = []

    def make(self, broker_id: int, log_config: dict[str, str] | None = None,
             clock: Callable[[], int] | None = None) -> ReplicaManager:
        """A ReplicaManager for ``broker_id``; ``log_config``: the topics' default log configs (e.g.
        min.insync.replicas); ``clock``: its milliseconds clock (the monotonic one by default)."""
        logs = LogManager([str(self.root / f"logs-{broker_id}-{len(self.built)}")], dict(log_config or {}),
                          broker_id=broker_id, cluster_id="c")
        manager = ReplicaManager(broker_id, logs, MetadataCache(broker_id), **({"clock": clock} if clock else {}))
        self.built.append((manager, logs))
        return manager

    def shutdown(self) -> None:
        for manager, logs in self.built:
            manager.shutdown()
            logs.shutdown()

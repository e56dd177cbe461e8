"""What the API handlers need of the broker, handed to each ``register`` by the composition root."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..config import KafkaConfig
from ..metadata_cache import MetadataCache
from ..replica_manager import ReplicaManager
from .authorization import AuthHelper


@dataclass
class BrokerServices:
    config: KafkaConfig
    broker_id: int
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    broker_epoch: Callable[[], int]          # this broker's registration epoch (czxid), -1 before
    admin: Any = None                        # controller.admin_zk.AdminZkClient
    zk: Any = None                           # controller.zk_client.KafkaZkClient
    producer_ids: Any = None                 # broker.producer_id_manager.ProducerIdManager
    controller: Any = None                   # controller.kafka_controller.KafkaController
    group_coordinator: Any = None            # coordinator.group.coordinator.GroupCoordinator
    transaction_coordinator: Any = None      # coordinator.transaction.coordinator.TransactionCoordinator
    dynamic_config: Any = None               # broker.dynamic_config.DynamicConfigManager
    client_quotas: Any = None                # broker.quota.client_quotas.ClientQuotas
    auth: AuthHelper = field(default_factory=AuthHelper)  # the authorizer's checks (all pass without one)

    async def in_executor(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking call (ZooKeeper, a big file operation) off the event loop."""
        import asyncio
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

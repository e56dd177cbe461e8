"""What the API handlers need of the broker, handed to each ``register`` by the composition root.

broker/server.py builds every field before this object (in dependency order), so none is None once the
broker serves; a unit test of one handler passes what that handler reads.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..config import KafkaConfig
from ..metadata_cache import MetadataCache
from ..replica_manager import ReplicaManager
from .authorization import AuthHelper

if TYPE_CHECKING:
    from ...controller.admin_zk import AdminZkClient
    from ...controller.kafka_controller import KafkaController
    from ...controller.zk_client import KafkaZkClient
    from ..coordinator.group.coordinator import GroupCoordinator
    from ..coordinator.transaction.coordinator import TransactionCoordinator
    from ..dynamic_config import DynamicConfigManager
    from ..producer_id_manager import ProducerIdManager
    from ..quota.client_quotas import ClientQuotas


@dataclass
class BrokerServices:
    config: KafkaConfig
    broker_id: int
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    broker_epoch: Callable[[], int]          # this broker's registration epoch (czxid), -1 before
    _: KW_ONLY
    admin: AdminZkClient
    zk: KafkaZkClient
    producer_ids: ProducerIdManager
    controller: KafkaController              # built before the first request, started once registered
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    dynamic_config: DynamicConfigManager
    client_quotas: ClientQuotas
    auth: AuthHelper = field(default_factory=AuthHelper)  # the authorizer's checks (all pass without one)

    async def in_executor(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking call (ZooKeeper, a big file operation) off the event loop."""
        import asyncio
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

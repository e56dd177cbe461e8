"""Brokers made of a real SocketServer + KafkaApis and a real KafkaController, registered in a real ZooKeeper
with sessions of their own; their LeaderAndIsr, StopReplica and UpdateMetadata handlers record what they
receive and answer without error. Killing one closes its session, so its /brokers/ids/<id> (and
/controller, if it held it) disappear as after a crash. The controller integration tests' cluster."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from odradek.broker.apis import api_versions
from odradek.broker.config import KafkaConfig
from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.server import build_socket_server
from odradek.controller.admin_zk import AdminZkClient
from odradek.controller.kafka_controller import KafkaController
from odradek.controller.zk_client import KafkaZkClient
from odradek.controller.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import LeaderAndIsrResponse, StopReplicaResponse, UpdateMetadataResponse

from .polling import until

WAIT_S = 30.0  # upper bound for the cluster to converge; never a speed assertion


def config(broker_id: int, zk_connect: str, **overrides: Any) -> KafkaConfig:
    props = {"broker.id": str(broker_id), "listeners": "PLAINTEXT://127.0.0.1:0", "zookeeper.connect": zk_connect}
    props.update({k.replace("_", "."): str(v).lower() if isinstance(v, bool) else str(v) for k, v in overrides.items()})
    return KafkaConfig(props)


class FakeBroker:
    """A broker reactor that records the controller's requests, registered in ZooKeeper, with its controller."""

    def __init__(self, broker_id: int, zk: KafkaZkClient, cfg: KafkaConfig) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.config = cfg
        self.received: list[tuple[int, int, Any]] = []  # (api key, version, body)
        self.apis = KafkaApis()
        api_versions.register(self.apis)
        self.apis.register(ApiKey.LEADER_AND_ISR, self._record(lambda body: LeaderAndIsrResponse(error_code=0)))
        self.apis.register(ApiKey.UPDATE_METADATA, self._record(lambda body: UpdateMetadataResponse(error_code=0)))
        self.apis.register(ApiKey.STOP_REPLICA, self._record(self._stop_replica_response))
        self.server = build_socket_server(cfg, self.apis)
        self.controller: KafkaController | None = None
        self.broker_epoch = -1

    def _record(self, answer: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def handle(request):
            self.received.append((request.api_key, request.api_version, request.body))
            return answer(request.body)
        return handle

    @staticmethod
    def _stop_replica_response(body: Any) -> StopReplicaResponse:
        partitions = [(t.topic_name, s.partition_index) for t in body.topic_states for s in t.partition_states]
        partitions += [(t.name, p) for t in body.topics for p in t.partition_indexes]
        partitions += [(p.topic_name, p.partition_index) for p in body.ungrouped_partitions]
        return StopReplicaResponse(error_code=0, partition_errors=[
            StopReplicaResponse.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=0)
            for t, p in partitions])

    async def start(self) -> None:
        await self.server.start()
        info = BrokerInfo(self.broker_id, [("PLAINTEXT", "127.0.0.1", self.server.port())])
        await asyncio.to_thread(self.zk.create_top_level_paths)
        self.broker_epoch = await asyncio.to_thread(self.zk.register_broker, info)
        self.controller = KafkaController(self.config, self.zk, self.broker_id, lambda: self.broker_epoch)
        await self.controller.startup()

    async def kill(self) -> None:
        """Crash: the ZooKeeper session ends first (ephemeral znodes go), then everything stops."""
        await asyncio.to_thread(self.zk.close)
        await self.controller.shutdown()
        await self.server.stop(timeout=0.5)

    async def stop(self) -> None:
        await self.controller.shutdown()
        await self.server.stop(timeout=0.5)

    def requests(self, api_key: int) -> list[Any]:
        return [body for key, _, body in self.received if key == api_key]

    def partition_states(self, api_key: int, topic: str) -> list[Any]:
        """Partition states for ``topic`` in every LeaderAndIsr or UpdateMetadata received, in order."""
        out = []
        for body in self.requests(api_key):
            for t in body.topic_states:
                if t.topic_name == topic:
                    out.extend((body, s) for s in t.partition_states)
        return out


async def eventually(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    return await until(predicate, what, timeout, interval=0.02)


class Cluster:
    def __init__(self, zk_client_factory, zk_chroot: str, **overrides: Any) -> None:
        self.factory = zk_client_factory
        self.chroot = zk_chroot
        self.overrides = overrides
        self.brokers: dict[int, FakeBroker] = {}
        self.observer = zk_client_factory()

    async def start_broker(self, broker_id: int) -> FakeBroker:
        zk = await asyncio.to_thread(self.factory)
        broker = FakeBroker(broker_id, zk, config(broker_id, self.chroot, **self.overrides))
        await broker.start()
        self.brokers[broker_id] = broker
        return broker

    async def start(self, broker_ids: tuple[int, ...] = (1, 2, 3)) -> FakeBroker:
        """Start the brokers; returns the one that became controller (epoch 1)."""
        for broker_id in broker_ids:
            await self.start_broker(broker_id)
        return await self.active_controller(epoch=1)

    async def kill(self, broker_id: int) -> None:
        await self.brokers.pop(broker_id).kill()

    def admin(self) -> AdminZkClient:
        return AdminZkClient(self.observer, config(0, self.chroot, **self.overrides))

    async def active_controller(self, epoch: int | None = None) -> FakeBroker:
        def find():
            active = [b for b in self.brokers.values() if b.controller.is_active]
            if len(active) == 1 and (epoch is None or active[0].controller.epoch == epoch):
                return active[0]
            return None
        return await eventually(find, f"one active controller (epoch {epoch})")

    def states(self, topic: str, partitions: int) -> dict[int, LeaderIsrAndControllerEpoch]:
        found = self.observer.get_partition_states([(topic, p) for p in range(partitions)])
        return {p: state for (_, p), (state, _) in found.items()}

    async def stop(self) -> None:
        for broker in self.brokers.values():
            await broker.stop()


def run(cluster: Cluster, scenario: Callable[[Cluster], Any]) -> None:
    """Run an async scenario against the cluster, stopping every broker afterwards whatever happens."""
    async def main():
        try:
            await scenario(cluster)
        finally:
            await cluster.stop()
    asyncio.run(asyncio.wait_for(main(), 120))

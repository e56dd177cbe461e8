"""Controlled shutdown, ISR change notifications and the state-change log, against a real ZooKeeper.

The brokers are tests/fakes/controller_brokers' FakeBrokers (real sockets, real KafkaControllers, recording the
controller's requests) that also serve ControlledShutdown with the real handler
(broker/apis/controlled_shutdown.py); the shutting-down side is the real broker/controlled_shutdown.py.
"""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from odradek.broker.apis import controlled_shutdown as controlled_shutdown_api
from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.controlled_shutdown import controlled_shutdown
from odradek.clients.connection import BrokerConnection
from odradek.controller import state_change_log as scl
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch as S
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import ControlledShutdownRequest
from tests.fakes.controller_brokers import Cluster, FakeBroker, eventually, run

NOT_CONTROLLER, STALE_BROKER_EPOCH, BROKER_NOT_AVAILABLE = 41, 77, 8


class ShutdownCluster(Cluster):
    async def start_broker(self, broker_id: int) -> FakeBroker:
        broker = await super().start_broker(broker_id)
        services = SimpleNamespace(broker_id=broker_id, controller=broker.controller, auth=AuthHelper())
        controlled_shutdown_api.register(broker.apis, services)
        return broker

    async def shut_down(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        return await controlled_shutdown(broker.config, broker.zk, broker_id, lambda: broker.broker_epoch)

    async def ask(self, to: int, request: ControlledShutdownRequest):
        broker = self.brokers[to]
        conn = await BrokerConnection.connect("127.0.0.1", broker.server.port(), client_id="test")
        try:
            return await conn.send(request)
        finally:
            await conn.close()


def new_cluster(zk_client_factory, zk_chroot) -> ShutdownCluster:
    return ShutdownCluster(zk_client_factory, zk_chroot, controlled_shutdown_max_retries=2,
                           controlled_shutdown_retry_backoff_ms=20)


def stop_replicas(broker: FakeBroker) -> dict[tuple[str, int], bool]:
    return {(t.topic_name, s.partition_index): s.delete_partition
            for r in broker.requests(ApiKey.STOP_REPLICA) for t in r.topic_states for s in t.partition_states}


def test_controlled_shutdown_moves_leaders_and_leaves_isrs(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        c = controller.broker_id
        leaving, other = [b for b in (1, 2, 3) if b != c]
        admin = cluster.admin()
        # t-0: led by the leaving broker; t-1: followed by it; t-2: not on it; solo-0: replication factor 1
        await asyncio.to_thread(admin.create_topic, "t", None, None, {},
                                {0: [leaving, other], 1: [other, leaving], 2: [c, other]})
        await asyncio.to_thread(admin.create_topic, "solo", None, None, {}, {0: [leaving]})
        await eventually(lambda: len(cluster.states("t", 3)) == 3 and cluster.states("solo", 1), "states")

        assert await cluster.shut_down(leaving) is True
        assert cluster.states("t", 3) == {0: S(other, 1, [other], 1), 1: S(other, 1, [other], 1),
                                          2: S(c, 0, [c, other], 1)}
        assert cluster.states("solo", 1) == {0: S(leaving, 0, [leaving], 1)}  # nobody else can lead it
        assert controller.controller.context.shutting_down_broker_ids == {leaving}
        # the new leader and the leaving broker (now a follower) hear about t-0; the leaving broker stops
        # following t-1 without deleting it
        for broker_id in (other, leaving):
            await eventually(lambda b=cluster.brokers[broker_id]: any(
                s.partition_index == 0 and s.leader == other and s.leader_epoch == 1
                for _, s in b.partition_states(ApiKey.LEADER_AND_ISR, "t")), f"LeaderAndIsr t-0 to {broker_id}")
        await eventually(lambda: stop_replicas(cluster.brokers[leaving]) == {("t", 1): False}, "StopReplica t-1")
        await eventually(lambda: any(s.partition_index == 1 and s.isr == [other]
                                     for _, s in cluster.brokers[other].partition_states(ApiKey.LEADER_AND_ISR, "t")),
                         "the leader of t-1 hears its shrunk ISR")
        # a second request finds nothing left to move
        response = await cluster.ask(c, ControlledShutdownRequest(broker_id=leaving,
                                                                  broker_epoch=cluster.brokers[leaving].broker_epoch))
        assert (response.error_code, response.remaining_partitions) == (0, [])

        # once the broker is gone and back (a new registration), it is no longer shutting down
        await cluster.kill(leaving)
        await eventually(lambda: leaving not in controller.controller.context.live_broker_ids, "failure noticed")
        assert controller.controller.context.shutting_down_broker_ids == set()

    run(new_cluster(zk_client_factory, zk_chroot), main)


def test_controlled_shutdown_gives_up_when_no_replica_can_take_over(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        c = controller.broker_id
        leaving, doomed = [b for b in (1, 2, 3) if b != c]
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "t", None, None, {}, {0: [leaving, doomed]})
        await eventually(lambda: cluster.states("t", 1), "state")
        await cluster.kill(doomed)
        await eventually(lambda: cluster.states("t", 1) == {0: S(leaving, 1, [leaving], 1)}, "ISR shrunk")

        assert await cluster.shut_down(leaving) is False  # both attempts leave t-0 with it
        response = await cluster.ask(c, ControlledShutdownRequest(broker_id=leaving,
                                                                  broker_epoch=cluster.brokers[leaving].broker_epoch))
        assert response.error_code == 0
        assert [(p.topic_name, p.partition_index) for p in response.remaining_partitions] == [("t", 0)]
        assert cluster.states("t", 1) == {0: S(leaving, 1, [leaving], 1)}

    run(new_cluster(zk_client_factory, zk_chroot), main)


def test_controlled_shutdown_errors(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1, 2))
        c = controller.broker_id
        other = 3 - c
        epoch = cluster.brokers[other].broker_epoch
        not_controller = await cluster.ask(other, ControlledShutdownRequest(broker_id=other, broker_epoch=epoch))
        assert not_controller.error_code == NOT_CONTROLLER
        stale = await cluster.ask(c, ControlledShutdownRequest(broker_id=other, broker_epoch=epoch - 1))
        assert stale.error_code == STALE_BROKER_EPOCH
        unknown = await cluster.ask(c, ControlledShutdownRequest(broker_id=42, broker_epoch=-1))
        assert unknown.error_code == BROKER_NOT_AVAILABLE
        assert controller.controller.context.shutting_down_broker_ids == set()
        ok = await cluster.ask(c, ControlledShutdownRequest(broker_id=other, broker_epoch=epoch))
        assert ok.error_code == 0
        assert controller.controller.context.shutting_down_broker_ids == {other}

    run(new_cluster(zk_client_factory, zk_chroot), main)


def test_controlled_shutdown_of_the_controller_itself(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1, 2))
        c = controller.broker_id
        other = 3 - c
        await asyncio.to_thread(cluster.admin().create_topic, "t", None, None, {}, {0: [c, other]})
        await eventually(lambda: cluster.states("t", 1), "state")
        assert await cluster.shut_down(c) is True
        assert cluster.states("t", 1) == {0: S(other, 1, [other], 1)}

    run(new_cluster(zk_client_factory, zk_chroot), main)


def test_isr_change_notification_updates_metadata_and_is_deleted(zk_client_factory, zk_chroot):
    async def main(cluster):
        controller = await cluster.start((1, 2, 3))
        admin = cluster.admin()
        await asyncio.to_thread(admin.create_topic, "t", None, None, {}, {0: [1, 2, 3], 1: [2, 3, 1]})
        await eventually(lambda: len(cluster.states("t", 2)) == 2, "states")
        # the leader of t-0 shrinks its ISR, as a broker's ISR manager does: conditional write + notification
        (state, version), = (await asyncio.to_thread(cluster.observer.get_partition_states, [("t", 0)])).values()
        shrunk = S(state.leader, state.leader_epoch, [1, 2], state.controller_epoch)
        assert await asyncio.to_thread(cluster.observer.update_partition_state, "t", 0, shrunk, version) == version + 1
        await asyncio.to_thread(cluster.observer.propagate_isr_changes, [("t", 0)])
        for broker in cluster.brokers.values():
            await eventually(lambda b=broker: any(s.partition_index == 0 and s.isr == [1, 2] and s.zk_version == 1
                                                  for _, s in b.partition_states(ApiKey.UPDATE_METADATA, "t")),
                             f"UpdateMetadata with the new ISR to broker {broker.broker_id}")
        await eventually(lambda: cluster.observer.get_children("/isr_change_notification") == [],
                         "notification deleted")
        leadership = controller.controller.context.leadership(("t", 0))
        assert (leadership.state.isr, leadership.zk_version) == ([1, 2], 1)

    run(Cluster(zk_client_factory, zk_chroot), main)


def test_state_change_log_file_records_transitions_and_requests(zk_client_factory, zk_chroot, tmp_path):
    async def main(cluster):
        controller = await cluster.start((1,))
        await controller.controller.event_manager.wait_idle()  # failover done: the topic comes as a new one
        await asyncio.to_thread(cluster.admin().create_topic, "logged", 1, 1)
        await eventually(lambda: cluster.states("logged", 1), "state")
        await eventually(lambda: "Sending LeaderAndIsr request" in path.read_text(), "request logged")

    config = SimpleNamespace(originals={scl.STATE_CHANGE_LOG_DIR_KEY: str(tmp_path / "logs")}, log_dirs=["/x/data"])
    path = scl.configure_from(config)
    try:
        run(Cluster(zk_client_factory, zk_chroot), main)
        text = path.read_text()
    finally:
        scl.close()
    assert path == tmp_path / "logs" / "state-change.log"
    assert "[Controller id=1 epoch=1] Changed partition logged-0 from NewPartition to OnlinePartition" in text
    assert "Changed state of replica 1 for partition logged-0 from NewReplica to OnlineReplica" in text
    assert "Sending UpdateMetadata request to broker 1" in text
    assert not logging.getLogger(scl.STATE_CHANGE_LOGGER).handlers

"""A deposed ("zombie") controller's requests are refused by real broker processes.

Deleting /controller makes the brokers elect a new controller with a higher epoch, which tells every
broker; a request still carrying the old epoch then gets STALE_CONTROLLER_EPOCH (Kafka 2.8's
ReplicaManager check), so a controller that has not noticed its deposition changes nothing.
"""

from __future__ import annotations

import asyncio
import time

from odradek.clients.connection import BrokerConnection
from odradek.controller.zk_client import KafkaZkClient
from odradek.protocol.messages import StopReplicaRequest

STALE_CONTROLLER_EPOCH = 11
WAIT_S = 60.0  # upper bound for the brokers to hear the new controller; never a speed assertion


async def stop_nothing(port: int, controller_id: int, controller_epoch: int) -> int:
    """A StopReplica naming no partition (harmless if accepted): its top-level error code."""
    conn = await BrokerConnection.connect("127.0.0.1", port, client_id=f"controller-{controller_id}")
    try:
        response = await conn.send(StopReplicaRequest(controller_id=controller_id, controller_epoch=controller_epoch,
                                                      broker_epoch=-1))
        return response.error_code
    finally:
        await conn.close()


def test_requests_of_a_deposed_controller_are_refused(odradek_cluster_factory):
    cluster = odradek_cluster_factory(brokers=2)
    zk = KafkaZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while zk.get_controller_id() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        old_controller, (old_epoch, _) = zk.get_controller_id(), zk.get_controller_epoch()
        assert old_controller is not None
        zk.delete_controller()  # as if its session had ended: the brokers elect again
        while (zk.get_controller_epoch()[0] == old_epoch or zk.get_controller_id() is None) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert zk.get_controller_epoch()[0] == old_epoch + 1

        async def refused_by(port: int) -> None:
            # until the new controller's first request reaches the broker, the old epoch is still the latest
            while time.monotonic() < deadline:
                if await stop_nothing(port, old_controller, old_epoch) == STALE_CONTROLLER_EPOCH:
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"broker on port {port} still accepts controller epoch {old_epoch}")

        for port in cluster.broker_ports:
            asyncio.run(refused_by(port))
            # the current controller's epoch is accepted
            assert asyncio.run(stop_nothing(port, zk.get_controller_id(), old_epoch + 1)) == 0
    finally:
        zk.close()

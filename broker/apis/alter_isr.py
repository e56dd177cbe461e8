"""AlterIsr (56, KIP-497): a partition leader (Kafka 2.7+ at inter.broker.protocol.version >= 2.7) asks the
controller to write its new ISR; the controller answers per partition with the ISR and znode version now in
ZooKeeper, or an error (``controller/alter_isr.py``).

As Kafka 2.8's KafkaApis.handleAlterIsrRequest: ClusterAction on the cluster first
(CLUSTER_AUTHORIZATION_FAILED), NOT_CONTROLLER on any broker but the active controller, both as the top-level
error with no topics. Our own brokers write ISR changes to ZooKeeper instead (DESIGN.md, The controller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...controller.alter_isr import IsrRequest
from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.messages import AlterIsrResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Topic = AlterIsrResponse.TopicData
_Partition = AlterIsrResponse.PartitionData


class AlterIsrApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def alter_isr(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.CLUSTER_ACTION)
        body = request.body
        asked = {(topic.name, p.partition_index): IsrRequest(p.leader_epoch, tuple(p.new_isr), p.current_isr_version)
                 for topic in body.topics for p in topic.partitions}
        # NotControllerError unless this broker is the active controller
        results = await self.services.controller.alter_isr(body.broker_id, body.broker_epoch, asked)
        topics: dict[str, list[Any]] = {}
        for (name, index), result in results.items():
            partition = _Partition(partition_index=index, error_code=result.error_code)
            if result.state is not None:
                partition.leader_id = result.state.leader
                partition.leader_epoch = result.state.leader_epoch
                partition.isr = list(result.state.isr)
                partition.current_isr_version = result.zk_version
            topics.setdefault(name, []).append(partition)
        return AlterIsrResponse(throttle_time_ms=0, error_code=0, topics=[
            _Topic(name=name, partitions=partitions) for name, partitions in topics.items()])


def register(apis: "KafkaApis", services: "BrokerServices") -> AlterIsrApi:
    api = AlterIsrApi(services)
    apis.register(ApiKey.ALTER_ISR, api.alter_isr)
    return api

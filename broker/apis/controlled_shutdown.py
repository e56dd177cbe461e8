"""ControlledShutdown (7): a broker about to stop asks the controller to move its leaderships away.

Only the active controller answers (NOT_CONTROLLER elsewhere, which makes the asking broker look
the controller up again). The controller processes it as an event (``KafkaController.controlled_shutdown``)
and answers with the partitions the broker still leads; a request for an earlier registration of
the broker gets STALE_BROKER_EPOCH, one from a broker that is not live BROKER_NOT_AVAILABLE. The
sender needs ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED), checked first as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import NotControllerError  # type: ignore[attr-defined]
from ...protocol.messages import ControlledShutdownResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices


class ControlledShutdownApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def controlled_shutdown(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.CLUSTER_ACTION)
        controller = self.services.controller
        if controller is None or not controller.is_active:
            raise NotControllerError(f"broker {self.services.broker_id} is not the controller")
        body = request.body
        broker_epoch = body.broker_epoch if request.api_version >= 2 else -1
        remaining = await controller.controlled_shutdown(body.broker_id, broker_epoch)
        return ControlledShutdownResponse(error_code=0, remaining_partitions=[
            ControlledShutdownResponse.RemainingPartition(topic_name=t, partition_index=p)
            for t, p in sorted(remaining)])


def register(apis: "KafkaApis", services: "BrokerServices") -> ControlledShutdownApi:
    api = ControlledShutdownApi(services)
    apis.register(ApiKey.CONTROLLED_SHUTDOWN, api.controlled_shutdown)
    return api

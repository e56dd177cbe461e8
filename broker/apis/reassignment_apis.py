"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), through the controller.

As Kafka 2.8's KafkaApis handlers: a null replica list cancels a partition's reassignment; the
controller answers per partition once the reassignment has started (it does not wait for it to
finish). A broker that is not the controller answers NOT_CONTROLLER at the top level, with no
partitions, and the Admin client asks the controller again. Listing without topics lists every
reassignment in progress. Reassigning needs Alter on the cluster, listing Describe
(CLUSTER_AUTHORIZATION_FAILED at the top level), checked first as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import KafkaError, NotControllerError  # type: ignore[attr-defined]
from ...protocol.messages import AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_AlterTopic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_AlterPartition = _AlterTopic.ReassignablePartitionResponse
_ListTopic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
_ListPartition = _ListTopic.OngoingPartitionReassignment


class ReassignmentApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    def _controller(self) -> Any:
        controller = self.services.controller
        if controller is None or not controller.is_active:
            raise NotControllerError("This is not the correct controller for this cluster.")
        return controller

    async def alter(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.ALTER)
        targets = {(t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
                   for t in request.body.topics for p in t.partitions}
        try:
            results = await self._controller().alter_partition_reassignments(targets)
        except NotControllerError as e:
            return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=e.code,
                                                       error_message=_message(e), responses=[])
        topics: dict[str, list[Any]] = {}
        for (topic, partition), error in results.items():
            topics.setdefault(topic, []).append(_AlterPartition(
                partition_index=partition, error_code=0 if error is None else error.code,
                error_message=None if error is None else _message(error)))
        return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message="", responses=[
            _AlterTopic(name=name, partitions=parts) for name, parts in topics.items()])

    def alter_error(self, request: "Request", error_code: int) -> Any:
        """AlterPartitionReassignmentsRequest.getErrorResponse: the error at the top and on every partition."""
        return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=error_code, error_message=None,
                                                   responses=[_AlterTopic(name=t.name, partitions=[
                                                       _AlterPartition(partition_index=p.partition_index,
                                                                       error_code=error_code, error_message=None)
                                                       for p in t.partitions]) for t in request.body.topics])

    async def list(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.DESCRIBE)
        topics = request.body.topics
        asked = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
        try:
            ongoing = await self._controller().list_partition_reassignments(asked)
        except NotControllerError as e:
            return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=e.code,
                                                      error_message=_message(e), topics=[])
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), assignment in sorted(ongoing.items()):
            by_topic.setdefault(topic, []).append(_ListPartition(
                partition_index=partition, replicas=list(assignment.replicas),
                adding_replicas=list(assignment.adding), removing_replicas=list(assignment.removing)))
        return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message="", topics=[
            _ListTopic(name=name, partitions=parts) for name, parts in by_topic.items()])

    def list_error(self, request: "Request", error_code: int) -> Any:
        return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=error_code, error_message=None,
                                                  topics=[])


def _message(error: KafkaError) -> str | None:
    return error.args[0] if error.args and error.args[0] else None


def register(apis: "KafkaApis", services: "BrokerServices") -> ReassignmentApis:
    api = ReassignmentApis(services)
    apis.register(ApiKey.ALTER_PARTITION_REASSIGNMENTS, api.alter, api.alter_error)
    apis.register(ApiKey.LIST_PARTITION_REASSIGNMENTS, api.list, api.list_error)
    return api

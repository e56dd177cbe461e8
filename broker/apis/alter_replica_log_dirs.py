"""AlterReplicaLogDirs (34, v0-2): move replicas of this broker to other log dirs (KIP-113).

As Kafka 2.8's KafkaApis.handleAlterReplicaLogDirsRequest: Alter on the cluster, else every partition asked for is
CLUSTER_AUTHORIZATION_FAILED; otherwise ReplicaManager.alterReplicaLogDirs (here broker/replica_log_dir_mover.py)
per partition: LOG_DIR_NOT_FOUND for a path that is not one of log.dirs, KAFKA_STORAGE_ERROR for an offline dir or
partition, REPLICA_NOT_AVAILABLE for a partition of the cluster not hosted here yet (its dir is remembered for
when it is), UNKNOWN_TOPIC_OR_PARTITION for one the cluster does not have. A partition named under two dirs takes
the last (Kafka's map). The answer groups the partitions by topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import ClusterAuthorizationFailedError  # type: ignore[attr-defined]
from ...protocol.messages import AlterReplicaLogDirsResponse
from .authorization import CLUSTER

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_TopicResult = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
_PartitionResult = _TopicResult.AlterReplicaLogDirPartitionResult


def _asked(request: "Request") -> dict[tuple[str, int], str]:
    return {(topic.name, p): d.path for d in request.body.dirs for topic in d.topics for p in topic.partitions}


def _response(errors: dict[tuple[str, int], int]) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(_PartitionResult(partition_index=partition, error_code=code))
    return AlterReplicaLogDirsResponse(throttle_time_ms=0, results=[
        _TopicResult(topic_name=topic, partitions=partitions) for topic, partitions in by_topic.items()])


class AlterReplicaLogDirsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.replica_manager = services.replica_manager
        self.auth = services.auth

    async def handle(self, request: "Request") -> Any:
        asked = _asked(request)
        if not self.auth.authorize(request, AclOperation.ALTER, CLUSTER):
            return _response({key: ClusterAuthorizationFailedError.code for key in asked})
        rm = self.replica_manager
        async with rm.state_change_lock:  # Kafka's replicaStateChangeLock: not between a LeaderAndIsr's slices
            return _response(rm.log_dir_mover.alter_replica_log_dirs(asked))

    def error_response(self, request: "Request", error_code: int) -> Any:
        return _response({key: error_code for key in _asked(request)})


def register(apis: "KafkaApis", services: "BrokerServices") -> AlterReplicaLogDirsApi:
    api = AlterReplicaLogDirsApi(services)
    apis.register(ApiKey.ALTER_REPLICA_LOG_DIRS, api.handle, api.error_response)
    return api

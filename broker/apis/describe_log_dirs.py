"""DescribeLogDirs (35, v0-2): what this broker stores, per log dir, per topic partition.

As Kafka 2.8's KafkaApis.handleDescribeLogDirsRequest and ReplicaManager.describeLogDirs: null topics
mean every partition this broker has a log for; each configured log dir (absolute path) is answered
with error NONE, or KAFKA_STORAGE_ERROR and no topics when it is offline (KIP-112); a dir's topics are
those it holds a log of, and a topic's partitions are the requested
ones among them (so, as in Kafka, a topic of the dir that was not asked about is listed with no
partitions). Per partition: the log's size in bytes, ``offset_lag`` = max(high watermark - log end
offset, 0) for a current replica (0 on a leader), and for a future replica (being moved into that dir by
AlterReplicaLogDirs, ``is_future_key`` true) how far its log end is behind the current log's (Kafka's
getLogEndOffsetLag). Without Describe on the cluster the answer is an empty list (v0-2 have no error code
for it), as Kafka 2.8.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import KafkaStorageError  # type: ignore[attr-defined]
from ...protocol.messages import DescribeLogDirsResponse
from .authorization import CLUSTER

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition


class DescribeLogDirsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.log_manager = services.replica_manager.log_manager
        self.auth = services.auth

    def handle(self, request: "Request") -> Any:
        if not self.auth.authorize(request, AclOperation.DESCRIBE, CLUSTER):
            return DescribeLogDirsResponse(throttle_time_ms=0, results=[])
        topics = request.body.topics
        wanted: set[tuple[str, int]] | None = None
        if topics is not None:
            wanted = {(t.topic, p) for t in topics for p in t.partitions}
        by_dir: dict[str, dict[str, list[Any]]] = {}
        lm = self.log_manager
        logs = [(lg, False) for lg in lm.all_logs()] + [(lg, True) for lg in lm.future_logs().values()]
        for log_, future in sorted(logs, key=lambda entry: (entry[0].topic, entry[0].partition, entry[1])):
            topic_partitions = by_dir.setdefault(os.path.dirname(log_.dir), {}).setdefault(log_.topic, [])
            if wanted is None or (log_.topic, log_.partition) in wanted:
                if future:
                    current = lm.get_log(log_.topic, log_.partition)
                    lag = -1 if current is None else current.log_end_offset - log_.log_end_offset
                else:
                    lag = max(log_.high_watermark - log_.log_end_offset, 0)
                topic_partitions.append(_Partition(partition_index=log_.partition, partition_size=log_.size,
                                                   offset_lag=lag, is_future_key=future))
        results = []
        offline = self.log_manager.offline_log_dirs
        for log_dir in self.log_manager.log_dirs:
            if log_dir in offline:  # Kafka: the dir with KAFKA_STORAGE_ERROR and nothing in it
                results.append(_Result(error_code=KafkaStorageError.code, log_dir=log_dir, topics=[]))
                continue
            in_dir = by_dir.get(log_dir, {})
            results.append(_Result(error_code=0, log_dir=log_dir, topics=[
                _Topic(name=name, partitions=partitions) for name, partitions in in_dir.items()]))
        return DescribeLogDirsResponse(throttle_time_ms=0, results=results)

    def error_response(self, request: "Request", error_code: int) -> Any:
        # v0-2 have no top-level error code: Kafka's getErrorResponse is an empty list of results.
        return DescribeLogDirsResponse(throttle_time_ms=0, results=[])


def register(apis: "KafkaApis", services: "BrokerServices") -> DescribeLogDirsApi:
    api = DescribeLogDirsApi(services)
    apis.register(ApiKey.DESCRIBE_LOG_DIRS, api.handle, api.error_response)
    return api

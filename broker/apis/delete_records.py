"""DeleteRecords (21): move partitions' log start offsets forward, on their leaders.

As Kafka 2.8's ReplicaManager.deleteRecords and Partition.deleteRecordsOnLeader, per partition:
an internal topic is INVALID_TOPIC_EXCEPTION, an unknown one UNKNOWN_TOPIC_OR_PARTITION, a partition
led elsewhere NOT_LEADER_OR_FOLLOWER, a log whose cleanup.policy lacks "delete" POLICY_VIOLATION.
Offset -1 means the high watermark; any other negative offset, or one above the high watermark, is
OFFSET_OUT_OF_RANGE. The leader's log start offset moves at once (consumers fetching below it get
OFFSET_OUT_OF_RANGE, ListOffsets earliest returns it); the segments wholly below it are deleted and
the log-start-offset checkpoint is written right away, so a restart keeps it.

The answer's low watermark is Kafka's lowWatermarkIfLeader: the smallest log start offset among the
leader and its replicas on live brokers, which followers report in their fetches after taking the
leader's (replica_fetcher). Until it reaches the requested offset the request waits in the replica
manager's DeleteRecords purgatory (Kafka's DelayedDeleteRecords), checked on every follower fetch;
after ``timeout_ms`` the partitions still waiting get REQUEST_TIMED_OUT, and a leader change while
waiting NOT_LEADER_OR_FOLLOWER. Deleting needs Delete on the topic (TOPIC_AUTHORIZATION_FAILED), as Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidTopicError,
    KafkaError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    TopicAuthorizationFailedError,
)
from ...protocol.messages import DeleteRecordsResponse
from ..metadata_cache import INTERNAL_TOPICS
from ..delayed_ops import DelayedPartitionsWait
from .authorization import TOPIC

if TYPE_CHECKING:
    from ..partition import Partition
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from ..replica_manager import ReplicaManager
    from .services import BrokerServices

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1          # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1   # DeleteRecordsResponse.INVALID_LOW_WATERMARK

_TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
_PartitionResult = _TopicResult.DeleteRecordsPartitionResult
Key = tuple[str, int]


@dataclass
class DeleteRecordsStatus:
    """One partition of a DeleteRecords request while the replicas' log start offsets catch up."""
    required_offset: int
    result: Any  # the DeleteRecordsPartitionResult to send
    acks_pending: bool = False


class DelayedDeleteRecords(DelayedPartitionsWait):
    """Kafka's DelayedDeleteRecords: complete when every partition's low watermark reached its
    requested offset or the partition failed; on expiry the waiting ones are REQUEST_TIMED_OUT."""

    __slots__ = ("is_alive",)

    def __init__(self, delay_ms: int, statuses: dict[Key, DeleteRecordsStatus], replica_manager: "ReplicaManager",
                 is_alive: Callable[[int], bool], future: asyncio.Future) -> None:
        super().__init__(delay_ms, statuses, replica_manager, future)
        self.is_alive = is_alive

    def partition_done(self, partition: Partition, status: DeleteRecordsStatus) -> bool:
        low = partition.low_watermark(self.is_alive)
        if low < status.required_offset:
            return False
        status.result.low_watermark = low
        return True

    def fail(self, status: DeleteRecordsStatus, error_code: int) -> None:
        status.result.error_code = error_code
        status.result.low_watermark = INVALID_LOW_WATERMARK

    def resolve(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class DeleteRecordsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def handle(self, request: "Request") -> Any:
        body = request.body
        services = self.services
        rm = services.replica_manager
        statuses: dict[Key, DeleteRecordsStatus] = {}
        moved = []
        deletable = services.auth.filter_authorized(request, AclOperation.DELETE, TOPIC, (t.name for t in body.topics))
        for topic in body.topics:
            for p in topic.partitions:
                key = (topic.name, p.partition_index)
                result = _PartitionResult(partition_index=p.partition_index, low_watermark=INVALID_LOW_WATERMARK,
                                          error_code=0)
                status = statuses[key] = DeleteRecordsStatus(INVALID_LOW_WATERMARK, result)
                if topic.name not in deletable:
                    result.error_code = TopicAuthorizationFailedError.code
                    continue
                try:
                    partition, requested, changed = self._delete_on_leader(topic.name, p.partition_index, p.offset)
                except KafkaError as exc:
                    result.error_code = exc.code
                    continue
                if changed:
                    moved.append(partition.log)
                status.required_offset = requested
                result.low_watermark = partition.low_watermark(self._is_alive)
                status.acks_pending = result.low_watermark < requested
        if moved:
            await services.in_executor(self._persist, moved)
        waiting = [key for key, s in statuses.items() if s.acks_pending]
        if waiting:
            future = asyncio.get_running_loop().create_future()
            op = DelayedDeleteRecords(body.timeout_ms, statuses, rm, self._is_alive, future)
            rm.delete_records_purgatory.try_complete_else_watch(op, waiting)
            await future
        return DeleteRecordsResponse(throttle_time_ms=0, topics=_topic_results(body, statuses))

    def _delete_on_leader(self, topic: str, partition_index: int, offset: int) -> tuple[Any, int, bool]:
        """Kafka's deleteRecordsOnLocalLog + Partition.deleteRecordsOnLeader: (partition, requested
        offset, whether the log start offset moved)."""
        if topic in INTERNAL_TOPICS:
            raise InvalidTopicError(f"Cannot delete records of internal topic {topic}")
        partition = self.services.replica_manager.leader_partition(topic, partition_index)
        log_ = partition.log
        if not log_.config.delete_enabled:
            raise PolicyViolationError(f"Records of partition {topic}-{partition_index} can not be deleted due to "
                                       f"the configured policy")
        requested = log_.high_watermark if offset == HIGH_WATERMARK else offset
        if requested < 0:
            raise OffsetOutOfRangeError(f"The offset {requested} for partition {topic}-{partition_index} is not valid")
        changed = log_.maybe_increment_log_start_offset(requested)  # OFFSET_OUT_OF_RANGE above the HW
        if changed:
            self.services.replica_manager.note_change(partition.key)  # fetch sessions tell the followers
            log.info("Incremented log start offset of %s-%d to %d due to client delete records request",
                     topic, partition_index, requested)
        return partition, requested, changed

    def _persist(self, logs: list[Any]) -> None:
        """Executor: drop the segments now below the log start offsets and checkpoint the offsets."""
        for log_ in logs:
            try:
                log_.delete_segments_below_log_start()
            except OSError:
                log.exception("Cannot delete old segments of %s", log_)
        self.services.replica_manager.log_manager.checkpoint_log_start_offsets()

    def _is_alive(self, broker_id: int) -> bool:
        return broker_id in self.services.metadata_cache.brokers

    def error_response(self, request: "Request", error_code: int) -> Any:
        statuses = {(t.name, p.partition_index): DeleteRecordsStatus(
            INVALID_LOW_WATERMARK, _PartitionResult(partition_index=p.partition_index,
                                                    low_watermark=INVALID_LOW_WATERMARK, error_code=error_code))
            for t in request.body.topics for p in t.partitions}
        return DeleteRecordsResponse(throttle_time_ms=0, topics=_topic_results(request.body, statuses))


def _topic_results(body: Any, statuses: dict[Key, DeleteRecordsStatus]) -> list[Any]:
    """Each topic once, in request order, with its partitions' results (a topic with none is left out)."""
    results: dict[str, Any] = {}
    for topic in body.topics:
        entry = results.setdefault(topic.name, _TopicResult(name=topic.name, partitions=[]))
        seen = {r.partition_index for r in entry.partitions}
        for p in topic.partitions:
            if p.partition_index not in seen:
                entry.partitions.append(statuses[(topic.name, p.partition_index)].result)
                seen.add(p.partition_index)
    return [entry for entry in results.values() if entry.partitions]  # Kafka's map has no empty topics


def register(apis: "KafkaApis", services: "BrokerServices") -> DeleteRecordsApi:
    api = DeleteRecordsApi(services)
    apis.register(ApiKey.DELETE_RECORDS, api.handle, api.error_response)
    return api

"""WriteTxnMarkers (27): the transaction coordinator asks partition leaders to end a transaction.

As Kafka 2.8's handleWriteTxnMarkersRequest: for each marker (producer id and epoch, COMMIT or
ABORT, coordinator epoch, partitions) a control batch is appended to every named partition this
broker leads, with acks=-1 semantics (answered once the ISR has it, through the produce purgatory,
within ``request.timeout.ms``). Errors are per partition: UNKNOWN_TOPIC_OR_PARTITION when this
broker holds no replica, NOT_LEADER_OR_FOLLOWER when it follows, INVALID_PRODUCER_EPOCH /
TRANSACTION_COORDINATOR_FENCED from the producer-state checks, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
REQUEST_TIMED_OUT. Once a marker is written to ``__consumer_offsets`` partitions, the group
coordinator makes that producer's pending transactional offset commits visible (COMMIT) or drops
them (ABORT). The sender needs ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
partition otherwise), as Kafka.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    CorruptMessageError, KafkaError, UnknownTopicOrPartitionError,
)
from ...protocol.messages import WriteTxnMarkersResponse
from ...protocol.records import ControlRecordType, build_control_batch
from ..coordinator.transaction.trace import trace
from ..purgatory.completion import Completion, gather

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC = "__consumer_offsets"

_MarkerResult = WriteTxnMarkersResponse.WritableTxnMarkerResult
_TopicResult = _MarkerResult.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult


class WriteTxnMarkersApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services
        self.replica_manager = services.replica_manager
        self.timeout_ms = services.config.get("request.timeout.ms")

    def handle(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.CLUSTER_ACTION)
        markers = request.body.markers
        # Markers are independent appends (Kafka runs one appendRecords per marker); the answer waits for
        # all, and is sent in the call that completes the last (purgatory/completion.py).
        outcomes = gather([self._append_marker(m) for m in markers])
        results = outcomes.then(lambda done: [self._marker_result(m, o) for m, o in zip(markers, done)])
        if any(t.name == GROUP_METADATA_TOPIC for m in markers for t in m.topics):
            return self._complete_offsets_then_answer(markers, results)
        return results.then(lambda answered: WriteTxnMarkersResponse(markers=_merged(answered)))

    def _append_marker(self, marker: Any) -> Any:
        """The marker's control batch appended to each of its partitions: the results, or a Completion."""
        result = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
        entries: dict[tuple[str, int], Any] = {}
        for topic in marker.topics:
            for index in topic.partition_indexes:
                entries[(topic.name, index)] = self._marker_batch(topic.name, index, marker, result)
        trace(marker.producer_id, "marker-append", partitions=len(entries))
        return self.replica_manager.append_records(-1, self.timeout_ms, entries)

    @staticmethod
    def _marker_result(marker: Any, outcome: dict) -> Any:
        trace(marker.producer_id, "marker-replicated")
        return _MarkerResult(producer_id=marker.producer_id, topics=[
            _TopicResult(name=t.name, partitions=[
                _PartitionResult(partition_index=p, error_code=outcome[(t.name, p)].error_code)
                for p in t.partition_indexes])
            for t in marker.topics])

    async def _complete_offsets_then_answer(self, markers: list[Any], results: Completion) -> Any:
        """Markers on ``__consumer_offsets`` partitions: once written, the group coordinator completes the
        producer's transactional offset commits (which may wait on it) before the answer goes."""
        answered = await results
        for marker, result in zip(markers, answered):
            await self._complete_offsets(marker.producer_id, bool(marker.transaction_result), [
                p.partition_index for t in result.topics if t.name == GROUP_METADATA_TOPIC
                for p in t.partitions if not p.error_code])
        return WriteTxnMarkersResponse(markers=_merged(answered))

    def _marker_batch(self, topic: str, index: int, marker: Any, result: ControlRecordType) -> Any:
        """The control batch to append, or the error that refuses it before appending."""
        if self.replica_manager.online_partition(topic, index) is None:
            # Kafka's getMagic finds no local log: UNKNOWN_TOPIC_OR_PARTITION (not NOT_LEADER).
            return UnknownTopicOrPartitionError(f"{topic}-{index} has no replica on this broker")
        try:
            return bytearray(build_control_batch(result, producer_id=marker.producer_id,
                                                 producer_epoch=marker.producer_epoch,
                                                 coordinator_epoch=marker.coordinator_epoch))
        except (ValueError, OverflowError) as exc:  # e.g. an epoch out of range
            return CorruptMessageError(f"cannot build the transaction marker: {exc}")

    async def _complete_offsets(self, producer_id: int, committed: bool, partitions: list[int]) -> None:
        """Kafka's scheduleHandleTxnCompletion, after the marker is in the __consumer_offsets log."""
        coordinator = self.services.group_coordinator
        if not partitions or coordinator is None or not hasattr(coordinator, "complete_transactional_offsets"):
            return
        for partition in partitions:
            try:
                done = coordinator.complete_transactional_offsets(producer_id, committed, partition)
                if inspect.isawaitable(done):
                    await done
            except KafkaError as exc:  # the marker is written; the coordinator reloads from the log
                log.warning("Completing transactional offsets of producer %d on partition %d failed: %s",
                            producer_id, partition, exc)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return WriteTxnMarkersResponse(markers=[
            _MarkerResult(producer_id=m.producer_id, topics=[
                _TopicResult(name=t.name, partitions=[
                    _PartitionResult(partition_index=p, error_code=error_code) for p in t.partition_indexes])
                for t in m.topics])
            for m in request.body.markers])


def register(apis: "KafkaApis", services: "BrokerServices") -> WriteTxnMarkersApi:
    api = WriteTxnMarkersApi(services)
    apis.register(ApiKey.WRITE_TXN_MARKERS, api.handle, api.error_response)
    return api


def _merged(answered: list[Any]) -> list[Any]:
    """Kafka answers from a map of producer id -> partition -> error: markers of one producer are merged, a
    partition named twice is answered once, and a marker or topic without partitions is left out."""
    codes: dict[int, dict[str, dict[int, int]]] = {}
    for marker in answered:
        for topic in marker.topics:
            for p in topic.partitions:
                codes.setdefault(marker.producer_id, {}).setdefault(topic.name, {})[p.partition_index] = p.error_code
    return [_MarkerResult(producer_id=pid, topics=[
        _TopicResult(name=name, partitions=[_PartitionResult(partition_index=i, error_code=c) for i, c in parts.items()])
        for name, parts in topics.items()]) for pid, topics in codes.items()]

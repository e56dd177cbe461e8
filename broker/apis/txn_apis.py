"""Transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26) for the transaction
coordinator and TxnOffsetCommit (28) for the group coordinator, as Kafka 2.8's KafkaApis.

Versions before PRODUCER_FENCED existed get INVALID_PRODUCER_EPOCH instead (AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn below v2). AddPartitionsToTxn with a partition the metadata cache does not
know fails as a whole: UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED for the others.
TxnOffsetCommit below v2 answers COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296).

Authorization, as Kafka 2.8: all four need Write on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request); AddPartitionsToTxn also Write on each
topic (TOPIC_AUTHORIZATION_FAILED; never granted for internal topics, and then the request fails as a
whole like an unknown partition), AddOffsetsToTxn and TxnOffsetCommit Read on the group
(GROUP_AUTHORIZATION_FAILED), TxnOffsetCommit Read on each topic (per partition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    GroupAuthorizationFailedError, TopicAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
)
from ...protocol.messages import (AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse,
                                  TxnOffsetCommitResponse)
from ..coordinator.group.metadata_manager import GROUP_METADATA_TOPIC, wall_ms
from ..coordinator.group.records import OffsetAndMetadata
from ..coordinator.transaction.trace import trace
from ..coordinator.transaction.transaction_metadata import INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
from ..metadata_cache import INTERNAL_TOPICS
from .authorization import GROUP, TOPIC, TRANSACTIONAL_ID

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

UNKNOWN_TOPIC_OR_PARTITION, OPERATION_NOT_ATTEMPTED = 3, 55
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE = 14, 15
_TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_PartitionResult = _TopicResult.AddPartitionsToTxnPartitionResult
_CommitTopic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_CommitPartition = _CommitTopic.TxnOffsetCommitResponsePartition


def fenced_for_version(code: int, version: int, first_version_with_fenced: int) -> int:
    """Older clients do not know PRODUCER_FENCED (KIP-588): they get INVALID_PRODUCER_EPOCH."""
    return INVALID_PRODUCER_EPOCH if code == PRODUCER_FENCED and version < first_version_with_fenced else code


def _add_partitions_response(codes: dict[tuple[str, int], int], order: list[tuple[str, int]]) -> Any:
    topics: dict[str, list] = {}
    for topic, partition in order:
        topics.setdefault(topic, []).append(_PartitionResult(partition_index=partition,
                                                             error_code=codes[(topic, partition)]))
    return AddPartitionsToTxnResponse(throttle_time_ms=0, results=[_TopicResult(name=t, results=ps)
                                                                   for t, ps in topics.items()])


class TxnApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    @property
    def coordinator(self) -> Any:
        return self.services.transaction_coordinator

    def _authorize(self, request: "Request", group_id: str | None = None) -> None:
        """Write on the transactional id, then (AddOffsetsToTxn, TxnOffsetCommit) Read on the group."""
        auth = self.services.auth
        if not auth.authorize(request, AclOperation.WRITE, TRANSACTIONAL_ID, request.body.transactional_id):
            raise TransactionalIdAuthorizationFailedError()
        if group_id is not None and not auth.authorize(request, AclOperation.READ, GROUP, group_id):
            raise GroupAuthorizationFailedError()

    # -- AddPartitionsToTxn -----------------------------------------------------------------------

    async def add_partitions_to_txn(self, request: "Request") -> Any:
        body = request.body
        self._authorize(request)
        order = list(dict.fromkeys((t.name, p) for t in body.topics for p in t.partitions))
        cache = self.services.metadata_cache
        writable = self.services.auth.filter_authorized(
            request, AclOperation.WRITE, TOPIC, (t for t, _ in order if t not in INTERNAL_TOPICS)) \
            if self.services.auth.enabled else {t for t, _ in order}
        failed = {tp: TopicAuthorizationFailedError.code for tp in order if tp[0] not in writable}
        failed.update({tp: UNKNOWN_TOPIC_OR_PARTITION for tp in order
                       if tp not in failed and cache.partition(*tp) is None})
        if failed:
            return _add_partitions_response({tp: failed.get(tp, OPERATION_NOT_ATTEMPTED) for tp in order}, order)
        trace(body.producer_id, "add-partitions-received", partitions=len(order))
        code = await self.coordinator.add_partitions(body.transactional_id, body.producer_id, body.producer_epoch,
                                                     set(order))
        trace(body.producer_id, "add-partitions-answered", error=code)
        code = fenced_for_version(code, request.api_version, 2)
        return _add_partitions_response({tp: code for tp in order}, order)

    def add_partitions_to_txn_error(self, request: "Request", error_code: int) -> Any:
        order = list(dict.fromkeys((t.name, p) for t in request.body.topics for p in t.partitions))
        return _add_partitions_response({tp: error_code for tp in order}, order)

    # -- AddOffsetsToTxn --------------------------------------------------------------------------

    async def add_offsets_to_txn(self, request: "Request") -> Any:
        body = request.body
        self._authorize(request, body.group_id)
        partition = self.services.group_coordinator.manager.partition_for(body.group_id)
        trace(body.producer_id, "add-offsets-received")
        code = await self.coordinator.add_partitions(body.transactional_id, body.producer_id, body.producer_epoch,
                                                     {(GROUP_METADATA_TOPIC, partition)})
        trace(body.producer_id, "add-offsets-answered", error=code)
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=fenced_for_version(code, request.api_version, 2))

    def add_offsets_to_txn_error(self, request: "Request", error_code: int) -> Any:
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=error_code)

    # -- EndTxn -----------------------------------------------------------------------------------

    async def end_txn(self, request: "Request") -> Any:
        body = request.body
        self._authorize(request)
        trace(body.producer_id, "end-txn-received", commit=bool(body.committed))
        code = await self.coordinator.end_transaction(body.transactional_id, body.producer_id, body.producer_epoch,
                                                      bool(body.committed))
        trace(body.producer_id, "end-txn-answered", error=code)
        return EndTxnResponse(throttle_time_ms=0, error_code=fenced_for_version(code, request.api_version, 2))

    def end_txn_error(self, request: "Request", error_code: int) -> Any:
        return EndTxnResponse(throttle_time_ms=0, error_code=error_code)

    # -- TxnOffsetCommit --------------------------------------------------------------------------

    async def txn_offset_commit(self, request: "Request") -> Any:
        body, version = request.body, request.api_version
        self._authorize(request, body.group_id)
        now = wall_ms()
        order: list[tuple[str, int]] = []
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                order.append(tp)
                offsets[tp] = OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch,
                                                p.committed_metadata or "", now, None)
        cache = self.services.metadata_cache
        readable = self.services.auth.filter_authorized(request, AclOperation.READ, TOPIC, (t for t, _ in offsets))
        codes = {tp: TopicAuthorizationFailedError.code for tp in offsets if tp[0] not in readable}
        codes.update({tp: UNKNOWN_TOPIC_OR_PARTITION for tp in offsets if tp not in codes and cache.partition(*tp) is None})
        known = {tp: o for tp, o in offsets.items() if tp not in codes}
        if known:
            codes.update(await self.services.group_coordinator.commit_transactional_offsets(
                body.group_id, body.producer_id, body.producer_epoch, body.member_id or "", body.group_instance_id,
                body.generation_id, known))
        if version < 2:
            codes = {tp: COORDINATOR_NOT_AVAILABLE if c == COORDINATOR_LOAD_IN_PROGRESS else c
                     for tp, c in codes.items()}
        # A partition named twice is answered once: Kafka 2.8 answers from its map of offsets (the last one named
        # is committed; its error response, below, repeats the request's partitions as they come).
        return self._txn_offset_commit_response(codes, list(dict.fromkeys(order)))

    def txn_offset_commit_error(self, request: "Request", error_code: int) -> Any:
        order = [(t.name, p.partition_index) for t in request.body.topics for p in t.partitions]
        return self._txn_offset_commit_response({tp: error_code for tp in order}, order)

    @staticmethod
    def _txn_offset_commit_response(codes: dict[tuple[str, int], int], order: list[tuple[str, int]]) -> Any:
        topics: dict[str, list] = {}
        for topic, partition in order:
            topics.setdefault(topic, []).append(_CommitPartition(partition_index=partition,
                                                                 error_code=codes[(topic, partition)]))
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[_CommitTopic(name=n, partitions=ps)
                                                                   for n, ps in topics.items()])


def register(apis: "KafkaApis", services: "BrokerServices") -> TxnApis:
    api = TxnApis(services)
    apis.register(ApiKey.ADD_PARTITIONS_TO_TXN, api.add_partitions_to_txn, api.add_partitions_to_txn_error)
    apis.register(ApiKey.ADD_OFFSETS_TO_TXN, api.add_offsets_to_txn, api.add_offsets_to_txn_error)
    apis.register(ApiKey.END_TXN, api.end_txn, api.end_txn_error)
    apis.register(ApiKey.TXN_OFFSET_COMMIT, api.txn_offset_commit, api.txn_offset_commit_error)
    return api

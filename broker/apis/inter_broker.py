"""The controller's requests to brokers: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6).

Each carries the controller epoch and (newer versions) the epoch of the broker registration it was
meant for. As Kafka 2.8: a request from an older controller gets STALE_CONTROLLER_EPOCH, one meant
for an earlier registration of this broker STALE_BROKER_EPOCH; both are answered for every
partition the request named.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Iterator

from ...controller.admin_zk import validate_topic_name
from ...controller.state_change_log import state_change_log
from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidTopicError, StaleBrokerEpochError, StaleControllerEpochError,
)
from ...protocol.messages import LeaderAndIsrResponse, StopReplicaResponse, UpdateMetadataResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)

_LaiTopic = LeaderAndIsrResponse.LeaderAndIsrTopicError
_LaiPartition = LeaderAndIsrResponse.LeaderAndIsrPartitionError
_StopPartition = StopReplicaResponse.StopReplicaPartitionError


def leader_and_isr_states(body: Any, version: int) -> Iterator[tuple[str, Any]]:
    if version < 2:
        for state in body.ungrouped_partition_states:
            yield state.topic_name, state
    else:
        for topic in body.topic_states:
            for state in topic.partition_states:
                yield topic.topic_name, state


def stop_replica_partitions(body: Any, version: int) -> Iterator[tuple[str, int, int, bool]]:
    """(topic, partition, leader epoch, delete) whatever the version's layout."""
    if version == 0:
        for p in body.ungrouped_partitions:
            yield p.topic_name, p.partition_index, -1, body.delete_partitions
    elif version < 3:
        for t in body.topics:
            for index in t.partition_indexes:
                yield t.name, index, -1, body.delete_partitions
    else:
        for t in body.topic_states:
            for p in t.partition_states:
                yield t.topic_name, p.partition_index, p.leader_epoch, p.delete_partition


class InterBrokerApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services
        self._background: set[asyncio.Task] = set()

    def _check_sender(self, request: "Request") -> None:
        """Kafka's order: ClusterAction first, then the broker epoch (the controller epoch comes later)."""
        self.services.auth.authorize_cluster(request, AclOperation.CLUSTER_ACTION)
        epoch = getattr(request.body, "broker_epoch", -1)
        current = self.services.broker_epoch()
        if epoch != -1 and epoch < current:
            raise StaleBrokerEpochError(f"request for broker epoch {epoch}, the current one is {current}")

    # -- LeaderAndIsr -----------------------------------------------------------------------------

    async def leader_and_isr(self, request: "Request") -> Any:
        self._check_sender(request)
        body, version = request.body, request.api_version
        rm = self.services.replica_manager
        rm.check_controller_epoch(body.controller_epoch, "LeaderAndIsr")  # before anything is read or made
        states, invalid = [], {}
        for topic, state in leader_and_isr_states(body, version):
            try:
                validate_topic_name(topic)  # a name becomes a directory: never "../x" (a controller never
                states.append((topic, state))  # sends one; Kafka trusts the request's authorization)
            except InvalidTopicError as exc:
                invalid[(topic, state.partition_index)] = exc.code
        new_topics = sorted({t for t, s in states if rm.online_partition(t, s.partition_index) is None})
        configs = await self.services.in_executor(self._topic_configs, new_topics) if new_topics else {}
        # Followers start fetching from the leaders the request names (Kafka's liveLeaders).
        leaders = {b.broker_id: (b.host_name, b.port) for b in body.live_leaders or []}
        # Kafka's two state-change lines around the apply (ReplicaManager.becomeLeaderOrFollower)
        began = time.monotonic()
        what = (f"correlationId {request.correlation_id} from controller {body.controller_id} epoch "
                f"{body.controller_epoch} for {len(states)} partitions")
        state_change_log.info("[Broker id=%d] Handling LeaderAndIsr request %s", self.services.broker_id, what)
        errors = {**await rm.apply_leader_and_isr(body.controller_epoch, states, configs, leaders), **invalid}
        state_change_log.info("[Broker id=%d] Finished LeaderAndIsr request in %dms %s", self.services.broker_id,
                              (time.monotonic() - began) * 1000, what)
        return self._leader_and_isr_response(request, lambda key: errors[key])

    def _topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        zk = self.services.zk
        return zk.get_entity_configs("topics", topics) if zk is not None else {}

    def _leader_and_isr_response(self, request: "Request", code_of: Any, top_error: int = 0) -> Any:
        body, version = request.body, request.api_version
        if version < 5:
            return LeaderAndIsrResponse(error_code=top_error, partition_errors=[
                _LaiPartition(topic_name=t, partition_index=s.partition_index, error_code=code_of((t, s.partition_index)))
                for t, s in leader_and_isr_states(body, version)])
        return LeaderAndIsrResponse(error_code=top_error, topics=[
            _LaiTopic(topic_id=topic.topic_id, partition_errors=[
                _LaiPartition(partition_index=s.partition_index, error_code=code_of((topic.topic_name, s.partition_index)))
                for s in topic.partition_states])
            for topic in body.topic_states])

    def leader_and_isr_error(self, request: "Request", error_code: int) -> Any:
        return self._leader_and_isr_response(request, lambda key: error_code, error_code)

    # -- StopReplica ------------------------------------------------------------------------------

    async def stop_replica(self, request: "Request") -> Any:
        self._check_sender(request)
        body, version = request.body, request.api_version
        rm = self.services.replica_manager
        rm.check_controller_epoch(body.controller_epoch, "StopReplica")
        async with rm.state_change_lock:  # not in the middle of a LeaderAndIsr being applied
            errors = rm.stop_replicas(body.controller_epoch, stop_replica_partitions(body, version))
        return StopReplicaResponse(error_code=0, partition_errors=[
            _StopPartition(topic_name=t, partition_index=p, error_code=code) for (t, p), code in errors.items()])

    def stop_replica_error(self, request: "Request", error_code: int) -> Any:
        if error_code in (StaleControllerEpochError.code, StaleBrokerEpochError.code):
            # Kafka answers a stale controller or broker epoch with the top-level error alone
            return StopReplicaResponse(error_code=error_code, partition_errors=[])
        return StopReplicaResponse(error_code=error_code, partition_errors=[
            _StopPartition(topic_name=t, partition_index=p, error_code=error_code)
            for t, p, _, _ in stop_replica_partitions(request.body, request.api_version)])

    # -- UpdateMetadata ---------------------------------------------------------------------------

    def update_metadata(self, request: "Request") -> Any:
        self._check_sender(request)
        body = request.body
        rm = self.services.replica_manager
        rm.check_controller_epoch(body.controller_epoch, "UpdateMetadata")
        deleted = self.services.metadata_cache.update(body, request.api_version)
        if deleted:
            log.info("Metadata update removed %d partitions of deleted topics", len(deleted))
            groups = self.services.group_coordinator
            if groups is not None:  # Kafka's handleDeletedPartitions, not waited for by the response
                task = asyncio.get_running_loop().create_task(groups.handle_deleted_partitions(deleted))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
        return UpdateMetadataResponse(error_code=0)


def register(apis: "KafkaApis", services: "BrokerServices") -> InterBrokerApis:
    api = InterBrokerApis(services)
    apis.register(ApiKey.LEADER_AND_ISR, api.leader_and_isr, api.leader_and_isr_error)
    apis.register(ApiKey.STOP_REPLICA, api.stop_replica, api.stop_replica_error)
    apis.register(ApiKey.UPDATE_METADATA, api.update_metadata)
    return api


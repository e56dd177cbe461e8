"""TopicDeletionManager: topic deletion through the replica and partition state machines (Kafka 2.8's).

A topic marked under /admin/delete_topics is queued: every broker first gets UpdateMetadata with
leader -2 for its partitions (they drop it from their metadata), then each live replica goes
OfflineReplica -> ReplicaDeletionStarted (StopReplica with delete). A successful answer makes it
ReplicaDeletionSuccessful, an error or a dead broker ReplicaDeletionIneligible, retried later
(broker startup, a new deletion event, controller failover). Once every replica of a topic is
deleted, its replicas become NonExistentReplica, its partitions NonExistentPartition, and its
znodes are removed.

A topic with a partition being reassigned is ineligible for deletion (Kafka 2.8's
markTopicIneligibleForDeletion "topic reassignment in progress"): its marker stays in
/admin/delete_topics and the topic stays fully served until the last of its reassignments completes
or is cancelled; the reassigner then raises a TopicDeletion event and the deletion starts (Kafka's
resumeDeletionForTopics after onPartitionReassignment). Unlike Kafka, a held topic is not queued in
the context: Kafka's queued-but-ineligible topic is dropped from brokers' metadata by the next
UpdateMetadata and skipped by elections, which can leave the reassignment it waits for unable to
finish. Kafka also resumes after the first partition of the topic completes; we wait for all of them.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext
from .leader_and_isr_writer import ZkCall
from .partition_state_machine import PartitionState, PartitionStateMachine
from .replica_state_machine import ReplicaState, ReplicaStateMachine

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, context: ControllerContext, replicas: ReplicaStateMachine, partitions: PartitionStateMachine,
                 zk: Any, run: ZkCall, controller_id: int, enabled: bool,
                 new_batch: Callable[[], ControllerBrokerRequestBatch]) -> None:
        self.context = context
        self.replicas = replicas
        self.partitions = partitions
        self.zk = zk
        self.run = run
        self.controller_id = controller_id
        self.enabled = enabled
        self.new_batch = new_batch
        self.held: set[str] = set()   # marked, waiting for a reassignment (Kafka's topicsIneligibleForDeletion)

    async def process_markers(self, marked: set[str]) -> bool:
        """Queue marked topics for deletion (or drop the markers); True if some topic is queued."""
        ctx = self.context
        unknown = marked - ctx.all_topics
        if unknown or (marked and not self.enabled):
            drop = marked if not self.enabled else unknown
            log.info("Controller %d: removing deletion markers of %s (%s)", self.controller_id, sorted(drop),
                     "topic deletion is disabled" if not self.enabled else "no such topic")
            await self.run(self.zk.delete_topic_deletion_markers, sorted(drop), ctx.epoch_zk_version)
            if not self.enabled:
                return False
        fresh = sorted((marked & ctx.all_topics) - ctx.topics_to_be_deleted)
        held = {topic for topic in fresh if ctx.is_topic_being_reassigned(topic)}
        newly_held = held - self.held
        if newly_held:
            log.info("Controller %d: halted deletion of topics %s due to topic reassignment in progress",
                     self.controller_id, sorted(newly_held))
        resumed = sorted((self.held & set(fresh)) - held)
        if resumed:
            log.info("Controller %d: reassignment of topics %s done; resuming their deletion", self.controller_id,
                     resumed)
        self.held = held
        fresh = [topic for topic in fresh if topic not in held]
        if fresh:
            log.info("Controller %d: deleting topics %s", self.controller_id, fresh)
            ctx.queue_topic_deletion(fresh)
            batch = self.new_batch()
            for topic in fresh:
                partitions = ctx.partitions_for_topic(topic)
                # every broker drops the topic from its metadata (leader -2) before replicas are deleted
                batch.add_update_metadata(ctx.live_broker_ids, partitions)
                await self.partitions.handle_state_changes(partitions, PartitionState.OFFLINE, batch)
                await self.partitions.handle_state_changes(partitions, PartitionState.NON_EXISTENT, batch)
            batch.send(ctx.epoch)
        return bool(ctx.topics_to_be_deleted)

    def topic_replicas(self, topic: str) -> list[tuple[tuple[str, int], int]]:
        return [(tp, r) for tp in self.context.partitions_for_topic(topic) for r in self.context.replicas(tp)]

    async def resume(self, retry_failed: bool) -> None:
        """StopReplica(delete) to the live replicas still to delete; finish topics whose replicas are all gone."""
        ctx = self.context
        batch = self.new_batch()
        skip = {ReplicaState.DELETION_STARTED, ReplicaState.DELETION_SUCCESSFUL}
        if not retry_failed:
            skip.add(ReplicaState.DELETION_INELIGIBLE)
        for topic in sorted(ctx.topics_to_be_deleted):
            replicas = self.topic_replicas(topic)
            if all(self.replicas.state(r) == ReplicaState.DELETION_SUCCESSFUL for r in replicas):
                await self._complete(topic, replicas)
                continue
            to_delete = [(tp, b) for tp, b in replicas if self.replicas.state((tp, b)) not in skip
                         and ctx.is_replica_online(b, tp, include_shutting_down=True)]
            if to_delete:
                await self.replicas.handle_state_changes(to_delete, ReplicaState.OFFLINE, batch)
                await self.replicas.handle_state_changes(to_delete, ReplicaState.DELETION_STARTED, batch)
        batch.send(ctx.epoch)

    def fail_replicas_of_dead_brokers(self, dead: list[int]) -> None:
        """Their StopReplica will never be answered: ineligible until they come back (Kafka's failReplicaDeletion)."""
        for topic in self.context.topics_to_be_deleted:
            started = [r for r in self.topic_replicas(topic) if r[1] in dead
                       and self.replicas.state(r) == ReplicaState.DELETION_STARTED]
            self._set_all(started, ReplicaState.DELETION_INELIGIBLE)

    async def on_stop_replica_response(self, broker_id: int, partition_errors: tuple[tuple[str, int, int], ...],
                                       error_code: int) -> None:
        answered = {((t, p), broker_id): code for t, p, code in partition_errors}
        if error_code != 0 and not partition_errors:  # the whole request failed
            answered = {r: error_code for topic in self.context.topics_to_be_deleted
                        for r in self.topic_replicas(topic) if r[1] == broker_id}
        done, failed = [], []
        for replica, code in answered.items():
            if replica[0][0] not in self.context.topics_to_be_deleted:
                continue
            if self.replicas.state(replica) != ReplicaState.DELETION_STARTED:
                continue
            (done if code == 0 and error_code == 0 else failed).append(replica)
        if failed:
            log.warning("Controller %d: broker %d failed to delete %s (error %d); retried later", self.controller_id,
                        broker_id, failed, error_code)
        self._set_all(done, ReplicaState.DELETION_SUCCESSFUL)
        self._set_all(failed, ReplicaState.DELETION_INELIGIBLE)
        await self.resume(retry_failed=False)

    def _set_all(self, replicas: list, target: ReplicaState) -> None:
        self.replicas.set_states(replicas, target)  # no requests come with these transitions

    async def _complete(self, topic: str, replicas: list) -> None:
        self._set_all(replicas, ReplicaState.NON_EXISTENT)
        await self.run(self.zk.delete_topic_znodes, topic, self.context.epoch_zk_version)
        self.context.remove_topic(topic)
        self.replicas.forget_topic(topic)
        self.partitions.forget_topic(topic)
        log.info("Controller %d: deletion of topic %s completed", self.controller_id, topic)

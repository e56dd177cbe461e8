"""Partition reassignment on the controller (Kafka 2.8's KafkaController.onPartitionReassignment and friends).

Notation as Kafka's: ORS the original replicas, TRS the target replicas, RS = TRS + ORS (TRS first,
duplicates dropped), AR the adding replicas (TRS - ORS), RR the removing replicas (ORS - TRS).
While a reassignment runs, the topic znode holds RS as the partition's replicas plus
``adding_replicas``/``removing_replicas``: a new controller rebuilds every reassignment in progress
from it and resumes (the final AR = TRS is written last, so a crash at any point resumes).

A reassignment starts from the AlterPartitionReassignments API (``alter``) or from
/admin/reassign_partitions (``process_zk_request``) and moves in the steps of seed 000:

- not complete yet (some TRS replica is not in the ISR):
  U1/U2 write RS, AR, RR to the topic znode and the context (replicas a previous reassignment added
  and this one no longer wants are stopped and deleted), A1 bump the leader epoch and send
  LeaderAndIsr to RS, A2 move AR to NewReplica (they create the partition and fetch);
- complete (TRS in the ISR, seen through a watch of the partition's state znode, Kafka's
  PartitionReassignmentIsrChangeHandler, and through ISR change notifications):
  B1 AR -> OnlineReplica, B2 RS = TRS in the context, B3 elect a leader from TRS if the leader is
  not in it (else bump the leader epoch) and send LeaderAndIsr to TRS, B4/B5 RR -> OfflineReplica ->
  NonExistentReplica (out of the ISR, StopReplica with delete), B6 write AR = TRS to ZooKeeper,
  B7 drop the partition from /admin/reassign_partitions, B8 UpdateMetadata to every broker.

Cancelling (a null target) reverts to ORS: the adding replicas are stopped and deleted.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from ..protocol.errors import (InvalidReplicaAssignmentError, KafkaError,  # type: ignore[attr-defined]
                               NoReassignmentInProgressError, UnknownServerError, UnknownTopicOrPartitionError)
from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, ReplicaAssignment, TopicPartition
from .event_manager import ControllerEvent, PartitionReassignmentIsrChange, TopicDeletion
from .leader_and_isr_writer import LeaderAndIsrWriter, ZkCall
from .partition_state_machine import ElectionKind, ElectionStrategy, PartitionState, PartitionStateMachine
from .replica_state_machine import ReplicaState, ReplicaStateMachine
from .state_change_log import prefix, state_change_log
from .zk_client import ControllerMovedError, ZkConnectionError
from .zk_data import LeaderIsrAndControllerEpoch, TopicAssignment, TopicPartitionStateZNode

log = logging.getLogger(__name__)

Targets = dict[TopicPartition, "list[int] | None"]   # None: cancel


class PartitionReassigner:
    def __init__(self, context: ControllerContext, replicas: ReplicaStateMachine, partitions: PartitionStateMachine,
                 writer: LeaderAndIsrWriter, zk: Any, run: ZkCall, controller_id: int,
                 new_batch: Callable[[], ControllerBrokerRequestBatch],
                 enqueue_threadsafe: Callable[[ControllerEvent], None]) -> None:
        self.context = context
        self.replicas = replicas
        self.partitions = partitions
        self.writer = writer
        self.zk = zk
        self.run = run
        self.controller_id = controller_id
        self.new_batch = new_batch
        self.enqueue_threadsafe = enqueue_threadsafe
        self._isr_watches: dict[TopicPartition, Callable[[], None]] = {}

    # --- requests --------------------------------------------------------------------------------------
    async def alter(self, targets: Targets) -> dict[TopicPartition, KafkaError | None]:
        """AlterPartitionReassignments (Kafka's processApiPartitionReassignment): per partition None or
        the error. The latest request wins over a pending /admin/reassign_partitions entry."""
        results: dict[TopicPartition, KafkaError | None] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in targets.items():
            error = None if target is None else self.validate(tp, target)
            if error is not None:
                results[tp] = error
                continue
            built = self._build(tp, target)
            if built is None:
                results[tp] = NoReassignmentInProgressError(f"No reassignment in progress for {tp[0]}-{tp[1]}")
            else:
                to_reassign[tp] = built
        await self._remove_from_zk_request(lambda tp, _: tp in to_reassign)
        results.update(await self._trigger(to_reassign))
        return results

    def list(self, partitions: Iterable[TopicPartition] | None) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the partitions (default: all) with a reassignment in progress."""
        ctx = self.context
        wanted = ctx.partitions_being_reassigned() if partitions is None else partitions
        return {tp: ctx.full_assignment(tp) for tp in wanted if ctx.full_assignment(tp).is_being_reassigned}

    async def process_zk_request(self, at_failover: bool = False) -> set[TopicPartition]:
        """/admin/reassign_partitions (Kafka's processZkPartitionReassignment); returns the partitions started.

        Kafka reacts only to the znode's creation; our data watch also fires when the controller rewrites it
        as partitions finish, so outside failover a partition already moving to the same target is left alone."""
        request = await self.run(self.zk.get_partition_reassignment)
        if not request:
            return set()
        results: dict[TopicPartition, KafkaError | None] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in request.items():
            error = self.validate(tp, target)  # Kafka's old tool validated before writing; we check here
            built = None if error is not None else self._build(tp, target)
            if built is None:
                results[tp] = error or NoReassignmentInProgressError()
            elif at_failover or built != self.context.full_assignment(tp):
                to_reassign[tp] = built
        results.update(await self._trigger(to_reassign))
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            log.warning("Controller %d: failed reassignment through zk with the following errors: %s",
                        self.controller_id, {tp: str(e) for tp, e in failed.items()})
            await self._remove_from_zk_request(lambda tp, _: tp in failed)
        return {tp for tp, e in results.items() if e is None}

    async def resume_at_failover(self) -> None:
        """Kafka's initializePartitionReassignments: the znode's requests, then the API reassignments that the
        topic znodes show in progress."""
        started = await self.process_zk_request(at_failover=True)
        for tp in self.context.partitions_being_reassigned():
            if tp not in started:
                await self._safely(tp, self.context.full_assignment(tp))

    async def on_broker_startup(self, new_brokers: Iterable[int]) -> None:
        """Kafka's onBrokerStartup: reassignments with a replica on a (re)started broker are resumed."""
        new = set(new_brokers)
        for tp in self.context.partitions_being_reassigned():
            assignment = self.context.full_assignment(tp)
            if new.intersection(assignment.replicas):
                await self._safely(tp, assignment)

    async def maybe_complete(self, tp: TopicPartition) -> None:
        """The ISR of a reassigning partition changed (Kafka's processPartitionReassignmentIsrChange)."""
        assignment = self.context.full_assignment(tp)
        if not assignment.is_being_reassigned:
            return
        if await self._is_complete(tp, assignment):
            log.info("Controller %d: target replicas %s have all caught up with the leader for reassigning "
                     "partition %s-%d", self.controller_id, assignment.target_replicas, *tp)
            await self.on_partition_reassignment(tp, assignment)

    def unwatch_all(self) -> None:
        for unwatch in self._isr_watches.values():
            unwatch()
        self._isr_watches.clear()

    def validate(self, tp: TopicPartition, replicas: list[int]) -> KafkaError | None:
        """Kafka's validateReplicas: a non-empty list of distinct, non-negative ids whose new brokers are live."""
        if not replicas:
            return InvalidReplicaAssignmentError("Empty replica list specified in partition reassignment.")
        if len(set(replicas)) != len(replicas):
            return InvalidReplicaAssignmentError(
                f"Duplicate replica ids in partition reassignment replica list: {replicas}")
        if any(r < 0 for r in replicas):
            return InvalidReplicaAssignmentError(f"Invalid broker id in replica list: {replicas}")
        adding = self.context.full_assignment(tp).reassign_to(replicas).adding
        if not set(adding) <= self.context.live_broker_ids:
            return InvalidReplicaAssignmentError(
                f"Replica assignment has brokers that are not alive. Replica list: {replicas}, live broker list: "
                f"{sorted(self.context.live_broker_ids)}")
        return None

    # --- the steps -------------------------------------------------------------------------------------
    def _build(self, tp: TopicPartition, target: list[int] | None) -> ReplicaAssignment | None:
        """Kafka's maybeBuildReassignment: None for a cancellation of a partition that is not moving."""
        current = self.context.full_assignment(tp)
        if target is None:
            return current.revert() if current.is_being_reassigned else None
        return current.reassign_to(list(target))

    async def _trigger(self, to_reassign: dict[TopicPartition, ReplicaAssignment]
                       ) -> dict[TopicPartition, KafkaError | None]:
        """Kafka's maybeTriggerPartitionReassignment."""
        results: dict[TopicPartition, KafkaError | None] = {}
        marked = await self._marked_for_deletion(to_reassign)
        for tp, assignment in sorted(to_reassign.items()):
            # A topic whose deletion waits for its reassignments (topic_deletion_manager.py) takes no new
            # move (Kafka refuses a queued topic), but a cancellation or a resumption goes through.
            if self.context.is_topic_queued_for_deletion(tp[0]) or not self.context.replicas(tp) or tp[0] in marked:
                results[tp] = UnknownTopicOrPartitionError("The partition does not exist.")
                continue
            results[tp] = await self._safely(tp, assignment)
        return results

    async def _marked_for_deletion(self, to_reassign: dict[TopicPartition, ReplicaAssignment]) -> set[str]:
        """Topics under /admin/delete_topics among those that would start a new move (read only if any)."""
        new_moves = {tp[0] for tp, a in to_reassign.items()
                     if a.is_being_reassigned and a != self.context.full_assignment(tp)}
        if not new_moves:
            return set()
        return new_moves & set(await self.run(self.zk.get_topics_marked_for_deletion))

    async def _safely(self, tp: TopicPartition, assignment: ReplicaAssignment) -> KafkaError | None:
        try:
            await self.on_partition_reassignment(tp, assignment)
            return None
        except (ControllerMovedError, ZkConnectionError):
            raise
        except Exception as e:
            log.exception("Controller %d: reassignment of %s-%d to %s failed", self.controller_id, *tp, assignment)
            return UnknownServerError(str(e))

    async def on_partition_reassignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.context
        state_change_log.info("%s Reassigning partition %s-%d: replicas %s, adding %s, removing %s", self._prefix(),
                              *tp, list(assignment.replicas), list(assignment.adding), list(assignment.removing))
        await self._update_current(tp, assignment)
        if not await self._is_complete(tp, assignment):
            batch = self.new_batch()
            # A1: RS hear the new replica set with a bumped leader epoch
            await self._bump_leader_epoch(tp, assignment.replicas, batch)
            # A2: AR -> NewReplica (a replica the state machine already knows keeps its state)
            new = [(tp, r) for r in assignment.adding if self.replicas.state((tp, r)) == ReplicaState.NON_EXISTENT]
            await self.replicas.handle_state_changes(new, ReplicaState.NEW, batch)
            batch.send(ctx.epoch)
            return
        target = assignment.target_replicas
        batch = self.new_batch()
        # B1
        await self.replicas.handle_state_changes([(tp, r) for r in assignment.adding], ReplicaState.ONLINE, batch)
        # B2
        completed = ReplicaAssignment(tuple(target))
        ctx.set_full_assignment(tp, completed)
        # B3
        await self._move_leader_if_required(tp, target, batch)
        batch.send(ctx.epoch)
        # B4, B5
        await self._stop_removed_replicas(tp, list(assignment.removing))
        # B6: the assignment is written last, so a controller crash before it resumes the reassignment
        await self._write_assignment(tp, completed)
        # B7
        self._unwatch_isr(tp)
        await self._remove_from_zk_request(lambda p, replicas: p == tp and list(replicas) == target)
        # B8
        batch = self.new_batch()
        batch.add_update_metadata(ctx.live_broker_ids, [tp])
        batch.send(ctx.epoch)
        state_change_log.info("%s Completed reassignment of partition %s-%d to %s: %s", self._prefix(), *tp, target,
                              self.writer.describe(tp))
        if not ctx.is_topic_being_reassigned(tp[0]):
            # a deletion held for this topic's reassignments may start (Kafka's resumeDeletionForTopics)
            self.enqueue_threadsafe(TopicDeletion())

    async def _update_current(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """U1/U2: write RS/AR/RR; replicas of an earlier reassignment that are no longer wanted are removed."""
        current = self.context.full_assignment(tp)
        if current != assignment:
            unneeded = [r for r in current.replicas if r not in assignment.replicas]
            await self._write_assignment(tp, assignment)
            self.context.set_full_assignment(tp, assignment)
            if unneeded:
                leadership = self.context.leadership(tp)
                if leadership is not None and leadership.state.leader in unneeded:
                    # (Kafka would leave the partition leaderless here) a leader among the dropped replicas
                    # hands over to a live ISR member of the new replica set first
                    batch = self.new_batch()
                    await self._elect_from(tp, list(assignment.replicas), batch)
                    batch.send(self.context.epoch)
                await self._stop_removed_replicas(tp, unneeded)
        if assignment.is_being_reassigned:
            await self._watch_isr(tp)

    async def _is_complete(self, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
        """Kafka's isReassignmentComplete: TRS in the ISR, read from ZooKeeper (the context may lag)."""
        if not assignment.is_being_reassigned:
            return True
        found = await self.run(self.zk.get_partition_states, [tp])
        if tp not in found:
            return False
        state, zk_version = found[tp]
        leadership = self.context.leadership(tp)
        if leadership is None or zk_version > leadership.zk_version:
            self.context.put_leadership(tp, state, zk_version)
        return set(assignment.target_replicas) <= set(state.isr)

    async def _bump_leader_epoch(self, tp: TopicPartition, recipients: Iterable[int],
                                 batch: ControllerBrokerRequestBatch) -> None:
        """Kafka's updateLeaderEpochAndSendRequest: same leader and ISR, leader epoch + 1, LeaderAndIsr to
        ``recipients``."""
        epoch = self.context.epoch

        def bump(_: TopicPartition, s: LeaderIsrAndControllerEpoch) -> LeaderIsrAndControllerEpoch:
            return LeaderIsrAndControllerEpoch(s.leader, s.leader_epoch + 1, list(s.isr), epoch)

        if await self.writer.update([tp], bump):
            online = [r for r in recipients if self.context.is_replica_online(r, tp, include_shutting_down=True)]
            batch.add_leader_and_isr(online, tp)
        else:
            log.warning("Controller %d: failed to bump the leader epoch of %s-%d (%s)", self.controller_id, *tp,
                        self.writer.describe(tp))

    async def _move_leader_if_required(self, tp: TopicPartition, target: list[int],
                                       batch: ControllerBrokerRequestBatch) -> None:
        """Kafka's moveReassignedPartitionLeaderIfRequired."""
        leadership = self.context.leadership(tp)
        leader = leadership.state.leader if leadership is not None else -1
        if leader in target and self.context.is_replica_online(leader, tp):
            await self._bump_leader_epoch(tp, target, batch)
        else:
            log.info("Controller %d: leader %d for partition %s-%d being reassigned is not in the new list of "
                     "replicas %s or is offline; re-electing leader", self.controller_id, leader, *tp, target)
            await self._elect_from(tp, target, batch)

    async def _elect_from(self, tp: TopicPartition, replicas: list[int], batch: ControllerBrokerRequestBatch) -> None:
        strategy = ElectionStrategy(ElectionKind.REASSIGN, targets={tp: replicas})
        await self.partitions.handle_state_changes([tp], PartitionState.ONLINE, batch, strategy)

    async def _stop_removed_replicas(self, tp: TopicPartition, removed: list[int]) -> None:
        """Kafka's stopRemovedReplicasOfReassignedPartition: OfflineReplica (out of the ISR), then StopReplica
        with delete, then forgotten."""
        if not removed:
            return
        replicas = [(tp, r) for r in removed]
        batch = self.new_batch()
        await self.replicas.handle_state_changes(replicas, ReplicaState.OFFLINE, batch)
        await self.replicas.handle_state_changes(replicas, ReplicaState.DELETION_STARTED, batch)
        self.replicas.set_states(replicas, ReplicaState.DELETION_SUCCESSFUL)
        self.replicas.set_states(replicas, ReplicaState.NON_EXISTENT)
        batch.send(self.context.epoch)

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """The topic znode with this partition's RS/AR/RR (Kafka's updateReplicaAssignmentForPartition)."""
        ctx = self.context
        topic = tp[0]
        partitions, adding, removing = {}, {}, {}
        for (_, p) in ctx.partitions_for_topic(topic):
            full = assignment if (topic, p) == tp else ctx.full_assignment((topic, p))
            partitions[p] = list(full.replicas)
            if full.adding:
                adding[p] = list(full.adding)
            if full.removing:
                removing[p] = list(full.removing)
        znode = TopicAssignment(partitions, ctx.topic_ids.get(topic), adding, removing)
        await self.run(self.zk.set_topic_assignment, topic, znode, -1, ctx.epoch_zk_version)

    async def _remove_from_zk_request(self, should_remove: Callable[[TopicPartition, list[int]], bool]) -> None:
        """Kafka's maybeRemoveFromZkReassignment: drop matching entries of /admin/reassign_partitions."""
        request = await self.run(self.zk.get_partition_reassignment)
        if not request:
            return
        remaining = {tp: replicas for tp, replicas in request.items() if not should_remove(tp, replicas)}
        if len(remaining) != len(request):
            await self.run(self.zk.set_partition_reassignment, remaining, self.context.epoch_zk_version)

    # --- watches ---------------------------------------------------------------------------------------
    async def _watch_isr(self, tp: TopicPartition) -> None:
        if tp in self._isr_watches:
            return
        event = PartitionReassignmentIsrChange(*tp)

        def fire(data: bytes | None, version: int | None) -> None:  # kazoo's thread
            if data is not None:
                self.enqueue_threadsafe(event)

        self._isr_watches[tp] = await self.run(self.zk.watch_data, TopicPartitionStateZNode.path(*tp), fire)

    def _unwatch_isr(self, tp: TopicPartition) -> None:
        unwatch = self._isr_watches.pop(tp, None)
        if unwatch is not None:
            unwatch()

    def _prefix(self) -> str:
        return prefix(self.controller_id, self.context.epoch)

"""Preferred replica election (Kafka 2.8's processReplicaLeaderElection for ElectionType.PREFERRED).

A tool writes the partitions to /admin/preferred_replica_election; the controller's watch turns it into
a PreferredReplicaElection event (and a new controller handles a pending one at failover). Each
partition is classified as Kafka does: unknown, its topic being deleted, its preferred (first)
replica already leading, or electable. Electable partitions move OnlinePartition -> OnlinePartition
with the preferred-replica strategy: the preferred replica leads only if it is live and in the ISR
(ISR unchanged, leader epoch + 1), written conditionally, then LeaderAndIsr to the replicas and
UpdateMetadata to every broker. The znode is deleted afterwards, whatever the outcome per partition.

``elect`` returns per partition the new leader or the error the ElectLeaders API answers with.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..protocol.errors import (ElectionNotNeededError, InvalidTopicError,  # type: ignore[attr-defined]
                               KafkaError, PreferredLeaderNotAvailableError, UnknownTopicOrPartitionError)
from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, TopicPartition
from .leader_and_isr_writer import ZkCall
from .partition_state_machine import PREFERRED_ELECTION, PartitionState, PartitionStateMachine
from .zk_client import ControllerMovedError, ZkConnectionError

log = logging.getLogger(__name__)

ElectionResult = int | KafkaError  # the new leader, or why not


@dataclass
class PreferredElectionPlan:
    electable: list[TopicPartition] = field(default_factory=list)
    already_preferred: list[TopicPartition] = field(default_factory=list)
    being_deleted: list[TopicPartition] = field(default_factory=list)
    unknown: list[TopicPartition] = field(default_factory=list)
    without_state: list[TopicPartition] = field(default_factory=list)  # never elected: nothing to move


def plan_preferred_election(ctx: ControllerContext, partitions: Iterable[TopicPartition]) -> PreferredElectionPlan:
    """Sort the asked partitions the way Kafka's processReplicaLeaderElection does."""
    plan = PreferredElectionPlan()
    for tp in sorted(set(partitions)):
        replicas = ctx.replicas(tp)
        leadership = ctx.leadership(tp)
        if not replicas:
            plan.unknown.append(tp)
        elif ctx.is_topic_queued_for_deletion(tp[0]):
            plan.being_deleted.append(tp)
        elif leadership is None:
            plan.without_state.append(tp)
        elif leadership.state.leader == replicas[0]:
            plan.already_preferred.append(tp)
        else:
            plan.electable.append(tp)
    return plan


class PreferredReplicaElector:
    def __init__(self, context: ControllerContext, partitions: PartitionStateMachine, zk: Any, run: ZkCall,
                 controller_id: int, new_batch: Callable[[], ControllerBrokerRequestBatch]) -> None:
        self.context = context
        self.partitions = partitions
        self.zk = zk
        self.run = run
        self.controller_id = controller_id
        self.new_batch = new_batch

    async def elect(self, partitions: Iterable[TopicPartition], trigger: str) -> dict[TopicPartition, ElectionResult]:
        """Elect the preferred replica of each partition where it can lead; the outcome per partition."""
        ctx = self.context
        plan = plan_preferred_election(ctx, partitions)
        if plan.unknown:
            log.info("Controller %d: skipping preferred replica election for %d partitions by %s since they "
                     "don't exist: %s", self.controller_id, len(plan.unknown), trigger, _some(plan.unknown))
        if plan.being_deleted:
            log.warning("Controller %d: skipping preferred replica election for partitions %s by %s since their "
                        "topics are being deleted", self.controller_id, plan.being_deleted, trigger)
        results: dict[TopicPartition, ElectionResult] = {}
        if plan.electable:
            log.info("Controller %d: starting preferred replica leader election for %d partitions triggered by %s: "
                     "%s", self.controller_id, len(plan.electable), trigger, _some(plan.electable))
            batch = self.new_batch()
            elected, _ = await self.partitions.handle_state_changes(plan.electable, PartitionState.ONLINE, batch,
                                                                    PREFERRED_ELECTION)
            batch.send(ctx.epoch)
            done = set(elected)
            failed = []
            for tp in plan.electable:
                leader = ctx.leadership(tp).state.leader  # type: ignore[union-attr]
                if tp in done:
                    results[tp] = leader
                else:
                    failed.append(tp)
                    results[tp] = PreferredLeaderNotAvailableError(
                        f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                        f"PreferredReplicaPartitionLeaderElectionStrategy")
            # one line each, not one per partition (Kafka logs each at INFO; thousands would flood the log)
            log.info("Controller %d: %d partitions completed preferred replica leader election: %s",
                     self.controller_id, len(elected), _some(elected, lambda tp: f" (leader {ctx.replicas(tp)[0]})"))
            if failed:
                log.warning("Controller %d: %d partitions failed to complete preferred replica leader election, their "
                            "preferred replica cannot lead: %s", self.controller_id, len(failed), _some(failed))
        for tp in plan.without_state:
            results[tp] = PreferredLeaderNotAvailableError(f"Partition {tp[0]}-{tp[1]} has no leader state yet")
        for tp in plan.already_preferred:
            results[tp] = ElectionNotNeededError()
        for tp in plan.being_deleted:
            results[tp] = InvalidTopicError("The topic is being deleted")
        for tp in plan.unknown:
            results[tp] = UnknownTopicOrPartitionError("The partition does not exist.")
        return results

    async def process_znode(self, trigger: str = "ZkTriggered") -> dict[TopicPartition, ElectionResult] | None:
        """Handle /admin/preferred_replica_election if it exists (None if not), then delete it."""
        try:
            partitions = await self.run(self.zk.get_preferred_replica_election)
        except ValueError as e:
            # Kafka would fail on every event and leave the znode; dropping it lets the next request in
            log.error("Controller %d: ignoring and deleting a malformed preferred replica election: %s",
                      self.controller_id, e)
            await self._delete_znode()
            return None
        if partitions is None:
            return None
        try:
            results = await self.elect(partitions, trigger)
        except (ZkConnectionError, ControllerMovedError):
            raise  # retried with the znode in place, or a newer controller handles it
        except Exception:
            await self._delete_znode()  # as Kafka's finally: a failing request must not block later ones
            raise
        await self._delete_znode()
        return results

    async def _delete_znode(self) -> None:
        await self.run(self.zk.delete_preferred_replica_election, self.context.epoch_zk_version)


def _some(partitions: list[TopicPartition], extra: Callable[[TopicPartition], str] = lambda tp: "",
          limit: int = 10) -> str:
    """The first few partitions, named as Kafka names them, for a log line."""
    shown = ", ".join(f"{t}-{p}{extra((t, p))}" for t, p in partitions[:limit])
    return shown + (f" and {len(partitions) - limit} more" if len(partitions) > limit else "")

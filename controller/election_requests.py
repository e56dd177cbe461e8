"""ElectLeaders on the controller (Kafka 2.8's processReplicaLeaderElection for both election types).

PREFERRED goes to ``PreferredReplicaElector`` (the preferred replica leads only if it is live and in
the ISR). UNCLEAN elects partitions that have no live leader with the offline strategy allowing an
unclean choice: a live ISR member if there is one, else any live replica (it leads alone in its ISR;
records the old leader had that it lacks are lost). A partition whose leader is live needs no
election (ELECTION_NOT_NEEDED); one no replica can lead gets ELIGIBLE_LEADERS_NOT_AVAILABLE.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from ..protocol.errors import (EligibleLeadersNotAvailableError, ElectionNotNeededError,  # type: ignore[attr-defined]
                               InvalidRequestError, InvalidTopicError, UnknownTopicOrPartitionError)
from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, TopicPartition
from .leader_election import NO_LEADER
from .partition_state_machine import ElectionKind, ElectionStrategy, PartitionState, PartitionStateMachine
from .preferred_election import ElectionResult, PreferredReplicaElector

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1  # ElectLeadersRequest election_type (Kafka's ElectionType)
ELECTION_TYPE_NAMES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}
UNCLEAN_ELECTION = ElectionStrategy(ElectionKind.OFFLINE, allow_unclean=True)


class LeaderElectionRequests:
    def __init__(self, context: ControllerContext, partitions: PartitionStateMachine,
                 preferred: PreferredReplicaElector, controller_id: int,
                 new_batch: Callable[[], ControllerBrokerRequestBatch]) -> None:
        self.context = context
        self.partitions = partitions
        self.preferred = preferred
        self.controller_id = controller_id
        self.new_batch = new_batch

    async def elect(self, election_type: int, partitions: Iterable[TopicPartition] | None,
                    trigger: str = "AdminClientTriggered") -> dict[TopicPartition, ElectionResult]:
        """Per partition the new leader or the error; ``partitions`` None means every partition."""
        wanted = self.context.all_partitions() if partitions is None else list(partitions)
        if election_type == PREFERRED:
            return await self.preferred.elect(wanted, trigger)
        if election_type == UNCLEAN:
            return await self.elect_unclean(wanted, trigger)
        raise InvalidRequestError(f"Unknown election type {election_type}")

    async def elect_unclean(self, partitions: Iterable[TopicPartition], trigger: str
                            ) -> dict[TopicPartition, ElectionResult]:
        ctx = self.context
        results: dict[TopicPartition, ElectionResult] = {}
        electable = []
        for tp in sorted(set(partitions)):
            leadership = ctx.leadership(tp)
            if not ctx.replicas(tp):
                results[tp] = UnknownTopicOrPartitionError("The partition does not exist.")
            elif ctx.is_topic_queued_for_deletion(tp[0]):
                results[tp] = InvalidTopicError("The topic is being deleted")
            elif leadership is not None and leadership.state.leader != NO_LEADER \
                    and leadership.state.leader in ctx.live_broker_ids:
                results[tp] = ElectionNotNeededError()
            else:
                electable.append(tp)
        if electable:
            log.info("Controller %d: starting unclean leader election for partitions %s triggered by %s",
                     self.controller_id, electable, trigger)
            batch = self.new_batch()
            # OfflinePartition first, as Kafka's onReplicaElection has them there (Online -> Online is valid too)
            elected, _ = await self.partitions.handle_state_changes(electable, PartitionState.ONLINE, batch,
                                                                    UNCLEAN_ELECTION)
            batch.send(ctx.epoch)
            done = set(elected)
            for tp in electable:
                leadership = ctx.leadership(tp)
                if tp in done and leadership is not None:
                    results[tp] = leadership.state.leader
                else:
                    results[tp] = EligibleLeadersNotAvailableError(
                        f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                        f"OfflinePartitionLeaderElectionStrategy(true)")
        return results

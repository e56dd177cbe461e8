"""PartitionStateMachine: the state of every partition, Kafka 2.8's ZkPartitionStateMachine.

States and the states each may be entered from (Kafka's validPreviousStates):

- NewPartition          <- NonExistentPartition  (assigned, no leader yet)
- OnlinePartition       <- New, Online, Offline  (a leader was elected: first one, or a new one)
- OfflinePartition      <- New, Online, Offline  (its leader died)
- NonExistentPartition  <- Offline  (its topic was deleted)

Moving to OnlinePartition elects: a NewPartition gets its first state znode (first live replica
leads, the live replicas are the ISR); an Online or Offline one gets a new leader with the strategy
given (offline, controlled shutdown, preferred replica, reassignment: the pure functions of
``leader_election``). An invalid transition is logged as an error and leaves the state unchanged;
a partition no replica can lead is logged and keeps its state. Requests go into the caller's batch.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, TopicPartition
from .leader_and_isr_writer import LeaderAndIsrWriter
from .leader_election import (controlled_shutdown_state, initial_state, offline_election_state,
                              preferred_election_state, reassign_election_state)
from .state_change_log import apply_transitions, log_items, split_valid, partition_name as _name, prefix
from .zk_data import LeaderIsrAndControllerEpoch

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"

log = logging.getLogger(__name__)


class PartitionState(enum.Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"

    def __str__(self) -> str:
        return self.value


_S = PartitionState
VALID_PREVIOUS_STATES: dict[PartitionState, frozenset[PartitionState]] = {
    _S.NEW: frozenset({_S.NON_EXISTENT}),
    _S.ONLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE}),
    _S.OFFLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE}),
    _S.NON_EXISTENT: frozenset({_S.OFFLINE}),
}


class ElectionKind(enum.Enum):
    OFFLINE = "OfflinePartitionLeaderElectionStrategy"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"
    PREFERRED = "PreferredReplicaPartitionLeaderElectionStrategy"
    REASSIGN = "ReassignPartitionLeaderElectionStrategy"


@dataclass(frozen=True)
class ElectionStrategy:
    kind: ElectionKind
    allow_unclean: bool = False
    # OFFLINE with allow_unclean: only these topics' partitions (None: every partition, as an unclean
    # ElectLeaders request asks)
    unclean_topics: frozenset[str] | None = field(default=None, compare=False)
    # REASSIGN: partition -> target replicas
    targets: dict[TopicPartition, Sequence[int]] = field(default_factory=dict, compare=False)


OFFLINE_ELECTION = ElectionStrategy(ElectionKind.OFFLINE)
CONTROLLED_SHUTDOWN_ELECTION = ElectionStrategy(ElectionKind.CONTROLLED_SHUTDOWN)
PREFERRED_ELECTION = ElectionStrategy(ElectionKind.PREFERRED)


class PartitionStateMachine:
    def __init__(self, context: ControllerContext, writer: LeaderAndIsrWriter, controller_id: int,
                 unclean_leader_election: bool = False) -> None:
        self.context = context
        self.writer = writer
        self.controller_id = controller_id
        self.unclean_leader_election = unclean_leader_election
        self.states: dict[TopicPartition, PartitionState] = {}

    def state(self, tp: TopicPartition) -> PartitionState:
        return self.states.get(tp, PartitionState.NON_EXISTENT)

    def partitions_in_state(self, *states: PartitionState) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.states.items() if s in states)

    def initialize(self) -> None:
        """Kafka's startup states: New without a state znode, Online with a live leader, else Offline."""
        self.states.clear()
        for tp in self.context.all_partitions():
            leadership = self.context.leadership(tp)
            if leadership is None:
                self.states[tp] = _S.NEW
            elif self.context.is_replica_online(leadership.state.leader, tp):
                self.states[tp] = _S.ONLINE
            else:
                self.states[tp] = _S.OFFLINE

    def forget_topic(self, topic: str) -> None:
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]

    def valid(self, partitions: Iterable[TopicPartition], target: PartitionState) -> list[TopicPartition]:
        out, invalid = split_valid(self.states, partitions, VALID_PREVIOUS_STATES[target], _S.NON_EXISTENT)
        prefix_ = self._prefix()
        log_items(invalid, lambda i: f"{prefix_} Initiated state change for partition {_name(i[0])} from {i[1]} to "
                  f"{target} failed: not a valid transition", lambda i: _name(i[0]),
                  f"{prefix_} Initiated state change of {{count}} partitions to {target} failed: not a valid "
                  f"transition: {{first}}", logging.ERROR)
        return out

    async def trigger_online_partition_state_change(self, batch: ControllerBrokerRequestBatch) -> list[TopicPartition]:
        """Elect every New and Offline partition outside topics being deleted (Kafka's method of that name)."""
        candidates = [tp for tp in self.partitions_in_state(_S.NEW, _S.OFFLINE)
                      if not self.context.is_topic_queued_for_deletion(tp[0])]
        # Kafka's OfflinePartitionLeaderElectionStrategy(allowUnclean = false): each topic's own
        # unclean.leader.election.enable decides (see _unclean_topics)
        elected, _ = await self.handle_state_changes(candidates, _S.ONLINE, batch, OFFLINE_ELECTION)
        return elected

    async def handle_state_changes(self, partitions: Iterable[TopicPartition], target: PartitionState,
                                   batch: ControllerBrokerRequestBatch,
                                   strategy: ElectionStrategy = OFFLINE_ELECTION
                                   ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Move the partitions to ``target``: (moved, failed). Only OnlinePartition can fail (no leader)."""
        valid = self.valid(partitions, target)
        if target != _S.ONLINE:
            self._set_all(valid, target)
            return valid, []
        new = [tp for tp in valid if self.state(tp) == _S.NEW]
        existing = [tp for tp in valid if self.state(tp) != _S.NEW]
        moved, failed = await self._initialize(new, batch)
        elected, not_elected = await self._elect(existing, batch, strategy)
        self._set_all(moved + elected, _S.ONLINE)
        return moved + elected, failed + not_elected

    async def _initialize(self, partitions: list[TopicPartition], batch: ControllerBrokerRequestBatch
                          ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        ctx = self.context
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        failed = []
        electable = self._electable()
        for tp in partitions:
            state = initial_state(ctx.replicas(tp), electable, ctx.epoch)
            if state is None:
                failed.append(tp)
            else:
                states[tp] = state
        prefix_ = self._prefix()
        log_items(failed, lambda tp: f"{prefix_} Controller failed to elect leader for partition {_name(tp)}: no "
                  f"replica of {ctx.replicas(tp)} is live", _name,
                  f"{prefix_} Controller failed to elect leaders for {{count}} new partitions: no replica is live: "
                  f"{{first}}", logging.ERROR)
        if not states:
            return [], failed
        made, existing = await self.writer.create(states)
        for tp in made:
            batch.add_leader_and_isr(self._recipients(tp), tp, is_new=True)
        for tp in existing:
            batch.add_leader_and_isr(self._recipients(tp), tp)
        return made + existing, failed

    async def _elect(self, partitions: list[TopicPartition], batch: ControllerBrokerRequestBatch,
                     strategy: ElectionStrategy) -> tuple[list[TopicPartition], list[TopicPartition]]:
        if not partitions:
            return [], []
        if strategy.kind == ElectionKind.OFFLINE and not strategy.allow_unclean:
            unclean = await self._unclean_topics(partitions)
            if unclean:
                strategy = ElectionStrategy(ElectionKind.OFFLINE, allow_unclean=True, unclean_topics=unclean)
        change = self._change_for(strategy)
        written = await self.writer.update(partitions, change)
        for tp in written:
            batch.add_leader_and_isr(self._recipients(tp, strategy), tp)
        done = set(written)
        failed = [tp for tp in partitions if tp not in done]
        prefix_ = self._prefix()
        log_items(failed, lambda tp: f"{prefix_} Failed to elect leader for partition {_name(tp)} under strategy "
                  f"{strategy.kind.value}: no eligible replica ({self.writer.describe(tp)})", _name,
                  f"{prefix_} Failed to elect leaders for {{count}} partitions under strategy {strategy.kind.value}: "
                  f"no eligible replica: {{first}}", logging.ERROR)
        return written, failed

    def _change_for(self, strategy: ElectionStrategy
                    ) -> Callable[[TopicPartition, LeaderIsrAndControllerEpoch], LeaderIsrAndControllerEpoch | None]:
        ctx = self.context
        electable, epoch = self._electable(), ctx.epoch
        kind = strategy.kind

        def live(tp: TopicPartition) -> set[int]:  # a replica in an offline log dir never leads
            return electable - ctx.brokers_with_offline_replica(tp) if ctx.replicas_on_offline_dirs else electable
        if kind == ElectionKind.OFFLINE:
            def unclean(tp: TopicPartition) -> bool:
                return strategy.allow_unclean and (strategy.unclean_topics is None or tp[0] in strategy.unclean_topics)
            return lambda tp, s: offline_election_state(s, ctx.replicas(tp), live(tp), unclean(tp), epoch)
        if kind == ElectionKind.CONTROLLED_SHUTDOWN:
            shutting_down = set(ctx.shutting_down_broker_ids)
            return lambda tp, s: controlled_shutdown_state(s, ctx.replicas(tp), ctx.live_broker_ids, shutting_down,
                                                           epoch)
        if kind == ElectionKind.PREFERRED:
            return lambda tp, s: preferred_election_state(s, ctx.replicas(tp), live(tp), epoch)
        return lambda tp, s: reassign_election_state(s, strategy.targets.get(tp, ctx.replicas(tp)), live(tp), epoch)

    async def _unclean_topics(self, partitions: list[TopicPartition]) -> frozenset[str]:
        """Topics of ``partitions`` with no live ISR member whose unclean.leader.election.enable (the topic's
        override in /config/topics, else the broker default) is true: Kafka 2.8's
        collectUncleanLeaderElectionState, which reads the topics' configs only for such partitions."""
        live = self._electable()
        stuck = {tp[0] for tp in partitions
                 if (leadership := self.context.leadership(tp)) is not None
                 and not any(r in live for r in leadership.state.isr)}
        unclean = set()
        for topic in sorted(stuck):
            overrides = await self.writer.run(self.writer.zk.get_entity_config, "topics", topic)
            value = overrides.get(UNCLEAN_LEADER_ELECTION_ENABLE)
            if (self.unclean_leader_election if value is None else str(value).strip().lower() == "true"):
                unclean.add(topic)
        return frozenset(unclean)

    def _electable(self) -> set[int]:
        """Brokers that may lead: live and not shutting down (Kafka's liveBrokerIds)."""
        return self.context.live_broker_ids - self.context.shutting_down_broker_ids

    def _recipients(self, tp: TopicPartition, strategy: ElectionStrategy = OFFLINE_ELECTION) -> list[int]:
        """Live (or shutting-down) replicas hear the new leadership; a reassignment tells its target replicas."""
        replicas = self.context.replicas(tp)
        if strategy.kind == ElectionKind.REASSIGN:
            replicas = list(strategy.targets.get(tp, replicas))
        return [r for r in replicas if self.context.is_replica_online(r, tp, include_shutting_down=True)]

    def _set_all(self, partitions: list[TopicPartition], target: PartitionState) -> None:
        changed = [(tp, previous) for tp, previous in apply_transitions(self.states, partitions, target, _S.NON_EXISTENT)
                   if target == _S.ONLINE or previous != target]
        prefix_ = self._prefix()
        log_items(changed, lambda c: f"{prefix_} Changed partition {_name(c[0])} from {c[1]} to {target} with state "
                  f"{self.writer.describe(c[0])}", lambda c: _name(c[0]),
                  f"{prefix_} Changed {{count}} partitions to {target}: {{first}}")

    def _prefix(self) -> str:
        return prefix(self.controller_id, self.context.epoch)


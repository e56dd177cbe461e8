"""ReplicaStateMachine: the state of every replica (a partition on a broker), Kafka 2.8's ZkReplicaStateMachine.

States and the states each may be entered from (Kafka's validPreviousStates):

- NewReplica                 <- NonExistentReplica  (created by a topic creation or reassignment)
- OnlineReplica              <- New, Online, Offline, DeletionIneligible  (its broker is live)
- OfflineReplica             <- New, Online, Offline, DeletionIneligible  (its broker died or shuts down)
- ReplicaDeletionStarted     <- Offline  (StopReplica with delete sent)
- ReplicaDeletionSuccessful  <- DeletionStarted  (the broker answered without error)
- ReplicaDeletionIneligible  <- Offline, DeletionStarted  (deletion failed or the broker is dead)
- NonExistentReplica         <- DeletionSuccessful

An invalid transition is logged as an error to the state-change log and leaves the state unchanged.
Transitions queue their requests in the caller's ControllerBrokerRequestBatch; the caller sends it.
"""

from __future__ import annotations

import enum
import logging
from typing import Iterable

from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, TopicPartition
from .leader_and_isr_writer import LeaderAndIsrWriter
from .leader_election import remove_replicas_from_isr
from .state_change_log import apply_transitions, log_items, split_valid, partition_name as _name, prefix

log = logging.getLogger(__name__)

PartitionAndReplica = tuple[TopicPartition, int]


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    def __str__(self) -> str:
        return self.value


_S = ReplicaState
VALID_PREVIOUS_STATES: dict[ReplicaState, frozenset[ReplicaState]] = {
    _S.NEW: frozenset({_S.NON_EXISTENT}),
    _S.ONLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE}),
    _S.OFFLINE: frozenset({_S.NEW, _S.ONLINE, _S.OFFLINE, _S.DELETION_INELIGIBLE}),
    _S.DELETION_STARTED: frozenset({_S.OFFLINE}),
    _S.DELETION_SUCCESSFUL: frozenset({_S.DELETION_STARTED}),
    _S.DELETION_INELIGIBLE: frozenset({_S.OFFLINE, _S.DELETION_STARTED}),
    _S.NON_EXISTENT: frozenset({_S.DELETION_SUCCESSFUL}),
}


class ReplicaStateMachine:
    def __init__(self, context: ControllerContext, writer: LeaderAndIsrWriter, controller_id: int) -> None:
        self.context = context
        self.writer = writer
        self.controller_id = controller_id
        self.states: dict[PartitionAndReplica, ReplicaState] = {}

    def state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.states.get(replica, ReplicaState.NON_EXISTENT)

    def replicas_in_state(self, state: ReplicaState, topic: str | None = None) -> list[PartitionAndReplica]:
        return sorted(r for r, s in self.states.items() if s == state and (topic is None or r[0][0] == topic))

    def initialize(self) -> None:
        """Kafka's startup states: OnlineReplica where the broker is live, else ReplicaDeletionIneligible
        (the controller then moves those to OfflineReplica)."""
        self.states.clear()
        for tp in self.context.all_partitions():
            for replica in self.context.replicas(tp):
                online = self.context.is_replica_online(replica, tp, include_shutting_down=True)
                self.states[(tp, replica)] = _S.ONLINE if online else _S.DELETION_INELIGIBLE

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.states if k[0][0] == topic]:
            del self.states[key]

    def valid(self, replicas: Iterable[PartitionAndReplica], target: ReplicaState) -> list[PartitionAndReplica]:
        """The replicas that may move to ``target``; the others are logged as invalid transitions."""
        out, invalid = split_valid(self.states, replicas, VALID_PREVIOUS_STATES[target], _S.NON_EXISTENT)
        prefix_ = self._prefix()
        log_items(invalid, lambda i: f"{prefix_} Initiated state change of replica {i[0][1]} for partition "
                  f"{_name(i[0][0])} from {i[1]} to {target} failed: not a valid transition",
                  lambda i: f"{_name(i[0][0])} on {i[0][1]}",
                  f"{prefix_} Initiated state change of {{count}} replicas to {target} failed: not a valid "
                  f"transition: {{first}}", logging.ERROR)
        return out

    def set_states(self, replicas: Iterable[PartitionAndReplica], target: ReplicaState) -> list[PartitionAndReplica]:
        """Transitions that send nothing (deletion progress): the valid ones are recorded and returned."""
        valid = self.valid(replicas, target)
        self._set_all(valid, target)
        return valid

    async def handle_state_changes(self, replicas: Iterable[PartitionAndReplica], target: ReplicaState,
                                   batch: ControllerBrokerRequestBatch) -> list[PartitionAndReplica]:
        """Move the replicas to ``target`` (the valid ones), queueing requests in ``batch``; returns the moved."""
        valid = self.valid(replicas, target)
        if not valid:
            return []
        ctx = self.context
        if target == _S.NEW:
            moved, refused = [], []
            for tp, broker_id in valid:
                leadership = ctx.leadership(tp)
                if leadership is not None and leadership.state.leader == broker_id:
                    refused.append((tp, broker_id))
                    continue
                if leadership is not None:
                    batch.add_leader_and_isr([broker_id], tp, is_new=True)
                moved.append((tp, broker_id))
            prefix_ = self._prefix()
            log_items(refused, lambda r: f"{prefix_} Replica {r[1]} for partition {_name(r[0])} cannot be moved to "
                      f"NewReplica state as it is being requested to become leader", lambda r: _name(r[0]),
                      f"{prefix_} {{count}} replicas cannot be moved to NewReplica state as they are being "
                      f"requested to become leaders: {{first}}", logging.ERROR)
            valid = moved
        elif target == _S.ONLINE:
            for tp, broker_id in valid:
                # a NewReplica only joins the assignment (ours is already there); the others hear the leadership
                if self.state((tp, broker_id)) != _S.NEW and ctx.leadership(tp) is not None:
                    batch.add_leader_and_isr([broker_id], tp)
        elif target == _S.OFFLINE:
            await self._go_offline(valid, batch)
        elif target == _S.DELETION_STARTED:
            for tp, broker_id in valid:
                batch.add_stop_replica([broker_id], tp, delete=True)
        self._set_all(valid, target)
        return valid

    async def _go_offline(self, replicas: list[PartitionAndReplica], batch: ControllerBrokerRequestBatch) -> None:
        """StopReplica (no delete) to each replica, then remove it from its partitions' ISRs (a removed leader
        leaves the partition leaderless) and tell the remaining replicas (Kafka's OfflineReplica)."""
        ctx = self.context
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, broker_id in replicas:
            batch.add_stop_replica([broker_id], tp, delete=False)
            by_broker.setdefault(broker_id, []).append(tp)
        for broker_id, partitions in sorted(by_broker.items()):
            with_state = [tp for tp in partitions if ctx.leadership(tp) is not None]
            without = [tp for tp in partitions if ctx.leadership(tp) is None]

            def remove(tp, state, replica=broker_id):
                if replica not in state.isr and state.leader != replica:
                    return None  # Kafka: "it is not in the ISR", nothing to write
                return remove_replicas_from_isr(state, [replica], ctx.epoch)

            written = await self.writer.update(with_state, remove)
            prefix_ = self._prefix()
            log_items(written, lambda tp: f"{prefix_} Removed replica {broker_id} from the ISR of partition "
                      f"{_name(tp)}: {self.writer.describe(tp)}", _name,
                      f"{prefix_} Removed replica {broker_id} from the ISRs of {{count}} partitions: {{first}}")
            for tp in written:
                if not ctx.is_topic_queued_for_deletion(tp[0]):
                    others = [r for r in ctx.replicas(tp) if r != broker_id
                              and ctx.is_replica_online(r, tp, include_shutting_down=True)]
                    batch.add_leader_and_isr(others, tp)
            batch.add_update_metadata(ctx.live_broker_ids, without)

    def _set_all(self, replicas: list[PartitionAndReplica], target: ReplicaState) -> None:
        changed = [(replica, previous) for replica, previous
                   in apply_transitions(self.states, replicas, target, _S.NON_EXISTENT) if previous != target]
        prefix_ = self._prefix()
        log_items(changed, lambda c: f"{prefix_} Changed state of replica {c[0][1]} for partition {_name(c[0][0])} "
                  f"from {c[1]} to {target}", lambda c: f"{_name(c[0][0])} on {c[0][1]}",
                  f"{prefix_} Changed state of {{count}} replicas to {target}: {{first}}")

    def _prefix(self) -> str:
        return prefix(self.controller_id, self.context.epoch)


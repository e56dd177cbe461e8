"""AlterIsr (56, KIP-497): a partition leader asks the controller to write its new ISR (Kafka 2.8's
KafkaController.processAlterIsr).

Kafka 2.7+ brokers at inter.broker.protocol.version >= 2.7 no longer write ISR changes to ZooKeeper
themselves; they send AlterIsr to the controller and take the answer (new ISR and state znode version) as
the partition's state. The controller, on its event task:
- answers STALE_BROKER_EPOCH (the whole request) unless the sender is live at exactly that broker epoch;
- per partition: UNKNOWN_TOPIC_OR_PARTITION when it has no state for it; FENCED_LEADER_EPOCH when the
  request's leader epoch is older than the controller's; the current state, unwritten, when it already is the
  requested one (leader, leader epoch and ISR); else writes the state znode conditionally on the request's
  znode version (and on /controller_epoch's version), INVALID_UPDATE_VERSION when that version is not the
  znode's;
- sends UpdateMetadata for every partition named to every live broker, and afterwards tries to complete the
  reassignments of partitions whose ISR was written (events queued after the answer, as Kafka).
Kafka 2.8 does not check that the new ISR's members are live or that the sender leads the partition (later
releases do, INELIGIBLE_REPLICA); neither does this.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..protocol.errors import (FencedLeaderEpochError, InvalidUpdateVersionError,  # type: ignore[attr-defined]
                               StaleBrokerEpochError, UnknownTopicOrPartitionError)
from .channel_manager import ControllerBrokerRequestBatch
from .controller_context import ControllerContext, TopicPartition
from .state_change_log import prefix, state_change_log
from .zk_data import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IsrRequest:
    """One partition of an AlterIsr request."""
    leader_epoch: int
    new_isr: tuple[int, ...]
    zk_version: int  # the state znode version the leader's ISR was read at (Kafka's currentIsrVersion)


@dataclass(frozen=True)
class IsrResult:
    """One partition's answer: an error code, or the state now in ZooKeeper and its znode version."""
    error_code: int = 0
    state: LeaderIsrAndControllerEpoch | None = None
    zk_version: int = 0


class IsrAlterations:
    def __init__(self, context: ControllerContext, zk: Any, run: Callable[..., Awaitable[Any]], controller_id: int,
                 new_batch: Callable[[], ControllerBrokerRequestBatch],
                 reassignment_isr_changed: Callable[[TopicPartition], None]) -> None:
        self.context = context
        self.zk = zk
        self.run = run
        self.controller_id = controller_id
        self.new_batch = new_batch
        self.reassignment_isr_changed = reassignment_isr_changed  # queues an event: runs after the answer

    async def alter(self, broker_id: int, broker_epoch: int, requests: dict[TopicPartition, IsrRequest]
                    ) -> dict[TopicPartition, IsrResult]:
        """Process one AlterIsr request; StaleBrokerEpochError for the whole request (Kafka's short-circuit)."""
        ctx = self.context
        if broker_id not in ctx.live_broker_ids or ctx.broker_epoch(broker_id) != broker_epoch:
            raise StaleBrokerEpochError(f"AlterIsr from broker {broker_id} at broker epoch {broker_epoch}; the "
                                        f"controller knows epoch {ctx.broker_epoch(broker_id)}")
        results: dict[TopicPartition, IsrResult] = {}
        updates: dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch, int]] = {}
        for tp, asked in requests.items():
            leadership = ctx.leadership(tp) if tp[0] in ctx.assignments else None
            if leadership is None:
                results[tp] = IsrResult(UnknownTopicOrPartitionError.code)
                continue
            current = leadership.state
            if asked.leader_epoch < current.leader_epoch:
                results[tp] = IsrResult(FencedLeaderEpochError.code)
            elif (broker_id, asked.leader_epoch, list(asked.new_isr)) == (current.leader, current.leader_epoch,
                                                                          current.isr):
                results[tp] = IsrResult(0, current, leadership.zk_version)  # already so: nothing to write
            else:
                new_state = LeaderIsrAndControllerEpoch(broker_id, asked.leader_epoch, list(asked.new_isr), ctx.epoch)
                updates[tp] = (new_state, asked.zk_version)
        written: list[TopicPartition] = []
        if updates:
            versions = await self.run(self.zk.update_partition_states, updates, ctx.epoch_zk_version)
            for tp, zk_version in versions.items():
                if zk_version is None:  # not the znode's version: the leader's view is stale
                    log.info("Controller %d: AlterIsr of %s-%d to %s: bad znode version %d", self.controller_id,
                             tp[0], tp[1], updates[tp][0].isr, updates[tp][1])
                    results[tp] = IsrResult(InvalidUpdateVersionError.code)
                    continue
                ctx.put_leadership(tp, updates[tp][0], zk_version)
                results[tp] = IsrResult(0, updates[tp][0], zk_version)
                written.append(tp)
        if written:
            state_change_log.info("%s AlterIsr from broker %d: ISR of %d partitions written, e.g. %s",
                                  prefix(self.controller_id, ctx.epoch), broker_id, len(written),
                                  [(tp, results[tp].state.isr) for tp in written[:10]])  # type: ignore[union-attr]
        known = [tp for tp in requests if ctx.leadership(tp) is not None and tp[0] in ctx.assignments]
        if known:
            batch = self.new_batch()
            batch.add_update_metadata(ctx.live_broker_ids, known)
            batch.send(ctx.epoch)
        for tp in written:
            if tp in ctx.reassigning:
                self.reassignment_isr_changed(tp)
        return results

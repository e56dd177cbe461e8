"""Automatic leader rebalance (Kafka 2.8's checkAndTriggerAutoLeaderRebalance).

With auto.leader.rebalance.enable the active controller checks, 5 s after it took over and then every
leader.imbalance.check.interval.seconds, each broker's share of the partitions it is preferred
leader of but does not lead. When that share exceeds leader.imbalance.per.broker.percentage, the
partitions whose preferred replica is live and in the ISR get a preferred replica election
(triggered "AutoTriggered"); nothing moves while a reassignment is in progress. The timer only
enqueues an AutoPreferredReplicaLeaderElection event; the check runs on the event task.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from .controller_context import ControllerContext, TopicPartition
from .event_manager import AutoPreferredReplicaLeaderElection, ControllerEvent
from .preferred_election import PreferredReplicaElector

log = logging.getLogger(__name__)

FIRST_CHECK_DELAY_S = 5.0  # Kafka's scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS) at failover


def partitions_to_rebalance(ctx: ControllerContext, imbalance_percentage: int) -> list[TopicPartition]:
    """The partitions a preferred election should move now (pure: reads only the context)."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        replicas = ctx.replicas(tp)
        if replicas and not ctx.is_topic_queued_for_deletion(tp[0]):
            by_preferred.setdefault(replicas[0], []).append(tp)
    candidates: list[TopicPartition] = []
    for broker_id, partitions in sorted(by_preferred.items()):
        not_led = [tp for tp in partitions
                   if (leadership := ctx.leadership(tp)) is not None and leadership.state.leader != broker_id]
        ratio = len(not_led) / len(partitions)
        log.debug("Leader imbalance ratio for broker %d is %.3f", broker_id, ratio)
        if ratio <= imbalance_percentage / 100 or ctx.partitions_being_reassigned():
            continue
        candidates += [tp for tp in not_led if _preferred_can_lead(ctx, tp)]
    return candidates


def _preferred_can_lead(ctx: ControllerContext, tp: TopicPartition) -> bool:
    """Kafka's canPreferredReplicaBeLeader: the preferred replica is online and in the ISR."""
    preferred = ctx.replicas(tp)[0]
    leadership = ctx.leadership(tp)
    return ctx.is_replica_online(preferred, tp) and leadership is not None and preferred in leadership.state.isr


class AutoLeaderRebalancer:
    def __init__(self, config: Any, context: ControllerContext, preferred: PreferredReplicaElector,
                 controller_id: int, enqueue: Callable[[ControllerEvent], None]) -> None:
        self.enabled: bool = config.get("auto.leader.rebalance.enable")
        self.interval_s: float = float(config.get("leader.imbalance.check.interval.seconds"))
        self.imbalance_percentage: int = config.get("leader.imbalance.per.broker.percentage")
        self.context = context
        self.preferred = preferred
        self.controller_id = controller_id
        self.enqueue = enqueue
        self._timer: asyncio.Task | None = None

    def start(self) -> None:
        """At failover (on the event loop): schedule the checks if enabled."""
        if self.enabled and self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._tick(), name="auto-leader-rebalance")

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _tick(self) -> None:
        await asyncio.sleep(min(FIRST_CHECK_DELAY_S, self.interval_s))
        while True:
            self.enqueue(AutoPreferredReplicaLeaderElection())
            await asyncio.sleep(self.interval_s)

    async def check_and_trigger(self) -> None:
        candidates = partitions_to_rebalance(self.context, self.imbalance_percentage)
        if candidates:
            log.info("Controller %d: leader imbalance above %d%%; preferred replica election for %s",
                     self.controller_id, self.imbalance_percentage, candidates)
            await self.preferred.elect(candidates, "AutoTriggered")

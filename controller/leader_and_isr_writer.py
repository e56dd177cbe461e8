"""LeaderAndIsrWriter: the controller's writes of partition state znodes (Kafka's updateLeaderAndIsr).

Both state machines change partition states the same way: compute the next state from the current
one, write it conditionally on the znode version (and /controller_epoch's version, so a deposed
controller's write fails) in one pipelined round, re-read and recompute the partitions whose znode
moved meanwhile (a broker's ISR change), and keep the context in step with what was written.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Iterable

from .controller_context import ControllerContext, TopicPartition
from .state_change_log import describe_leader_and_isr
from .zk_client import ControllerMovedError
from .zk_data import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

MAX_STATE_WRITE_ATTEMPTS = 10  # re-reads after a version conflict before a partition is left for later

StateChange = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], "LeaderIsrAndControllerEpoch | None"]
ZkCall = Callable[..., Awaitable[Any]]   # run a blocking KafkaZkClient method off the event loop


class LeaderAndIsrWriter:
    def __init__(self, context: ControllerContext, zk: Any, run: ZkCall, controller_id: int) -> None:
        self.context = context
        self.zk = zk
        self.run = run
        self.controller_id = controller_id

    async def update(self, partitions: Iterable[TopicPartition], change: StateChange) -> list[TopicPartition]:
        """Write ``change(tp, current state)`` for each partition whose change is not None; returns the
        partitions written. ControllerMovedError when /controller_epoch moved or a znode was written by a
        newer controller."""
        ctx = self.context
        remaining, written = list(partitions), []
        for _ in range(MAX_STATE_WRITE_ATTEMPTS):
            updates = {}
            for tp in remaining:
                leadership = ctx.leadership(tp)
                new_state = None if leadership is None else change(tp, leadership.state)
                if new_state is not None:
                    updates[tp] = (new_state, leadership.zk_version)
            if not updates:
                return written
            versions = await self.run(self.zk.update_partition_states, updates, ctx.epoch_zk_version)
            conflicts = []
            for tp, zk_version in versions.items():
                if zk_version is None:
                    conflicts.append(tp)
                    continue
                ctx.put_leadership(tp, updates[tp][0], zk_version)
                written.append(tp)
            if not conflicts:
                return written
            found = await self.run(self.zk.get_partition_states, conflicts)
            remaining = []
            for tp in conflicts:
                if tp not in found:
                    continue  # the topic is gone
                state, zk_version = found[tp]
                if state.controller_epoch > ctx.epoch:
                    raise ControllerMovedError(f"{tp[0]}-{tp[1]} was written by controller epoch "
                                               f"{state.controller_epoch}")
                ctx.put_leadership(tp, state, zk_version)
                remaining.append(tp)
        log.error("Controller %d: gave up writing the states of %s after %d version conflicts",
                  self.controller_id, remaining, MAX_STATE_WRITE_ATTEMPTS)
        return written

    async def create(self, states: dict[TopicPartition, LeaderIsrAndControllerEpoch]
                     ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Create the state znodes of new partitions: (created, found existing and read into the context)."""
        ctx = self.context
        created = await self.run(self.zk.create_partition_states, states, ctx.epoch_zk_version)
        made = [tp for tp, ok in created.items() if ok]
        for tp in made:
            ctx.put_leadership(tp, states[tp], 0)
        existing = [tp for tp, ok in created.items() if not ok]
        if existing:  # written meanwhile by someone else: take what is there
            log.warning("Controller %d: partition states already existed for %s", self.controller_id, existing)
            for tp, (state, zk_version) in (await self.run(self.zk.get_partition_states, existing)).items():
                ctx.put_leadership(tp, state, zk_version)
        return made, existing

    def describe(self, tp: TopicPartition) -> str:
        leadership = self.context.leadership(tp)
        if leadership is None:
            return "no state"
        return describe_leader_and_isr(leadership.state, leadership.zk_version)

"""Delayed operations of the group coordinator (Kafka 2.8's DelayedJoin, InitialDelayedJoin, DelayedHeartbeat).

A DelayedJoin waits, under the group's id, until every member has rejoined (or the rebalance timeout
passes, dropping those that did not). The InitialDelayedJoin of an empty group first waits
group.initial.rebalance.delay.ms, and again while new members keep arriving, up to the rebalance
timeout, so a starting fleet lands in one generation. A DelayedSync (Kafka 2.8.1+) waits, after a join,
for every member's SyncGroup; at the rebalance timeout those that sent none leave and the group
rebalances, so a member that joined and then hung cannot keep the others waiting in SyncGroup. A
DelayedHeartbeat per member expires after the session timeout unless a heartbeat (or join/sync)
completed it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...purgatory import DelayedOperation

if TYPE_CHECKING:
    from .group_metadata import GroupMetadata, MemberMetadata


class GroupTransitions(Protocol):
    """What these operations call when they complete or expire: the group coordinator's transitions
    (coordinator.py implements them). Passed down, so this module does not import the coordinator."""

    def on_complete_join(self, group: "GroupMetadata") -> None: ...

    def schedule_join(self, group: "GroupMetadata", op: "DelayedJoin") -> None: ...

    def sync_wait_over(self, group: "GroupMetadata", generation_id: int) -> bool: ...

    def on_expire_pending_sync(self, group: "GroupMetadata", generation_id: int) -> None: ...

    def on_expire_heartbeat(self, group: "GroupMetadata", member: "MemberMetadata") -> None: ...


class DelayedJoin(DelayedOperation):
    def __init__(self, coordinator: GroupTransitions, group: "GroupMetadata", rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        if self.group.all_awaiting_join():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """Completes only by expiring; expires again (shorter) while members keep joining."""

    def __init__(self, coordinator: GroupTransitions, group: "GroupMetadata", delay_ms: int,
                 configured_delay_ms: int, remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.configured_delay_ms = configured_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        if group.new_member_added and self.remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.configured_delay_ms, self.remaining_ms)
            remaining = max(self.remaining_ms - delay, 0)
            self.coordinator.schedule_join(group, InitialDelayedJoin(self.coordinator, group, delay,
                                                                     self.configured_delay_ms, remaining))
        else:
            self.coordinator.on_complete_join(group)


class DelayedSync(DelayedOperation):
    def __init__(self, coordinator: GroupTransitions, group: "GroupMetadata", generation_id: int,
                 rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        if self.coordinator.sync_wait_over(self.group, self.generation_id):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)


class DelayedHeartbeat(DelayedOperation):
    def __init__(self, coordinator: GroupTransitions, group: "GroupMetadata", member: "MemberMetadata",
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.member = member

    def try_complete(self) -> bool:
        if self.member.heartbeat_satisfied or self.member.is_leaving:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member)

"""GroupCoordinator: group membership and offset commits for the groups this broker coordinates.

Kafka 2.8's GroupCoordinator, on one event loop: JoinGroup parks the member until the group's
DelayedJoin completes, SyncGroup parks followers until the leader's assignment is persisted, and
heartbeats keep a DelayedHeartbeat per member from expiring. Error codes and their order of checks
follow Kafka's so clients react as they do against Apache Kafka. Answers are plain results; the API
modules turn them into response messages.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....protocol.consumer_protocol import decode_subscription
from ....protocol.errors import (  # type: ignore[attr-defined]
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    KafkaError,
    MemberIdRequiredError,
    NonEmptyGroupError,
    ProtocolError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from ...purgatory import AsyncTimerDriver, DelayedOperationPurgatory, Timer
from .delayed_join import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from .group_metadata import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, GroupMetadata,
                             MemberMetadata)
from .metadata_manager import GroupMetadataManager, wall_ms
from .records import OffsetAndMetadata

if TYPE_CHECKING:
    from ...config import KafkaConfig
    from ...replica_manager import ReplicaManager

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass
class JoinResult:
    error_code: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error_code: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


class GroupCoordinator:
    def __init__(self, broker_id: int, config: KafkaConfig, replica_manager: ReplicaManager) -> None:
        self.manager = GroupMetadataManager(broker_id, config, replica_manager)
        self.manager.on_group_unloaded = self._on_group_unloaded
        self.min_session_ms: int = config.get("group.min.session.timeout.ms")
        self.max_session_ms: int = config.get("group.max.session.timeout.ms")
        self.initial_delay_ms: int = config.get("group.initial.rebalance.delay.ms")
        self.max_group_size: int = config.get("group.max.size")
        self.join_purgatory = DelayedOperationPurgatory("Rebalance", Timer())
        self.heartbeat_purgatory = DelayedOperationPurgatory("Heartbeat", Timer())
        self._drivers = [AsyncTimerDriver(self.join_purgatory.timer),
                         AsyncTimerDriver(self.heartbeat_purgatory.timer)]
        self._background: set[asyncio.Task] = set()

    def startup(self) -> None:
        for driver in self._drivers:
            driver.start()

    def shutdown(self) -> None:
        for driver in self._drivers:
            driver.shutdown()
        self.join_purgatory.shutdown()
        self.heartbeat_purgatory.shutdown()

    def on_leadership_change(self, led: list[tuple[str, int]], not_led: list[tuple[str, int]]) -> None:
        self.manager.on_leadership_change(led, not_led)

    # -- JoinGroup --------------------------------------------------------------------------------

    async def join_group(self, group_id: str, member_id: str, instance_id: str | None,
                         require_known_member_id: bool, client_id: str, client_host: str,
                         rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]]) -> JoinResult:
        try:
            self._validate_group(group_id)
            if not self.min_session_ms <= session_timeout_ms <= self.max_session_ms:
                raise InvalidSessionTimeoutError(f"session timeout {session_timeout_ms} ms is outside "
                                                 f"[{self.min_session_ms}, {self.max_session_ms}]")
            group = self.manager.get_group(group_id)
            if group is None:
                if member_id:
                    raise UnknownMemberIdError(f"group {group_id} is unknown")
                group = self.manager.get_or_create_group(group_id)
            if len(group.members) >= self.max_group_size and not group.has(member_id) \
                    and member_id not in group.pending_members:
                raise GroupMaxSizeReachedError(f"group {group_id} has reached group.max.size")
            if group.is_in(DEAD):
                raise CoordinatorNotAvailableError(f"group {group_id} is being unloaded")
            if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
                raise InconsistentGroupProtocolError(f"group {group_id} has no protocol in common with the member")
            member = MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                    session_timeout_ms, protocol_type, list(protocols))
            if not member_id:
                future = self._join_unknown_member(group, member, require_known_member_id)
            else:
                future = self._join_known_member(group, member)
        except KafkaError as exc:
            return JoinResult(exc.code, member_id)
        if isinstance(future, JoinResult):
            return future
        return await future

    def _join_unknown_member(self, group: GroupMetadata, member: MemberMetadata,
                             require_known_member_id: bool) -> "asyncio.Future | JoinResult":
        instance_id = member.group_instance_id
        # Kafka's generateMemberId: a static member's id starts with its instance id, a dynamic one's with the client id
        new_id = f"{member.client_id if instance_id is None else instance_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None and old_id in group.members:
                return self._rejoin_static_member(group, old_id, new_id, member)
            member.member_id = new_id
            return self._add_member_and_rebalance(group, member)
        if require_known_member_id:
            # KIP-394: the client retries with this id; until then it is pending, not a member.
            group.pending_members.add(new_id)
            member.member_id = new_id
            self._schedule_heartbeat(group, member)  # a pending member that never comes back expires
            return JoinResult(MemberIdRequiredError.code, new_id)
        member.member_id = new_id
        return self._add_member_and_rebalance(group, member)

    def _rejoin_static_member(self, group: GroupMetadata, old_id: str, new_id: str,
                              joining: MemberMetadata) -> "asyncio.Future | JoinResult":
        """A static member restarted: it takes over its old id's place; a stable group does not rebalance
        unless the protocol it would select changed (Kafka's updateStaticMemberAndRebalance)."""
        old = group.members[old_id]
        current_leader = group.leader_id
        if old.awaiting_join is not None and not old.awaiting_join.done():
            old.awaiting_join.set_result(JoinResult(FencedInstanceIdError.code, old_id))
            old.awaiting_join = None
        self._remove_heartbeat(group, old)
        member = group.replace_static_member(joining.group_instance_id or "", old_id, new_id)
        member.is_leaving = False
        previous_protocols = member.protocols
        member.protocols, member.client_id, member.client_host = joining.protocols, joining.client_id, joining.client_host
        member.session_timeout_ms, member.rebalance_timeout_ms = joining.session_timeout_ms, joining.rebalance_timeout_ms
        # As Kafka 2.8, a stable group rebalances only if the protocol it would select changes; new metadata alone
        # does not (a 3.1+ Java consumer's subscription carries its last generation: it differs at every restart).
        if group.is_in(STABLE) and group.select_protocol() == group.protocol_name:
            self._schedule_heartbeat(group, member)
            return asyncio.ensure_future(self._store_static_swap(group, member, old_id, previous_protocols,
                                                                 current_leader or ""))
        return self._update_member_and_rebalance(group, member, joining.protocols)

    async def _store_static_swap(self, group: GroupMetadata, member: MemberMetadata, old_id: str,
                                 previous_protocols: list[tuple[str, bytes]], current_leader: str) -> JoinResult:
        """Kafka persists the group with the member's new id before answering, so that a coordinator that loads
        the group later knows it (else that member's heartbeats would be FENCED_INSTANCE_ID there); if the write
        fails, the old id and protocols come back and the member gets the error, with no member id."""
        new_id = member.member_id
        code = await self.manager.store_group(group)
        if code:
            log.warning("Could not persist the metadata of group %s (error %d)", group.group_id, code)
            member.protocols = previous_protocols
            self._remove_heartbeat(group, member)  # the new id's expiration goes with it
            member = group.replace_static_member(member.group_instance_id or "", new_id, old_id)
            member.is_leaving = False
            self._schedule_heartbeat(group, member)
            return JoinResult(code, "", group.generation_id, group.protocol_type, group.protocol_name, current_leader)
        # Kafka answers no members and the leader id from before the swap, so that a restarted leader does not
        # compute an assignment a stable group would not hand out
        return JoinResult(0, new_id, group.generation_id, group.protocol_type, group.protocol_name, current_leader, [])

    def _join_known_member(self, group: GroupMetadata, joining: MemberMetadata) -> "asyncio.Future | JoinResult":
        member_id, instance_id = joining.member_id, joining.group_instance_id
        if member_id in group.pending_members:
            return self._add_member_and_rebalance(group, joining)
        if instance_id is not None and group.static_members.get(instance_id) not in (None, member_id):
            raise FencedInstanceIdError(f"instance {instance_id} has a newer member id")
        member = group.members.get(member_id)
        if member is None or group.is_in(EMPTY):
            raise UnknownMemberIdError(f"member {member_id} is not in group {group.group_id}")
        if group.is_in(PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, joining.protocols)
        if group.is_in(COMPLETING_REBALANCE):
            if member.matches(joining.protocols):
                # The member missed the join answer: it gets the current generation again.
                return self._current_generation(group, member, with_members=group.leader_id == member_id)
            return self._update_member_and_rebalance(group, member, joining.protocols)
        # Stable: the leader rejoining or changed metadata starts a rebalance.
        if group.leader_id == member_id or not member.matches(joining.protocols):
            return self._update_member_and_rebalance(group, member, joining.protocols)
        return self._current_generation(group, member, with_members=False)

    def _current_generation(self, group: GroupMetadata, member: MemberMetadata, with_members: bool) -> JoinResult:
        members = self._join_members(group) if with_members else []
        return JoinResult(0, member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
                          group.leader_id or "", members)

    def _join_members(self, group: GroupMetadata) -> list[tuple[str, str | None, bytes]]:
        protocol = group.protocol_name or ""
        return [(m.member_id, m.group_instance_id, m.metadata_for(protocol)) for m in group.members.values()]

    def _add_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata) -> asyncio.Future:
        member.is_new = True
        if group.is_in(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # the initial delay waits a bit longer for more members
        group.add(member)
        member.awaiting_join = asyncio.get_running_loop().create_future()
        future = member.awaiting_join
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member.member_id}")
        return future

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]]) -> asyncio.Future:
        member.protocols = list(protocols)
        if member.awaiting_join is not None and not member.awaiting_join.done():
            member.awaiting_join.set_result(JoinResult(RebalanceInProgressError.code, member.member_id))
        member.awaiting_join = asyncio.get_running_loop().create_future()
        future = member.awaiting_join
        self._maybe_prepare_rebalance(group, f"updating metadata of member {member.member_id}")
        return future

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            self._prepare_rebalance(group, reason)
        elif group.is_in(PREPARING_REBALANCE):
            self.join_purgatory.check_and_complete(group.group_id)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_in(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment(group, RebalanceInProgressError.code)
        self._remove_sync_expiration(group)
        if group.is_in(EMPTY):
            delay = self.initial_delay_ms
            op: DelayedJoin = InitialDelayedJoin(self, group, delay, delay,
                                                 max(group.rebalance_timeout_ms - delay, 0))
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms)
        group.transition_to(PREPARING_REBALANCE, wall_ms())
        log.info("Preparing to rebalance group %s in state PreparingRebalance with old generation %d "
                 "(reason: %s)", group.group_id, group.generation_id, reason)
        self.schedule_join(group, op)

    def schedule_join(self, group: GroupMetadata, op: DelayedJoin) -> None:
        self.join_purgatory.try_complete_else_watch(op, [group.group_id])

    def on_complete_join(self, group: GroupMetadata) -> None:
        """The join phase ends (Kafka 2.8's onCompleteJoin): drop dynamic members that did not rejoin
        (static ones keep their place), start the next generation, answer all."""
        if group.is_in(DEAD):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                self._remove_heartbeat(group, member)
                group.remove(member.member_id)
        if group.members and not group.maybe_elect_new_joined_leader():
            # Only static members are left and none rejoined: wait again, until their sessions expire.
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self.schedule_join(group, DelayedJoin(self, group, group.rebalance_timeout_ms))
            return
        group.init_next_generation(wall_ms())
        if group.is_in(EMPTY):
            log.info("Group %s with generation %d is now empty", group.group_id, group.generation_id)
            self._in_background(self._store_group_quietly(group))
            return
        log.info("Stabilized group %s generation %d with %d members (protocol %s)", group.group_id,
                 group.generation_id, len(group.members), group.protocol_name)
        all_members = self._join_members(group)
        for member in group.members.values():
            result = JoinResult(0, member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
                                group.leader_id or "", all_members if member.member_id == group.leader_id else [])
            if member.awaiting_join is not None and not member.awaiting_join.done():
                member.awaiting_join.set_result(result)
            member.awaiting_join = None
            member.is_new = False
            self._schedule_heartbeat(group, member)
        group.pending_sync_members = set(group.members)
        self.join_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms), [("sync", group.group_id)])

    def sync_wait_over(self, group: GroupMetadata, generation_id: int) -> bool:
        """Kafka's tryCompletePendingSync: the DelayedSync of ``generation_id`` has nothing left to wait for."""
        if generation_id != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
            return True
        return not group.pending_sync_members

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        """Members that joined but sent no SyncGroup within the rebalance timeout leave; the rest rebalance."""
        if self.sync_wait_over(group, generation_id):
            return
        missing = sorted(group.pending_sync_members)
        for member_id in missing:
            member = group.members[member_id]
            self._remove_heartbeat(group, member)
            group.remove(member_id)
        self._prepare_rebalance(group, f"removing {missing} on pending sync request expiration")

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        self.join_purgatory.check_and_complete(("sync", group.group_id))

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        self.join_purgatory.check_and_complete(("sync", group.group_id))

    # -- SyncGroup --------------------------------------------------------------------------------

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        try:
            group = self._known_group(group_id)
            member = self._check_member(group, member_id, instance_id)
            if generation_id != group.generation_id:
                raise IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
            if (protocol_type is not None and protocol_type != group.protocol_type) or \
                    (protocol_name is not None and protocol_name != group.protocol_name):
                raise InconsistentGroupProtocolError("the protocol does not match the group's")
            if group.is_in(PREPARING_REBALANCE):
                raise RebalanceInProgressError(f"group {group_id} is rebalancing")
            if group.is_in(STABLE):
                self._remove_pending_sync_member(group, member_id)
                self._schedule_heartbeat(group, member)
                return SyncResult(0, member.assignment, group.protocol_type, group.protocol_name)
        except KafkaError as exc:
            return SyncResult(exc.code)
        # CompletingRebalance: wait for the leader's assignment to be persisted.
        member.awaiting_sync = asyncio.get_running_loop().create_future()
        future = member.awaiting_sync
        self._remove_pending_sync_member(group, member_id)
        self._schedule_heartbeat(group, member)
        if member_id == group.leader_id:
            self._in_background(self._store_assignment(group, assignments))
        code, assignment = await future
        return SyncResult(code, assignment, group.protocol_type, group.protocol_name)

    async def _store_assignment(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        generation = group.generation_id
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        code = await self.manager.store_group(group)
        if not group.is_in(COMPLETING_REBALANCE) or group.generation_id != generation:
            return  # a rebalance started meanwhile and has answered the waiting members
        if code:
            self._reset_and_propagate_assignment(group, code)
            self._maybe_prepare_rebalance(group, "failed to persist the group's assignment")
            return
        self._propagate_assignment(group, 0)
        group.transition_to(STABLE, wall_ms())

    def _reset_and_propagate_assignment(self, group: GroupMetadata, code: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, code)

    def _propagate_assignment(self, group: GroupMetadata, code: int) -> None:
        for member in group.members.values():
            if member.awaiting_sync is not None and not member.awaiting_sync.done():
                member.awaiting_sync.set_result((code, member.assignment if code == 0 else b""))
            member.awaiting_sync = None
            self._schedule_heartbeat(group, member)

    # -- Heartbeat and LeaveGroup -----------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> int:
        try:
            group = self._known_group(group_id)
            member = self._check_member(group, member_id, instance_id)
            if generation_id != group.generation_id:
                raise IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
            self._schedule_heartbeat(group, member)
            return RebalanceInProgressError.code if group.is_in(PREPARING_REBALANCE) else 0
        except KafkaError as exc:
            return exc.code

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, error per leaving member)."""
        try:
            self._validate_group(group_id)
            group = self.manager.get_group(group_id)
            if group is None:
                return 0, [UnknownMemberIdError.code for _ in leaving]
            if group.is_in(DEAD):
                raise CoordinatorNotAvailableError(f"group {group_id} is being unloaded")
        except KafkaError as exc:
            return exc.code, [exc.code for _ in leaving]
        codes = []
        for member_id, instance_id in leaving:
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    codes.append(UnknownMemberIdError.code)
                    continue
                if member_id and member_id != known:
                    codes.append(FencedInstanceIdError.code)
                    continue
                member_id = known
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.join_purgatory.check_and_complete(group.group_id)
                codes.append(0)
                continue
            member = group.members.get(member_id)
            if member is None:
                codes.append(UnknownMemberIdError.code)
                continue
            member.is_leaving = True
            self._remove_member_and_update_group(group, member, f"member {member_id} left")
            codes.append(0)
        return 0, codes

    def on_expire_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        if member.member_id in group.pending_members and member.member_id not in group.members:
            log.info("Pending member %s in group %s has been removed after session timeout expiration",
                     member.member_id, group.group_id)
            group.pending_members.discard(member.member_id)
            if group.is_in(PREPARING_REBALANCE):
                self.join_purgatory.check_and_complete(group.group_id)
            return
        if group.members.get(member.member_id) is not member or group.is_in(DEAD):
            return
        if member.awaiting_sync is not None or (member.awaiting_join is not None and not member.is_new):
            return  # Kafka's shouldKeepAlive: a member waiting on the coordinator is not expired
        log.info("Member %s in group %s has failed, removing it from the group", member.member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"session of {member.member_id} expired")

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        if member.awaiting_join is not None and not member.awaiting_join.done():
            member.awaiting_join.set_result(JoinResult(UnknownMemberIdError.code, member.member_id))
        self._remove_heartbeat(group, member)
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_in(PREPARING_REBALANCE):
            self.join_purgatory.check_and_complete(group.group_id)

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        """Complete the member's pending heartbeat expiration and schedule the next one."""
        key = (group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        op = DelayedHeartbeat(self, group, member, timeout_ms or member.session_timeout_ms)
        self.heartbeat_purgatory.try_complete_else_watch(op, [key])

    def _remove_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.is_leaving = True
        self.heartbeat_purgatory.check_and_complete((group.group_id, member.member_id))

    # -- offsets ----------------------------------------------------------------------------------

    async def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
                             offsets: dict[tuple[str, int], OffsetAndMetadata]) -> dict[tuple[str, int], int]:
        try:
            self._validate_group(group_id, allow_empty=True)
            group = self.manager.get_group(group_id)
            if group is None:
                if generation_id >= 0:
                    raise IllegalGenerationError(f"group {group_id} is unknown at generation {generation_id}")
                group = self.manager.get_or_create_group(group_id)  # a simple consumer (assign + commit)
            if group.is_in(DEAD):
                raise CoordinatorNotAvailableError(f"group {group_id} is being unloaded")
            if instance_id is not None and group.static_members.get(instance_id) not in (None, member_id):
                raise FencedInstanceIdError(f"instance {instance_id} has a newer member id")
            if not (generation_id < 0 and group.is_in(EMPTY)):
                if group.is_in(COMPLETING_REBALANCE):
                    raise RebalanceInProgressError(f"group {group_id} is rebalancing")
                member = group.members.get(member_id)
                if member is None:
                    raise UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
                if generation_id != group.generation_id:
                    raise IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
                self._schedule_heartbeat(group, member)
        except KafkaError as exc:
            return {tp: exc.code for tp in offsets}
        return await self.manager.store_offsets(group, offsets)

    async def commit_transactional_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                           member_id: str, instance_id: str | None, generation_id: int,
                                           offsets: dict[tuple[str, int], OffsetAndMetadata]
                                           ) -> dict[tuple[str, int], int]:
        """TxnOffsetCommit (Kafka 2.8's handleTxnCommitOffsets): member and generation are checked only
        when given; the offsets stay pending until the producer's transaction ends."""
        try:
            self._validate_group(group_id)
            group = self.manager.get_or_create_group(group_id)
            if group.is_in(DEAD):
                raise CoordinatorNotAvailableError(f"group {group_id} is being unloaded")
            if instance_id is not None and group.static_members.get(instance_id) not in (None, member_id):
                raise FencedInstanceIdError(f"instance {instance_id} has a newer member id")
            if member_id and not group.has(member_id):
                raise UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
            if generation_id >= 0 and generation_id != group.generation_id:
                raise IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
        except KafkaError as exc:
            return {tp: exc.code for tp in offsets}
        return await self.manager.store_transactional_offsets(group, producer_id, producer_epoch, offsets)

    def complete_transactional_offsets(self, producer_id: int, committed: bool, partition_index: int) -> int:
        """A COMMIT/ABORT marker of ``producer_id`` was appended to __consumer_offsets-``partition_index``
        (called by the leader's WriteTxnMarkers handler): its pending offsets in that partition's groups
        become visible or are dropped (Kafka's handleTxnCompletion). Returns how many became visible."""
        applied = 0
        for group in self.manager.local_groups():
            if producer_id in group.pending_txn_offsets and self.manager.partition_for(group.group_id) == partition_index:
                applied += group.complete_pending_txn_offsets(producer_id, committed)
        return applied

    def unstable_partitions(self, group_id: str, partitions: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """Partitions with transactional offsets awaiting their marker: OffsetFetch with require_stable
        answers UNSTABLE_OFFSET_COMMIT for them (KIP-447), so the consumer waits for the transaction."""
        group = self.manager.get_group(group_id)
        if group is None or not group.pending_txn_offsets:
            return set()
        return {tp for tp in partitions if group.has_pending_txn_offsets(tp)}

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        """Committed offsets (None where nothing is committed); all of the group's when ``partitions`` is None."""
        self._validate_group(group_id, allow_empty=True)
        group = self.manager.get_group(group_id)
        committed = group.offsets if group is not None else {}
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> tuple[int, dict]:
        """OffsetDelete: (group error, error per partition)."""
        try:
            self._validate_group(group_id)
            group = self.manager.get_group(group_id)
            if group is None or group.is_in(DEAD):
                raise GroupIdNotFoundError(f"group {group_id} does not exist")
        except KafkaError as exc:
            return exc.code, {}
        subscribed = self._subscribed_topics(group)
        errors = {tp: GroupSubscribedToTopicError.code for tp in partitions if tp[0] in subscribed}
        removable = [tp for tp in partitions if tp not in errors and tp in group.offsets]
        code = await self.manager.remove_offsets(group, removable)
        for tp in partitions:
            errors.setdefault(tp, code)
        return 0, errors

    @staticmethod
    def _subscribed_topics(group: GroupMetadata) -> set[str]:
        """Topics of the consumer protocol subscriptions of an active group (ConsumerProtocol v0+)."""
        if group.is_in(EMPTY) or group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
            return set()
        topics: set[str] = set()
        for member in group.members.values():
            try:
                topics.update(_subscription_topics(member.metadata_for(group.protocol_name)))
            except (KeyError, ProtocolError):
                continue
        return topics

    async def cleanup_group_metadata(self) -> int:
        """The periodic offsets.retention.check.interval.ms job: expired offsets and dead empty groups."""
        return await self.manager.cleanup_expired_offsets()

    async def handle_deleted_partitions(self, partitions: list[tuple[str, int]]) -> int:
        """Kafka's handleDeletedPartitions: the committed offsets of deleted topics' partitions go, with
        tombstones (and so do groups left empty without offsets); returns how many offsets went."""
        deleted = set(partitions)
        removed = await self.manager.cleanup_group_metadata(lambda group: [tp for tp in group.offsets if tp in deleted])
        if removed:
            log.info("Removed %d offsets associated with deleted partitions: %s", removed,
                     ", ".join(f"{t}-{p}" for t, p in sorted(deleted)))
        return removed

    # -- groups -----------------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupMetadata | None:
        self._validate_group(group_id, allow_empty=True)
        return self.manager.get_group(group_id)

    def list_groups(self) -> list[GroupMetadata]:
        return self.manager.local_groups()

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        for group_id in group_ids:
            try:
                self._validate_group(group_id, allow_empty=True)
                group = self.manager.get_group(group_id)
                if group is None or group.is_in(DEAD):
                    raise GroupIdNotFoundError(f"group {group_id} does not exist")
                if not group.is_in(EMPTY):
                    raise NonEmptyGroupError(f"group {group_id} is not empty")
            except KafkaError as exc:
                results[group_id] = exc.code
                continue
            code = await self.manager.remove_group(group)
            if code == 0 and self.manager.get_group(group_id) is group:
                group.transition_to(DEAD, wall_ms())
                del self.manager.groups[group_id]
            results[group_id] = code
        return results

    # -- helpers ----------------------------------------------------------------------------------

    def _validate_group(self, group_id: str, allow_empty: bool = False) -> None:
        """Kafka's isValidGroupId: OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups accept the empty
        group id (``allow_empty``), the membership APIs do not."""
        if not group_id and not allow_empty:
            raise InvalidGroupIdError("the group id is empty")
        self.manager.check_coordinator(group_id)

    def _known_group(self, group_id: str) -> GroupMetadata:
        self._validate_group(group_id)
        group = self.manager.get_group(group_id)
        if group is None:
            raise UnknownMemberIdError(f"group {group_id} is unknown")
        if group.is_in(DEAD):
            raise CoordinatorNotAvailableError(f"group {group_id} is being unloaded")
        return group

    @staticmethod
    def _check_member(group: GroupMetadata, member_id: str, instance_id: str | None) -> MemberMetadata:
        if instance_id is not None and group.static_members.get(instance_id) not in (None, member_id):
            raise FencedInstanceIdError(f"instance {instance_id} has a newer member id")
        member = group.members.get(member_id)
        if member is None or group.is_in(EMPTY):
            raise UnknownMemberIdError(f"member {member_id} is not in group {group.group_id}")
        return member

    async def _store_group_quietly(self, group: GroupMetadata) -> None:
        code = await self.manager.store_group(group)
        if code:
            log.warning("Could not persist the metadata of group %s (error %d)", group.group_id, code)

    def _in_background(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        """Members waiting on a group whose partition moved learn NOT_COORDINATOR and find the new one."""
        for member in group.members.values():
            if member.awaiting_join is not None and not member.awaiting_join.done():
                member.awaiting_join.set_result(JoinResult(16, member.member_id))
            if member.awaiting_sync is not None and not member.awaiting_sync.done():
                member.awaiting_sync.set_result((16, b""))
            self._remove_heartbeat(group, member)
        self.join_purgatory.cancel_for_key(group.group_id)
        self.join_purgatory.cancel_for_key(("sync", group.group_id))


def _subscription_topics(data: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription (any version; newer ones as Kafka reads them)."""
    return decode_subscription(data).topics

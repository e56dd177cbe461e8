"""One consumer group's state (Kafka 2.8's GroupMetadata and MemberMetadata).

States and their legal predecessors are Kafka's: Empty -> PreparingRebalance -> CompletingRebalance
-> Stable, any of them -> Dead when the group is unloaded or deleted. The coordinator drives the
transitions; this module only keeps the data consistent and picks the protocol all members support.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from .records import GroupRecord, MemberRecord, OffsetAndMetadata

EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

_VALID_PREVIOUS = {
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    EMPTY: {PREPARING_REBALANCE},
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
}


@dataclass
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: asyncio.Future | None = None   # resolves to the JoinGroup answer
    awaiting_sync: asyncio.Future | None = None   # resolves to (error_code, assignment)
    is_new: bool = False
    heartbeat_satisfied: bool = False
    is_leaving: bool = False

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names if name in candidates)

    def to_record(self) -> MemberRecord:
        return MemberRecord(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                            self.rebalance_timeout_ms, self.session_timeout_ms, b"", self.assignment)


@dataclass
class GroupMetadata:
    group_id: str
    state: str = EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_members: set[str] = field(default_factory=set)       # got MEMBER_ID_REQUIRED, not joined yet
    pending_sync_members: set[str] = field(default_factory=set)  # in this generation, no SyncGroup yet
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    new_member_added: bool = False
    current_state_timestamp: int = -1
    # Transactional offsets (TxnOffsetCommit) waiting for their marker: producer id -> partition ->
    # (offset, base offset of its batch in __consumer_offsets). Invisible to OffsetFetch until committed.
    pending_txn_offsets: dict[int, dict[tuple[str, int], tuple[OffsetAndMetadata, int]]] = field(default_factory=dict)
    # Where each committed offset was appended: a transaction's offsets only replace older ones (Kafka's olderThan).
    offset_positions: dict[tuple[str, int], int] = field(default_factory=dict)

    # -- transactional offsets --------------------------------------------------------------------

    def has_offsets(self) -> bool:
        """Kafka's hasOffsets: committed or waiting for a transaction."""
        return bool(self.offsets) or bool(self.pending_txn_offsets)

    def has_pending_txn_offsets(self, tp: tuple[str, int]) -> bool:
        return any(tp in pending for pending in self.pending_txn_offsets.values())

    def complete_pending_txn_offsets(self, producer_id: int, committed: bool) -> int:
        """The producer's transaction ended (Kafka's completePendingTxnOffsetCommit); returns how many
        offsets became visible."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not pending or not committed:
            return 0
        applied = 0
        for tp, (offset, position) in pending.items():
            if self.offset_positions.get(tp, -1) < position:
                self.offsets[tp] = offset
                self.offset_positions[tp] = position
                applied += 1
        return applied

    # -- state ------------------------------------------------------------------------------------

    def is_in(self, state: str) -> bool:
        return self.state == state

    def transition_to(self, state: str, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state} -> {state}")
        self.state = state
        self.current_state_timestamp = now_ms

    # -- members ----------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """A static member came back with a new member id (Kafka's replaceGroupInstance)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def all_awaiting_join(self) -> bool:
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka's maybeElectNewJoinedLeader: a leader that did not rejoin is replaced by a member that did;
        False when no member rejoined (or there is no leader)."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is None:
            return False
        if leader.awaiting_join is not None:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join is not None), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        sets = [set(m.protocol_names) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & set(protocols))

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its first choice among the protocols all support."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"group {self.group_id}: no protocol supported by every member")
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def init_next_generation(self, now_ms: int) -> None:
        if self.members:
            self.generation_id += 1
            self.protocol_name = self.select_protocol()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.generation_id += 1
            self.protocol_name = None
            self.transition_to(EMPTY, now_ms)

    # -- persistence ------------------------------------------------------------------------------

    def to_record(self) -> GroupRecord:
        members = []
        for m in self.members.values():
            record = m.to_record()
            if self.protocol_name is not None:
                record.subscription = m.metadata_for(self.protocol_name)
            members.append(record)
        return GroupRecord(self.protocol_type or "", self.generation_id, self.protocol_name, self.leader_id,
                           self.current_state_timestamp, members)

    @classmethod
    def from_record(cls, group_id: str, record: GroupRecord) -> "GroupMetadata":
        """A loaded group: Empty without members, else Stable with the stored members."""
        group = cls(group_id, state=STABLE if record.members else EMPTY, protocol_type=record.protocol_type or None,
                    protocol_name=record.protocol, generation_id=record.generation, leader_id=record.leader,
                    current_state_timestamp=record.current_state_timestamp)
        for m in record.members:
            protocols = [(record.protocol or "", m.subscription)]
            member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout, m.session_timeout, record.protocol_type, protocols,
                                    m.assignment)
            group.members[m.member_id] = member
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        return group

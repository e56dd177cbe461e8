"""Partition assignors run by the group leader: "range", "roundrobin" and "sticky" (eager protocol).

An assignor sees every member's ``Subscription`` (``protocol.consumer_protocol``) and the partition count
of each subscribed topic, and answers ``{member_id: {topic: [partition, ...]}}``. Members are ordered as
Kafka's ``MemberInfo.compareTo`` (2.4+, KIP-345): static members first by group.instance.id, then dynamic
ones by member id, so every client library computes the same assignment for the same group.

``resolve_assignors`` turns the consumer's ``partition_assignment_strategy`` (names, our classes or
instances, or kafka-python's assignor classes, matched by their ``name``) into assignor instances.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Iterable

from ...protocol.consumer_protocol import Subscription

Assignment = dict[str, dict[str, list[int]]]  # member id -> topic -> partitions


@dataclass
class MemberSubscription:
    member_id: str
    group_instance_id: str | None
    subscription: Subscription


def member_order(member: MemberSubscription) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members (by instance id) before dynamic ones (by member id)."""
    if member.group_instance_id is not None:
        return 0, member.group_instance_id
    return 1, member.member_id


class PartitionAssignor:
    """Base: the embedded protocol's name, its user data and the leader's computation."""

    name = ""

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return None

    def on_assignment(self, partitions: dict[str, list[int]], generation: int) -> None:
        """This member's new assignment (the sticky assignor remembers it for its next subscription)."""

    def assign(self, partitions_per_topic: dict[str, int], members: list[MemberSubscription]) -> Assignment:
        raise NotImplementedError

    @staticmethod
    def _empty(members: list[MemberSubscription]) -> Assignment:
        return {m.member_id: {} for m in members}


def _add(assignment: Assignment, member_id: str, topic: str, partition: int) -> None:
    assignment[member_id].setdefault(topic, []).append(partition)


class RangeAssignor(PartitionAssignor):
    """Per topic: its partitions in ranges over the members subscribed to it, in member order; the
    first ``count % members`` members get one extra (Kafka's RangeAssignor)."""

    name = "range"

    def assign(self, partitions_per_topic: dict[str, int], members: list[MemberSubscription]) -> Assignment:
        assignment = self._empty(members)
        ordered = sorted(members, key=member_order)
        for topic in sorted(partitions_per_topic):
            count = partitions_per_topic[topic]
            consumers = [m.member_id for m in ordered if topic in m.subscription.topics]
            if not consumers or count <= 0:
                continue
            per_member, extra = divmod(count, len(consumers))
            for i, member_id in enumerate(consumers):
                start = per_member * i + min(i, extra)
                length = per_member + (1 if i < extra else 0)
                for partition in range(start, start + length):
                    _add(assignment, member_id, topic, partition)
        return assignment


class RoundRobinAssignor(PartitionAssignor):
    """All partitions sorted by topic and partition, dealt to the members in order, skipping a member
    not subscribed to the partition's topic (Kafka's RoundRobinAssignor)."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: dict[str, int], members: list[MemberSubscription]) -> Assignment:
        assignment = self._empty(members)
        ordered = sorted(members, key=member_order)
        if not ordered:
            return assignment
        subscribed = {m.member_id: set(m.subscription.topics) for m in ordered}
        wanted = set().union(*subscribed.values())
        turn = 0
        for topic in sorted(t for t in partitions_per_topic if t in wanted):
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscribed[ordered[turn % len(ordered)].member_id]:
                    turn += 1
                _add(assignment, ordered[turn % len(ordered)].member_id, topic, partition)
                turn += 1
        return assignment


# --- sticky ----------------------------------------------------------------------------------------

def encode_sticky_user_data(partitions: dict[str, list[int]], generation: int) -> bytes:
    """StickyAssignorUserData v1 (Java's and kafka-python's): previous assignment and its generation."""
    out = [struct.pack(">i", len(partitions))]
    for topic in sorted(partitions):
        raw = topic.encode("utf-8")
        out.append(struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(partitions[topic])))
        out.extend(struct.pack(">i", p) for p in partitions[topic])
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def _parse_sticky_user_data(data: bytes, pos: int) -> tuple[dict[str, list[int]], int]:
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if not 0 <= topics <= len(data):
        raise ValueError("bad topic count")
    found: dict[str, list[int]] = {}
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if length < 0 or pos + length > len(data):
            raise ValueError("bad topic name")
        topic = bytes(data[pos:pos + length]).decode("utf-8")
        pos += length
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if not 0 <= count <= len(data):
            raise ValueError("bad partition count")
        found[topic] = list(struct.unpack_from(f">{count}i", data, pos))
        pos += 4 * count
    if pos == len(data):
        return found, -1  # v0: no generation
    if pos + 4 != len(data):
        raise ValueError("trailing bytes")
    return found, struct.unpack_from(">i", data, pos)[0]


def decode_sticky_user_data(data: bytes) -> tuple[dict[str, list[int]], int]:
    """(previous assignment, generation -1 when absent). Java writes the struct bare; kafka-python 3
    prefixes an int16 version, so that layout is tried when the bare one does not fit exactly.
    Raises ValueError when neither does."""
    try:
        return _parse_sticky_user_data(data, 0)
    except (struct.error, ValueError):
        pass
    try:
        return _parse_sticky_user_data(data, 2)
    except struct.error as exc:
        raise ValueError(f"unreadable sticky assignor user data: {exc}") from None


class StickyAssignor(PartitionAssignor):
    """Kafka's (eager) sticky assignor: as balanced as the subscriptions allow, moving as few partitions
    as possible. Previous ownership comes from the StickyAssignorUserData (Java, kafka-python), else from
    Subscription v1 owned_partitions; a partition claimed by two members goes to the higher generation.

    The steps follow Java's AbstractStickyAssignor: keep valid owned partitions up to each member's
    quota, give unowned partitions to the least loaded eligible member (partitions with the fewest
    eligible members first), then move partitions from the most to the least loaded member while that
    narrows the gap. Java iterates hash maps where we sort, so ties may resolve differently; balance and
    stickiness are the same."""

    name = "sticky"

    def __init__(self) -> None:
        self._previous: dict[str, list[int]] = {}
        self._generation = -1

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return encode_sticky_user_data(self._previous, self._generation)

    def on_assignment(self, partitions: dict[str, list[int]], generation: int) -> None:
        self._previous = {t: sorted(ps) for t, ps in partitions.items() if ps}
        self._generation = generation

    @staticmethod
    def _owned(member: MemberSubscription) -> tuple[list[tuple[str, int]], int]:
        sub = member.subscription
        if sub.user_data:
            try:
                partitions, generation = decode_sticky_user_data(sub.user_data)
                return [(t, p) for t in sorted(partitions) for p in partitions[t]], generation
            except ValueError:
                pass
        return [(t, p) for t in sorted(sub.owned_partitions) for p in sub.owned_partitions[t]], -1

    def assign(self, partitions_per_topic: dict[str, int], members: list[MemberSubscription]) -> Assignment:
        ordered = sorted(members, key=member_order)
        ids = [m.member_id for m in ordered]
        subscribed = {m.member_id: set(m.subscription.topics) for m in ordered}
        eligible: dict[tuple[str, int], list[str]] = {}
        for topic in sorted(partitions_per_topic):
            for partition in range(partitions_per_topic[topic]):
                who = [mid for mid in ids if topic in subscribed[mid]]
                if who:
                    eligible[(topic, partition)] = who
        # previous owners: a partition claimed twice goes to the claim of the higher generation
        claims: dict[tuple[str, int], tuple[int, str]] = {}
        for member in ordered:
            owned, generation = self._owned(member)
            for tp in owned:
                if tp in eligible and member.member_id in eligible[tp]:
                    if tp not in claims or generation > claims[tp][0]:
                        claims[tp] = (generation, member.member_id)
        current: dict[str, list[tuple[str, int]]] = {mid: [] for mid in ids}
        for tp in sorted(claims):
            current[claims[tp][1]].append(tp)
        # quota: when everyone may take everything, nobody keeps more than ceil(total / members)
        if ids:
            quota = -(-len(eligible) // len(ids))
            for mid in ids:
                if len(current[mid]) > quota:
                    current[mid] = current[mid][:quota]
        taken = {tp for tps in current.values() for tp in tps}
        position = {mid: i for i, mid in enumerate(ids)}
        unassigned = sorted((tp for tp in eligible if tp not in taken), key=lambda tp: (len(eligible[tp]), tp))
        for tp in unassigned:
            target = min(eligible[tp], key=lambda mid: (len(current[mid]), position[mid]))
            current[target].append(tp)
        self._balance(current, eligible, position)
        assignment = self._empty(members)
        for mid, tps in current.items():
            for topic, partition in sorted(tps):
                _add(assignment, mid, topic, partition)
        return assignment

    @staticmethod
    def _balance(current: dict[str, list[tuple[str, int]]], eligible: dict[tuple[str, int], list[str]],
                 position: dict[str, int]) -> None:
        """Move partitions from loaded to lightly loaded members while that narrows a gap of 2 or more;
        the most recently added partitions (not previously owned) move first."""
        for _ in range(sum(len(tps) for tps in current.values()) ** 2 + 1):  # bounded: each move narrows
            moved = False
            for source in sorted(current, key=lambda mid: (-len(current[mid]), position[mid])):
                for tp in reversed(current[source]):
                    targets = [mid for mid in eligible[tp] if len(current[mid]) + 1 < len(current[source])]
                    if targets:
                        target = min(targets, key=lambda mid: (len(current[mid]), position[mid]))
                        current[source].remove(tp)
                        current[target].append(tp)
                        moved = True
                        break
                if moved:
                    break
            if not moved:
                return


_BY_NAME = {cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor)}
DEFAULT_STRATEGY = (RangeAssignor, RoundRobinAssignor)  # kafka-python's default order


def resolve_assignors(strategy: Iterable[Any]) -> list[PartitionAssignor]:
    """Assignor instances in preference order from names, classes or instances (ours or kafka-python's)."""
    found: list[PartitionAssignor] = []
    for item in strategy:
        if isinstance(item, PartitionAssignor):
            found.append(item)
            continue
        if isinstance(item, type) and issubclass(item, PartitionAssignor):
            found.append(item())
            continue
        name = item if isinstance(item, str) else getattr(item, "name", None)
        cls = _BY_NAME.get(name) if isinstance(name, str) else None
        if cls is None:
            raise ValueError(f"partition_assignment_strategy: unknown assignor {item!r}; "
                             f"accepted: {', '.join(sorted(_BY_NAME))} (names or assignor classes)")
        found.append(cls())
    if not found:
        raise ValueError("partition_assignment_strategy must name at least one assignor")
    if len({a.name for a in found}) != len(found):
        raise ValueError("partition_assignment_strategy lists an assignor twice")
    return found

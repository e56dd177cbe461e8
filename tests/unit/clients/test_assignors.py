"""The partition assignors: Kafka's documented examples, cross-checks with kafka-python's range and roundrobin
(which follow Java's), and the sticky assignor's balance and stickiness."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from odradek.clients.group.assignors import (
    MemberSubscription, RangeAssignor, RoundRobinAssignor, StickyAssignor, decode_sticky_user_data,
    encode_sticky_user_data, resolve_assignors,
)
from odradek.protocol.consumer_protocol import Subscription


def member(member_id: str, topics, instance: str | None = None, user_data: bytes | None = None,
           owned: dict | None = None) -> MemberSubscription:
    return MemberSubscription(member_id, instance, Subscription(1, sorted(topics), user_data, owned or {}))


def flat(assignment: dict[str, list[int]]) -> list[tuple[str, int]]:
    return sorted((t, p) for t, ps in assignment.items() for p in ps)


def test_range_example_from_kafkas_javadoc():
    members = [member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"])]
    got = RangeAssignor().assign({"t0": 3, "t1": 3}, members)
    assert got == {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}}


def test_roundrobin_example_from_kafkas_javadoc_with_unequal_subscriptions():
    members = [member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"])]
    got = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, members)
    assert got == {"C0": {"t0": [0]}, "C1": {"t1": [0]}, "C2": {"t1": [1], "t2": [0, 1, 2]}}


def test_static_members_come_first_ordered_by_instance_id():
    members = [member("a-dynamic", ["t"]), member("z-static", ["t"], instance="i1"),
               member("b-static", ["t"], instance="i2")]
    got = RangeAssignor().assign({"t": 3}, members)
    assert got == {"z-static": {"t": [0]}, "b-static": {"t": [1]}, "a-dynamic": {"t": [2]}}


def test_members_of_unknown_topics_get_nothing_and_every_member_has_an_entry():
    members = [member("m1", ["missing"]), member("m2", ["t"])]
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor()):
        got = assignor.assign({"t": 2}, members)
        assert got == {"m1": {}, "m2": {"t": [0, 1]}}, assignor.name


def _kafka_python_assign(cls, partitions_per_topic, members):
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(range(partitions_per_topic[t]))
                              if t in partitions_per_topic else None)
    kp_members = [SimpleNamespace(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                  metadata=SimpleNamespace(topics=list(m.subscription.topics))) for m in members]
    result = cls.assign(cluster, kp_members)
    return {mid: {t: list(ps) for t, ps in a.assigned_partitions if ps} for mid, a in result.items()}


@pytest.mark.parametrize("seed", range(40))
def test_range_and_roundrobin_agree_with_kafka_python(seed):
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    rng = random.Random(seed)
    topics = {f"topic-{i}": rng.randint(1, 12) for i in range(rng.randint(1, 4))}
    members = []
    statics = rng.randint(0, 2)
    for i in range(rng.randint(1, 6)):
        chosen = rng.sample(sorted(topics), rng.randint(1, len(topics)))
        # kafka-python groups static members with itertools.groupby: list them first, as one run
        members.append(member(f"member-{rng.random():.6f}", chosen, instance=f"inst-{i}" if i < statics else None))
    # kafka-python's roundrobin cannot skip an unsubscribed member (it crashes): compare it on equal
    # subscriptions only; the javadoc example above covers unequal ones
    everything = [member(m.member_id, sorted(topics), m.group_instance_id) for m in members]
    for ours, theirs, group in ((RangeAssignor(), RangePartitionAssignor, members),
                                (RoundRobinAssignor(), RoundRobinPartitionAssignor, everything)):
        got = {mid: {t: ps for t, ps in a.items() if ps} for mid, a in ours.assign(topics, group).items()}
        assert got == _kafka_python_assign(theirs, topics, group), ours.name


def _counts(assignment):
    return sorted(len(flat(a)) for a in assignment.values())


def test_sticky_is_balanced_and_keeps_partitions_when_a_member_leaves_or_joins():
    sticky = StickyAssignor()
    topics = {"a": 5, "b": 4}
    three = [member(m, ["a", "b"]) for m in ("m1", "m2", "m3")]
    first = sticky.assign(topics, three)
    assert _counts(first) == [3, 3, 3]
    assert sorted(tp for a in first.values() for tp in flat(a)) == sorted(
        [("a", p) for p in range(5)] + [("b", p) for p in range(4)])

    # m2 leaves: m1 and m3 keep everything they had and split m2's partitions
    two = [member(m, ["a", "b"], user_data=encode_sticky_user_data(first[m], 1)) for m in ("m1", "m3")]
    second = sticky.assign(topics, two)
    assert _counts(second) == [4, 5]
    for m in ("m1", "m3"):
        assert set(flat(first[m])) <= set(flat(second[m]))

    # m4 joins: only enough partitions move to balance (9 over 3: 3 each), the rest stay put
    owners = [member(m, ["a", "b"], user_data=encode_sticky_user_data(second[m], 2)) for m in ("m1", "m3")]
    third = sticky.assign(topics, owners + [member("m4", ["a", "b"])])
    assert _counts(third) == [3, 3, 3]
    moved = sum(1 for m in ("m1", "m3") for tp in flat(second[m]) if tp not in flat(third[m]))
    assert moved == 3


def test_sticky_reads_owned_partitions_from_subscription_v1_and_prefers_the_newer_generation():
    sticky = StickyAssignor()
    members = [member("m1", ["t"], owned={"t": [0, 1]}),
               member("m2", ["t"], user_data=encode_sticky_user_data({"t": [1, 2]}, 5)),
               member("m3", ["t"], user_data=encode_sticky_user_data({"t": [3]}, 4))]
    got = sticky.assign({"t": 4}, members)
    assert got["m2"] == {"t": [1, 2]} or got["m2"] == {"t": [1]} or got["m2"] == {"t": [2]}
    assert 1 in got["m2"]["t"]  # claimed by m1 (no generation) and m2 (generation 5): m2 keeps it
    assert got["m1"]["t"] == [0] and got["m3"]["t"] == [3]
    assert _counts(got) == [1, 1, 2]


def test_sticky_with_unequal_subscriptions_matches_kafkas_javadoc_example():
    members = [member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"])]
    got = StickyAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, members)
    assert got == {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}


def test_sticky_user_data_reads_javas_bare_layout_and_kafka_pythons_version_prefixed_one():
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

    ours = encode_sticky_user_data({"a": [1, 2], "b": [0]}, 7)
    assert decode_sticky_user_data(ours) == ({"a": [1, 2], "b": [0]}, 7)
    theirs = StickyAssignorUserData(previous_assignment=[("a", [1, 2])], generation=3).encode()
    assert decode_sticky_user_data(theirs) == ({"a": [1, 2]}, 3)
    assert decode_sticky_user_data(ours[:-4]) == ({"a": [1, 2], "b": [0]}, -1)  # v0: no generation
    with pytest.raises(ValueError):
        decode_sticky_user_data(b"\x00\x00\x00\x09\x00")


def test_sticky_remembers_its_assignment_for_its_next_subscription():
    sticky = StickyAssignor()
    sticky.on_assignment({"t": [2, 0]}, 4)
    assert decode_sticky_user_data(sticky.subscription_user_data(["t"])) == ({"t": [0, 2]}, 4)


def test_resolve_assignors_accepts_names_classes_instances_and_kafka_python_classes():
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    found = resolve_assignors(["sticky", RangeAssignor, RoundRobinPartitionAssignor])
    assert [a.name for a in found] == ["sticky", "range", "roundrobin"]
    instance = StickyAssignor()
    assert resolve_assignors([instance])[0] is instance
    with pytest.raises(ValueError, match="unknown assignor"):
        resolve_assignors(["cooperative-sticky"])
    with pytest.raises(ValueError):
        resolve_assignors([])
    with pytest.raises(ValueError):
        resolve_assignors(["range", RangeAssignor])

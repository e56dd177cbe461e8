"""GroupCoordinator on its own: a fake replica manager records the appends (no log, no sockets)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from odradek.broker.coordinator.group import records as fmt
from odradek.broker.coordinator.group.coordinator import GroupCoordinator
from odradek.broker.coordinator.group.group_metadata import DEAD, EMPTY, STABLE
from odradek.broker.replica_manager import ProducePartitionResult
from odradek.protocol.records import RecordBatchBuilder, iter_batches

from .helpers import DictConfig, run_in_loop

CONFIG = {"offsets.topic.num.partitions": 1, "offsets.commit.required.acks": -1, "offsets.commit.timeout.ms": 5000,
          "offset.metadata.max.bytes": 16, "group.min.session.timeout.ms": 100,
          "group.max.session.timeout.ms": 60000, "group.initial.rebalance.delay.ms": 0, "group.max.size": 3,
          "offsets.load.buffer.size": 1 << 20, "offsets.retention.minutes": 1}


class FakeReplicaManager:
    def __init__(self):
        self.appended: list[tuple[bytes, bytes | None]] = []
        self.error_code = 0

    def append_records(self, acks, timeout_ms, entries):
        for data in entries.values():
            for batch in iter_batches(bytes(data)):
                self.appended.extend((r.key, r.value) for r in batch.records())
        return {tp: ProducePartitionResult(self.error_code) for tp in entries}


@pytest.fixture
def coordinator():
    async def make(**overrides):
        c = GroupCoordinator(1, DictConfig(CONFIG, **overrides), FakeReplicaManager())
        c.manager.owned.add(0)
        c.startup()
        return c
    return make


def join(c, member_id="", protocols=(("range", b"r"), ("roundrobin", b"rr")), v4=False, instance=None,
         group="g", session=10000, rebalance=10000):
    return c.join_group(group, member_id, instance, v4, "client", "/127.0.0.1", rebalance, session, "consumer",
                        list(protocols))


async def two_member_group(c, rebalance=10000, instance=None):
    """a (the leader, static when ``instance`` is given) and b in generation 2, both joined, neither synced."""
    a = await join(c, instance=instance, rebalance=rebalance)
    await c.sync_group("g", 1, a.member_id, instance, None, None, {})
    b_task = asyncio.ensure_future(join(c, rebalance=rebalance))
    await asyncio.sleep(0)
    a = await join(c, member_id=a.member_id, instance=instance, rebalance=rebalance)
    return a, await b_task


@run_in_loop
async def test_one_member_joins_syncs_and_heartbeats(coordinator):
    c = await coordinator()
    joined = await join(c)
    assert joined.error_code == 0 and joined.generation_id == 1 and joined.leader == joined.member_id
    assert joined.protocol_name == "range" and [m[0] for m in joined.members] == [joined.member_id]
    synced = await c.sync_group("g", 1, joined.member_id, None, None, None, {joined.member_id: b"assigned"})
    assert (synced.error_code, synced.assignment) == (0, b"assigned")
    assert c.manager.get_group("g").state == STABLE
    assert c.heartbeat("g", joined.member_id, None, 1) == 0
    assert c.heartbeat("g", joined.member_id, None, 0) == 22   # ILLEGAL_GENERATION
    assert c.heartbeat("g", "nobody", None, 1) == 25           # UNKNOWN_MEMBER_ID
    kind, group_id, _ = fmt.parse_key(c.manager.replica_manager.appended[-1][0])
    stored = fmt.parse_group_value(c.manager.replica_manager.appended[-1][1])
    assert (kind, group_id, stored.generation, stored.members[0].assignment) == ("group", "g", 1, b"assigned")


@run_in_loop
async def test_member_id_required_at_v4_then_the_retry_joins(coordinator):
    c = await coordinator()
    first = await join(c, v4=True)
    assert first.error_code == 79 and first.member_id.startswith("client-")
    second = await join(c, member_id=first.member_id, v4=True)
    assert second.error_code == 0 and second.member_id == first.member_id


@run_in_loop
async def test_second_member_triggers_rebalance_and_mixed_group_picks_roundrobin(coordinator):
    c = await coordinator()
    a = await join(c)
    await c.sync_group("g", 1, a.member_id, None, None, None, {})
    b_task = asyncio.ensure_future(join(c, protocols=[("roundrobin", b"x")]))
    await asyncio.sleep(0)
    assert c.heartbeat("g", a.member_id, None, 1) == 27  # REBALANCE_IN_PROGRESS tells a to rejoin
    a2 = await join(c, member_id=a.member_id)
    b = await b_task
    assert a2.generation_id == b.generation_id == 2
    assert a2.protocol_name == b.protocol_name == "roundrobin"
    assert len(a2.members) == 2 and b.members == []


@run_in_loop
async def test_leave_rebalances_the_rest_and_empty_group_is_stored(coordinator):
    c = await coordinator()
    a = await join(c)
    await c.sync_group("g", 1, a.member_id, None, None, None, {})
    assert c.leave_group("g", [(a.member_id, None), ("ghost", None)]) == (0, [0, 25])
    await asyncio.sleep(0.05)
    group = c.manager.get_group("g")
    assert group.state == EMPTY and group.generation_id == 2


@run_in_loop
async def test_session_expiry_removes_a_silent_member(coordinator):
    c = await coordinator()
    a = await join(c, session=100)
    await c.sync_group("g", 1, a.member_id, None, None, None, {})
    for _ in range(100):
        if not c.manager.get_group("g").members:
            break
        await asyncio.sleep(0.05)
    assert c.manager.get_group("g").state == EMPTY


@run_in_loop
async def test_static_member_rejoining_a_stable_group_keeps_the_generation(coordinator):
    c = await coordinator()
    a = await join(c, instance="i-1")
    await c.sync_group("g", 1, a.member_id, "i-1", None, None, {a.member_id: b"mine"})
    again = await join(c, instance="i-1")
    assert again.error_code == 0 and again.generation_id == 1 and again.member_id != a.member_id
    assert c.heartbeat("g", a.member_id, "i-1", 1) == 82  # FENCED_INSTANCE_ID for the old id
    assert (await c.sync_group("g", 1, again.member_id, "i-1", None, None, {})).assignment == b"mine"


def stored_member_ids(c) -> list[str]:
    """The member ids of the group record last appended to __consumer_offsets."""
    key, value = [(k, v) for k, v in c.manager.replica_manager.appended if k == fmt.group_key("g")][-1]
    return [m.member_id for m in fmt.parse_group_value(value).members]


@run_in_loop
async def test_a_static_members_new_id_is_stored_before_it_is_answered(coordinator):
    """As Kafka 2.8, the swap is persisted, so that a coordinator loading the group later knows the new id;
    when the write fails, the old id stays the member's and the join gets the error without a member id."""
    c = await coordinator()
    a = await join(c, instance="i-1")
    await c.sync_group("g", 1, a.member_id, "i-1", None, None, {a.member_id: b"mine"})
    again = await join(c, instance="i-1")
    assert again.error_code == 0 and stored_member_ids(c) == [again.member_id]
    c.manager.replica_manager.error_code = 19  # NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE
    failed = await join(c, instance="i-1")
    assert (failed.error_code, failed.member_id) == (15, "")
    assert c.manager.get_group("g").static_members["i-1"] == again.member_id
    assert c.heartbeat("g", again.member_id, "i-1", 1) == 0


@run_in_loop
async def test_static_member_rejoining_with_new_metadata_does_not_rebalance_a_stable_group(coordinator):
    """Kafka 2.8 rebalances a stable group at a static member's return only if the protocol it would select
    changes: the Java consumer 3.1+ puts its last generation into its subscription, which so differs at every
    restart (found by tests/jvm/test_java_secured.py's static-membership with kafka-clients 4.x)."""
    c = await coordinator()
    a = await join(c, instance="i-1", protocols=[("range", b"generation -1"), ("roundrobin", b"")])
    await c.sync_group("g", 1, a.member_id, "i-1", None, None, {a.member_id: b"mine"})
    again = await join(c, instance="i-1", protocols=[("range", b"generation 1"), ("roundrobin", b"")])
    assert (again.error_code, again.generation_id) == (0, 1)
    assert c.manager.get_group("g").state == STABLE
    assert (await c.sync_group("g", 1, again.member_id, "i-1", None, None, {})).assignment == b"mine"
    # Preferring another protocol changes the group's choice: the group rebalances.
    task = asyncio.ensure_future(join(c, instance="i-1", protocols=[("roundrobin", b""), ("range", b"")]))
    await asyncio.sleep(0.05)
    assert c.manager.get_group("g").state != STABLE
    assert (await task).generation_id == 2


@run_in_loop
async def test_session_timeout_bounds_and_group_size(coordinator):
    c = await coordinator()
    assert (await join(c, session=50)).error_code == 26  # INVALID_SESSION_TIMEOUT
    assert (await join(c, group="")).error_code == 24    # INVALID_GROUP_ID


@run_in_loop
async def test_simple_consumer_commits_and_fetches(coordinator):
    c = await coordinator()
    codes = await c.commit_offsets("s", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5, -1, "m", 1),
                                                       ("t", 1): fmt.OffsetAndMetadata(6, 3, "x" * 17, 1)})
    assert codes == {("t", 0): 0, ("t", 1): 12}  # metadata over offset.metadata.max.bytes
    fetched = c.fetch_offsets("s", [("t", 0), ("t", 1)])
    assert fetched[("t", 0)].offset == 5 and fetched[("t", 0)].metadata == "m" and fetched[("t", 1)] is None
    assert await c.commit_offsets("unknown", "m", None, 3, {("t", 0): fmt.OffsetAndMetadata(1)}) == {("t", 0): 22}


@run_in_loop
async def test_commit_of_a_failed_append_is_not_cached(coordinator):
    c = await coordinator()
    c.manager.replica_manager.error_code = 19  # NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE
    assert await c.commit_offsets("s", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5)}) == {("t", 0): 15}
    assert c.fetch_offsets("s", [("t", 0)]) == {("t", 0): None}


@run_in_loop
async def test_member_commits_need_the_current_generation(coordinator):
    c = await coordinator()
    a = await join(c)
    await c.sync_group("g", 1, a.member_id, None, None, None, {})
    offsets = {("t", 0): fmt.OffsetAndMetadata(1)}
    assert await c.commit_offsets("g", a.member_id, None, 1, offsets) == {("t", 0): 0}
    assert await c.commit_offsets("g", a.member_id, None, 0, offsets) == {("t", 0): 22}
    assert await c.commit_offsets("g", "", None, -1, offsets) == {("t", 0): 25}


@run_in_loop
async def test_delete_groups_only_when_empty(coordinator):
    c = await coordinator()
    a = await join(c)
    await c.commit_offsets("s", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5)})
    assert await c.delete_groups(["g", "s", "none"]) == {"g": 68, "s": 0, "none": 69}
    assert c.manager.get_group("s") is None
    assert c.manager.replica_manager.appended[-1][1] is None  # the group's tombstone
    assert a.member_id


@run_in_loop
async def test_not_coordinator_for_partitions_not_owned(coordinator):
    c = await coordinator()
    c.manager.owned.clear()
    assert (await join(c)).error_code == 16
    c.manager.loading.add(0)
    assert c.heartbeat("g", "m", None, 1) == 14


@run_in_loop
async def test_unload_answers_waiting_members_and_marks_groups_dead(coordinator):
    c = await coordinator()
    a = await join(c)
    group = c.manager.get_group("g")
    waiting = asyncio.ensure_future(c.sync_group("g", 1, a.member_id, None, None, None, {}))
    await asyncio.sleep(0)
    c.manager.replica_manager.appended.clear()
    c.on_leadership_change([], [("__consumer_offsets", 0)])
    assert group.state == DEAD and (await waiting).error_code in (0, 16)


class FakeLog:
    """What the manager reads of a partition's log: whole batches from an offset."""

    def __init__(self, entries):
        self.batches = []
        for offset, (key, value) in enumerate(entries):
            builder = RecordBatchBuilder(base_offset=offset)
            builder.append(1, key, value)
            self.batches.append(builder.build())
        self.log_start_offset, self.log_end_offset = 0, len(self.batches)

    def read(self, offset, max_bytes, min_one_batch=True):
        return SimpleNamespace(records=b"".join(self.batches[offset:offset + 2]))  # two per read: chunks


class FakePartition:
    def __init__(self, log):
        self.log = log


@run_in_loop
async def test_a_new_leader_loads_offsets_and_groups_from_the_log(coordinator):
    c = await coordinator()
    a = await join(c)
    await c.sync_group("g", 1, a.member_id, None, None, None, {a.member_id: b"asg"})
    offsets = {("t", 0): fmt.OffsetAndMetadata(5, 2, "m", 1)}
    await c.commit_offsets("g", a.member_id, None, 1, offsets)
    await c.commit_offsets("s", "", None, -1, {("t", 1): fmt.OffsetAndMetadata(9, -1, "", 1)})
    await c.commit_offsets("gone", "", None, -1, {("t", 1): fmt.OffsetAndMetadata(1)})
    await c.delete_groups(["gone"])
    entries = list(c.manager.replica_manager.appended)

    other = await coordinator()
    other.manager.owned.clear()
    other.manager.replica_manager.online_partition = lambda topic, p: FakePartition(FakeLog(entries))
    other.on_leadership_change([("__consumer_offsets", 0)], [])
    assert other.heartbeat("g", a.member_id, None, 1) == 14  # COORDINATOR_LOAD_IN_PROGRESS until loaded
    for _ in range(100):
        if other.manager.owned:
            break
        await asyncio.sleep(0)
    group = other.manager.get_group("g")
    assert (group.state, group.generation_id, group.leader_id) == (STABLE, 1, a.member_id)
    assert group.members[a.member_id].assignment == b"asg"
    assert other.fetch_offsets("g", None) == offsets
    assert other.fetch_offsets("s", [("t", 1)])[("t", 1)].offset == 9
    assert other.manager.get_group("gone") is None


@run_in_loop
async def test_offsets_expire_after_retention_and_the_empty_group_goes(coordinator):
    c = await coordinator()
    await c.commit_offsets("s", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5, -1, "", 1)})
    await c.commit_offsets("fresh", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5, -1, "", 10 ** 13)})
    assert await c.manager.cleanup_expired_offsets(now_ms=60_001) == 1
    assert c.manager.get_group("s") is None and c.manager.get_group("fresh") is not None
    key, value = c.manager.replica_manager.appended[-1]
    assert fmt.parse_key(key) == ("group", "s", None) and value is None


@run_in_loop
async def test_offsets_of_deleted_partitions_go_with_tombstones(coordinator):
    c = await coordinator()
    await c.commit_offsets("s", "", None, -1, {("t", 0): fmt.OffsetAndMetadata(5, -1, "", 10 ** 13),
                                              ("u", 0): fmt.OffsetAndMetadata(6, -1, "", 10 ** 13)})
    await c.commit_offsets("only-t", "", None, -1, {("t", 1): fmt.OffsetAndMetadata(7, -1, "", 10 ** 13)})
    appended = c.manager.replica_manager.appended
    appended.clear()
    assert await c.handle_deleted_partitions([("t", 0), ("t", 1)]) == 2
    assert set(c.manager.get_group("s").offsets) == {("u", 0)} and c.manager.get_group("only-t") is None
    assert sorted((fmt.parse_key(k), v) for k, v in appended) == [
        (("group", "only-t", None), None), (("offset", "only-t", ("t", 1)), None), (("offset", "s", ("t", 0)), None)]


@run_in_loop
async def test_a_pending_member_that_never_rejoins_expires(coordinator):
    c = await coordinator()
    first = await join(c, v4=True, session=100)
    assert first.error_code == 79 and first.member_id in c.manager.get_group("g").pending_members
    for _ in range(100):
        if not c.manager.get_group("g").pending_members:
            break
        await asyncio.sleep(0.05)
    assert not c.manager.get_group("g").pending_members


@run_in_loop
async def test_a_member_that_joined_but_never_syncs_is_removed_at_the_rebalance_timeout(coordinator):
    """Kafka 2.8's DelayedSync: a leader that keeps heartbeating but never sends its SyncGroup must not hold
    the follower's SyncGroup forever; at the rebalance timeout it leaves and the rest rebalance."""
    c = await coordinator()
    a, b = await two_member_group(c, rebalance=300)
    assert a.leader == a.member_id and a.generation_id == 2

    async def heartbeats():
        while True:
            c.heartbeat("g", a.member_id, None, 2)
            await asyncio.sleep(0.05)

    beating = asyncio.ensure_future(heartbeats())
    try:
        synced = await asyncio.wait_for(c.sync_group("g", 2, b.member_id, None, None, None, {}), 5)
    finally:
        beating.cancel()
    assert synced.error_code == 27  # REBALANCE_IN_PROGRESS: b rejoins without a
    assert list(c.manager.get_group("g").members) == [b.member_id]
    rejoined = await join(c, member_id=b.member_id, rebalance=300)
    assert (rejoined.error_code, rejoined.leader, rejoined.generation_id) == (0, b.member_id, 3)


@run_in_loop
async def test_every_sync_in_time_leaves_nobody_out(coordinator):
    c = await coordinator()
    a, b = await two_member_group(c, rebalance=200)
    follower = asyncio.ensure_future(c.sync_group("g", 2, b.member_id, None, None, None, {}))
    leader = await c.sync_group("g", 2, a.member_id, None, None, None, {a.member_id: b"a", b.member_id: b"b"})
    assert (leader.assignment, (await follower).assignment) == (b"a", b"b")
    await asyncio.sleep(0.4)  # past the rebalance timeout: nothing pending, nobody removed
    group = c.manager.get_group("g")
    assert group.state == STABLE and set(group.members) == {a.member_id, b.member_id}


@run_in_loop
async def test_a_static_member_that_does_not_rejoin_in_time_keeps_its_place(coordinator):
    """Kafka 2.8's onCompleteJoin removes only dynamic members that did not rejoin; a static member's
    place waits for its session timeout (it may be restarting)."""
    c = await coordinator()
    a = await join(c, instance="i-1", rebalance=200)
    await c.sync_group("g", 1, a.member_id, "i-1", None, None, {})
    b = await asyncio.wait_for(join(c, rebalance=200), 5)  # a never rejoins: the join ends at the timeout
    group = c.manager.get_group("g")
    assert b.error_code == 0 and set(group.members) == {a.member_id, b.member_id}
    assert b.leader == b.member_id  # the leader that did not rejoin hands over to one that did

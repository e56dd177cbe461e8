"""Hand-written sequences: consumer groups (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups, OffsetCommit, OffsetFetch, OffsetDelete), every advertised version,
normal and error paths: unknown groups and members, stale generations, inconsistent protocols, static members,
unknown partitions, non-empty and subscribed groups."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.protocol.api_keys import ApiKey as K
from odradek.protocol.consumer_protocol import encode_assignment, encode_subscription

from .harness import Side, versions
from .scenarios_data import TOPIC
from .scenarios_topics import create_topic

GROUP = "diff-group"
SUBSCRIPTION = encode_subscription([TOPIC])
ASSIGNMENT = encode_assignment({TOPIC: [0, 1]})


def join_spec(group: str, member: str = "", *, protocol_type: str = "consumer", instance: str | None = None) -> dict:
    return {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": member,
            "group_instance_id": instance, "protocol_type": protocol_type,
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}


async def join(side: Side, label: str, version: int, group: str, **options: Any) -> Any:
    """JoinGroup as a client does it: from v4 a first join is refused with MEMBER_ID_REQUIRED and repeated
    with the member id the broker gave."""
    answer = await side.call(label, K.JOIN_GROUP, version, join_spec(group, **options))
    if answer.error_code == 79:  # MEMBER_ID_REQUIRED
        answer = await side.call(f"{label} again", K.JOIN_GROUP, version,
                                 join_spec(group, answer.member_id, **options))
    return answer


def sync_spec(group: str, generation: int, member: str, *, assign: bool = True, protocol_type: str = "consumer",
              instance: str | None = None) -> dict:
    return {"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": instance,
            "protocol_type": protocol_type, "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": ASSIGNMENT}] if assign else []}


async def wait_for_coordinator(side: Side, key: str, key_type: int) -> None:
    """Poll (unrecorded) until the coordinator of ``key`` is up: the first FindCoordinator creates the internal
    topic, and its leader and loading take a moment on each broker, not the same."""
    for _ in range(600):
        answer = await side.call("poll", K.FIND_COORDINATOR, 1, {"key": key, "key_type": key_type}, record=False)
        if answer.error_code == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{side.name}: no coordinator for {key}")


async def find_coordinator(side: Side) -> None:
    await wait_for_coordinator(side, GROUP, 0)
    await wait_for_coordinator(side, "diff-txn", 1)
    for v in versions(K.FIND_COORDINATOR):
        await side.call(f"v{v} group", K.FIND_COORDINATOR, v, {"key": GROUP, "key_type": 0})
        if v >= 1:
            await side.call(f"v{v} transaction", K.FIND_COORDINATOR, v, {"key": "diff-txn", "key_type": 1})
            await side.call(f"v{v} bad key type", K.FIND_COORDINATOR, v, {"key": GROUP, "key_type": 5})
        await side.call(f"v{v} empty key", K.FIND_COORDINATOR, v, {"key": "", "key_type": 0})


async def join_and_sync(side: Side) -> None:
    await create_topic(side, TOPIC, 2)
    for v in versions(K.JOIN_GROUP):
        group = f"diff-join-v{v}"
        joined = await join(side, f"v{v} join", v, group)
        await side.call(f"v{v} other protocol type", K.JOIN_GROUP, v, join_spec(group, protocol_type="connect"))
        await side.call(f"v{v} unknown member", K.JOIN_GROUP, v, join_spec(group, "no-such-member"))
        await side.call(f"v{v} bad session timeout", K.JOIN_GROUP, v, {**join_spec(group), "session_timeout_ms": 1})
        sync = min(v, max(versions(K.SYNC_GROUP)))
        await side.call(f"v{v} sync", K.SYNC_GROUP, sync, sync_spec(group, joined.generation_id, joined.member_id))
    for v in versions(K.SYNC_GROUP):
        group = f"diff-sync-v{v}"
        joined = await join(side, f"v{v} join", 5, group)
        member, generation = joined.member_id, joined.generation_id
        await side.call(f"v{v} stale generation", K.SYNC_GROUP, v, sync_spec(group, generation + 1, member))
        await side.call(f"v{v} unknown member", K.SYNC_GROUP, v, sync_spec(group, generation, "nobody"))
        await side.call(f"v{v} unknown group", K.SYNC_GROUP, v, sync_spec("no-such-group", 1, member))
        if v >= 5:
            await side.call(f"v{v} wrong protocol type", K.SYNC_GROUP, v,
                            sync_spec(group, generation, member, protocol_type="connect"))
        await side.call(f"v{v} sync", K.SYNC_GROUP, v, sync_spec(group, generation, member))
        await side.call(f"v{v} follower-style sync", K.SYNC_GROUP, v, sync_spec(group, generation, member,
                                                                                   assign=False))


async def static_members(side: Side) -> None:
    group = "diff-static"
    first = await join(side, "join", 5, group, instance="instance-1")
    await side.call("sync", K.SYNC_GROUP, 3, sync_spec(group, first.generation_id, first.member_id,
                                                       instance="instance-1"))
    again = await side.call("rejoin as a new member", K.JOIN_GROUP, 5, join_spec(group, instance="instance-1"))
    await side.call("old member heartbeat (fenced)", K.HEARTBEAT, 3, {
        "group_id": group, "generation_id": first.generation_id, "member_id": first.member_id,
        "group_instance_id": "instance-1"})
    await side.call("new member heartbeat", K.HEARTBEAT, 3, {
        "group_id": group, "generation_id": again.generation_id, "member_id": again.member_id,
        "group_instance_id": "instance-1"})
    await side.call("describe", K.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
    await side.call("leave by instance", K.LEAVE_GROUP, 3, {"group_id": group, "members": [
        {"member_id": "", "group_instance_id": "instance-1"}, {"member_id": "", "group_instance_id": "instance-9"}]})


async def stable_group(side: Side) -> tuple[str, int]:
    joined = await join(side, "join", 7, GROUP)
    await side.call("sync", K.SYNC_GROUP, 5, sync_spec(GROUP, joined.generation_id, joined.member_id))
    return joined.member_id, joined.generation_id


async def heartbeats(side: Side) -> None:
    member, generation = await stable_group(side)
    for v in versions(K.HEARTBEAT):
        spec = {"group_id": GROUP, "generation_id": generation, "member_id": member, "group_instance_id": None}
        await side.call(f"v{v}", K.HEARTBEAT, v, spec)
        await side.call(f"v{v} stale generation", K.HEARTBEAT, v, {**spec, "generation_id": generation - 1})
        await side.call(f"v{v} unknown member", K.HEARTBEAT, v, {**spec, "member_id": "nobody"})
        await side.call(f"v{v} unknown group", K.HEARTBEAT, v, {**spec, "group_id": "no-such-group"})
    await describe_and_list(side)
    await offsets(side, member, generation)


async def describe_and_list(side: Side) -> None:
    for v in versions(K.DESCRIBE_GROUPS):
        await side.call(f"describe v{v}", K.DESCRIBE_GROUPS, v, {
            "groups": [GROUP, "no-such-group", ""], "include_authorized_operations": v >= 3})
    for v in versions(K.LIST_GROUPS):
        await side.call(f"list v{v}", K.LIST_GROUPS, v, {"states_filter": []})
        if v >= 4:
            await side.call(f"list v{v} stable", K.LIST_GROUPS, v, {"states_filter": ["Stable"]})
            await side.call(f"list v{v} odd state", K.LIST_GROUPS, v, {"states_filter": ["Sleeping"]})


def commit_spec(group: str, member: str, generation: int, offset: int, partitions: tuple = (0, 1)) -> dict:
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "group_instance_id": None, "retention_time_ms": -1, "topics": [
                {"name": TOPIC, "partitions": [
                    {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                     "commit_timestamp": -1, "committed_metadata": f"m{p}"} for p in partitions]},
                {"name": "no-such-topic", "partitions": [
                    {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                     "commit_timestamp": -1, "committed_metadata": ""}]}]}


async def offsets(side: Side, member: str, generation: int) -> None:
    for v in versions(K.OFFSET_COMMIT):
        await side.call(f"commit v{v}", K.OFFSET_COMMIT, v, commit_spec(GROUP, member, generation, 1 + v))
        if v >= 1:
            await side.call(f"commit v{v} stale generation", K.OFFSET_COMMIT, v,
                            commit_spec(GROUP, member, generation + 5, 1))
            await side.call(f"commit v{v} unknown member", K.OFFSET_COMMIT, v,
                            commit_spec(GROUP, "nobody", generation, 1))
        await side.call(f"commit v{v} simple group", K.OFFSET_COMMIT, v, commit_spec("diff-simple", "", -1, v))
        await side.call(f"commit v{v} too much metadata", K.OFFSET_COMMIT, v, {
            **commit_spec("diff-simple", "", -1, v, (0,)), "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "committed_offset": 3, "committed_metadata": "m" * 5000}]}]})
    for v in versions(K.OFFSET_FETCH):
        topics = [{"name": TOPIC, "partition_indexes": [0, 1, 99]}, {"name": "no-such-topic", "partition_indexes": [0]}]
        await side.call(f"fetch v{v}", K.OFFSET_FETCH, v, {"group_id": GROUP, "topics": topics,
                                                           "require_stable": v >= 7})
        await side.call(f"fetch v{v} unknown group", K.OFFSET_FETCH, v, {"group_id": "no-such-group", "topics": topics})
        if v >= 2:
            await side.call(f"fetch v{v} all", K.OFFSET_FETCH, v, {"group_id": GROUP, "topics": None})
            await side.call(f"fetch v{v} all simple", K.OFFSET_FETCH, v, {"group_id": "diff-simple", "topics": None})
    for v in versions(K.OFFSET_DELETE):
        spec = {"group_id": GROUP, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]},
                                              {"name": "no-such-topic", "partitions": [{"partition_index": 0}]}]}
        await side.call(f"offset delete v{v} subscribed", K.OFFSET_DELETE, v, spec)
        await side.call(f"offset delete v{v} simple", K.OFFSET_DELETE, v, {**spec, "group_id": "diff-simple"})
        await side.call(f"offset delete v{v} unknown group", K.OFFSET_DELETE, v, {**spec, "group_id": "no-such-group"})
    await side.call("fetch after delete", K.OFFSET_FETCH, 7, {"group_id": "diff-simple", "topics": None})


async def leave_and_delete(side: Side) -> None:
    for v in versions(K.LEAVE_GROUP):
        group = f"diff-leave-v{v}"
        joined = await join(side, f"v{v} join", 5, group)
        if v >= 3:
            spec: dict = {"group_id": group, "members": [{"member_id": joined.member_id, "group_instance_id": None},
                                                          {"member_id": "nobody", "group_instance_id": None}]}
        else:
            spec = {"group_id": group, "member_id": joined.member_id}
        await side.call(f"v{v} leave", K.LEAVE_GROUP, v, spec)
        await side.call(f"v{v} leave again", K.LEAVE_GROUP, v, spec)
        await side.call(f"v{v} unknown group", K.LEAVE_GROUP, v, {**spec, "group_id": "no-such-group"})
    for v in versions(K.DELETE_GROUPS):
        await side.call(f"delete v{v}", K.DELETE_GROUPS, v, {"groups_names": [
            f"diff-leave-v{v}", GROUP, "no-such-group", ""]})
    await side.call("describe after", K.DESCRIBE_GROUPS, 5, {"groups": ["diff-leave-v0", GROUP],
                                                             "include_authorized_operations": False})


SCENARIOS = {f.__name__: f for f in (
    find_coordinator, join_and_sync, static_members, heartbeats, leave_and_delete)}

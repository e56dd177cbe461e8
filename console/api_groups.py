"""Consumer groups: the list with state and total lag, one group's members, assignments and lag per
partition with its lag history, offset resets and deletion (refused, as Kafka refuses them, while the
group has members)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..clients import TopicPartition

from .cluster_reads import EARLIEST, LATEST, list_offsets
from .context import console_of
from .json_api import BadRequest, body, endpoint, integer
from .lag_history import group_lag

INACTIVE_STATES = ("Empty", "Dead")


@endpoint
async def groups(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    listed = await console.admin.list_consumer_groups()
    ids = sorted(g.group_id for g in listed)
    descriptions = await console.admin.describe_consumer_groups(ids) if ids else []
    by_id = {d.group_id: d for d in descriptions}
    out = []
    for g in sorted(listed, key=lambda g: g.group_id):
        d = by_id.get(g.group_id)
        history = console.lag.series.get(g.group_id)
        out.append({"group_id": g.group_id, "protocol_type": g.protocol_type,
                    "state": d.state if d else g.state, "members": len(d.members) if d else None,
                    "assignor": d.partition_assignor if d else None,
                    "coordinator": d.coordinator.node_id if d else None,
                    "lag": history[-1][1] if history else None})
    return {"groups": out}


@endpoint
async def group_detail(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    group_id = request.match_info["id"]
    [description] = await console.admin.describe_consumer_groups([group_id])
    lag_error = None
    try:
        lag = await group_lag(console, group_id)
        console.lag.record(group_id, lag["total"])
    except Exception as exc:  # noqa: BLE001 - the members still show; the lag panel says why it is missing
        from .json_api import error_text
        lag, lag_error = None, error_text(exc)
    return {
        "group_id": group_id, "state": description.state, "protocol_type": description.protocol_type,
        "assignor": description.partition_assignor, "coordinator": description.coordinator.node_id,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                     "host": m.host, "assignment": [[tp.topic, tp.partition] for tp in m.assignment]}
                    for m in description.members],
        "lag": lag, "lag_error": lag_error, "lag_history": console.lag.history(group_id),
    }


async def _refuse_reset_if_active(console: Any, group_id: str) -> None:
    [description] = await console.admin.describe_consumer_groups([group_id])
    if description.state not in INACTIVE_STATES:  # kafka-consumer-groups' own words
        raise BadRequest(f"Assignments can only be reset if the group '{group_id}' is inactive, but the current "
                         f"state is {description.state}.")


@endpoint
async def reset_offsets(request: web.Request) -> dict[str, Any]:
    """``{"to": earliest|latest|timestamp|offset, "value": ..., "topic": optional}``: every partition the
    group has committed (of ``topic`` only, when given) is moved."""
    console = console_of(request)
    group_id = request.match_info["id"]
    data = await body(request)
    to = data.get("to")
    if to not in ("earliest", "latest", "timestamp", "offset"):
        raise BadRequest("to must be earliest, latest, timestamp or offset")
    await _refuse_reset_if_active(console, group_id)
    committed = await console.admin.list_consumer_group_offsets(group_id)
    partitions = [tp for tp in committed if not data.get("topic") or tp.topic == data["topic"]]
    if not partitions and data.get("topic"):
        metadata = await console.client.metadata([data["topic"]])
        info = metadata.topics.get(data["topic"])
        partitions = [TopicPartition(data["topic"], p) for p in sorted(info.partitions)] if info else []
    if not partitions:
        raise BadRequest(f"group '{group_id}' has no committed offsets to reset; name a topic")
    metadata = await console.client.metadata(sorted({tp.topic for tp in partitions}))
    leaders = {tp: _leader(metadata.leader_for(tp.topic, tp.partition)) for tp in partitions}
    starts, ends = await asyncio.gather(list_offsets(console.client, partitions, EARLIEST, leaders),
                                        list_offsets(console.client, partitions, LATEST, leaders))
    if to == "earliest":
        target = starts
    elif to == "latest":
        target = ends
    elif to == "offset":
        offset = integer(data.get("value"), "value")
        # as kafka-consumer-groups: an offset outside the log is moved to its nearest end
        target = {tp: None if starts[tp] is None else min(max(offset, starts[tp]), ends[tp]) for tp in partitions}
    else:
        by_time = await list_offsets(console.client, partitions, integer(data.get("value"), "value"), leaders)
        target = {tp: ends[tp] if o is None or o < 0 else o for tp, o in by_time.items()}
    missing = [f"{tp.topic}-{tp.partition}" for tp in partitions if target.get(tp) is None]
    if missing:
        raise BadRequest(f"no leader answered for {', '.join(missing)}; nothing was reset")
    await console.admin.alter_consumer_group_offsets(group_id, {tp: target[tp] for tp in partitions})
    return {"group_id": group_id, "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": target[tp]}
                                              for tp in partitions]}


def _leader(node_id: int | None) -> int:
    return -1 if node_id is None else node_id


@endpoint
async def delete_group(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    group_id = request.match_info["id"]
    await console.admin.delete_consumer_groups([group_id])  # NON_EMPTY_GROUP, with the broker's words, if active
    return {"deleted": group_id}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/groups", groups),
    ("GET", "/api/groups/{id}", group_detail),
    ("POST", "/api/groups/{id}/reset", reset_offsets),
    ("DELETE", "/api/groups/{id}", delete_group),
]

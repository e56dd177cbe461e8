"""Controller: the active controller and its epoch, the events the console saw (cluster_watch.py),
reassignments in progress, and preferred leader election."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..clients import TopicPartition
from ..clients.admin.partitions import ElectionType

from .context import console_of
from .json_api import body, endpoint, error_text, integer


@endpoint
async def controller(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    watch = console.watch
    since = float(request.query.get("since") or 0)
    return {"controller_id": watch.controller_id, "controller_epoch": console.sampler.latest_max("controller_epoch"),
            "watch_error": watch.error, "watch_interval_s": watch.interval_s,
            "events": [e for e in reversed(watch.events) if e["time"] > since]}


@endpoint
async def reassignments(request: web.Request) -> dict[str, Any]:
    found = await console_of(request).admin.list_partition_reassignments()
    return {"reassignments": [{"topic": tp.topic, "partition": tp.partition, "replicas": r.replicas,
                               "adding": r.adding_replicas, "removing": r.removing_replicas}
                              for tp, r in sorted(found.items())]}


@endpoint
async def elect_preferred(request: web.Request) -> dict[str, Any]:
    """``{"topic": optional, "partition": optional}``: a preferred leader election of those partitions, or
    (neither given) of every partition not led by its preferred replica."""
    console = console_of(request)
    data = await body(request)
    partitions = None
    if data.get("topic"):
        if data.get("partition") not in (None, ""):
            partitions = [TopicPartition(data["topic"], integer(data["partition"], "partition"))]
        else:
            metadata = await console.client.metadata([data["topic"]])
            info = metadata.topics.get(data["topic"])
            partitions = [TopicPartition(data["topic"], p) for p in sorted(info.partitions)] if info else []
    results = await console.admin.elect_leaders(ElectionType.PREFERRED, partitions)
    return {"results": [{"topic": tp.topic, "partition": tp.partition,
                         "error": None if error is None else error_text(error)}
                        for tp, error in sorted(results.items())]}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/controller", controller),
    ("GET", "/api/reassignments", reassignments),
    ("POST", "/api/elect-leaders", elect_preferred),
]

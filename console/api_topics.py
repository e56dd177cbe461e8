"""Overview and Topics: brokers and partition health, the topic list, one topic's partitions and configs,
and the topic operations (create, delete, add partitions, edit configs)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from ..clients import NewPartitions, NewTopic, TopicPartition
from ..clients.admin.client import AlterConfigOp, AlterConfigOpType, ConfigResource
from ..protocol.config_resource import ConfigResourceType

from .cluster_reads import EARLIEST, LATEST, list_offsets, replica_sizes, topic_configs
from .topic_list import settled
from .context import console_of
from .json_api import BadRequest, body, endpoint, integer, text

# Kafka's ConfigEntry.ConfigSource names, by DescribeConfigs' config_source id
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG"}


def _partition_rows(metadata: Any) -> list[tuple[str, bool, Any]]:
    return [(t.name, t.is_internal, p) for t in metadata.topics for p in t.partitions]


@endpoint
async def overview(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    metadata = console.watch.recent()
    if metadata is None:
        metadata = await console.client.metadata_response(None)
        console.watch.observe(metadata)
    rows = _partition_rows(metadata)
    topics = sorted({t.name for t in metadata.topics})
    done, errors = await settled(configs=topic_configs(console.client, topics, ["min.insync.replicas"]))
    under_min_isr = None
    if "configs" in done:
        min_isr = {t: int(c.get("min.insync.replicas") or 1) for t, c in done["configs"].items() if "error" not in c}
        under_min_isr = sum(1 for name, _, p in rows if p.leader_id >= 0 and len(p.isr_nodes) < min_isr.get(name, 1))
    return {
        "cluster_id": metadata.cluster_id,
        "controller_id": metadata.controller_id,
        "controller_epoch": console.sampler.latest_max("controller_epoch"),
        "brokers": console.watch.brokers(),
        "topics": len(topics),
        "partitions": len(rows),
        "under_replicated": sum(1 for _, _, p in rows if len(p.isr_nodes) < len(p.replica_nodes)),
        "under_min_isr": under_min_isr,
        "offline": sum(1 for _, _, p in rows if p.leader_id < 0),
        "metrics": sorted(console.sampler.brokers),
        "errors": errors,
    }


@endpoint
async def metrics(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    since = float(request.query.get("since") or 0)
    brokers = console.sampler.snapshot(since)
    # an endpoint on a host only one broker has is that broker's (docker-compose: kafka-1:7071 is broker 1)
    by_host: dict[str, list[int]] = {}
    for broker in console.watch.brokers():
        by_host.setdefault(broker["host"], []).append(broker["id"])
    for endpoint, series in brokers.items():
        ids = by_host.get(endpoint.rpartition(":")[0], [])
        series["broker"] = ids[0] if len(ids) == 1 else None
    return {"interval_s": console.sampler.interval_s, "brokers": brokers}


@endpoint
async def topics(request: web.Request) -> dict[str, Any]:
    return await console_of(request).topic_list.current()


@endpoint
async def topic_detail(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    name = request.match_info["name"]
    metadata = await console.client.metadata_response([name])
    [topic] = metadata.topics
    if topic.error_code:
        from ..protocol.errors import for_code
        raise for_code(topic.error_code)(f"topic {name}")
    tps = {TopicPartition(name, p.partition_index): p.leader_id for p in topic.partitions}
    done, errors = await settled(
        starts=list_offsets(console.client, tps, EARLIEST, tps), ends=list_offsets(console.client, tps, LATEST, tps),
        log_dirs=console.admin.describe_log_dirs([name]))
    replicas = replica_sizes(done["log_dirs"])[1] if "log_dirs" in done else None
    partitions = []
    for p in sorted(topic.partitions, key=lambda p: p.partition_index):
        tp = TopicPartition(name, p.partition_index)
        partitions.append({
            "partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
            "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
            "offline_replicas": list(p.offline_replicas or []), "error_code": p.error_code,
            "start": (done.get("starts") or {}).get(tp), "end": (done.get("ends") or {}).get(tp),
            "log_dirs": None if replicas is None else [
                {k: r[k] for k in ("broker", "dir", "size", "offset_lag", "future")}
                for r in replicas if r["partition"] == p.partition_index],
        })
    return {"name": name, "internal": topic.is_internal, "partitions": partitions,
            "brokers": console.watch.brokers() or [{"id": b.node_id, "alive": True} for b in metadata.brokers],
            "errors": errors}


@endpoint
async def topic_configs_view(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    resource = ConfigResource(ConfigResourceType.TOPIC, request.match_info["name"])
    entries = (await console.admin.describe_configs([resource], include_synonyms=True))[resource]
    return {"configs": [{
        "name": e.name, "value": e.value, "source": CONFIG_SOURCES.get(e.source, str(e.source)),
        "is_default": e.is_default, "read_only": e.read_only, "sensitive": e.is_sensitive,
        "synonyms": [{"name": n, "value": v, "source": CONFIG_SOURCES.get(s, str(s))} for n, v, s in e.synonyms],
    } for e in sorted(entries.values())]}


@endpoint
async def alter_topic_configs(request: web.Request) -> dict[str, Any]:
    """``{"set": {key: value}, "delete": [key]}``: one IncrementalAlterConfigs."""
    console = console_of(request)
    data = await body(request)
    ops = [AlterConfigOp(k, str(v), AlterConfigOpType.SET) for k, v in (data.get("set") or {}).items()]
    ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in data.get("delete") or []]
    if not ops:
        raise BadRequest("nothing to change: give set and/or delete")
    resource = ConfigResource(ConfigResourceType.TOPIC, request.match_info["name"])
    await console.admin.incremental_alter_configs({resource: ops})
    return {"altered": len(ops)}


@endpoint
async def create_topic(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    data = await body(request)
    name = text(data.get("name"), "name")
    configs = {str(k): str(v) for k, v in (data.get("configs") or {}).items()}
    await console.admin.create_topics([NewTopic(name, integer(data.get("partitions"), "partitions", -1),
                                                integer(data.get("replication_factor"), "replication_factor", -1),
                                                topic_configs=configs)])
    await _known_to_a_broker(console, name)
    await console.topic_list.run_once()
    return {"created": name}


async def _known_to_a_broker(console: Any, name: str, timeout_s: float = 3.0) -> None:
    """Wait (a little) until the broker the console asks has the new topic, so the list the page reloads has
    it: the controller answers CreateTopics before every broker has heard of the topic."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        metadata = await console.client.metadata([name])
        if name in metadata.topics and not metadata.topics[name].error_code:
            return
        await asyncio.sleep(0.1)


@endpoint
async def delete_topic(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    name = request.match_info["name"]
    await console.admin.delete_topics([name])
    await console.topic_list.run_once()
    return {"deleted": name}


@endpoint
async def add_partitions(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    name = request.match_info["name"]
    total = integer((await body(request)).get("total"), "total")
    await console.admin.create_partitions({name: NewPartitions(total)})
    await console.topic_list.run_once()
    return {"topic": name, "partitions": total}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/overview", overview),
    ("GET", "/api/metrics", metrics),
    ("GET", "/api/topics", topics),
    ("POST", "/api/topics", create_topic),
    ("GET", "/api/topics/{name}", topic_detail),
    ("DELETE", "/api/topics/{name}", delete_topic),
    ("GET", "/api/topics/{name}/configs", topic_configs_view),
    ("POST", "/api/topics/{name}/configs", alter_topic_configs),
    ("POST", "/api/topics/{name}/partitions", add_partitions),
]

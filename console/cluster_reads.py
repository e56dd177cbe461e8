"""Reads of the whole cluster in a few requests, for pages that show every topic or partition at once.

The admin client asks ListOffsets one partition at a time and DescribeConfigs one resource at a time,
right for a tool and too slow for a page listing 10,000 partitions; here one request per leader (offsets)
or one request in all (configs) answers for every partition or topic.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterable

from ..clients import TopicPartition
from ..clients.simple_client import SimpleClient
from ..protocol.config_resource import ConfigResourceType
from ..protocol.messages import DescribeConfigsRequest, ListOffsetsRequest

EARLIEST, LATEST = -2, -1


async def list_offsets(client: SimpleClient, partitions: Iterable[TopicPartition], spec: int,
                       leaders: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
    """Each partition's offset for ``spec`` (EARLIEST, LATEST or a timestamp), one request per leader;
    None for a partition without a leader or whose leader answered an error."""
    by_leader: dict[int, list[TopicPartition]] = {}
    result: dict[TopicPartition, int | None] = {}
    for tp in partitions:
        leader = leaders.get(tp, -1)
        if leader < 0:
            result[tp] = None
        else:
            by_leader.setdefault(leader, []).append(tp)

    async def ask(leader: int, tps: list[TopicPartition]) -> None:
        topics: dict[str, list[Any]] = {}
        for tp in tps:
            result[tp] = None
            topics.setdefault(tp.topic, []).append(ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=tp.partition, timestamp=spec))
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=ps) for name, ps in topics.items()])
        try:
            response = await client.send(leader, request)
        except (OSError, asyncio.TimeoutError, Exception):  # noqa: BLE001 - one dead leader leaves None
            return
        for topic in response.topics:
            for p in topic.partitions:
                if not p.error_code:
                    result[TopicPartition(topic.name, p.partition_index)] = p.offset

    await asyncio.gather(*(ask(leader, tps) for leader, tps in by_leader.items()))
    return result


async def topic_configs(client: SimpleClient, topics: list[str], keys: list[str] | None
                        ) -> dict[str, dict[str, Any]]:
    """topic -> {key: value} (``keys`` only, or all), in one DescribeConfigs; a topic the broker refused maps
    to {"error": message}."""
    if not topics:
        return {}
    request = DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=int(ConfigResourceType.TOPIC),
                                                       resource_name=name, configuration_keys=keys)
        for name in topics], include_synonyms=False, include_documentation=False)
    response = await client.send(None, request)
    found: dict[str, dict[str, Any]] = {}
    for result in response.results:
        if result.error_code:
            found[result.resource_name] = {"error": result.error_message or f"error {result.error_code}"}
        else:
            found[result.resource_name] = {c.name: c.value for c in result.configs}
    return found


def replica_sizes(log_dirs: dict[int, dict[str, Any]]) -> tuple[dict[TopicPartition, int], list[dict]]:
    """(partition -> its largest replica's size, [{broker, dir, topic, partition, size, offset_lag, future}])
    from ``AIOAdmin.describe_log_dirs``' answer."""
    sizes: dict[TopicPartition, int] = {}
    rows = []
    for broker, dirs in log_dirs.items():
        for path, description in dirs.items():
            for tp, info in description.replicas.items():
                sizes[tp] = max(sizes.get(tp, 0), info.size)
                rows.append({"broker": broker, "dir": path, "topic": tp.topic, "partition": tp.partition,
                             "size": info.size, "offset_lag": info.offset_lag, "future": info.is_future})
    return sizes, rows

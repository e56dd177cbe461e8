"""OffsetCommit v0 / OffsetFetch v0, the old ZooKeeper consumers' API, as Kafka 2.8 serves it: offsets
live in ZooKeeper under /consumers/<group>/offsets/<topic>/<partition>, any broker commits and fetches
them (no group coordinator), and they are apart from the offsets of v1+ (``__consumer_offsets``)."""

from __future__ import annotations

import uuid

from odradek.clients.connection import BrokerConnection
from odradek.controller.zk_client import KafkaZkClient
from odradek.protocol.messages import OffsetCommitRequest, OffsetFetchRequest

from .helpers import create_topic, run

_Topic = OffsetCommitRequest.OffsetCommitRequestTopic
_Partition = _Topic.OffsetCommitRequestPartition


async def _send(address: str, request, version: int):
    host, port = address.rsplit(":", 1)
    conn = await BrokerConnection.connect(host, int(port))
    try:
        return await conn.send(request, version=version)
    finally:
        await conn.close()


def _commit(address: str, group: str, topic: str, offsets: dict[int, int], version: int = 0, metadata: str = "m"):
    request = OffsetCommitRequest(group_id=group, topics=[_Topic(name=topic, partitions=[
        _Partition(partition_index=p, committed_offset=o, committed_metadata=metadata) for p, o in offsets.items()])])
    answer = run(_send(address, request, version), 60)
    return {p.partition_index: p.error_code for t in answer.topics for p in t.partitions}


def _fetch(address: str, group: str, topic: str, partitions: list[int], version: int = 0):
    request = OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)])
    answer = run(_send(address, request, version), 60)
    return {p.partition_index: (p.committed_offset, p.metadata, p.error_code) for t in answer.topics for p in t.partitions}


def test_v0_offsets_live_in_zookeeper_and_any_broker_serves_them(odradek_cluster_factory):
    cluster = odradek_cluster_factory(2, {"offsets.topic.num.partitions": "1"})
    first, second = cluster.bootstrap_servers.split(",")
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    run(create_topic(cluster.bootstrap_servers, topic, 2))
    # Each broker commits one partition: neither needs to be the group's coordinator.
    assert _commit(first, group, topic, {0: 42}) == {0: 0}
    assert _commit(second, group, topic, {1: 7, 5: 1}) == {1: 0, 5: 3}  # 5 does not exist
    zk = KafkaZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        assert zk.get_data(f"/consumers/{group}/offsets/{topic}/0")[0] == b"42"
        assert zk.get_data(f"/consumers/{group}/offsets/{topic}/1")[0] == b"7"
    finally:
        zk.close()
    # no metadata kept; unknown: -1 and UNKNOWN_TOPIC_OR_PARTITION, as Kafka 2.8.2 answers (tests/differential)
    expected = {0: (42, "", 0), 1: (7, "", 0), 5: (-1, "", 3)}
    assert _fetch(first, group, topic, [0, 1, 5]) == expected
    assert _fetch(second, group, topic, [0, 1, 5]) == expected
    assert _commit(first, group, topic, {0: 43}) == {0: 0}
    assert _fetch(second, group, topic, [0])[0][0] == 43
    # The v1+ store (__consumer_offsets) knows nothing of them, and the other way round.
    assert _fetch(first, group, topic, [0], version=1)[0][0] == -1
    too_long = "x" * 5000  # over offset.metadata.max.bytes (4096)
    assert _commit(second, group, topic, {1: 8}, metadata=too_long) == {1: 12}  # OFFSET_METADATA_TOO_LARGE
    assert _fetch(first, group, topic, [1])[1][0] == 7

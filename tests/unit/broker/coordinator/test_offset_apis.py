"""OffsetCommit/OffsetFetch handlers over a GroupCoordinator with a fake replica manager."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.offset_apis import OffsetApis
from odradek.broker.coordinator.group.coordinator import GroupCoordinator
from odradek.protocol.messages import OffsetCommitRequest, OffsetFetchRequest
from tests.fakes.coordinator_services import KnownPartitions

from .helpers import DictConfig
from .test_coordinator import CONFIG, FakeReplicaManager

_Topic = OffsetCommitRequest.OffsetCommitRequestTopic
_Partition = _Topic.OffsetCommitRequestPartition


def request(body, version):
    return SimpleNamespace(body=body, api_version=version)


def test_commit_then_fetch_round_trips_metadata_and_rejects_unknown_partitions():
    async def main():
        coordinator = GroupCoordinator(1, DictConfig(CONFIG), FakeReplicaManager())
        coordinator.manager.owned.add(0)
        api = OffsetApis(SimpleNamespace(metadata_cache=KnownPartitions({("t", 0)}), auth=AuthHelper()), coordinator)
        commit = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
            _Topic(name="t", partitions=[
                _Partition(partition_index=0, committed_offset=7, committed_leader_epoch=3, committed_metadata="md"),
                _Partition(partition_index=9, committed_offset=1, committed_metadata=None)])])
        answer = await api.offset_commit(request(commit, 8))
        assert [(p.partition_index, p.error_code) for p in answer.topics[0].partitions] == [(0, 0), (9, 3)]
        fetched = api.offset_fetch(request(OffsetFetchRequest(group_id="g", topics=None), 7))
        [(topic, partition)] = [(t, p) for t in fetched.topics for p in t.partitions]
        assert (topic.name, partition.partition_index, partition.committed_offset, partition.metadata,
                partition.committed_leader_epoch) == ("t", 0, 7, "md", 3)
        missing = api.offset_fetch(request(OffsetFetchRequest(group_id="other", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]), 5))
        p = missing.topics[0].partitions[0]
        assert (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) == (-1, -1, "", 0)
        coordinator.manager.owned.clear()
        assert api.offset_fetch(request(OffsetFetchRequest(group_id="g", topics=None), 7)).error_code == 16

    asyncio.run(main())

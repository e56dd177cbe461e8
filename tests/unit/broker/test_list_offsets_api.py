"""ListOffsets answers encode at every version Kafka 2.8 serves (a fake replica manager stands in for the log).

librdkafka 2.0.2 (kcat) sends ListOffsets v2 and aiokafka v0-3: a leader epoch set on a v<4 answer cannot
be encoded, which used to turn every such request into UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsApi
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.messages import ListOffsetsRequest, ListOffsetsResponse

LOWEST, HIGHEST = KAFKA_2_8_VERSIONS[ApiKey.LIST_OFFSETS]


def fake_partition() -> SimpleNamespace:
    """A leader at epoch 3 with offsets 5..41, high watermark 40, in one segment last written at time 500."""
    log = SimpleNamespace(log_start_offset=5, log_end_offset=42, latest_epoch=3,
                          leader_epoch_cache=SimpleNamespace(epoch_for_offset=lambda offset: 3),
                          fetch_offset_by_timestamp=lambda timestamp: (timestamp + 1, 17),
                          segments=[SimpleNamespace(base_offset=0, size=100, last_modified_ms=500)])
    return SimpleNamespace(log=log, high_watermark=40)


def answer(version: int, timestamp: int) -> ListOffsetsResponse.ListOffsetsTopicResponse:
    partition = fake_partition()
    replica_manager = SimpleNamespace(leader_partition=lambda topic, index, epoch: partition)
    api = ListOffsetsApi(SimpleNamespace(replica_manager=replica_manager, auth=AuthHelper()))
    Topic = ListOffsetsRequest.ListOffsetsTopic
    body = ListOffsetsRequest(replica_id=-1, topics=[
        Topic(name="t", partitions=[Topic.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
    request = SimpleNamespace(body=body, api_version=version)
    response = api.handle(request)
    decoded = ListOffsetsResponse.decode(response.encode(version), version)  # what the client reads
    return decoded.topics[0].partitions[0]


@pytest.mark.parametrize("version", range(LOWEST, HIGHEST + 1))
@pytest.mark.parametrize("timestamp, offset", [(LATEST_TIMESTAMP, 40), (EARLIEST_TIMESTAMP, 5), (1000, 17)])
def test_every_version_encodes_the_offset(version, timestamp, offset):
    partition = answer(version, timestamp)
    assert partition.error_code == 0
    if version == 0:  # legacyFetchOffsetsBefore: by segment file time, so time 1000 finds the segment's base
        assert partition.old_style_offsets == [5 if timestamp == 1000 else offset]
    else:
        assert partition.offset == offset
        # the leader epoch travels from v4 on (Kafka 2.8 sets it only there); older versions lack the field
        assert partition.leader_epoch == (3 if version >= 4 else -1)


def handle(version: int, partitions: list, isolation_level: int = 0) -> list[tuple[int, int]]:
    partition = fake_partition()
    replica_manager = SimpleNamespace(leader_partition=lambda topic, index, epoch: partition)
    api = ListOffsetsApi(SimpleNamespace(replica_manager=replica_manager, auth=AuthHelper()))
    Topic = ListOffsetsRequest.ListOffsetsTopic
    body = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[Topic(name="t", partitions=[
        Topic.ListOffsetsPartition(partition_index=i, timestamp=LATEST_TIMESTAMP) for i in partitions])])
    response = api.handle(SimpleNamespace(body=body, api_version=version))
    return [(p.partition_index, p.error_code) for p in response.topics[0].partitions]


def test_a_partition_named_twice_is_invalid_request_every_time_from_v1():
    assert handle(1, [0, 1, 0]) == [(0, 42), (1, 0), (0, 42)]  # INVALID_REQUEST, as Kafka 2.8
    assert handle(0, [0, 0]) == [(0, 0), (0, 0)]


def test_an_unknown_isolation_level_fails_each_partition():
    assert handle(2, [0, 1], isolation_level=7) == [(0, -1), (1, -1)]  # IsolationLevel.forId throws

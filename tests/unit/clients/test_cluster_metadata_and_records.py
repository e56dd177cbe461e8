"""ClusterMetadata from Metadata responses, and decoding a Fetch response's records (records_from_fetch)."""

from __future__ import annotations

import pytest

from odradek.clients.cluster_metadata import ClusterMetadata, PartitionInfo
from odradek.clients.simple_client import build_batch, records_from_fetch
from odradek.protocol.messages import FetchResponse, MetadataResponse
from odradek.protocol.records import ControlRecordType, CorruptRecordBatchError, build_control_batch, set_base_offset

MdTopic = MetadataResponse.MetadataResponseTopic
MdPartition = MdTopic.MetadataResponsePartition
MdBroker = MetadataResponse.MetadataResponseBroker
Aborted = FetchResponse.FetchableTopicResponse.PartitionData.AbortedTransaction


def response(controller: int, topics: dict[str, list[int]], brokers=(0, 1)) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MdBroker(node_id=b, host=f"h{b}", port=9000 + b, rack="r" if b else None) for b in brokers],
        cluster_id="cid", controller_id=controller,
        topics=[MdTopic(error_code=0, name=name, is_internal=name.startswith("__"), partitions=[
            MdPartition(error_code=0, partition_index=p, leader_id=leader, leader_epoch=3,
                        replica_nodes=[leader, 1 - leader], isr_nodes=[leader])
            for p, leader in enumerate(leaders)]) for name, leaders in topics.items()])


def test_cluster_metadata_from_a_response():
    md = ClusterMetadata.from_response(response(1, {"t": [0, 1], "__consumer_offsets": [1]}))
    assert md.brokers[0] == ("h0", 9000, None) and md.brokers[1].rack == "r"
    assert (md.controller_id, md.cluster_id) == (1, "cid")
    assert md.topics["t"].partitions[1] == PartitionInfo(leader=1, leader_epoch=3, replicas=[1, 0], isr=[1], error_code=0)
    assert md.topics["__consumer_offsets"].is_internal and not md.topics["t"].is_internal
    assert (md.leader_for("t", 0), md.leader_for("t", 1), md.leader_for("t", 2)) == (0, 1, None)
    assert md.broker_address(1) == ("h1", 9001) and md.broker_address(7) is None


def test_merged_keeps_old_topics_and_takes_new_brokers():
    old = ClusterMetadata.from_response(response(0, {"a": [0], "b": [0]}))
    newer = ClusterMetadata.from_response(response(1, {"b": [1]}, brokers=(1,)))
    merged = old.merged(newer)
    assert sorted(merged.brokers) == [1] and merged.controller_id == 1
    assert (merged.leader_for("a", 0), merged.leader_for("b", 0)) == (0, 1)
    assert sorted(merged.without_topics(["a"]).topics) == ["b"]
    assert sorted(old.topics) == ["a", "b"] and old.leader_for("b", 0) == 0  # unchanged


def at(offset: int, batch: bytes) -> bytes:
    buffer = bytearray(batch)
    set_base_offset(buffer, offset)
    return bytes(buffer)


def transactions_log() -> bytes:
    """pid 5 aborts offsets 0-1, pid 6 commits offset 2, then pid 5 commits offset 5."""
    return b"".join([
        at(0, build_batch([(b"a0", b"x"), (b"a1", b"x")], producer_id=5, producer_epoch=0, base_sequence=0,
                          transactional=True)),
        at(2, build_batch([(b"c2", b"x")], producer_id=6, producer_epoch=0, base_sequence=0, transactional=True)),
        build_control_batch(ControlRecordType.ABORT, producer_id=5, producer_epoch=0, coordinator_epoch=0, base_offset=3),
        build_control_batch(ControlRecordType.COMMIT, producer_id=6, producer_epoch=0, coordinator_epoch=0, base_offset=4),
        at(5, build_batch([(b"c5", b"x")], producer_id=5, producer_epoch=0, base_sequence=2, transactional=True)),
        build_control_batch(ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, coordinator_epoch=0, base_offset=6),
    ])


def test_read_uncommitted_sees_every_data_record_but_no_markers():
    assert [r.key for r in records_from_fetch(transactions_log(), 0)] == [b"a0", b"a1", b"c2", b"c5"]


def test_read_committed_drops_aborted_transactions():
    records = records_from_fetch(transactions_log(), 0, [Aborted(producer_id=5, first_offset=0)])
    assert [(r.offset, r.key) for r in records] == [(2, b"c2"), (5, b"c5")]


def test_records_before_the_fetch_offset_and_a_cut_batch_are_dropped():
    data = at(10, build_batch([(b"k", b"v%d" % i) for i in range(4)])) + at(14, build_batch([(b"k", b"last")]))
    assert [r.offset for r in records_from_fetch(data, 12)] == [12, 13, 14]
    assert [r.offset for r in records_from_fetch(data[:-5], 12)] == [12, 13]  # max_bytes cut the last batch
    assert records_from_fetch(b"", 0) == [] and records_from_fetch(None, 0) == []


def test_corrupt_batch_raises():
    data = bytearray(build_batch([(b"k", b"value")]))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordBatchError):
        records_from_fetch(bytes(data), 0)

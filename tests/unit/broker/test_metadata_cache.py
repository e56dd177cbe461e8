"""MetadataCache fed with real UpdateMetadata requests, decoded from the wire at several versions."""

from __future__ import annotations

import uuid

import pytest

from odradek.broker.metadata_cache import MetadataCache
from odradek.protocol.header import decode_request, encode_request
from odradek.protocol.messages import UpdateMetadataRequest

_Broker = UpdateMetadataRequest.UpdateMetadataBroker
_Endpoint = _Broker.UpdateMetadataEndpoint
_Topic = UpdateMetadataRequest.UpdateMetadataTopicState
_State = _Topic.UpdateMetadataPartitionState
TOPIC_ID = uuid.uuid4()


def state(topic: str, partition: int, leader: int) -> _State:
    return _State(topic_name=topic, partition_index=partition, controller_epoch=3, leader=leader, leader_epoch=2,
                  isr=[leader], zk_version=1, replicas=[leader, 9], offline_replicas=[9])


def request(version: int, states: list[_State], controller_id: int = 1) -> UpdateMetadataRequest:
    brokers = [_Broker(id=1, v0_host="h1", v0_port=9092, rack="r1",
                       endpoints=[_Endpoint(port=9092, host="h1", listener="PLAINTEXT", security_protocol=0),
                                  _Endpoint(port=9093, host="h1", listener="INTERNAL", security_protocol=0)]),
               _Broker(id=2, v0_host="h2", v0_port=9092, rack=None,
                       endpoints=[_Endpoint(port=9092, host="h2", listener="PLAINTEXT", security_protocol=0)])]
    body = UpdateMetadataRequest(controller_id=controller_id, controller_epoch=3, broker_epoch=7, live_brokers=brokers)
    if version < 5:
        body.ungrouped_partition_states = states
    else:
        topics: dict[str, list[_State]] = {}
        for s in states:
            topics.setdefault(s.topic_name, []).append(s)
        body.topic_states = [_Topic(topic_name=t, topic_id=TOPIC_ID, partition_states=ps) for t, ps in topics.items()]
    # Through the codec, as the broker receives it.
    _, decoded = decode_request(encode_request(body, version, 1, "controller")[4:])
    return decoded


@pytest.mark.parametrize("version", [0, 1, 3, 4, 5, 6, 7])
def test_update_fills_brokers_partitions_and_controller(version):
    cache = MetadataCache(1)
    assert cache.update(request(version, [state("a", 0, 1), state("a", 1, 2), state("b", 0, 1)]), version) == []
    assert cache.controller_id == 1 and cache.alive_broker_ids() == [1, 2]
    listener = "PLAINTEXT"
    assert (cache.endpoint(2, listener).host, cache.endpoint(2, listener).port) == ("h2", 9092)
    if version >= 3:
        assert cache.endpoint(1, "INTERNAL").port == 9093
    assert cache.all_topics() == ["a", "b"] and cache.num_partitions("a") == 2
    p = cache.partition("a", 1)
    assert (p.leader, p.leader_epoch, p.isr, p.replicas) == (2, 2, [2], [2, 9])
    assert cache.has_all_leaders("a")
    assert (cache.topic_ids.get("a") == TOPIC_ID) == (version >= 7)


def test_partitions_marked_for_deletion_disappear_and_leaders_can_be_missing():
    cache = MetadataCache(1)
    cache.update(request(7, [state("a", 0, 1), state("a", 1, 2), state("b", 0, 5)]), 7)
    assert not cache.has_all_leaders("b")  # broker 5 is not alive
    deleted = cache.update(request(7, [state("a", 0, -2), state("a", 1, -2)], controller_id=-1), 7)
    assert sorted(deleted) == [("a", 0), ("a", 1)]
    assert cache.all_topics() == ["b"] and "a" not in cache.topic_ids
    assert cache.controller_id is None

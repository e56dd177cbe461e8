"""The Metadata answer built from a real MetadataCache (fed UpdateMetadata requests through the codec),
read back from the bytes a client gets."""

from __future__ import annotations

import types

import pytest

from odradek.broker.apis.metadata import MetadataApi
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.metrics.request_metrics import count_errors
from odradek.protocol.errors import LeaderNotAvailableError, UnknownTopicOrPartitionError
from odradek.protocol.header import decode_response, encode_response
from odradek.protocol.messages import MetadataRequest

from .test_metadata_cache import request, state

VERSION = 9


class NoAuthorizer:
    enabled = False


def metadata_api(cache: MetadataCache) -> MetadataApi:
    services = types.SimpleNamespace(metadata_cache=cache, config={"auto.create.topics.enable": False},
                                     auth=NoAuthorizer())
    return MetadataApi(services)


def answer(api: MetadataApi, version: int = VERSION, topics=None, logged: bool = False):
    """The response body as handled, and the topics a client decodes from its bytes (name -> partitions)."""
    body = MetadataRequest(topics=topics, allow_auto_topic_creation=False)
    req = types.SimpleNamespace(body=body, api_version=version, listener="PLAINTEXT",
                                log_entry={} if logged else None)  # a request log entry wants structs
    response = api.handle(req)
    frame = encode_response(response, version, 5)
    _, decoded = decode_response(memoryview(frame)[4:], 3, version)
    return response, {t.name: (t.error_code, t.partitions) for t in decoded.topics}


def all_topics(api: MetadataApi, version: int = VERSION):
    return {name: partitions for name, (_, partitions) in answer(api, version)[1].items()}


def leaders(partitions) -> list[tuple[int, int, int]]:
    return [(p.partition_index, p.leader_id, p.error_code) for p in partitions]


def counting_builds(api: MetadataApi) -> list[str]:
    built = []
    build = api._build_partitions

    def counted(parts, listener, version):
        built.append(next(iter(parts.values())).topic)  # the topic whose partitions are built
        return build(parts, listener, version)
    api._build_partitions = counted
    return built


def test_unchanged_topics_keep_their_entries_and_changed_ones_are_rebuilt():
    cache = MetadataCache(1)
    cache.update(request(7, [state("a", 0, 1), state("a", 1, 2), state("b", 0, 1)]), 7)
    api = metadata_api(cache)
    built = counting_builds(api)
    assert leaders(all_topics(api)["a"]) == [(0, 1, 0), (1, 2, 0)]
    assert sorted(built) == ["a", "b"]
    # an update naming only b: a is answered from what was kept, b shows its new leader
    cache.update(request(7, [state("b", 0, 2)]), 7)
    second = all_topics(api)
    assert sorted(built) == ["a", "b", "b"]
    assert leaders(second["a"]) == [(0, 1, 0), (1, 2, 0)] and leaders(second["b"]) == [(0, 2, 0)]
    # each version has its own entries: v0 lists only live replicas
    assert [p.replica_nodes for p in all_topics(api, 0)["a"]] == [[1], [2]]
    assert [p.replica_nodes for p in all_topics(api)["a"]] == [[1, 9], [2, 9]]


def test_entries_are_rebuilt_when_the_live_brokers_change():
    cache = MetadataCache(1)
    cache.update(request(7, [state("a", 0, 1), state("a", 1, 2)]), 7)
    api = metadata_api(cache)
    assert leaders(all_topics(api)["a"]) == [(0, 1, 0), (1, 2, 0)]
    gone = request(7, [])
    gone.live_brokers = [b for b in gone.live_brokers if b.id == 1]  # broker 2 left; a's map is unchanged
    cache.update(gone, 7)
    assert leaders(all_topics(api)["a"]) == [(0, 1, 0), (1, -1, LeaderNotAvailableError.code)]


@pytest.mark.parametrize("version", range(12))
def test_the_reused_encoding_is_the_bytes_and_error_counts_of_the_struct_answer(version):
    cache = MetadataCache(1)
    cache.update(request(7, [state("a", 0, 1), state("a", 1, 2), state("b", 0, 3)]), 7)  # b's leader: none
    api = metadata_api(cache)
    names = None if version == 0 else [MetadataRequest.MetadataRequestTopic(name=n) for n in ("a", "b", "zz")]
    for _ in range(2):  # built, then kept
        encoded, topics = answer(api, version, names)
        structs, same_topics = answer(api, version, names, logged=True)
        assert type(structs.topics) is list
        assert topics == same_topics
        assert encode_response(encoded, version, 5) == encode_response(structs, version, 5)
        assert count_errors(encoded, {}) == count_errors(structs, {})
    assert topics["b"][1][0].error_code == LeaderNotAvailableError.code
    if version:
        assert topics["zz"][0] == UnknownTopicOrPartitionError.code


def test_entries_of_deleted_topics_are_dropped_once_they_outnumber_the_live_ones():
    cache = MetadataCache(1)
    names = [f"t{i}" for i in range(300)]
    cache.update(request(7, [state(name, 0, 1) for name in names]), 7)
    api = metadata_api(cache)
    all_topics(api)
    deleting = [state(name, 0, -2) for name in names[1:]]  # the leader -2 marks a partition being deleted
    cache.update(request(7, deleting), 7)
    assert list(all_topics(api)) == ["t0"]
    assert [list(memo) for memo in api._memo.values()] == [["t0"]]

"""The Metadata answer built from a real MetadataCache (fed UpdateMetadata requests through the codec)."""

from __future__ import annotations

import types

from odradek.broker.apis.metadata import MetadataApi
from odradek.broker.metadata_cache import MetadataCache
from odradek.protocol.errors import LeaderNotAvailableError
from odradek.protocol.messages import MetadataRequest

from .test_metadata_cache import request, state

VERSION = 9


class NoAuthorizer:
    enabled = False


def metadata_api(cache: MetadataCache) -> MetadataApi:
    services = types.SimpleNamespace(metadata_cache=cache, config={"auto.create.topics.enable": False},
                                     auth=NoAuthorizer())
    return MetadataApi(services)


def all_topics(api: MetadataApi, version: int = VERSION):
    req = types.SimpleNamespace(body=MetadataRequest(topics=None, allow_auto_topic_creation=False),
                                api_version=version, listener="PLAINTEXT")
    return {t.name: t.partitions for t in api.handle(req).topics}


def leaders(partitions) -> list[tuple[int, int, int]]:
    return [(p.partition_index, p.leader_id, p.error_code) for p in partitions]


def test_unchanged_topics_keep_their_entries_and_changed_ones_are_rebuilt():
    cache = MetadataCache(1)
    cache.update(request(7, [state("a", 0, 1), state("a", 1, 2), state("b", 0, 1)]), 7)
    api = metadata_api(cache)
    first = all_topics(api)
    assert leaders(first["a"]) == [(0, 1, 0), (1, 2, 0)]
    # an update naming only b: a's entries are the same objects, b's show the new leader
    cache.update(request(7, [state("b", 0, 2)]), 7)
    second = all_topics(api)
    assert second["a"] is first["a"]
    assert leaders(second["b"]) == [(0, 2, 0)]
    # v0 lists only live replicas: its entries are kept apart from v1+'s
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

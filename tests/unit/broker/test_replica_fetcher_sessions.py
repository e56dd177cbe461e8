"""A follower's fetcher against a leader's Fetch handler, in one process: the replica fetcher uses an
incremental fetch session (KIP-227), names only the partitions whose position moved, and the leader reads
only the partitions that changed; ``num.replica.fetchers`` spreads partitions over fetchers by Kafka's hash."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from odradek.broker.apis.fetch import FetchApi
from odradek.broker.apis.services import BrokerServices
from odradek.broker.fetch_session import INITIAL_EPOCH
from odradek.broker.fetch_session_handler import FetchSessionHandler
from odradek.broker import replica_fetcher
from odradek.broker.replica_fetcher import FetcherSettings, ReplicaFetcherManager, fetcher_id_for
from odradek.broker.replica_manager import follower_watch_key
from odradek.protocol import errors
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import FetchRequest
from tests.fakes.replica_manager import partition_state
from tests.fakes.polling import until

from .log.helpers import value_batch as batch
from .network.helpers import make_config, run as run_loop

LEADER, FOLLOWER = 1, 2
PARTITIONS = 50


def state(partition: int, epoch: int = 0):
    return partition_state(partition, leader=LEADER, leader_epoch=epoch, replicas=[LEADER, FOLLOWER])


class Loopback:
    """A connection to the leader whose requests go straight to its Fetch handler (no bytes)."""

    def __init__(self, fetch_api: FetchApi) -> None:
        self.fetch_api = fetch_api
        self.fetches: list = []
        self.closed = False

    async def send(self, body, version=None, timeout=None):
        assert isinstance(body, FetchRequest), body
        self.fetches.append(body)
        request = SimpleNamespace(body=body, api_version=12, correlation_id=len(self.fetches),
                                  header=SimpleNamespace(api_key=ApiKey.FETCH, api_version=12))
        response = self.fetch_api.handle(request)
        return await response if inspect.isawaitable(response) else response

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def brokers(replica_managers):
    return replica_managers.make(LEADER), replica_managers.make(FOLLOWER)


def named(request) -> set:
    return {(t.topic, p.partition) for t in request.topics for p in t.partitions}


def replicating(leader, follower) -> tuple[Loopback, ReplicaFetcherManager]:
    """Both started (on the running loop), PARTITIONS partitions led by ``leader`` with one record each, and
    ``follower`` fetching them through a Loopback to the leader's Fetch handler."""
    leader.start()
    follower.start()
    unused = dict.fromkeys(("admin", "zk", "producer_ids", "controller", "group_coordinator",
                            "transaction_coordinator", "dynamic_config", "client_quotas"))  # Fetch reads none
    conn = Loopback(FetchApi(BrokerServices(make_config(), LEADER, leader.metadata_cache, leader, lambda: 1, **unused)))

    async def connect(*args, **kwargs):
        return conn

    manager = ReplicaFetcherManager(follower, FetcherSettings(FOLLOWER, wait_max_ms=20, backoff_ms=10,
                                                              connect=connect))
    follower.fetcher_manager = manager
    states = [("t", state(p)) for p in range(PARTITIONS)]
    leader.become_leader_or_follower(1, states, {})
    for p in range(PARTITIONS):
        leader.append_records(1, 1000, {("t", p): batch(b"first-%d" % p)})
    follower.become_leader_or_follower(1, states, {}, {LEADER: ("leader", 9092)})
    return conn, manager


def test_follower_fetches_through_a_session_naming_only_what_moved(brokers):
    leader, follower = brokers

    async def main():
        conn, manager = replicating(leader, follower)
        fetch_api = conn.fetch_api
        every = {("t", p) for p in range(PARTITIONS)}
        await until(lambda: all(follower.partitions[k].log_end_offset == 1 for k in every), "first replication")
        first = conn.fetches[0]
        assert first.session_epoch == INITIAL_EPOCH and named(first) == every
        await until(lambda: all(leader.partitions[k].high_watermark == 1 for k in every), "high watermarks")
        # idle: the session's requests name nothing, the leader's answers carry nothing
        await until(lambda: len(conn.fetches) >= 6, "idle fetches")
        idle = conn.fetches[-1]
        assert idle.session_id != 0 and idle.session_epoch > 1 and named(idle) == set()
        # the parked session fetch waits under the session's key (and the follower's), not under each partition
        assert leader.fetch_purgatory.watched_keys() == [("fetch-session", idle.session_id),
                                                         follower_watch_key(FOLLOWER)]
        # a produce to one partition: only it travels, both ways
        before = len(conn.fetches)
        leader.append_records(1, 1000, {("t", 7): batch(b"second")})
        await until(lambda: follower.partitions[("t", 7)].log_end_offset == 2, "second replication")
        await until(lambda: leader.partitions[("t", 7)].high_watermark == 2, "high watermark")
        later = conn.fetches[before:]
        assert set().union(*(named(r) for r in later)) == {("t", 7)}
        assert all(follower.partitions[k].log_end_offset == 1 for k in every - {("t", 7)})
        # the leader forgets the session (a restart, an eviction): the fetcher starts over, full
        fetch_api.fetch_manager.cache.remove(idle.session_id)
        before = len(conn.fetches)
        await until(lambda: any(r.session_epoch == INITIAL_EPOCH for r in conn.fetches[before:]), "a new session")
        restart = next(r for r in conn.fetches[before:] if r.session_epoch == INITIAL_EPOCH)
        assert named(restart) == every
        leader.append_records(1, 1000, {("t", 3): batch(b"third")})
        await until(lambda: follower.partitions[("t", 3)].log_end_offset == 2, "replication after the new session")
        await manager.shutdown()

    run_loop(main(), timeout=20)


def test_log_start_offsets_moved_unannounced_reach_the_leader_a_slice_of_partitions_per_fetch(brokers, monkeypatch):
    """Our own retention moves a follower's log start offset without telling its fetcher: every
    PARAMS_REFRESH_S the fetcher computes every partition's parameters afresh, PARAMS_REFRESH_SLICE of them
    per round (all at once held the event loop 20-60 ms for 3,333 partitions)."""
    monkeypatch.setattr(replica_fetcher, "PARAMS_REFRESH_S", 0.05)
    monkeypatch.setattr(replica_fetcher, "PARAMS_REFRESH_SLICE", 10)
    leader, follower = brokers

    async def main():
        conn, manager = replicating(leader, follower)
        every = {("t", p) for p in range(PARTITIONS)}
        await until(lambda: all(follower.partitions[k].high_watermark == 1 for k in every), "replicated, committed")
        before = len(conn.fetches)
        for key in every:  # as retention would, unannounced
            assert follower.partitions[key].log.maybe_increment_log_start_offset(1)

        def moved() -> list[set]:
            return [{(t.topic, p.partition) for t in r.topics for p in t.partitions if p.log_start_offset == 1}
                    for r in conn.fetches[before:]]
        await until(lambda: set().union(*moved()) == every, "every moved log start offset sent")
        assert max(len(named) for named in moved()) <= 10
        await manager.shutdown()

    run_loop(main(), timeout=20)


def test_session_handler_sends_changes_forgets_and_starts_over_on_session_errors():
    handler = FetchSessionHandler("test")
    params = {"a": (0,), "b": (0,), "c": (0,)}
    full = handler.build(set(params), params.__getitem__, ())
    assert full.is_full and full.to_send == params and full.to_forget == []
    assert handler.handle_response(full, 0, 77)
    params["b"] = (5,)
    incremental = handler.build({"a", "b"}, params.__getitem__, {"a", "b"})
    assert (incremental.session_id, incremental.epoch) == (77, 1)
    assert incremental.to_send == {"b": (5,)} and incremental.to_forget == ["c"]
    handler.handle_response(incremental, 0, 77)
    assert handler.build({"a", "b", "c"}, params.__getitem__, ()).to_send == {"c": (0,)}
    # an unknown session: a full request without the id; another error: a full request closing it
    assert not handler.handle_response(incremental, errors.FetchSessionIdNotFoundError.code, 0)
    assert (handler.session_id, handler.epoch) == (0, INITIAL_EPOCH)
    again = handler.build({"a"}, params.__getitem__, ())
    assert again.is_full and again.to_send == {"a": (0,)}
    handler.handle_response(again, 0, 78)
    handler.handle_error()
    closing = handler.build({"a"}, params.__getitem__, ())
    assert (closing.session_id, closing.epoch) == (78, INITIAL_EPOCH)
    # the leader had no room for a session: every request is full
    handler.handle_response(closing, 0, 0)
    assert handler.build({"a"}, params.__getitem__, ()).is_full


def test_fetcher_ids_follow_kafkas_hash():
    assert {fetcher_id_for(("t", p), 1) for p in range(20)} == {0}
    ids = [fetcher_id_for(("topic", p), 3) for p in range(6)]
    # Kafka: Utils.abs(31 * "topic".hashCode + p) % 3, "topic".hashCode = 110546223
    assert ids == [abs(31 * 110546223 + p - (1 << 32) if 31 * 110546223 + p >= 1 << 31 else 31 * 110546223 + p) % 3
                   for p in range(6)]
    assert len(set(ids)) == 3

"""Follower fetching (KIP-392) on one broker: the rack-aware selector's choice, the leader's preferred read
replica answer, and a follower serving a Fetch v11+ consumer below its high watermark."""

from __future__ import annotations

import pytest

from odradek.broker.config_keys import RACK_AWARE_REPLICA_SELECTOR
from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.metadata_cache import BrokerEndpoint, CachedBroker
from odradek.broker.partition import ReplicaState
from odradek.broker.replica_manager import FetchParams
from odradek.broker.replica_selector import ClientMetadata, ReplicaView, rack_aware_select, replica_selector
from odradek.protocol import errors
from odradek.protocol.records import iter_batches

from .log.helpers import value_batch as batch
from .test_replica_manager import BROKER, rm, run, state  # noqa: F401  (rm is a fixture)

LEADER = ReplicaView(1, "a", 10, 0)


def client(rack: str) -> ClientMetadata:
    return ClientMetadata(rack, "PLAINTEXT")


def test_rack_aware_selector_prefers_the_most_caught_up_replica_in_the_clients_rack():
    behind, ahead, fresher = ReplicaView(2, "b", 8, 0), ReplicaView(3, "b", 10, 500), ReplicaView(4, "b", 10, 100)
    replicas = [LEADER, behind, ahead, fresher]
    assert rack_aware_select(client("b"), replicas, LEADER) == fresher  # same end offset: caught up more recently
    assert rack_aware_select(client("a"), replicas, LEADER) == LEADER   # the leader is in the client's rack
    assert rack_aware_select(client("c"), replicas, LEADER) == LEADER   # no replica in it
    assert rack_aware_select(client(""), replicas, LEADER) == LEADER    # no client.rack


def test_the_selector_is_kafkas_class_name_or_none():
    assert replica_selector(RACK_AWARE_REPLICA_SELECTOR) is rack_aware_select
    assert replica_selector(None) is None and replica_selector("") is None


def v11_consumer(rack: str) -> FetchParams:
    return FetchParams(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, client=client(rack))


def racks(rm, **by_broker):  # noqa: F811
    rm.metadata_cache.brokers = {int(b[1:]): CachedBroker(int(b[1:]), rack, {"PLAINTEXT": BrokerEndpoint("h", 1, 0)})
                                 for b, rack in by_broker.items()}


@pytest.mark.parametrize("follower_end,rack,preferred", [
    (2, "b", 2),    # the follower in the consumer's rack has the fetch offset: go there
    (0, "b", -1),   # it does not have it yet: read the leader
    (2, "a", -1),   # the consumer shares the leader's rack
])
def test_the_leader_sends_a_consumer_to_its_preferred_read_replica(rm, follower_end, rack, preferred):  # noqa: F811
    async def main():
        rm.start()
        rm.replica_selector = rack_aware_select
        racks(rm, b1="a", b2="b")
        rm.become_leader_or_follower(1, [("t", state(0, replicas=(BROKER, 2), isr=(BROKER, 2)))], {})
        rm.append_records(1, 1000, {("t", 0): batch(b"x", b"y")})
        partition = rm.online_partition("t", 0)
        partition.replica_states[2] = ReplicaState(log_end_offset=follower_end, log_start_offset=0)
        partition.log.high_watermark = 2
        answer = rm.fetch_messages(v11_consumer(rack), [FetchSpec("t", 0, 1, 1 << 20)])[("t", 0)]
        assert (answer.error_code, answer.preferred_read_replica, answer.high_watermark) == (0, preferred, 2)
        assert (answer.records == b"") == (preferred >= 0)  # redirected: no records from the leader
    run(main())


def test_a_follower_serves_a_v11_consumer_below_its_high_watermark(rm):  # noqa: F811
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, leader=2, replicas=(2, BROKER)))], {})
        log = rm.online_partition("t", 0).log
        for values in ((b"a", b"b"), (b"c",)):
            records = batch(*values)
            records[0:8] = log.log_end_offset.to_bytes(8, "big")  # the leader's offsets
            log.append_as_follower(records)
        log.high_watermark = 2
        spec = [FetchSpec("t", 0, 0, 1 << 20)]
        answer = rm.fetch_messages(v11_consumer("b"), spec)[("t", 0)]
        assert answer.error_code == 0 and answer.preferred_read_replica == -1
        assert [(b.base_offset, b.last_offset) for b in iter_batches(answer.records)] == [(0, 1)]
        stale = rm.fetch_messages(v11_consumer("b"), [FetchSpec("t", 0, 0, 1 << 20, current_leader_epoch=5)])
        assert stale[("t", 0)].error_code == errors.UnknownLeaderEpochError.code
        older = FetchParams(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)  # Fetch v10 and below
        assert rm.fetch_messages(older, spec)[("t", 0)].error_code == errors.NotLeaderOrFollowerError.code
    run(main())


def test_a_parked_consumer_fetch_on_a_follower_wakes_when_its_high_watermark_moves(rm):  # noqa: F811
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, leader=2, replicas=(2, BROKER)))], {})
        partition = rm.online_partition("t", 0)
        partition.log.append_as_follower(batch(b"a"))
        waiting = rm.fetch_messages(FetchParams(-1, 5000, 1, 1 << 20, client=client("b")),
                                    [FetchSpec("t", 0, 0, 1 << 20)])
        assert not waiting.done()
        partition.follow_leader_offsets(1, 0)
        rm.follower_offsets_moved(partition.key)
        assert [b.base_offset for b in iter_batches((await waiting)[("t", 0)].records)] == [0]
    run(main())

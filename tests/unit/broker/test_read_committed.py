"""read_committed through the ReplicaManager and the WriteTxnMarkers handler (real logs, real purgatories):
the LSO bounds reads, aborted transactions come with them, a parked read_committed fetch wakes when a
marker moves the LSO, and the handler answers per partition and tells the group coordinator."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.write_txn_markers import WriteTxnMarkersApi
from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.purgatory.completion import Completion
from odradek.broker.replica_manager import FetchParams
from odradek.protocol.messages import WriteTxnMarkersRequest
from odradek.protocol.records import iter_batches
from tests.fakes.replica_manager import partition_state

from .log.helpers import make_producer_batch
from .network.helpers import run as run_loop

BROKER = 1


def state(partition: int, leader: int = BROKER):
    return partition_state(partition, leader=leader, replicas=[BROKER])


def read_committed(max_wait_ms: int = 0) -> FetchParams:
    return FetchParams(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=1)


class Coordinator:
    """Records the calls a real group coordinator would get (the handler's only collaborator here)."""

    def __init__(self):
        self.calls = []

    def complete_transactional_offsets(self, producer_id, committed, partition_index):
        self.calls.append((producer_id, committed, partition_index))
        return 0


@pytest.fixture
def rm(replica_managers):
    return replica_managers.make(BROKER)


def markers_api(rm, coordinator=None):
    services = SimpleNamespace(replica_manager=rm, config={"request.timeout.ms": 5000},
                               group_coordinator=coordinator, auth=AuthHelper())
    return WriteTxnMarkersApi(services)


def marker_request(producer_id, commit, topic_partitions, coordinator_epoch=0, epoch=0):
    marker_cls = WriteTxnMarkersRequest.WritableTxnMarker
    return SimpleNamespace(api_version=1, body=WriteTxnMarkersRequest(markers=[marker_cls(
        producer_id=producer_id, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[marker_cls.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in topic_partitions])]))


def codes(response):
    return {(t.name, p.partition_index): p.error_code for m in response.markers for t in m.topics for p in t.partitions}


def run(coro):
    return run_loop(coro, timeout=10)


def test_reads_stop_at_the_lso_and_a_parked_fetch_wakes_when_the_marker_lands(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0))], {})
        rm.append_records(1, 1000, {("t", 0): make_producer_batch(
            7, 0, 0, 2, transactional=True, timestamp=int(time.time() * 1000))})
        result = rm.fetch_messages(read_committed(), [FetchSpec("t", 0, 0, 1 << 20)])[("t", 0)]
        assert (result.records, result.last_stable_offset, result.high_watermark) == (b"", 0, 2)
        assert result.aborted_transactions == []
        waiting = rm.fetch_messages(read_committed(max_wait_ms=5000), [FetchSpec("t", 0, 0, 1 << 20)])
        assert isinstance(waiting, Completion) and not waiting.done()
        response = await markers_api(rm).handle(marker_request(7, False, [("t", [0])]))
        assert codes(response) == {("t", 0): 0}
        result = (await asyncio.wait_for(waiting, 2))[("t", 0)]
        assert [b.base_offset for b in iter_batches(result.records)] == [0, 2]
        assert result.last_stable_offset == 3
        assert [(a.producer_id, a.first_offset) for a in result.aborted_transactions] == [(7, 0)]
    run(main())


def test_marker_errors_per_partition_and_the_group_coordinator_hook(rm):
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0)), ("t", state(1, leader=2)),
                                         ("__consumer_offsets", state(4))], {})
        coordinator = Coordinator()
        api = markers_api(rm, coordinator)
        response = await api.handle(marker_request(9, True, [("t", [0, 1, 5]), ("__consumer_offsets", [4])],
                                                   coordinator_epoch=2))
        assert codes(response) == {("t", 0): 0, ("t", 1): 6, ("t", 5): 3, ("__consumer_offsets", 4): 0}
        assert coordinator.calls == [(9, True, 4)]
        fenced = await api.handle(marker_request(9, False, [("t", [0])], coordinator_epoch=1))
        assert codes(fenced) == {("t", 0): 52}  # TRANSACTION_COORDINATOR_FENCED
        assert coordinator.calls == [(9, True, 4)]
    run(main())

"""DeleteRecordsApi with a real ReplicaManager and LogManager on disk: the low watermark waits for a
follower's log start offset (DelayedDeleteRecords), times out, and ignores replicas on dead brokers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from odradek.broker.apis.authorization import AuthHelper
from odradek.broker.apis.delete_records import DeleteRecordsApi
from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.replica_manager import FetchParams
from odradek.protocol.messages import DeleteRecordsRequest
from tests.fakes.replica_manager import partition_state

from .log.helpers import value_batch
from .network.helpers import run as run_loop

LEADER, FOLLOWER = 1, 2
REQUEST_TIMED_OUT, OFFSET_OUT_OF_RANGE = 7, 1


def state(leader: int = LEADER):
    return partition_state(leader=leader, replicas=[LEADER, FOLLOWER])


@pytest.fixture
def rm(replica_managers):
    manager = replica_managers.make(LEADER)
    manager.metadata_cache.brokers[FOLLOWER] = object()  # alive
    return manager


def api_for(rm) -> DeleteRecordsApi:
    async def in_executor(fn, *args):
        return fn(*args)
    return DeleteRecordsApi(SimpleNamespace(replica_manager=rm, metadata_cache=rm.metadata_cache,
                                            in_executor=in_executor, auth=AuthHelper()))


def request(offset: int, timeout_ms: int = 5000):
    body = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name="t", partitions=[
        DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=0, offset=offset)])],
        timeout_ms=timeout_ms)
    return SimpleNamespace(body=body, api_version=1)


def follower_fetch(rm, offset: int, log_start_offset: int) -> None:
    params = FetchParams(replica_id=FOLLOWER, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    rm.fetch_messages(params, [FetchSpec("t", 0, offset, 1 << 20, log_start_offset=log_start_offset)])


def answer(response) -> tuple[int, int]:
    p = response.topics[0].partitions[0]
    return p.error_code, p.low_watermark


async def leader_with_ten_records(rm) -> None:
    rm.start()
    assert rm.become_leader_or_follower(1, [("t", state())], {}) == {("t", 0): 0}
    for i in range(10):
        rm.append_records(1, 1000, {("t", 0): value_batch(b"v%d" % i)})
    follower_fetch(rm, 10, 0)  # the follower has everything: high watermark 10


def test_waits_for_the_followers_log_start_offset(rm):
    async def main():
        await leader_with_ten_records(rm)
        api = api_for(rm)
        pending = asyncio.ensure_future(api.handle(request(4)))
        await asyncio.sleep(0.05)
        assert not pending.done()  # the follower still reports log start offset 0
        assert rm.log_manager.get_log("t", 0).log_start_offset == 4
        follower_fetch(rm, 10, 4)  # it took the leader's log start offset
        assert answer(await asyncio.wait_for(pending, 5)) == (0, 4)
        # -1: the high watermark; the follower is not there yet, so the request times out.
        assert answer(await api.handle(request(-1, timeout_ms=50))) == (REQUEST_TIMED_OUT, -1)
        assert rm.log_manager.get_log("t", 0).log_start_offset == 10
        assert answer(await api.handle(request(11))) == (OFFSET_OUT_OF_RANGE, -1)
    run_loop(main(), timeout=10)


def test_replicas_on_dead_brokers_do_not_hold_the_low_watermark(rm):
    async def main():
        await leader_with_ten_records(rm)
        del rm.metadata_cache.brokers[FOLLOWER]
        assert answer(await api_for(rm).handle(request(7))) == (0, 7)
    run_loop(main(), timeout=10)


def test_a_leader_change_answers_not_leader(rm):
    async def main():
        await leader_with_ten_records(rm)
        pending = asyncio.ensure_future(api_for(rm).handle(request(3)))
        await asyncio.sleep(0.05)
        follower_state = state(leader=FOLLOWER)
        follower_state.leader_epoch = 1
        rm.become_leader_or_follower(1, [("t", follower_state)], {})
        assert answer(await asyncio.wait_for(pending, 5)) == (6, -1)
    run_loop(main(), timeout=10)

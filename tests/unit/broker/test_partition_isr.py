"""ISR rules of the leader (Kafka's Partition/ReplicaManager), with real logs on disk and a fake clock.

The replica manager runs without an ISR manager here, so ISR changes apply in memory at once; the
ZooKeeper side (IsrManager) is tested against a fake ZooKeeper client below.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.isr_manager import PROPAGATION_LINGER_MS, IsrManager
from odradek.broker.log import LogManager
from odradek.broker.partition import Partition
from odradek.broker.purgatory.completion import Completion
from odradek.broker.replica_fetcher import complete_batches, truncation_offset
from odradek.broker.replica_manager import FetchParams, ReplicaManager
from odradek.controller.zk_client import ZkConnectionError
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch
from odradek.protocol import errors
from tests.fakes.clock import ManualClock
from tests.fakes.replica_manager import partition_state
from tests.fakes.zookeeper import FakeZk

from .log.helpers import value_batch as batch
from .network.helpers import run as run_loop

LEADER, F1, F2 = 1, 2, 3
LAG_MS = 10_000
KEY = ("t", 0)


def state(epoch: int = 0, leader: int = LEADER, isr=(LEADER, F1, F2), replicas=(LEADER, F1, F2), version: int = 0):
    return partition_state(leader=leader, leader_epoch=epoch, isr=isr, partition_epoch=version, replicas=replicas)


def follower_fetch(rm: ReplicaManager, replica: int, offset: int, last_fetched_epoch: int = -1):
    params = FetchParams(replica_id=replica, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    return rm.fetch_messages(params, [FetchSpec("t", 0, offset, 1 << 20, last_fetched_epoch=last_fetched_epoch)])[KEY]


def run(coro):
    return run_loop(coro, timeout=10)


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def make_rm(replica_managers, clock):
    def make(min_insync: int = 1, isr=(LEADER, F1, F2)) -> ReplicaManager:
        rm = replica_managers.make(LEADER, {"min.insync.replicas": str(min_insync)}, clock=clock)
        assert rm.become_leader_or_follower(1, [("t", state(isr=isr))], {}) == {KEY: 0}
        return rm

    return make


def test_high_watermark_is_the_smallest_log_end_offset_in_the_isr(make_rm):
    rm = make_rm()
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a", b"b", b"c")})
    assert p.high_watermark == 0  # followers' positions are unknown after becoming leader
    follower_fetch(rm, F1, 3)
    assert p.high_watermark == 0
    follower_fetch(rm, F2, 2)
    assert p.high_watermark == 2
    follower_fetch(rm, F2, 3)
    assert p.high_watermark == 3


def test_a_follower_fetch_reads_to_the_log_end_and_a_consumer_only_below_the_high_watermark(make_rm):
    rm = make_rm()
    rm.append_records(1, 1000, {KEY: batch(b"a")})
    assert follower_fetch(rm, F1, 0).records
    consumer = FetchParams(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    assert rm.fetch_messages(consumer, [FetchSpec("t", 0, 0, 1 << 20)])[KEY].records == b""


def test_an_unassigned_replica_is_answered_without_records_and_not_recorded(make_rm):
    """Kafka 2.8's updateFollowerFetchState: no error, the partition's offsets, empty records."""
    rm = make_rm()
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a")})
    follower_fetch(rm, F1, 1)
    follower_fetch(rm, F2, 1)
    result = follower_fetch(rm, 9, 0)
    assert (result.error_code, result.high_watermark, result.records) == (0, 1, b"")
    assert not p.knows_replica(9) and p.isr == [LEADER, F1, F2]
    assert follower_fetch(rm, LEADER, 0).records == b""  # the leader's own id is no follower either


def test_isr_shrinks_only_after_the_lag_time_without_catching_up(make_rm, clock):
    rm = make_rm()
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a", b"b")})
    follower_fetch(rm, F1, 2)  # F1 is at the log end: caught up now
    follower_fetch(rm, F2, 0)  # F2 lags
    clock.now += LAG_MS
    assert run(rm.shrink_lagging_isrs(LAG_MS)) == 0 and p.isr == [LEADER, F1, F2]
    clock.now += 1
    assert run(rm.shrink_lagging_isrs(LAG_MS)) == 1
    assert p.isr == [LEADER, F1]  # F1 has the log end offset: in sync however long ago it fetched
    assert p.high_watermark == 2  # the ISR without F2 has everything
    assert p.partition_epoch == 1


def test_the_periodic_lag_check_lets_the_loop_run_between_steps_and_skips_partitions_gone_meanwhile(
        replica_managers, clock):
    rm = replica_managers.make(LEADER, {"min.insync.replicas": "1"}, clock=clock)
    keys = [("t", i) for i in range(3)]
    states = [("t", partition_state(i, leader=LEADER, replicas=(LEADER, F1, F2))) for i in range(3)]
    assert rm.become_leader_or_follower(1, states, {}) == dict.fromkeys(keys, 0)
    params = {f: FetchParams(replica_id=f, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20) for f in (F1, F2)}
    for topic, index in keys:
        rm.append_records(1, 1000, {(topic, index): batch(b"a")})
        rm.fetch_messages(params[F1], [FetchSpec(topic, index, 1, 1 << 20)])  # caught up
        rm.fetch_messages(params[F2], [FetchSpec(topic, index, 0, 1 << 20)])  # lags
    clock.now += LAG_MS + 1

    async def check_while_a_partition_goes():
        task = asyncio.ensure_future(rm.shrink_lagging_isrs(LAG_MS, step=1))
        await asyncio.sleep(0)  # the check's first step ran, then it gave the loop back
        between = [rm.online_partition(*key).isr for key in keys[:2]]
        gone = rm.partitions.pop(keys[2])  # as a StopReplica would between two steps
        return between, await task, gone

    between, shrunk, gone = run(check_while_a_partition_goes())
    assert between == [[LEADER, F1], [LEADER, F1, F2]]
    assert shrunk == 2 and rm.online_partition(*keys[1]).isr == [LEADER, F1]
    assert gone.isr == [LEADER, F1, F2]  # no longer this broker's: left alone


def test_a_follower_that_caught_up_at_its_previous_fetch_counts_from_then(make_rm, clock):
    rm = make_rm(isr=(LEADER, F1))
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a")})
    follower_fetch(rm, F1, 0)           # the leader's end was 1 at this fetch
    rm.append_records(1, 1000, {KEY: batch(b"b")})
    clock.now += LAG_MS // 2
    follower_fetch(rm, F1, 1)           # reached the previous end: caught up as of the previous fetch
    clock.now += LAG_MS // 2 + 1
    assert run(rm.shrink_lagging_isrs(LAG_MS)) == 1 and p.isr == [LEADER]


def test_isr_expands_when_the_follower_reaches_the_high_watermark(make_rm):
    rm = make_rm(isr=(LEADER, F1))
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a", b"b", b"c")})
    follower_fetch(rm, F1, 3)
    assert p.high_watermark == 3
    follower_fetch(rm, F2, 2)
    assert p.isr == [LEADER, F1]
    follower_fetch(rm, F2, 3)
    assert p.isr == [LEADER, F1, F2]


def test_acks_all_needs_min_insync_replicas_before_and_after_appending(make_rm, clock):
    async def main():
        rm = make_rm(min_insync=2, isr=(LEADER,))
        refused = rm.append_records(-1, 1000, {KEY: batch(b"a")})
        assert refused[KEY].error_code == errors.NotEnoughReplicasError.code
        assert rm.online_partition(*KEY).log_end_offset == 0  # refused before appending

        rm2 = make_rm(min_insync=2, isr=(LEADER, F1))
        p = rm2.online_partition(*KEY)
        follower_fetch(rm2, F1, 0)
        pending = rm2.append_records(-1, 5000, {KEY: batch(b"a")})
        assert isinstance(pending, Completion)
        clock.now += LAG_MS + 1
        await rm2.shrink_lagging_isrs(LAG_MS)  # F1 leaves; the HW reaches the record, but only one replica has it
        assert p.isr == [LEADER]
        result = (await pending)[KEY]
        assert result.error_code == errors.NotEnoughReplicasAfterAppendError.code
    run(main())


def test_acks_all_completes_when_every_isr_member_has_the_records(make_rm):
    async def main():
        rm = make_rm(min_insync=2)
        pending = rm.append_records(-1, 5000, {KEY: batch(b"a", b"b")})
        follower_fetch(rm, F1, 2)
        assert not pending.done()
        follower_fetch(rm, F2, 2)
        assert (await pending)[KEY].error_code == 0
    run(main())


def test_a_diverged_follower_gets_its_diverging_epoch_and_no_records(make_rm, tmp_path):
    rm = make_rm()
    p = rm.online_partition(*KEY)
    rm.append_records(1, 1000, {KEY: batch(b"a", b"b")})          # epoch 0: offsets 0-1
    rm.become_leader_or_follower(1, [("t", state(epoch=3))], {})   # epoch 3 starts at 2
    rm.append_records(1, 1000, {KEY: batch(b"c")})
    # A follower that wrote offsets 0-4 in epoch 0 under an older leader diverged at 2.
    answer = follower_fetch(rm, F1, 5, last_fetched_epoch=0)
    assert answer.diverging_epoch == (0, 2) and answer.records == b""
    # One that knows epoch 3 up to offset 3 is fine.
    assert follower_fetch(rm, F1, 3, last_fetched_epoch=3).diverging_epoch is None
    # One on the latest epoch but past our log end diverged at our end (the fast path's other answer).
    assert follower_fetch(rm, F1, 5, last_fetched_epoch=3).diverging_epoch == (3, 3)
    assert p.log_end_offset == 3


# -- follower-side truncation (Kafka's getOffsetTruncationState) ------------------------------------

@pytest.fixture
def follower(tmp_path):
    lm = LogManager([str(tmp_path / "f")], {}, broker_id=F1, cluster_id="c")
    log_ = lm.get_or_create_log("t", 0, {})
    log_.append_as_leader(batch(b"a", b"b"), 1)   # epoch 1: 0-1
    log_.append_as_leader(batch(b"c", b"d"), 2)   # epoch 2: 2-3
    yield Partition("t", 0, F1, log_)
    lm.shutdown()


def test_truncation_to_the_leaders_end_of_our_latest_epoch(follower):
    assert truncation_offset(follower, 2, 3) == (3, True)      # the leader has 2 up to 3
    assert truncation_offset(follower, 2, 10) == (4, True)     # never past our own end


def test_truncation_when_the_leader_knows_only_an_older_epoch(follower):
    # The leader answered epoch 1 ending at 1: we cut where both agree, min(1, our end of epoch 1 = 2).
    assert truncation_offset(follower, 1, 1) == (1, True)


def test_truncation_when_we_lack_the_leaders_epoch_asks_again(follower):
    # The leader's epoch 0 is older than anything we know: our epoch 1 starts at 0, so cut there and retry.
    offset, complete = truncation_offset(follower, 0, 5)
    assert offset == 0 and complete


def test_truncation_to_the_high_watermark_when_the_leader_has_no_epoch(follower):
    follower.log.update_high_watermark(2)
    assert truncation_offset(follower, -1, -1) == (2, True)


def test_complete_batches_drops_a_trailing_partial_batch():
    data = bytes(batch(b"a")) + bytes(batch(b"b"))
    assert bytes(complete_batches(data[:-3])) == bytes(batch(b"a"))
    assert complete_batches(b"") is None
    assert complete_batches(data[:10]) is None


# -- IsrManager: the ZooKeeper side ----------------------------------------------------------------

def _leader_with_isr_manager(make_rm, clock, zk: FakeZk):
    rm = make_rm(isr=(LEADER, F1))
    manager = IsrManager(zk, LEADER, clock, on_isr_changed=rm.on_isr_changed)
    rm.isr_manager = manager
    return rm, manager


def test_isr_expansion_is_written_conditionally_then_applied_and_propagated_after_the_linger(make_rm, clock):
    async def main():
        zk = FakeZk({KEY: (LeaderIsrAndControllerEpoch(LEADER, 0, [LEADER, F1], 0), 0)})
        rm, manager = _leader_with_isr_manager(make_rm, clock, zk)
        p = rm.online_partition(*KEY)
        follower_fetch(rm, F1, 0)
        follower_fetch(rm, F2, 0)
        assert p.isr == [LEADER, F1] and p.isr_update_in_flight  # not before ZooKeeper said yes
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
        assert zk.writes == [(KEY, LeaderIsrAndControllerEpoch(LEADER, 0, [LEADER, F1, F2], 1), 0)]
        assert p.isr == [LEADER, F1, F2] and p.partition_epoch == 1
        assert await manager.propagate_due_changes() == []  # changes linger before they are announced
        clock.now += PROPAGATION_LINGER_MS + 1
        assert await manager.propagate_due_changes() == [KEY]
        assert zk.isr_notifications == [[KEY]]
    run(main())


def test_a_version_conflict_gives_the_isr_change_up(make_rm, clock):
    async def main():
        # The controller wrote the znode meanwhile (version 5, another leader epoch).
        zk = FakeZk({KEY: (LeaderIsrAndControllerEpoch(F1, 1, [F1], 2), 5)})
        rm, manager = _leader_with_isr_manager(make_rm, clock, zk)
        p = rm.online_partition(*KEY)
        rm.append_records(1, 1000, {KEY: batch(b"a")})
        follower_fetch(rm, F1, 0)
        clock.now += LAG_MS + 1
        assert await rm.shrink_lagging_isrs(LAG_MS) == 1
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
        assert p.isr == [LEADER, F1] and p.partition_epoch == 0
        assert await manager.propagate_due_changes() == [] and zk.isr_notifications == []
    run(main())


class ResponseLostZk(FakeZk):
    """ZooKeeper that applies the first ``lost`` writes but whose answers never arrive (the leader's session
    lost its connection): the caller gets a connection error and must find out what happened."""

    def __init__(self, lost: int) -> None:
        super().__init__({KEY: (LeaderIsrAndControllerEpoch(LEADER, 0, [LEADER, F1], 0), 0)})
        self.lost = lost
        self.answer = threading.Event()  # set: writes answer (applied or not) at once

    def update_partition_states(self, updates, epoch_zk_version=None):
        versions = super().update_partition_states(updates, epoch_zk_version)
        if self.lost > 0:
            self.lost -= 1
            self.answer.wait(5)
            raise ZkConnectionError("update_partition_states: ConnectionLoss")
        return versions


def _proposing_f2(make_rm, clock, zk: FakeZk):
    """A leader with ISR [LEADER, F1] that F2's fetch makes propose [LEADER, F1, F2]."""
    rm, manager = _leader_with_isr_manager(make_rm, clock, zk)
    manager.retry_backoff_s = 0.01
    p = rm.online_partition(*KEY)
    follower_fetch(rm, F1, 0)
    follower_fetch(rm, F2, 0)
    return rm, manager, p


def test_a_replica_joining_the_isr_counts_for_the_high_watermark_while_zookeeper_has_not_answered(make_rm, clock):
    """Kafka 2.8's maximal ISR (Partition.maybeIncrementLeaderHW, KIP-497): once the leader has proposed F2 for
    the ISR, ZooKeeper may hold the new ISR and the controller may elect F2, so nothing may count as committed
    that F2 lacks, even before the leader hears back. Otherwise a record acknowledged meanwhile is lost when F2
    leads (the "acknowledged records missing" of test_idempotent_leader_moves: a reassignment elects an added
    replica the moment ZooKeeper lists it in the ISR)."""
    async def main():
        zk = ResponseLostZk(lost=1)
        rm, manager, p = _proposing_f2(make_rm, clock, zk)  # F2 reached the HW
        await asyncio.sleep(0.05)
        assert zk.znodes[KEY][0].isr == [LEADER, F1, F2] and p.isr == [LEADER, F1] and p.isr_update_in_flight
        pending = rm.append_records(-1, 5000, {KEY: batch(b"a")})
        follower_fetch(rm, F1, 1)
        assert p.high_watermark == 0 and not pending.done()  # F2 may lead next and does not have it
        follower_fetch(rm, F2, 1)
        assert p.high_watermark == 1 and (await pending)[KEY].error_code == 0
        zk.answer.set()
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
    run(main())


def test_an_isr_write_whose_answer_was_lost_is_retried_until_its_outcome_is_known(make_rm, clock):
    """Kafka's ZooKeeper writes retry until connected (KafkaZkClient.retryRequestsUntilConnected), and a version
    conflict on the retry is a success when the znode holds what was written. Giving the change up at the
    connection error would leave the leader counting the HW without F2 while ZooKeeper lists F2 in the ISR."""
    async def main():
        zk = ResponseLostZk(lost=2)
        zk.answer.set()
        rm, manager, p = _proposing_f2(make_rm, clock, zk)
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
        # the first write was applied, its answer lost; the retry met a version conflict and found its own ISR
        assert [version for _, _, version in zk.writes] == [0, 0, 0] and zk.znodes[KEY][1] == 1
        assert p.isr == [LEADER, F1, F2] and p.partition_epoch == 1
    run(main())


class HeldZk(FakeZk):
    """ZooKeeper whose ISR writes wait until ``release`` is set."""

    def __init__(self, znodes) -> None:
        super().__init__(znodes)
        self.release = threading.Event()

    def update_partition_states(self, updates, epoch_zk_version=None):
        self.release.wait(5)
        return super().update_partition_states(updates, epoch_zk_version)


def test_a_follower_held_back_by_an_isr_write_in_flight_joins_when_its_parked_fetch_is_answered(make_rm, clock):
    """One ISR write at a time: F2, caught up while F1's expansion is in flight, is not proposed then. Kafka's
    incremental session reads every partition at every fetch, so F2's next fetch would propose it; ours reads only
    the partitions that changed, so the answer to F2's parked fetch is where it is tried again (read_from_local_log
    records a follower's position on that read too; test_election_safety.py shows a follower that never rejoined
    without it)."""
    async def main():
        zk = HeldZk({KEY: (LeaderIsrAndControllerEpoch(LEADER, 0, [LEADER], 0), 0)})
        rm = make_rm(isr=(LEADER,))
        rm.start()  # the purgatories' timers: the parked fetch expires
        rm.isr_manager = IsrManager(zk, LEADER, clock, on_isr_changed=rm.on_isr_changed)
        p = rm.online_partition(*KEY)
        follower_fetch(rm, F1, 0)  # proposes [LEADER, F1]; ZooKeeper holds its answer
        assert p.isr_update_in_flight
        params = FetchParams(replica_id=F2, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20)
        parked = rm.fetch_messages(params, [FetchSpec("t", 0, 0, 1 << 20)])
        assert isinstance(parked, Completion)  # caught up too, held back, and waiting for records
        zk.release.set()
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
        assert p.isr == [LEADER, F1]
        await parked  # expires: its answer reads the partition again
        while p.isr_update_in_flight:
            await asyncio.sleep(0.01)
        assert p.isr == [LEADER, F1, F2]
        assert [w[1].isr for w in zk.writes] == [[LEADER, F1], [LEADER, F1, F2]]
    run(main())


def test_an_isr_write_is_no_longer_retried_once_a_leader_and_isr_replaced_the_state(make_rm, clock):
    async def main():
        zk = ResponseLostZk(lost=1000)
        zk.answer.set()
        rm, manager, p = _proposing_f2(make_rm, clock, zk)
        await asyncio.sleep(0.05)
        assert p.isr_update_in_flight
        rm.become_leader_or_follower(1, [("t", state(epoch=1, isr=(LEADER, F1, F2), version=7))], {})
        await asyncio.sleep(0.05)
        writes = len(zk.writes)
        await asyncio.sleep(0.05)
        assert len(zk.writes) == writes and not manager._tasks  # stopped: the controller's state won
        assert p.isr == [LEADER, F1, F2] and p.partition_epoch == 7
    run(main())


def test_a_partition_a_fetch_session_left_unread_keeps_its_followers_in_sync_when_it_grows(make_rm, clock):
    """A fetch session reads only changed partitions: an idle partition's followers are caught up as of
    their latest fetch of anything, so its first append after a long quiet spell shrinks no ISR."""
    rm = make_rm()
    rm.append_records(1, 1000, {KEY: batch(b"a")})
    follower_fetch(rm, F1, 1)
    follower_fetch(rm, F2, 1)
    for _ in range(5):  # the followers keep fetching (other partitions of their sessions) for a long time
        clock.now += LAG_MS
        rm.follower_fetch_ms[F1] = rm.follower_fetch_ms[F2] = clock()
    rm.append_records(1, 1000, {KEY: batch(b"b")})
    clock.now += 1
    assert run(rm.shrink_lagging_isrs(LAG_MS)) == 0
    assert rm.online_partition(*KEY).isr == [LEADER, F1, F2]
    # a follower that stopped fetching does fall out, LAG_MS after its last fetch
    clock.now += LAG_MS
    rm.follower_fetch_ms[F1] = clock()
    follower_fetch(rm, F1, 2)
    assert run(rm.shrink_lagging_isrs(LAG_MS)) == 1
    assert rm.online_partition(*KEY).isr == [LEADER, F1]

"""Replication throttling: the rate, the quota managers, and the leader side of a real ReplicaManager."""

from __future__ import annotations

import asyncio

import pytest

from odradek.broker.config import KafkaConfig
from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.dynamic_config import merged_config
from odradek.broker.purgatory.completion import Completion
from odradek.broker.replica_manager import FetchParams
from odradek.broker.replication_quota import (
    ALL_REPLICAS, UNTHROTTLED, ReplicationQuotaManager, ReplicationQuotas, SimpleRate, parse_throttled_partitions,
)
from odradek.protocol.records import iter_batches
from tests.fakes.clock import ManualClock
from tests.fakes.replica_manager import partition_state

from .log.helpers import value_batch as batch
from .network.helpers import run as run_loop

LEADER, NEW_REPLICA, IN_SYNC = 1, 3, 2


# -- the rate -------------------------------------------------------------------------------------

def test_simple_rate_divides_by_at_least_one_window():
    rate = SimpleRate(num_samples=11, window_ms=1000)
    rate.record(1000, 0)
    assert rate.measure(0) == 1000  # a young sensor is not padded to 11 windows (SimpleRate)
    assert rate.measure(500) == 1000
    assert rate.measure(2000) == 500


def test_simple_rate_forgets_samples_older_than_the_whole_window():
    rate = SimpleRate(num_samples=3, window_ms=1000)
    for second in range(3):
        rate.record(300, second * 1000)
    assert rate.measure(2500) == pytest.approx(900 / 2.5)
    assert rate.measure(3000) == pytest.approx(600 / 2)  # the sample of second 0 expired
    assert rate.measure(10_000) == 0


def test_simple_rate_reuses_its_ring_of_samples():
    rate = SimpleRate(num_samples=2, window_ms=1000)
    for second in range(10):
        rate.record(100, second * 1000)
    assert len(rate._samples) == 2
    assert rate.measure(9000) == 200 / 1  # seconds 8 and 9; the oldest began at 8000, one window ago


# -- quota managers ----------------------------------------------------------------------------

def test_quota_is_exceeded_only_above_its_bound():
    clock = ManualClock(0.0)
    quota = ReplicationQuotaManager("Leader", clock=clock)
    quota.record(10**9)
    assert not quota.is_quota_exceeded()  # unthrottled by default (Long.MAX_VALUE)
    quota.update_quota(500)
    assert quota.is_quota_exceeded()
    clock.now = 11_000 + 1  # every sample expired
    assert not quota.is_quota_exceeded()
    quota.record(500)
    assert not quota.is_quota_exceeded()  # exactly at the bound is acceptable, as Kafka's Quota
    quota.record(1)
    assert quota.is_quota_exceeded()
    assert quota.throttled_bytes == 10**9 + 501


def test_the_wait_is_until_the_rate_is_back_at_the_bound():
    clock = ManualClock(0.0)
    quota = ReplicationQuotaManager("AlterLogDirs", clock=clock)
    quota.record(4000)
    assert quota.wait_ms(1000) == 0  # unthrottled
    quota.update_quota(1000)
    # 4000 B in one 1 s window: 4000 B/s; Kafka's QuotaUtils.throttleTime, (4000 - 1000) / 1000 windows
    assert quota.wait_ms(10_000) == 3000
    assert quota.wait_ms(1000) == 1000  # capped
    clock.now = 3000  # the sample spans 3 s, not the window plus the wait: 1333 B/s, another 1000 ms
    assert quota.wait_ms(10_000) == 1000
    clock.now = 4000
    assert quota.wait_ms(10_000) == 0
    quota.update_quota(3999)
    clock.now = 0
    assert quota.wait_ms(10_000) == 1  # a fraction of a millisecond still waits one


def test_throttled_partitions_are_parsed_for_this_broker_only():
    assert parse_throttled_partitions("0:1,1:2,2:1", 1) == {0, 2}
    assert parse_throttled_partitions(" 0:3 , 4:3", 3) == {0, 4}
    assert parse_throttled_partitions("*", 7) == ALL_REPLICAS
    assert parse_throttled_partitions("", 1) == frozenset()


def test_topic_configs_mark_and_remove_throttles():
    quotas = ReplicationQuotas(broker_id=1)
    quotas.apply_topic_config("t", {"leader.replication.throttled.replicas": "0:1,1:2",
                                    "follower.replication.throttled.replicas": "1:1"})
    assert quotas.leader.is_throttled(("t", 0)) and not quotas.leader.is_throttled(("t", 1))
    assert quotas.follower.is_throttled(("t", 1)) and not quotas.follower.is_throttled(("t", 0))
    quotas.apply_topic_config("t", {"leader.replication.throttled.replicas": ["*"]})  # parsed LIST form
    assert quotas.leader.is_throttled(("t", 5))
    assert not quotas.follower.is_throttled(("t", 1))  # key gone: throttle removed
    quotas.apply_topic_config("t", {})
    assert quotas.leader.throttled_topics() == {} and not quotas.leader.is_throttled(("t", 5))


def test_in_sync_replicas_are_never_throttled():
    clock = ManualClock(0.0)
    quotas = ReplicationQuotas(broker_id=LEADER, clock=clock)
    quotas.leader.update_quota(100)
    quotas.follower.update_quota(100)
    quotas.apply_topic_config("t", {"leader.replication.throttled.replicas": "*",
                                    "follower.replication.throttled.replicas": "*"})
    assert not quotas.should_leader_throttle(("t", 0), [LEADER], NEW_REPLICA)  # quota not exceeded yet
    quotas.leader.record(1000)
    quotas.follower.record(1000)
    assert quotas.should_leader_throttle(("t", 0), [LEADER], NEW_REPLICA)
    assert not quotas.should_leader_throttle(("t", 0), [LEADER, NEW_REPLICA], NEW_REPLICA)
    assert quotas.should_follower_throttle(("t", 0), in_sync=False)
    assert not quotas.should_follower_throttle(("t", 0), in_sync=True)
    quotas.apply_topic_config("t", {})
    assert not quotas.should_leader_throttle(("t", 0), [LEADER], NEW_REPLICA)  # not a throttled partition


def test_rates_come_from_the_dynamic_broker_config():
    static = KafkaConfig({"zookeeper.connect": "localhost:2181", "broker.id": "1"})
    quotas = ReplicationQuotas.from_config(static, 1)
    assert quotas.leader.rate.num_samples == 11 and quotas.leader.rate.window_ms == 1000
    quotas.apply_broker_config(static)
    assert quotas.leader.bound == quotas.follower.bound == UNTHROTTLED
    effective = merged_config(static, {"leader.replication.throttled.rate": "2000"},
                              {"leader.replication.throttled.rate": "500",
                               "follower.replication.throttled.rate": "700"})
    quotas.apply_broker_config(effective)
    assert (quotas.leader.bound, quotas.follower.bound) == (500, 700)  # per-broker over the cluster default
    quotas.apply_broker_config(merged_config(static, {}, {}))
    assert quotas.leader.bound == UNTHROTTLED


def test_the_log_dir_move_quota_has_its_own_rate_and_windows():
    static = KafkaConfig({"zookeeper.connect": "localhost:2181", "broker.id": "1",
                          "alter.log.dirs.replication.quota.window.num": "5",
                          "alter.log.dirs.replication.quota.window.size.seconds": "2"})
    quotas = ReplicationQuotas.from_config(static, 1)
    assert (quotas.alter_log_dirs.rate.num_samples, quotas.alter_log_dirs.rate.window_ms) == (5, 2000)
    assert (quotas.leader.rate.num_samples, quotas.leader.rate.window_ms) == (11, 1000)
    quotas.apply_broker_config(merged_config(static, {"replica.alter.log.dirs.io.max.bytes.per.second": "9000"},
                                             {"leader.replication.throttled.rate": "500"}))
    assert (quotas.alter_log_dirs.bound, quotas.leader.bound, quotas.follower.bound) == (9000, 500, UNTHROTTLED)
    quotas.apply_broker_config(merged_config(static, {}, {}))
    assert quotas.alter_log_dirs.bound == UNTHROTTLED


# -- the leader side in a real ReplicaManager ---------------------------------------------------

def _state(isr):
    return partition_state(leader=LEADER, replicas=[LEADER, IN_SYNC, NEW_REPLICA], isr=isr)


def _follower(replica_id: int, max_wait_ms: int = 0) -> FetchParams:
    return FetchParams(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20)


@pytest.fixture
def rm(replica_managers):
    return replica_managers.make(LEADER)


def test_leader_holds_back_only_the_out_of_sync_follower_of_a_throttled_partition(rm):
    async def main():
        rm.start()
        clock = ManualClock(0.0)
        rm.replication_quotas = quotas = ReplicationQuotas(LEADER, clock=clock)
        quotas.leader.update_quota(1000)
        quotas.apply_topic_config("t", {"leader.replication.throttled.replicas": "0:1"})
        rm.become_leader_or_follower(1, [("t", _state([LEADER, IN_SYNC]))], {})
        rm.append_records(1, 1000, {("t", 0): batch(b"x" * 100)})
        rm.fetch_messages(_follower(IN_SYNC), [FetchSpec("t", 0, 1, 1 << 20)])  # HW 1: offset 0 is behind it
        spec = [FetchSpec("t", 0, 0, 1 << 20)]
        first = rm.fetch_messages(_follower(NEW_REPLICA), spec)[("t", 0)]
        assert len(list(iter_batches(first.records))) == 1  # under the quota: served
        quotas.leader.record(5000)  # what the response would record: now over the quota
        held = rm.fetch_messages(_follower(NEW_REPLICA), spec)[("t", 0)]
        assert (held.error_code, held.records, held.high_watermark) == (0, b"", 1)
        assert rm.partitions[("t", 0)].isr == [LEADER, IN_SYNC]
        assert quotas.leader.throttle_events == 1
        in_sync = rm.fetch_messages(_follower(IN_SYNC), spec)[("t", 0)]
        assert len(list(iter_batches(in_sync.records))) == 1  # an ISR member is never slowed
        # A parked follower fetch does not complete on a throttled partition's bytes (Kafka's DelayedFetch)
        parked = rm.fetch_messages(_follower(NEW_REPLICA, max_wait_ms=60_000), spec)
        assert isinstance(parked, Completion)
        rm.append_records(1, 1000, {("t", 0): batch(b"y")})
        await asyncio.sleep(0.05)
        assert not parked.done()
        clock.now = 60_000  # the samples expire: the next wake-up serves it
        rm.append_records(1, 1000, {("t", 0): batch(b"z")})
        result = (await asyncio.wait_for(parked, 5))[("t", 0)]
        assert len(list(iter_batches(result.records))) == 3
    run_loop(main(), timeout=10)

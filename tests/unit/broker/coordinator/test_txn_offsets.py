"""Transactional offsets in the group coordinator: pending (invisible) until the producer's marker, dropped
on abort, and rebuilt from a real __consumer_offsets log (transactional batches and markers) on load."""

from __future__ import annotations

import asyncio

import pytest

from odradek.broker.coordinator.group.coordinator import GroupCoordinator
from odradek.broker.coordinator.group.records import OffsetAndMetadata
from tests.fakes.coordinator_services import LogReplicaManager

from .helpers import DictConfig, run_in_loop

CONFIG = {"offsets.topic.num.partitions": 1, "offsets.commit.required.acks": -1, "offsets.commit.timeout.ms": 5000,
          "offset.metadata.max.bytes": 4096, "group.min.session.timeout.ms": 100,
          "group.max.session.timeout.ms": 60000, "group.initial.rebalance.delay.ms": 0, "group.max.size": 3,
          "offsets.load.buffer.size": 1 << 20, "offsets.retention.minutes": 1}
OFFSETS_TP = ("__consumer_offsets", 0)


@pytest.fixture
def make(tmp_path):
    def build(rm=None):
        rm = rm or LogReplicaManager(tmp_path)
        c = GroupCoordinator(1, DictConfig(CONFIG), rm)
        return c, rm
    return build


def offsets(**by_partition):
    return {("t", int(p[1:])): OffsetAndMetadata(o, -1, "", 1) for p, o in by_partition.items()}


@run_in_loop
async def test_offsets_are_invisible_until_the_commit_marker_and_dropped_on_abort(make):
    c, rm = make()
    c.manager.owned.add(0)
    assert await c.commit_transactional_offsets("g", 7, 0, "", None, -1, offsets(p0=5, p1=6)) == \
        {("t", 0): 0, ("t", 1): 0}
    assert await c.commit_transactional_offsets("g", 8, 0, "", None, -1, offsets(p2=9)) == {("t", 2): 0}
    assert c.fetch_offsets("g", [("t", 0), ("t", 2)]) == {("t", 0): None, ("t", 2): None}
    rm.append_marker(OFFSETS_TP, 7, 0, True)
    assert c.complete_transactional_offsets(7, True, 0) == 2
    rm.append_marker(OFFSETS_TP, 8, 0, False)
    assert c.complete_transactional_offsets(8, False, 0) == 0
    found = c.fetch_offsets("g", [("t", 0), ("t", 1), ("t", 2)])
    assert (found[("t", 0)].offset, found[("t", 1)].offset, found[("t", 2)]) == (5, 6, None)
    assert not c.manager.get_group("g").pending_txn_offsets


@run_in_loop
async def test_a_newer_plain_commit_wins_over_an_older_transactional_one(make):
    c, rm = make()
    c.manager.owned.add(0)
    await c.commit_transactional_offsets("g", 7, 0, "", None, -1, offsets(p0=5))
    await c.commit_offsets("g", "", None, -1, offsets(p0=40))
    rm.append_marker(OFFSETS_TP, 7, 0, True)
    c.complete_transactional_offsets(7, True, 0)
    assert c.fetch_offsets("g", [("t", 0)])[("t", 0)].offset == 40


@run_in_loop
async def test_member_checks_and_a_fenced_producer_epoch(make):
    c, rm = make()
    c.manager.owned.add(0)
    assert await c.commit_transactional_offsets("g", 7, 0, "nobody", None, -1, offsets(p0=1)) == {("t", 0): 25}
    assert await c.commit_transactional_offsets("g", 7, 0, "", None, 3, offsets(p0=1)) == {("t", 0): 22}
    assert await c.commit_transactional_offsets("g", 7, 2, "", None, -1, offsets(p0=1)) == {("t", 0): 0}
    # The log refuses an older epoch of the same producer (INVALID_PRODUCER_EPOCH).
    assert await c.commit_transactional_offsets("g", 7, 1, "", None, -1, offsets(p0=2)) == {("t", 0): 47}
    c.manager.owned.clear()
    assert await c.commit_transactional_offsets("g", 7, 2, "", None, -1, offsets(p0=3)) == {("t", 0): 16}


@run_in_loop
async def test_a_reload_honours_markers_and_keeps_open_transactions_pending(make):
    c, rm = make()
    c.manager.owned.add(0)
    await c.commit_transactional_offsets("g", 7, 0, "", None, -1, offsets(p0=5))
    await c.commit_transactional_offsets("g", 8, 0, "", None, -1, offsets(p1=6))
    await c.commit_transactional_offsets("g", 9, 0, "", None, -1, offsets(p2=7))
    await c.commit_offsets("g", "", None, -1, offsets(p3=1))
    rm.append_marker(OFFSETS_TP, 7, 0, True)
    rm.append_marker(OFFSETS_TP, 8, 0, False)
    successor, _ = make(rm)
    successor.on_leadership_change([OFFSETS_TP], [])
    for _ in range(200):
        if successor.manager.owned:
            break
        await asyncio.sleep(0)
    found = successor.fetch_offsets("g", None)
    assert {tp: o.offset for tp, o in found.items()} == {("t", 0): 5, ("t", 3): 1}
    group = successor.manager.get_group("g")
    assert list(group.pending_txn_offsets) == [9] and group.has_pending_txn_offsets(("t", 2))
    rm.append_marker(OFFSETS_TP, 9, 0, True)
    successor.complete_transactional_offsets(9, True, 0)
    assert successor.fetch_offsets("g", [("t", 2)])[("t", 2)].offset == 7


@run_in_loop
async def test_require_stable_sees_partitions_with_pending_transactional_offsets(make):
    c, rm = make()
    c.manager.owned.add(0)
    await c.commit_offsets("g", "", None, -1, offsets(p0=1, p1=1))
    await c.commit_transactional_offsets("g", 7, 0, "", None, -1, offsets(p0=5))
    assert c.unstable_partitions("g", [("t", 0), ("t", 1)]) == {("t", 0)}
    rm.append_marker(OFFSETS_TP, 7, 0, True)
    c.complete_transactional_offsets(7, True, 0)
    assert c.unstable_partitions("g", [("t", 0), ("t", 1)]) == set()

"""Fetch with replica id -2 (Kafka's DebuggingConsumerId, the replica verification tool) reads a follower,
below its high watermark; an ordinary consumer (-1) still gets NOT_LEADER_OR_FOLLOWER there."""

from __future__ import annotations

from odradek.broker.delayed_ops import FetchSpec
from odradek.broker.replica_manager import DEBUGGING_CONSUMER_ID, FetchParams
from odradek.protocol import errors
from odradek.protocol.records import iter_batches

from .log.helpers import value_batch as batch
from .test_replica_manager import BROKER, rm, run, state  # noqa: F401  (rm is a fixture)


def params(replica_id: int) -> FetchParams:
    return FetchParams(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)


def test_the_debugging_consumer_reads_a_follower_below_its_high_watermark(rm):  # noqa: F811
    async def main():
        rm.start()
        rm.become_leader_or_follower(1, [("t", state(0, leader=2, replicas=(2, BROKER)))], {})
        log = rm.online_partition("t", 0).log
        for values in ((b"a", b"b"), (b"c",), (b"d",)):
            records = batch(*values)
            records[0:8] = log.log_end_offset.to_bytes(8, "big")  # the leader's offsets
            log.append_as_follower(records)
        log.high_watermark = 3  # the leader's high watermark reached the follower for offsets 0..2
        spec = [FetchSpec("t", 0, 0, 1 << 20)]
        refused = rm.fetch_messages(params(-1), spec)[("t", 0)]
        assert refused.error_code == errors.NotLeaderOrFollowerError.code
        answer = rm.fetch_messages(params(DEBUGGING_CONSUMER_ID), spec)[("t", 0)]
        assert answer.error_code == 0 and answer.high_watermark == 3
        assert [(b.base_offset, b.last_offset) for b in iter_batches(answer.records)] == [(0, 1), (2, 2)]
    run(main())

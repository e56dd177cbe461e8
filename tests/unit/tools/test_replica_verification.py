"""ReplicaBuffer of odradek-replica-verification on real record batches: Kafka's lines for a batch-boundary
mismatch (which ends the tool), a checksum mismatch (reported, verification goes on) and the lag report."""

from __future__ import annotations

import pytest

from odradek.tools.replica_verification import (
    OffsetMismatch, ReplicaAnswer, ReplicaBuffer, UsageError, include_list_pattern, parse_args,
)
from odradek.protocol.records.builder import RecordBatchBuilder


def batches(*groups: tuple[bytes, ...], base: int = 0) -> bytes:
    out = bytearray()
    for values in groups:
        builder = RecordBatchBuilder()
        for value in values:
            builder.append(value=value, key=None, timestamp=1_700_000_000_000)
        raw = bytearray(builder.build())
        raw[0:8] = base.to_bytes(8, "big")
        base += len(values)
        out += raw
    return bytes(out)


def buffer(report_interval_ms: int = 0) -> ReplicaBuffer:
    clock = iter(range(0, 10**9, 1000))
    return ReplicaBuffer({("t", 0): 2}, {("t", 0): 0}, report_interval_ms, clock_ms=lambda: next(clock))


def test_equal_replicas_advance_to_the_high_watermark_and_report_the_lag():
    buf, lines = buffer(), []
    same = batches((b"a", b"b"), (b"c",), (b"d",))
    buf.add(("t", 0), 1, ReplicaAnswer(3, same))
    buf.add(("t", 0), 2, ReplicaAnswer(4, same))  # offset 3 is below only one replica's high watermark
    assert buf.verify(lines.append) == (1, ("t", 0), 3)
    assert buf.fetch_offsets[("t", 0)] == 3
    [line] = lines
    assert line.endswith(": max lag is 1 for partition t-0 at offset 3 among 1 partitions")


def test_a_different_checksum_is_reported_and_verification_goes_on():
    buf, lines = buffer(report_interval_ms=10**9), []
    buf.add(("t", 0), 1, ReplicaAnswer(3, batches((b"a", b"b"), (b"c",))))
    buf.add(("t", 0), 2, ReplicaAnswer(3, batches((b"a", b"X"), (b"c",))))
    buf.verify(lines.append)
    assert buf.fetch_offsets[("t", 0)] == 3
    [line] = lines
    assert ": partition t-0 has unmatched checksum at offset 1; replica 1's checksum " in line
    assert "; replica 2's checksum " in line


def test_different_batch_boundaries_end_the_tool():
    buf, lines = buffer(), []
    buf.add(("t", 0), 1, ReplicaAnswer(3, batches((b"a", b"b"), (b"c",))))
    buf.add(("t", 0), 2, ReplicaAnswer(3, batches((b"a",), (b"b", b"c"))))
    with pytest.raises(OffsetMismatch):
        buf.verify(lines.append)
    assert lines[0].endswith(": partition t-0: replica 1's offset 1 doesn't match replica 2's offset 0")


def test_flags():
    opts = parse_args(["--bootstrap-server", "h:1,h2:2", "--time", "-2", "--topic-white-list", "a.*, b"])
    assert opts.broker_list == "h:1,h2:2" and opts.initial_time == -2 and opts.report_interval_ms == 30000
    assert opts.topic_pattern.fullmatch("abc") and opts.topic_pattern.fullmatch("b")
    assert not opts.topic_pattern.fullmatch("cb")
    with pytest.raises(UsageError, match="invalid regex"):
        include_list_pattern("[")

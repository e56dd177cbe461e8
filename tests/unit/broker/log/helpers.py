"""Batch builders shared by the log tests."""

from __future__ import annotations

import signal
import subprocess
import sys

from odradek.protocol.records import RecordBatchBuilder


def make_batch(count: int = 1, timestamp: int = 1_000, value_size: int = 10, *, base_offset: int = 0,
               epoch: int = -1, tag: bytes = b"") -> bytearray:
    builder = RecordBatchBuilder(base_offset=base_offset, partition_leader_epoch=epoch)
    for i in range(count):
        value = (tag + b"x" * value_size)[:max(value_size, len(tag))]
        builder.append(timestamp + i, None, value)
    return bytearray(builder.build())


def value_batch(*values: bytes, timestamp: int = 1_700_000_000_000) -> bytearray:
    """One batch holding exactly these values (no keys), for tests that look at what comes back."""
    builder = RecordBatchBuilder()
    for value in values:
        builder.append(value=value, key=None, timestamp=timestamp)
    return bytearray(builder.build())


def make_producer_batch(producer_id: int, epoch: int, base_sequence: int, count: int = 1, *,
                        timestamp: int = 1_000, transactional: bool = False) -> bytearray:
    """An idempotent producer's batch: records ``base_sequence .. base_sequence + count - 1``."""
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=base_sequence,
                                 is_transactional=transactional)
    for i in range(count):
        builder.append(timestamp + i, None, b"seq-%d" % (base_sequence + i))
    return bytearray(builder.build())


def run_until_killed(writer: str, directory: str, lines: int) -> list[str]:
    """Run the Python ``writer`` (argv[1] = directory) until it has printed ``lines`` lines, then SIGKILL it."""
    proc = subprocess.Popen([sys.executable, "-c", writer, directory], stdout=subprocess.PIPE, text=True)
    acked: list[str] = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            acked.append(line)
            if len(acked) >= lines:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return acked

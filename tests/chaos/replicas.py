"""Replica verification for the fault-injection tests: the partition logs on disk, compared byte for byte.

Reads `<log.dirs>/<topic>-<partition>/*.log` of each broker directly (no broker involved), so a broker
that lies about its log cannot hide a divergence.
"""

from __future__ import annotations

import os
from pathlib import Path

from odradek.protocol.records import iter_batches


def partition_batches(log_dir: Path, topic: str, partition: int) -> list[bytes]:
    """Every complete batch of the partition, in offset order, as stored (followers keep the leader's
    bytes, partition leader epoch included, so replicas must match exactly)."""
    directory = Path(log_dir) / f"{topic}-{partition}"
    if not directory.is_dir():
        return []
    batches: list[bytes] = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        data = (directory / name).read_bytes()
        for batch in iter_batches(data):
            batches.append(bytes(batch.buffer))
    return batches


def batches_below(batches: list[bytes], high_watermark: int) -> list[bytes]:
    out = []
    for raw in batches:
        batch = next(iter_batches(raw))
        if batch.last_offset < high_watermark:
            out.append(raw)
    return out


def divergences(log_dirs: dict[int, Path], topic: str, partition: int, replicas: list[int],
                high_watermark: int) -> list[str]:
    """Human-readable differences between the replicas' logs below the high watermark ([] if none)."""
    logs = {b: batches_below(partition_batches(log_dirs[b], topic, partition), high_watermark) for b in replicas}
    reference_broker = replicas[0]
    reference = logs[reference_broker]
    problems = []
    for broker, batches in logs.items():
        if batches != reference:
            problems.append(f"{topic}-{partition}: broker {broker} has {len(batches)} batches below HW "
                            f"{high_watermark}, broker {reference_broker} has {len(reference)}; first difference at "
                            f"batch {next((i for i, (a, b) in enumerate(zip(batches, reference)) if a != b), min(len(batches), len(reference)))}")
    return problems

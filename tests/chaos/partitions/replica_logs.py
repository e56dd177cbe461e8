"""Every replica's copy of a partition, read from its segment files (no broker involved, so a broker cannot
hide a divergence): data records and transaction markers, with the producer and epochs of their batch."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.records import iter_batches, read_control_batch


@dataclass(frozen=True)
class Entry:
    offset: int
    value: bytes | None        # None for a transaction marker
    producer_id: int
    producer_epoch: int
    transactional: bool
    marker: str | None         # "COMMIT" or "ABORT" for a marker
    leader_epoch: int          # the partition leader epoch stamped on its batch


def replica_log(log_dir: Path, topic: str, partition: int) -> list[Entry]:
    directory = Path(log_dir) / f"{topic}-{partition}"
    if not directory.is_dir():
        return []
    entries: list[Entry] = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        for batch in iter_batches((directory / name).read_bytes()):
            common = (batch.producer_id, batch.producer_epoch, batch.is_transactional)
            if batch.is_control:
                marker, _ = read_control_batch(batch)
                entries.append(Entry(batch.base_offset, None, *common, marker.name, batch.partition_leader_epoch))
                continue
            for record in batch.records():
                value = None if record.value is None else bytes(record.value)
                entries.append(Entry(record.offset, value, *common, None, batch.partition_leader_epoch))
    return entries


def log_end(entries: list[Entry]) -> int:
    return entries[-1].offset + 1 if entries else 0

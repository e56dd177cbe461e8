"""Reading a replica's partition log straight from disk, to tell a broker's duplicate from a client's.

A value stored twice under one producer id and epoch means the leader appended a retry it should have
recognised from its producer state (a broker bug). A copy under a bumped epoch is a client re-send at
sequence 0 (KIP-360), which no broker can recognise: librdkafka does that after a leader move
(confluentinc/librdkafka#4953, also seen against Apache Kafka).
"""

from __future__ import annotations

import os
from pathlib import Path

from odradek.protocol.records import iter_batches


def stored_records(log_dir: Path, topic: str, partition: int) -> list[tuple[int, bytes, int, int, int]]:
    """(offset, value, producer id, producer epoch, batch base sequence) of every data record on disk."""
    directory = Path(log_dir) / f"{topic}-{partition}"
    if not directory.is_dir():
        return []
    out = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        for batch in iter_batches((directory / name).read_bytes()):
            if batch.is_control:
                continue
            for record in batch.records():
                out.append((record.offset, bytes(record.value), batch.producer_id, batch.producer_epoch,
                            batch.base_sequence))
    return out


def stored_key_values(log_dir: Path, topic: str, partition: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record of one replica's log on disk, in offset order."""
    directory = Path(log_dir) / f"{topic}-{partition}"
    out = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        for batch in iter_batches((directory / name).read_bytes()):
            if not batch.is_control:
                out.extend((r.offset, r.key, r.value) for r in batch.records())
    return out


def duplicates_on_disk(cluster, topic: str, partitions: int) -> tuple[list[str], list[str]]:
    """Values stored twice in one replica's log, as (same producer epoch, different producer epochs)."""
    same_epoch, cross_epoch = [], []
    for broker in cluster.brokers:
        for p in range(partitions):
            copies: dict[bytes, list[tuple]] = {}
            for offset, value, pid, epoch, seq in stored_records(broker.log_dirs, topic, p):
                copies.setdefault(value, []).append((offset, pid, epoch, seq))
            for value, where in copies.items():
                if len(where) > 1:
                    line = f"broker {broker.broker_id} {topic}-{p} {value.decode(errors='replace')}: " + ", ".join(
                        f"offset {o} (pid {pid} epoch {e}, batch base seq {s})" for o, pid, e, s in where)
                    (same_epoch if len({(pid, e) for _, pid, e, _ in where}) == 1 else cross_epoch).append(line)
    return same_epoch, cross_epoch

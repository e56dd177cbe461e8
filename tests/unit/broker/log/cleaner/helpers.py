"""A compacted Log in a temporary directory, batches of keyed records, and one cleaning run in the test's
thread (the manager picks the log, a Cleaner cleans it, the swaps happen at once)."""

from __future__ import annotations

import os
import time

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.cleaner.cleaner import Cleaner
from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.cleaner.log_cleaner import make_task, swap_in
from odradek.broker.log.cleaner.manager import LogCleanerManager
from odradek.protocol.records import (
    ControlRecordType, RecordBatchBuilder, build_control_batch, decode_batch, iter_batches,
)

NOW = int(time.time() * 1000)


def compacted_log(directory, **config) -> Log:
    settings = {"cleanup_policy": "compact", "segment_bytes": 1024, "min_cleanable_ratio": 0.0, **config}
    return Log(os.path.join(str(directory), "topic-0"), LogConfig(**settings), clock=lambda: NOW)


def keyed(*pairs, timestamp: int = NOW, producer: tuple[int, int, int] | None = None,
          transactional: bool = False, compression: int = 0) -> bytearray:
    """One batch of (key, value) records; ``producer`` = (id, epoch, first sequence)."""
    pid, epoch, seq = producer if producer is not None else (-1, -1, -1)
    builder = RecordBatchBuilder(compression, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=transactional)
    for key, value in pairs:
        builder.append(timestamp, key, value)
    return bytearray(builder.build())


def marker(kind: ControlRecordType, pid: int, epoch: int = 0) -> bytearray:
    return bytearray(build_control_batch(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0,
                                         timestamp=NOW))


def append(log: Log, *batches: bytearray, roll: bool = False) -> None:
    for batch in batches:
        log.append_as_leader(batch, 0)
    if roll:
        log.roll()
    log.update_high_watermark(log.log_end_offset)


class DirectControl:
    """The worker's Control without a worker: swaps happen in the caller's thread."""

    def __init__(self, manager, cleanable, segments) -> None:
        self.manager, self.cleanable, self.segments = manager, cleanable, segments
        self.swaps = 0

    def check_done(self) -> None:
        pass

    def throttle(self, nbytes: int) -> None:
        pass

    def swap(self, group) -> bool:
        self.swaps += 1
        return swap_in(self.manager, self.cleanable, self.segments, group)


def clean(log: Log, manager: LogCleanerManager | None = None, config: CleanerConfig | None = None,
          now: int = NOW):
    """One cleaning of ``log`` if the manager finds it cleanable; (end offset, stats) or None."""
    manager = manager or LogCleanerManager([os.path.dirname(log.dir)], lambda: {(log.topic, log.partition): log})
    cleanable = manager.grab_filthiest_compacted_log(now)
    if cleanable is None:
        return None
    task, segments = make_task(cleanable)
    cleaner = Cleaner((config or CleanerConfig()).worker_settings(), DirectControl(manager, cleanable, segments))
    end = cleanable.first_dirty_offset
    try:
        end, stats = cleaner.clean(task)
        return end, stats
    finally:
        manager.done_cleaning(cleanable.topic_partition, cleanable.dir, end)


def batches(log: Log) -> list:
    """Every batch of the log, in offset order."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        if not data:
            break
        for batch in iter_batches(data):
            if batch.last_offset >= offset:
                out.append(batch)
            offset = batch.next_offset
    return out


def records(log: Log) -> list:
    """Every record of the log, in offset order: (offset, key, value, its batch)."""
    return [(r.offset, r.key, r.value, batch) for batch in batches(log) for r in decode_batch(batch)]


def latest_values(log: Log) -> dict:
    out = {}
    for _, key, value, _ in records(log):
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def age_segments(log: Log, older_by_ms: int) -> None:
    """Set every segment's modification time ``older_by_ms`` in the past (Kafka's lastModified)."""
    when = (NOW - older_by_ms) / 1000  # on the logs' clock (NOW), not the wall clock: a test may run long after import
    for segment in log.segments:
        os.utime(segment.log_path, (when, when))

"""What the broker hands a cleaner worker, and what the worker hands back (all picklable).

A worker (a process, or a thread) reads the segment files itself; everything else it needs of the log
(segment bounds, transaction indexes, producers, configuration) is copied here under the log's lock, so
it never touches the broker's objects. Non-active segments do not change, except by the broker's
retention, truncation or deletion: the swap checks for those before it replaces anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..txn_index import AbortedTxn


@dataclass(frozen=True)
class SegmentInfo:
    base_offset: int
    size: int  # bytes of whole batches
    next_offset: int
    offset_index_bytes: int
    time_index_bytes: int
    last_modified_ms: int  # the .log file's modification time (Kafka's segment.lastModified)
    dirty_position: int = 0  # where the first dirty offset's batch is (first dirty segment; else 0)


@dataclass(frozen=True)
class CleanerSettings:
    """One worker's share of the cleaner config (Kafka's Cleaner constructor arguments)."""
    map_memory: int  # log.cleaner.dedupe.buffer.size / log.cleaner.threads
    load_factor: float  # log.cleaner.io.buffer.load.factor
    io_buffer_size: int  # log.cleaner.io.buffer.size / threads / 2: one read (a larger batch is read whole)
    throttled: bool  # log.cleaner.io.max.bytes.per.second is set: ask the broker before reading on


@dataclass(frozen=True)
class CleanTask:
    task_id: int
    topic: str
    partition: int
    directory: str
    first_dirty_offset: int
    first_uncleanable_offset: int
    segments: tuple[SegmentInfo, ...]  # every segment below the first uncleanable offset's, in order
    # (base offset, .txnindex entries) of every segment of the log, the active one included
    txn_entries: tuple[tuple[int, tuple[AbortedTxn, ...]], ...]
    # producer id -> (offset of its last data batch or None, its epoch): Kafka's lastRecordsOfActiveProducers
    last_records: dict[int, tuple[int | None, int]]
    delete_horizon_ms: int  # tombstones and markers in segments modified before this may go
    segment_bytes: int
    max_index_size: int
    index_interval_bytes: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class CleanedGroup:
    """A group of segments cleaned into ``<base>.*.cleaned`` files, ready to be swapped in."""
    base_offset: int
    replaced: tuple[tuple[int, int], ...]  # (base offset, size) of each segment it replaces
    size: int  # bytes of its .log.cleaned file: the broker swaps in only the file the worker finished


@dataclass
class CleanerStats:
    """Kafka's CleanerStats, as the worker measured them (wall-clock times in ms)."""
    start_ms: int = 0
    map_complete_ms: int = -1
    end_ms: int = -1
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    messages_written: int = 0
    buffer_utilization: float = 0.0

    @property
    def elapsed_secs(self) -> float:
        return max(self.end_ms - self.start_ms, 0) / 1000.0

    @property
    def elapsed_index_secs(self) -> float:
        return max(self.map_complete_ms - self.start_ms, 0) / 1000.0

"""The log cleaner's broker settings (Kafka 2.8's CleanerConfig) and their run-time changes.

The seven keys of Kafka's LogCleaner.ReconfigurableConfigs may change as dynamic broker configs, per
broker or cluster-wide; a change restarts the cleaner threads with the new values (Kafka's reconfigure).
Like Kafka, ``log.cleaner.threads`` may only change to between half and double its current value.
Kafka's cleaner grows its read buffer up to message.max.bytes and fails on a larger batch; ours reads
any batch whole, so that key plays no part here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .offset_map import BYTES_PER_ENTRY
from .task import CleanerSettings
from .throttler import DOUBLE_MAX

if TYPE_CHECKING:
    from ...config import KafkaConfig

INT32_MAX = 0x7FFFFFFF

RECONFIGURABLE_KEYS = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
})


@dataclass(frozen=True)
class CleanerConfig:
    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_io_bytes_per_second: float = DOUBLE_MAX
    backoff_ms: int = 15_000
    enable_cleaner: bool = True
    isolation: str = "process"  # odradek.log.cleaner.isolation

    @classmethod
    def from_kafka_config(cls, config: KafkaConfig) -> "CleanerConfig":
        get = config.get
        return cls(num_threads=get("log.cleaner.threads"), dedupe_buffer_size=get("log.cleaner.dedupe.buffer.size"),
                   dedupe_buffer_load_factor=get("log.cleaner.io.buffer.load.factor"),
                   io_buffer_size=get("log.cleaner.io.buffer.size"),
                   max_io_bytes_per_second=get("log.cleaner.io.max.bytes.per.second"),
                   backoff_ms=get("log.cleaner.backoff.ms"), enable_cleaner=get("log.cleaner.enable"),
                   isolation=get("odradek.log.cleaner.isolation"))

    def offset_map_problem(self) -> str | None:
        """Kafka's Cleaner requirement: each thread's offset map must hold more than one entry."""
        settings = self.worker_settings()
        if self.num_threads and (settings.map_memory // BYTES_PER_ENTRY) * settings.load_factor <= 1:
            return ("offset map is too small to fit in even a single message, so log cleaning will never make "
                    "progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")
        return None

    def worker_settings(self) -> CleanerSettings:
        """One cleaner thread's share (Kafka's CleanerThread: the buffers divided among the threads)."""
        threads = max(self.num_threads, 1)
        return CleanerSettings(map_memory=min(self.dedupe_buffer_size // threads, INT32_MAX),
                               load_factor=self.dedupe_buffer_load_factor,
                               io_buffer_size=max(self.io_buffer_size // threads // 2, 1),
                               throttled=self.max_io_bytes_per_second < DOUBLE_MAX)


def validate_reconfiguration(current_threads: int, new_threads: int) -> str | None:
    """Kafka's LogCleaner.validateReconfiguration; the error, or None when the change is allowed."""
    if new_threads < 1:
        return "Log cleaner threads should be at least 1"
    if new_threads < current_threads // 2:  # integer division, as Scala
        return f"Log cleaner threads cannot be reduced to less than half the current value {current_threads}"
    if new_threads > current_threads * 2:
        return f"Log cleaner threads cannot be increased to more than double the current value {current_threads}"
    return None

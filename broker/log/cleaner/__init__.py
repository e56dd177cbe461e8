"""Kafka 2.8's log cleaner: compaction of ``cleanup.policy=compact`` logs (see log_cleaner.py)."""

from .config import RECONFIGURABLE_KEYS, CleanerConfig
from .log_cleaner import LogCleaner
from .manager import CLEANER_OFFSET_CHECKPOINT

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "RECONFIGURABLE_KEYS", "CleanerConfig", "LogCleaner"]

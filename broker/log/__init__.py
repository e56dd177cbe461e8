"""The partition log: segments, indexes, checkpoints, recovery, retention, and the LogManager."""

from .checkpoints import CheckpointError, LeaderEpochCheckpointFile, OffsetCheckpointFile
from .leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochFileCache
from .log import (
    FetchDataInfo, Log, LogAppendInfo, UnexpectedAppendOffsetError, log_dir_name, parse_topic_partition,
)
from .log_types import InvalidReadSizeError
from .log_config import LogConfig
from .log_manager import (
    PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, InconsistentBrokerMetadataError, LogDirLockedError, LogManager,
)
from .offset_index import CorruptIndexError, OffsetIndex
from .producer_snapshot import CorruptSnapshotError
from .producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager
from .segment import LogSegment, SegmentRead
from .time_index import TimeIndex

__all__ = [
    "PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "BatchMetadata",
    "CheckpointError", "CorruptIndexError", "CorruptSnapshotError", "EpochEntry", "FetchDataInfo",
    "InconsistentBrokerMetadataError", "InvalidReadSizeError", "LeaderEpochCheckpointFile", "LeaderEpochFileCache", "Log", "LogAppendInfo",
    "LogConfig", "LogDirLockedError", "LogManager", "LogSegment", "OffsetCheckpointFile", "OffsetIndex",
    "ProducerStateEntry", "ProducerStateManager", "SegmentRead", "TimeIndex", "UnexpectedAppendOffsetError",
    "log_dir_name", "parse_topic_partition",
]

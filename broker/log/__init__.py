"""The partition log: segments, indexes, checkpoints, recovery, retention, and the LogManager."""

from .checkpoints import CheckpointError, LeaderEpochCheckpointFile, OffsetCheckpointFile
from .leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochFileCache
from .log import (
    FetchDataInfo, Log, LogAppendInfo, UnexpectedAppendOffsetError, log_dir_name, parse_topic_partition,
)
from .log_config import LogConfig
from .log_manager import InconsistentBrokerMetadataError, LogDirLockedError, LogManager
from .offset_index import CorruptIndexError, OffsetIndex
from .segment import LogSegment, SegmentRead
from .time_index import TimeIndex

__all__ = [
    "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "CheckpointError", "CorruptIndexError", "EpochEntry",
    "FetchDataInfo", "InconsistentBrokerMetadataError", "LeaderEpochCheckpointFile", "LeaderEpochFileCache",
    "Log", "LogAppendInfo", "LogConfig", "LogDirLockedError", "LogManager", "LogSegment", "OffsetCheckpointFile",
    "OffsetIndex", "SegmentRead", "TimeIndex", "UnexpectedAppendOffsetError", "log_dir_name",
    "parse_topic_partition",
]

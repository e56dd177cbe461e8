"""Values passed in and out of Log, and the partition directory naming helpers."""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from typing import NamedTuple

_DIR_RE = re.compile(r"^(.+)-(\d+)$")
# Kafka's logDeleteDirName / logFutureDirName: <topic>-<partition>.<32 hex digits>-delete|-future
_RENAMED_DIR_RE = re.compile(r"^(.+)-(\d+)\.[0-9a-f]{32}(-delete|-future)$")
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"  # a replica being moved to this log dir (AlterReplicaLogDirs, KIP-113)


class UnexpectedAppendOffsetError(Exception):
    """A follower append whose first offset is below the log end offset."""


class InvalidReadSizeError(ValueError):
    """A read asked for a negative number of bytes (Kafka's LogSegment.read IllegalArgumentException)."""


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _renamed_dir_name(topic: str, partition: int, suffix: str) -> str:
    """``<topic>-<partition>.<uuid>`` + suffix, the topic cut so that the name fits in 255 characters (Kafka's
    logDeleteDirName; a 249-character topic name would not fit otherwise)."""
    tail = f"-{partition}.{uuid.uuid4().hex}{suffix}"
    return topic[:255 - len(tail)] + tail


def delete_dir_name(topic: str, partition: int) -> str:
    return _renamed_dir_name(topic, partition, DELETE_DIR_SUFFIX)


def future_dir_name(topic: str, partition: int) -> str:
    return _renamed_dir_name(topic, partition, FUTURE_DIR_SUFFIX)


def is_future_dir(name: str) -> bool:
    return name.rstrip("/").endswith(FUTURE_DIR_SUFFIX)


def parse_topic_partition(name: str) -> tuple[str, int]:
    """``my-topic-3`` (also ``my-topic-3.<uuid>-future`` / ``-delete``) -> ("my-topic", 3); ValueError for
    anything else."""
    base = os.path.basename(name.rstrip("/"))
    match = _RENAMED_DIR_RE.match(base) or _DIR_RE.match(base)
    if not match:
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return match.group(1), int(match.group(2))


@dataclass
class LogAppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int
    num_messages: int
    valid_bytes: int
    rolled: bool = False
    duplicate: bool = False  # a retried idempotent batch: the offsets are the original append's


class FetchDataInfo(NamedTuple):
    fetch_offset: int
    records: bytes | memoryview  # whole batches; empty at the log end or under max_offset
    segment_base_offset: int
    position: int

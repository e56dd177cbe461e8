"""Values passed in and out of Log, and the partition directory naming helpers."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import NamedTuple

_DIR_RE = re.compile(r"^(.+)-(\d+)$")


class UnexpectedAppendOffsetError(Exception):
    """A follower append whose first offset is below the log end offset."""


class InvalidReadSizeError(ValueError):
    """A read asked for a negative number of bytes (Kafka's LogSegment.read IllegalArgumentException)."""


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_topic_partition(name: str) -> tuple[str, int]:
    """``my-topic-3`` -> ("my-topic", 3); ValueError for anything else."""
    match = _DIR_RE.match(os.path.basename(name.rstrip("/")))
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
    records: bytes  # whole batches; empty at the log end or under max_offset
    segment_base_offset: int
    position: int

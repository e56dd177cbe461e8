"""The time index (``.timeindex``): sparse (timestamp int64, relative offset int32) entries.

Format (Kafka's): 12-byte big-endian entries. An entry (t, o) says that ``t`` is the largest
timestamp seen up to offset ``o`` (the offset of the record carrying it). Entries are only added
when the timestamp grows, so both columns are non-decreasing. Same file policy as the offset index
(append-only, exact length, read on first use, no descriptor held).
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from .offset_index import AppendOnlyIndex, CorruptIndexError

NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AppendOnlyIndex):
    ENTRY = struct.Struct(">qi")

    def __init__(self, *args, **kwargs) -> None:
        self._offsets: list[int] = []
        super().__init__(*args, **kwargs)

    # keys = timestamps, values = absolute offsets
    def _decode_into(self, timestamp: int, relative_offset: int) -> None:
        self._keys.append(timestamp)
        self._values.append(self.base_offset + relative_offset)

    def _check_entries(self) -> None:
        keys, values = self._keys, self._values
        for i in range(1, len(keys)):
            if keys[i] < keys[i - 1] or values[i] < values[i - 1]:
                raise CorruptIndexError(f"{self.path}: entry {i} ({keys[i]}, {values[i]}) goes backwards")
        if values and values[0] < self.base_offset:
            raise CorruptIndexError(f"{self.path}: first offset {values[0]} is below the base offset")

    @property
    def last_entry(self) -> TimestampOffset:
        self._load()
        if not self._keys:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._keys[-1], self._values[-1])

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) if the timestamp is larger than the last one; True if written."""
        self._load()
        if not skip_full_check and self.is_full:
            raise ValueError(f"{self.path} is full ({self.entries} entries)")
        if self._keys:
            if timestamp <= self._keys[-1]:
                return False
            if offset < self._values[-1]:
                raise ValueError(f"offset {offset} is below the last time-indexed offset {self._values[-1]}")
        self._write(timestamp, self._relative(offset))
        self._keys.append(timestamp)
        self._values.append(offset)
        return True

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry whose timestamp is <= target, else (-1, base_offset)."""
        self._load()
        i = bisect_right(self._keys, target_timestamp)
        if i == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._keys[i - 1], self._values[i - 1])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._load()
        self._truncate_entries(bisect_left(self._values, offset))

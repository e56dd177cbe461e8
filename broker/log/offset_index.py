"""The offset index (``.index``): sparse (relative offset int32, file position int32) entries.

Format (Kafka's): 8-byte big-endian entries, the offset relative to the segment's base offset and
the byte position of a batch in the ``.log`` file. One entry is written every
``index.interval.bytes`` of appended data, keyed by the last offset of the batch written at that
position, so ``lookup(target)`` gives a position from which a forward scan of batch headers
finds the batch containing ``target``.

Files here are append-only and hold exactly their entries (Kafka preallocates and mmaps
``segment.index.bytes`` and trims on roll; we keep entries in memory and only enforce the same
maximum, ``max_index_size``, as the "index full" roll trigger). A file whose length is not a
whole number of entries, or whose entries are not increasing, fails ``sanity_check()`` and is
rebuilt by the segment's recovery.

No descriptor is held (Kafka's mmapped indexes hold none either): the file is read the first time the
index is used (Kafka 2.8's lazy index), and new entries are written in bunches (open, append, close) when
``PENDING_BYTES`` have gathered, on ``flush()`` (roll, flush.ms, shutdown: with fsync) and on ``close()``.
Entries not yet written are lost by a crash only in the part of the log that recovery rebuilds anyway:
a segment's index is flushed before the recovery point passes it.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from .log_dir_failure import append_whole

DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
_INT32_MAX = 0x7FFFFFFF


class CorruptIndexError(Exception):
    """An index file that cannot be trusted; the segment rebuilds it from its log file."""


class IndexOffsetOverflowError(Exception):
    """An offset that does not fit the index's int32 relative form (the segment must roll)."""


class OffsetPosition(NamedTuple):
    offset: int
    position: int


PENDING_BYTES = 4096


class AppendOnlyIndex:
    """Shared machinery: a file of fixed-size entries mirrored by two in-memory key/value lists."""

    ENTRY: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.ENTRY.size)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._file_length = 0          # bytes in the file
        self._pending = bytearray()    # entries appended after those, not yet written
        self._loaded = False

    # -- loading and checks -----------------------------------------------------------------------

    def _load(self) -> None:
        """Read the file on first use (Kafka 2.8's LazyIndex)."""
        if self._loaded:
            return
        self._loaded = True
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        self._file_length = len(data)
        whole = len(data) - len(data) % self.ENTRY.size
        for key, value in self.ENTRY.iter_unpack(data[:whole]):
            self._decode_into(key, value)

    def _decode_into(self, a: int, b: int) -> None:
        raise NotImplementedError

    def create(self) -> None:
        """Make the empty file of a new segment's index (nothing to read from it afterwards). A file left by an
        earlier segment of that name is emptied, as Kafka's roll deletes it first."""
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        self._loaded = True
        self._file_length = 0

    def sanity_check(self) -> None:
        """Raise CorruptIndexError when the file is not a clean sequence of increasing entries."""
        self._load()
        if self._file_length % self.ENTRY.size:
            raise CorruptIndexError(
                f"{self.path}: length {self._file_length} is not a multiple of {self.ENTRY.size}")
        self._check_entries()

    def _check_entries(self) -> None:
        raise NotImplementedError

    # -- state ------------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        self._load()
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        self._load()
        return len(self._keys) >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        self._load()
        return len(self._keys) * self.ENTRY.size

    def _relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= _INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit an index with base offset {self.base_offset}")
        return relative

    def _write(self, a: int, b: int) -> None:
        self._pending += self.ENTRY.pack(a, b)
        if len(self._pending) >= PENDING_BYTES:
            self._write_pending()

    def _write_pending(self) -> None:
        """Append the pending entries to the file (creating it), then close it."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if self._pending:
                append_whole(fd, self._pending, self.path)
                self._file_length += len(self._pending)
                self._pending = bytearray()
        finally:
            os.close(fd)

    def _truncate_entries(self, count: int) -> None:
        self._load()
        del self._keys[count:]
        del self._values[count:]
        length = count * self.ENTRY.size
        if length < self._file_length:
            self._pending = bytearray()
            try:
                os.truncate(self.path, length)
            except FileNotFoundError:
                pass
            self._file_length = length
        else:
            del self._pending[length - self._file_length:]

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._truncate_entries(0)

    def flush(self) -> None:
        fd = self.descriptor_to_sync()
        if fd >= 0:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def descriptor_to_sync(self) -> int:
        """What ``flush`` would fsync, as a descriptor for an fsync outside the log's lock (the caller
        closes it): the pending entries are written first. -1 when nothing changed since loaded."""
        if not (self._loaded or not os.path.exists(self.path)):
            return -1
        self._write_pending()
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return -1

    def close(self) -> None:
        """Write what is pending (the file exists afterwards, entries or not, so a restart trusts it)."""
        if self._pending or not os.path.exists(self.path):
            self._write_pending()

    def discard(self) -> None:
        """Forget what is pending (the segment is being deleted)."""
        self._pending = bytearray()

    def delete(self) -> None:
        self.discard()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def rename(self, path: str) -> None:
        """Move the file, if written yet, and follow it: the index's path is ``path`` either way (Kafka's
        IndexFile.renameTo). Left behind, a replaced segment's delayed delete would remove the index of the
        segment that took its base offset."""
        try:
            os.rename(self.path, path)
        except FileNotFoundError:
            if os.path.exists(self.path):
                raise
        self.path = path


class OffsetIndex(AppendOnlyIndex):
    ENTRY = struct.Struct(">ii")

    def _decode_into(self, relative_offset: int, position: int) -> None:
        self._keys.append(self.base_offset + relative_offset)
        self._values.append(position)

    def _check_entries(self) -> None:
        keys, values = self._keys, self._values
        for i in range(1, len(keys)):
            if keys[i] <= keys[i - 1] or values[i] < values[i - 1]:
                raise CorruptIndexError(f"{self.path}: entry {i} ({keys[i]}, {values[i]}) is not increasing")
        if keys and (keys[0] < self.base_offset or values[0] < 0):
            raise CorruptIndexError(f"{self.path}: first entry ({keys[0]}, {values[0]}) is invalid")

    @property
    def last_offset(self) -> int:
        self._load()
        return self._keys[-1] if self._keys else self.base_offset

    @property
    def last_entry(self) -> OffsetPosition:
        self._load()
        if not self._keys:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self._keys[-1], self._values[-1])

    def append(self, offset: int, position: int) -> None:
        self._load()
        if self._keys and offset <= self._keys[-1]:
            raise ValueError(f"offset {offset} is not larger than the last indexed offset {self._keys[-1]}")
        if self.is_full:
            raise ValueError(f"{self.path} is full ({self.entries} entries)")
        self._write(self._relative(offset), position)
        self._keys.append(offset)
        self._values.append(position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry whose offset is <= target, else (base_offset, 0)."""
        self._load()
        i = bisect_right(self._keys, target_offset)
        if i == 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self._keys[i - 1], self._values[i - 1])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._load()
        self._truncate_entries(bisect_left(self._keys, offset))

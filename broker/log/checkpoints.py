"""Kafka's text checkpoint files, written atomically.

Format: a version line (``0``), a count line, then one entry per line::

    0
    2
    my-topic 0 1234        (recovery-point / log-start-offset / replication-offset checkpoints)
    my-topic 1 99

``leader-epoch-checkpoint`` uses the same frame with ``epoch start_offset`` lines. A write goes to
``<file>.tmp``, is fsynced, renamed over the file, and the directory is fsynced, so a crash leaves
either the old or the new checkpoint, never a torn one (the leader epoch checkpoints skip the directory's
fsync, as every checkpoint of Kafka 2.8 does: at worst a machine crash leaves the previous version).
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Generic, Iterable, TypeVar

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

T = TypeVar("T")


class CheckpointError(Exception):
    """A checkpoint file that cannot be parsed."""


def fsync_file(path: str) -> None:
    """fsync a file or a directory by name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_dir = fsync_file


def write_atomically(path: str, data: bytes, sync: bool = True, sync_dir: bool = True) -> None:
    """Temporary file, then rename. ``sync=False`` leaves the fsyncs (``fsync_file``, ``fsync_dir``) to the
    caller: a crash of the process still leaves the old file or the new one, a power cut may leave an
    empty one. ``sync_dir=False`` fsyncs the file but not the directory (Kafka 2.8's CheckpointFile does
    not: the leader epoch checkpoints, written by the thousand, follow it)."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync and sync_dir:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


class CheckpointFile(Generic[T]):
    """A checkpoint of entries of type T, each formatted as one line of space-separated fields."""

    def __init__(self, path: str, format_entry: Callable[[T], str], parse_entry: Callable[[list[str]], T],
                 version: int = CHECKPOINT_VERSION) -> None:
        self.path = path
        self.version = version
        self._format = format_entry
        self._parse = parse_entry

    def encode(self, entries: Iterable[T]) -> bytes:
        """The file's content for ``entries``."""
        lines = [self._format(entry) for entry in entries]
        return (f"{self.version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)).encode("utf-8")

    def write(self, entries: Iterable[T], sync_dir: bool = True) -> None:
        write_atomically(self.path, self.encode(entries), sync_dir=sync_dir)

    def read(self) -> list[T]:
        """The entries; an empty list when the file does not exist, is empty or stops after its version line
        (Kafka 2.8's CheckpointReadBuffer: its leader-epoch-checkpoint of a partition that never had an epoch,
        and its cleaner-offset-checkpoint before the first cleaning, are empty files)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if not lines:
            return []
        try:
            version = int(lines[0])
            count = int(lines[1]) if len(lines) > 1 else 0
        except ValueError:
            raise CheckpointError(f"{self.path}: malformed version or count line") from None
        if version != self.version:
            raise CheckpointError(f"{self.path}: unrecognized version {version}")
        body = [line for line in lines[2:] if line.strip()]
        if len(body) != count:
            raise CheckpointError(f"{self.path}: expected {count} entries, found {len(body)}")
        entries = []
        for line in body:
            try:
                entries.append(self._parse(line.split()))
            except (ValueError, IndexError):
                raise CheckpointError(f"{self.path}: malformed line {line!r}") from None
        return entries


def _parse_partition_offset(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError(fields)
    return (fields[0], int(fields[1])), int(fields[2])


class OffsetCheckpointFile:
    """``topic partition offset`` lines: the per-log-dir checkpoints."""

    def __init__(self, path: str) -> None:
        self._file = CheckpointFile(path, lambda e: f"{e[0][0]} {e[0][1]} {e[1]}", _parse_partition_offset)
        self.path = path

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[tuple[str, int], int]:
        return dict(self._file.read())


class CheckpointSequencer:
    """Orders the writes of checkpoint files made from several threads. A write reads its content under the
    caller's lock and takes a ticket there (``take``); it then writes without that lock, and is dropped when a
    later ticket of the same file was written first: the file already holds newer content. Writes of one file
    never overlap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued: dict[str, int] = {}
        self._written: dict[str, int] = {}
        self._file_locks: dict[str, threading.Lock] = {}

    def take(self, path: str) -> int:
        with self._lock:
            ticket = self._issued[path] = self._issued.get(path, 0) + 1
            self._file_locks.setdefault(path, threading.Lock())
            return ticket

    def write_if_newest(self, path: str, ticket: int, write: Callable[[], None]) -> bool:
        """Run ``write`` unless a later ticket of ``path`` was written; True when it ran."""
        with self._lock:
            file_lock = self._file_locks[path]
        with file_lock:
            if ticket <= self._written.get(path, 0):
                return False
            write()
            self._written[path] = ticket
            return True


def _parse_epoch_entry(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError(fields)
    return int(fields[0]), int(fields[1])


class LeaderEpochCheckpointFile:
    """``epoch start_offset`` lines: a partition's ``leader-epoch-checkpoint``."""

    def __init__(self, path: str) -> None:
        self._file = CheckpointFile(path, lambda e: f"{e[0]} {e[1]}", _parse_epoch_entry)
        self.path = path

    def encode(self, entries: Iterable[tuple[int, int]]) -> bytes:
        return self._file.encode(entries)

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        self._file.write(entries, sync_dir=False)  # as Kafka 2.8 (see write_atomically)

    def read(self) -> list[tuple[int, int]]:
        return self._file.read()

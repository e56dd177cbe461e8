"""The aborted-transaction index of one segment: Kafka's ``<20-digit base offset>.txnindex``.

One entry per ABORT marker appended to the segment, in marker-offset order (Kafka 2.8's
TransactionIndex). Entry layout, big-endian, 34 bytes::

    int16 version (0) | int64 producer id | int64 first offset | int64 last offset | int64 last stable offset

``first offset`` is the aborted transaction's first offset (possibly in an earlier segment), ``last
offset`` the marker's, ``last stable offset`` the partition's LSO once the marker was written (the
first offset of the next ongoing transaction, else marker + 1). A read_committed fetch of
[fetch offset, upper bound) needs every entry with last offset >= fetch offset and first offset <
upper bound; since an entry's LSO bounds every transaction still open when it was written, the
search may stop at the first entry whose LSO reaches the upper bound (Kafka's isComplete).

Written when the marker is appended (no fsync: flushed with the segment), created lazily on the
first entry as Kafka does, and held in memory (aborts are rare). Recovery rebuilds it from the log.
"""

from __future__ import annotations

import os
import struct
from typing import Iterable, NamedTuple

from .log_dir_failure import append_whole
from .offset_index import CorruptIndexError

TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def collect_aborted(entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound: int
                    ) -> tuple[list[AbortedTxn], bool]:
    """One segment's entries overlapping [fetch_offset, upper_bound), and whether the search may stop there."""
    found = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound:
            return found, True
    return found, False


def collect_aborted_across(segment_entries: Iterable[Iterable[AbortedTxn]], fetch_offset: int,
                           upper_bound: int) -> list[AbortedTxn]:
    """Kafka's Log.collectAbortedTransactions over the indexes of consecutive segments, starting with the
    segment that holds ``fetch_offset``."""
    found: list[AbortedTxn] = []
    for entries in segment_entries:
        txns, complete = collect_aborted(entries, fetch_offset, upper_bound)
        found.extend(txns)
        if complete:
            break
    return found


class TransactionIndex:
    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._unflushed = False  # entries written since the last fsync (the file is opened only to write)
        self.entries: list[AbortedTxn] = []
        self._torn_bytes = 0
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            whole = len(data) - len(data) % ENTRY_SIZE
            self._torn_bytes = len(data) - whole
            for at in range(0, whole, ENTRY_SIZE):
                version, producer_id, first, last, lso = _ENTRY.unpack_from(data, at)
                if version != TXN_INDEX_VERSION:
                    self._torn_bytes = len(data) - at  # unreadable from here: let sanity_check refuse it
                    break
                self.entries.append(AbortedTxn(producer_id, first, last, lso))

    # -- facts ------------------------------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        """The last marker offset indexed, -1 when empty."""
        return self.entries[-1].last_offset if self.entries else -1

    def sanity_check(self) -> None:
        """Kafka refuses a file that is not a whole number of entries (the segment is then recovered)."""
        if self._torn_bytes:
            raise CorruptIndexError(f"{self.path}: {self._torn_bytes} trailing bytes are not a whole entry")

    # -- writing ----------------------------------------------------------------------------------

    def append(self, txn: AbortedTxn) -> None:
        if txn.last_offset <= self.last_offset:
            raise ValueError(f"{self.path}: aborted transaction at {txn.last_offset} is not after the last "
                             f"indexed one at {self.last_offset}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)  # held only while written
        try:
            append_whole(fd, _ENTRY.pack(TXN_INDEX_VERSION, *txn), self.path)
        finally:
            os.close(fd)
        self.entries.append(txn)
        self._unflushed = True

    def append_if_new(self, txn: AbortedTxn) -> bool:
        """Rebuilding from the log: skip entries already indexed (replays may overlap the index)."""
        if txn.last_offset <= self.last_offset:
            return False
        self.append(txn)
        return True

    def _rewrite(self, entries: Iterable[AbortedTxn]) -> None:
        self.entries = list(entries)
        self._torn_bytes = 0
        self._forget_unflushed()
        if not self.entries:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            return
        with open(self.path, "wb") as f:
            f.write(b"".join(_ENTRY.pack(TXN_INDEX_VERSION, *e) for e in self.entries))

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset`` (the log was truncated there)."""
        if self.entries and self.entries[-1].last_offset >= offset:
            self._rewrite(e for e in self.entries if e.last_offset < offset)
        elif self._torn_bytes:
            self._rewrite(self.entries)

    def reset(self) -> None:
        """Forget everything (recovery rebuilds the index from the log)."""
        self._rewrite(())

    # -- reading ----------------------------------------------------------------------------------

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound); True when later segments need not be searched."""
        return collect_aborted(self.entries, fetch_offset, upper_bound)

    # -- lifecycle --------------------------------------------------------------------------------

    def _forget_unflushed(self) -> None:
        self._unflushed = False

    def flush(self) -> None:
        if self._unflushed:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._unflushed = False

    def descriptor_to_sync(self) -> int:
        """A descriptor to fsync outside the log's lock (the caller closes it), -1 when nothing is unflushed."""
        if not self._unflushed:
            return -1
        self._unflushed = False
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return -1

    def close(self) -> None:
        self._forget_unflushed()

    def rename(self, new_path: str) -> None:
        if os.path.exists(self.path):
            os.rename(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self._forget_unflushed()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path}, entries={len(self.entries)})"

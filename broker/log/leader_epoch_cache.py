"""Leader epoch cache: leader epoch -> the first offset written in that epoch.

Backed by ``leader-epoch-checkpoint`` (rewritten atomically on every change). Used by followers
to truncate safely after a leader change (KIP-101/279) and to answer OffsetsForLeaderEpoch.

A checkpoint write is an fsynced file and a rename: several ms one after another here, far less each when
many are written at once (the file system commits their fsyncs together). Callers that change thousands of
caches at once open ``checkpoint_batch.batched_checkpoints()``: caches changed inside it only join the
batch, written together afterwards. Everything else writes at once, on the thread that changed the cache.

Caches are changed on the event loop's thread and on others (log recovery, retention, the cleaner), and a
batch writes off the loop; one writer at a time per file (see ``claim_writer``).
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from typing import TYPE_CHECKING, NamedTuple

from .checkpoint_batch import current_batch
from .checkpoints import LeaderEpochCheckpointFile

if TYPE_CHECKING:
    from .log_dir_failure import LogDirFailureChannel

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self.checkpoint = checkpoint
        self.failure_channel: LogDirFailureChannel | None = None  # its Log's: batched writes report errors there
        self._entries: list[EpochEntry] = [EpochEntry(e, o) for e, o in checkpoint.read()]
        # One writer per file (a thread or an in-flight batch: they would share its .tmp). The lock guards
        # the two flags only and is never held while writing, so the loop never waits on a batch's fsyncs.
        self._writer_lock = threading.Lock()
        self._writing = False  # someone is writing the file
        self._stale = False  # the entries changed after that writer took them: it writes once more

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def _flush(self) -> None:
        batch = current_batch.get()
        if batch is not None:
            batch.add(self)
        else:
            self.write_checkpoint()

    def write_checkpoint(self) -> None:
        """Write the entries now, on this thread; raises OSError. When another thread or a batch is writing
        the file, it writes the latest entries once more after its write instead (this returns at once)."""
        if not self.claim_writer():
            return
        try:
            while True:
                path = self.checkpoint.path
                self.checkpoint.write(self._entries)
                if not self.release_writer(path):
                    return
        except BaseException:
            self.abandon_writer()
            raise

    def checkpoint_data(self) -> bytes:
        """The checkpoint file's content for the entries as they are now."""
        return self.checkpoint.encode(self._entries)

    def claim_writer(self) -> bool:
        """Become the file's only writer; False when someone else is: that writer then writes again."""
        with self._writer_lock:
            if self._writing:
                self._stale = True
                return False
            self._writing = True
            return True

    def release_writer(self, written_path: str) -> bool:
        """The writer wrote ``written_path``. True when it must write again (still the writer): the entries
        changed since it took them, or the log's directory moved (Log.rename_dir) so it wrote the old place."""
        with self._writer_lock:
            if self._stale or written_path != self.checkpoint.path:
                self._stale = False
                return True
            self._writing = False
            return False

    def abandon_writer(self) -> None:
        """The writer failed and stops: the next change writes the file again."""
        with self._writer_lock:
            self._writing = self._stale = False

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op when already the latest epoch).

        Entries that would break monotonicity (epoch >= the new one, or start offset >= the new
        one) are removed first, as Kafka does.
        """
        if epoch < 0:
            return
        latest = self.latest_entry
        if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
            return
        self._entries = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch: the start offset of the first later epoch,
        or the log end offset for the latest epoch; (-1, -1) when unknown."""
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        i = bisect_right(epochs, requested_epoch)
        if i == len(epochs):  # newer than anything we know
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher = self._entries[i]
        if i == 0:  # older than anything we know
            return requested_epoch, higher.start_offset
        return self._entries[i - 1].epoch, higher.start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        result = None
        for entry in self._entries:
            if entry.start_offset <= offset:
                result = entry.epoch
        return result

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset >= 0 and self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries = [e for e in self._entries if e.start_offset < end_offset]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before ``start_offset``; the one covering it now starts there."""
        kept = [e for e in self._entries if e.start_offset > start_offset]
        covering = [e for e in self._entries if e.start_offset <= start_offset]
        if covering:
            kept.insert(0, EpochEntry(covering[-1].epoch, start_offset))
        if kept != self._entries:
            self._entries = kept
            self._flush()

    def clear_and_flush(self) -> None:
        self._entries = []
        self._flush()

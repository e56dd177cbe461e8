"""Leader epoch cache: leader epoch -> the first offset written in that epoch.

Backed by ``leader-epoch-checkpoint`` (rewritten atomically on every change). Used by followers
to truncate safely after a leader change (KIP-101/279) and to answer OffsetsForLeaderEpoch.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from .checkpoints import LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self.checkpoint = checkpoint
        self._entries: list[EpochEntry] = [EpochEntry(e, o) for e, o in checkpoint.read()]

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
        self.checkpoint.write(self._entries)

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

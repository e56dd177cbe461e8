"""ProducerSequences: the idempotent producer's sequence bookkeeping, the part of Kafka 2.8's Java
TransactionManager that numbers batches (its TopicPartitionBookkeeper, the epoch bump of KIP-360 and the
unresolved sequences).

- The producer id and epoch; per partition the next sequence to give out and the last one acknowledged
  under the current epoch.
- **Broken** partitions: a batch failed for good (the broker refused it) or was refused for a sequence gap.
  The broker now expects a sequence we will never send, so the epoch must be bumped; the bump re-sequences
  that batch and those queued behind it from 0. The batches before it keep their epoch and sequence: they
  may be written (answered NOT_LEADER_OR_FOLLOWER after the append, or their answer lost), and only their
  old sequence lets the broker recognise them.
- **Unresolved** partitions (Java's markSequenceUnresolved): a batch that was sent failed without a
  definite answer (``delivery_timeout_ms`` passed, or its retries ran out), so whether the broker wrote it
  is unknown. The partition seals no new batch until everything it sent is answered; then, if the last
  sequence given out was acknowledged, all is in order (a later batch went through, so the lost one was
  written), otherwise the epoch is bumped (Java's maybeResolveSequences), so the next batch does not wait
  for a sequence that may never come, and nothing is stored twice under one epoch.

The sender decides when a bump may happen (no batch of a broken partition in flight) and takes the new
epoch (locally, or from InitProducerId once the epoch is exhausted); this class only keeps the numbers.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Mapping

from .batch import _Batch
from ..types import TopicPartition

INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1
_NOTHING_TO_RESEQUENCE = sys.maxsize  # a broken partition whose queued batches hold no sequence


class ProducerSequences:
    def __init__(self) -> None:
        self.producer_id, self.epoch = -1, -1
        self.bump_required = False
        self.broken: dict[TopicPartition, int] = {}  # partition -> queue order of its first broken batch
        self.unresolved: set[TopicPartition] = set()
        self._next: dict[TopicPartition, int] = {}
        self._last_acked: dict[TopicPartition, int] = {}

    @property
    def producer(self) -> tuple[int, int]:
        return self.producer_id, self.epoch

    def use(self, producer_id: int, epoch: int) -> None:
        """A producer id and epoch from InitProducerId (start, init_transactions, the bump after an abort):
        every partition starts at sequence 0 and nothing is left to re-sequence or resolve."""
        if (producer_id, epoch) != self.producer:
            self.producer_id, self.epoch = producer_id, epoch
            self._next.clear()
            self._last_acked.clear()
        self.bump_required = False
        self.broken.clear()
        self.unresolved.clear()

    def seal(self, batch: _Batch, transactional: bool) -> None:
        """Give ``batch`` the partition's next sequence under the current epoch."""
        sequence = self._next.get(batch.tp, 0)
        batch.seal(self.producer_id, self.epoch, sequence, transactional=transactional)
        # Sequences wrap from Integer.MAX_VALUE to 0 (DefaultRecordBatch.incrementSequence).
        self._next[batch.tp] = (sequence + batch.record_count) % (INT32_MAX + 1)

    def acknowledged(self, batch: _Batch) -> None:
        """The broker has ``batch`` (also when the answer came after the batch expired)."""
        if batch.producer != self.producer:
            return  # an older epoch's batch: the current epoch's sequences started again at 0
        # A retried batch the broker had already written may be acknowledged after a later one (Java keeps the
        # maximum too, and ignores the wrap at Integer.MAX_VALUE as we do).
        if batch.last_sequence > self._last_acked.get(batch.tp, -1):
            self._last_acked[batch.tp] = batch.last_sequence

    def mark_broken(self, batch: _Batch) -> None:
        """``batch`` failed for good or was refused for a gap: the next bump re-sequences it and those after it."""
        self.bump_required = True
        self.broken[batch.tp] = min(batch.order, self.broken.get(batch.tp, batch.order))

    def mark_unresolved(self, batch: _Batch) -> None:
        """``batch`` was sent and failed without a definite answer: its partition waits to be resolved."""
        if batch.producer == self.producer:  # else a bump since has restarted the partition's sequences
            self.unresolved.add(batch.tp)

    def resolve(self, tp: TopicPartition) -> None:
        """Everything the unresolved partition sent is answered: in order if its last sequence given out was
        acknowledged, else the epoch must be bumped (Java's maybeResolveSequences, idempotent producer)."""
        self.unresolved.discard(tp)
        next_sequence = self._next.get(tp, 0)
        if (next_sequence - self._last_acked.get(tp, -1)) % (INT32_MAX + 1) != 1:
            self.bump_required = True
            self.broken.setdefault(tp, _NOTHING_TO_RESEQUENCE)

    @property
    def can_bump_locally(self) -> bool:
        """Whether the next epoch is ours to take; at Short.MAX_VALUE Java asks for a new producer id instead."""
        return 0 <= self.epoch < INT16_MAX

    def start_new_epoch(self, producer_id: int, epoch: int, queues: Mapping[TopicPartition, deque[_Batch]]) -> None:
        """Kafka 2.8's idempotent bump: every partition's sequences restart at 0 under ``(producer_id, epoch)``;
        the broken partitions' queued batches from the first broken one on are sealed again when they go.
        Any other batch that holds a sequence keeps it and its old epoch (it may be written: re-sending it as
        sequence 0 of the new epoch would store it twice, librdkafka#4953's duplicate); the sender sends a
        partition's new-epoch batches only after its old ones are answered."""
        self.producer_id, self.epoch = producer_id, epoch
        self._next.clear()
        self._last_acked.clear()
        for tp, first_broken in self.broken.items():
            for batch in queues.get(tp, ()):
                if batch.sequence is not None and batch.order >= first_broken:
                    batch.unseal()
        self.broken.clear()
        self.unresolved.clear()  # sequence 0 of a new epoch does not depend on what the old one left
        self.bump_required = False


__all__ = ["INT16_MAX", "INT32_MAX", "ProducerSequences"]

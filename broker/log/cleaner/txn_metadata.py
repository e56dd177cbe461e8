"""Transactions seen while cleaning: which batches are aborted data and which markers may go.

Kafka 2.8's CleanedTransactionMetadata (KIP-98 cleaning rules). The cleaner never goes past the last
stable offset, so every transaction it sees is decided, and the aborted ones are known in advance from
the transaction indexes. Walking the log in offset order:

- a transactional batch of a producer whose aborted transaction has begun is aborted data: dropped;
  any other transactional batch opens (or continues) a committed transaction;
- an ABORT marker may be dropped unless a batch of its transaction was seen in this cleaning (one kept as
  its producer's last batch); when kept, its transaction goes into the cleaned segment's ``.txnindex``;
- a COMMIT marker may be dropped unless a batch of its transaction was seen in this cleaning;
- a control batch already emptied by an earlier cleaning may be dropped.

"May be dropped" still waits for ``delete.retention.ms``, as tombstones do (the caller's horizon).
"""

from __future__ import annotations

import heapq
from itertools import count
from typing import Iterable

from ....protocol.records import ControlRecordType, RecordBatchView, decode_batch
from ....protocol.records.control import control_record_type

from ..txn_index import AbortedTxn, TransactionIndex


class CleanedTransactionMetadata:
    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        # producer id -> [its aborted transaction, offset of the last batch of it seen (None: none)]
        self._ongoing_aborted: dict[int, list] = {}
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # a min-heap by first offset
        self._tiebreak = count()
        self.cleaned_index: TransactionIndex | None = None  # the segment being written

    def add_aborted_transactions(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            heapq.heappush(self._aborted, (txn.first_offset, next(self._tiebreak), txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        heap = self._aborted
        while heap and heap[0][0] <= offset:
            txn = heapq.heappop(heap)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, None])

    def on_control_batch_read(self, batch: RecordBatchView) -> bool:
        """A marker read; True when it may be discarded."""
        self._consume_aborted_up_to(batch.last_offset)
        records = decode_batch(batch)
        if not records:
            return True  # emptied by an earlier cleaning
        kind = control_record_type(records[0].key)
        producer_id = batch.producer_id
        if kind == ControlRecordType.ABORT:
            state = self._ongoing_aborted.pop(producer_id, None)
            if state is not None and state[1] is not None:
                # Some batch of the aborted transaction stays (its producer's last): keep the marker
                # and the index entry, so read_committed consumers still skip that batch.
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state[0])
                return False
            return True
        if kind == ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, batch: RecordBatchView) -> bool:
        """A data batch read; True when it belongs to an aborted transaction (and may be discarded)."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        state = self._ongoing_aborted.get(batch.producer_id)
        if state is not None:
            state[1] = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

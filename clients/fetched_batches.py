"""Which batches of a Fetch answer's record data an application sees: checked, without control batches,
batches before the fetch offset or, for read_committed, batches of aborted transactions. Shared by the
consumer's fetch buffer and SimpleClient's fetch."""

from __future__ import annotations

from typing import Any

from ..protocol.records import ControlRecordType, RecordBatchView, iter_batches, read_control_batch


def scan_fetched(data: Any, fetch_offset: int, aborted_transactions: list[Any] | None = None
                 ) -> tuple[list[RecordBatchView], int]:
    """(the batches of a Fetch answer's record data that hold records for the application, the offset after
    the answer's last complete batch, or ``fetch_offset``).

    CRCs are checked (the Java consumer's check.crcs default). Control batches are dropped, and so are
    batches that end before ``fetch_offset`` and batches compaction emptied. Given the answer's aborted transactions (read_committed),
    batches of aborted transactions are dropped as the Java consumer does: a producer is "aborting" from
    the transaction's first offset until its ABORT marker. A trailing partial batch is ignored.
    """
    wanted: list[RecordBatchView] = []
    next_offset = fetch_offset
    if not data:
        return wanted, next_offset
    aborted = sorted((a.first_offset, a.producer_id) for a in aborted_transactions or ())
    aborting: set[int] = set()
    next_aborted = 0
    for batch in iter_batches(data):
        batch.validate()
        next_offset = max(next_offset, batch.next_offset)
        if aborted_transactions is not None and batch.has_producer_id:
            while next_aborted < len(aborted) and aborted[next_aborted][0] <= batch.last_offset:
                aborting.add(aborted[next_aborted][1])
                next_aborted += 1
        if batch.is_control:
            if batch.producer_id in aborting and read_control_batch(batch)[0] == ControlRecordType.ABORT:
                aborting.discard(batch.producer_id)
            continue
        if (batch.last_offset < fetch_offset or not batch.record_count  # emptied by compaction: nothing in it
                or (batch.is_transactional and batch.producer_id in aborting)):
            continue
        wanted.append(batch)
    return wanted, next_offset

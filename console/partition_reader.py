"""Reading one partition as the console needs it: raw Fetch answers from the leader, split into data
batches (as codec specs, decoded by the compiled record codec) and transaction markers.

The consumer hides control batches and aborted records; the console shows them, so it reads the Fetch
answer itself: a transactional batch belongs to an aborted transaction when its producer's next marker
in the log is an ABORT (read ahead in the same range), or when a read_committed answer lists it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..clients import TopicPartition
from ..clients.consumer.fetch_buffer import batch_spec
from ..clients.simple_client import SimpleClient
from ..protocol.errors import for_code
from ..protocol.messages import FetchRequest
from ..protocol.records import ControlRecordType, iter_batches, read_control_batch

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_LEADER_ERRORS = frozenset({3, 6, 74, 75})  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER, FENCED/UNKNOWN_LEADER_EPOCH


class FetchedPart(NamedTuple):
    """One Fetch answer: its batches in log order, as ("data", spec, batch) or ("marker", row)."""
    items: list[tuple]
    next_offset: int  # where the next fetch starts
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]]  # (first offset, producer id) of aborted transactions (read_committed)


async def fetch_part(client: SimpleClient, tp: TopicPartition, offset: int, *, isolation: int = READ_UNCOMMITTED,
                     max_bytes: int = 4 << 20, max_wait_ms: int = 0) -> FetchedPart:
    """One Fetch of ``tp`` from ``offset`` at its leader (the metadata is looked up again once when the
    leader moved)."""
    for attempt in range(2):
        leader = client.cluster.leader_for(tp.topic, tp.partition)
        if leader is None or leader < 0 or attempt:
            await client.metadata([tp.topic])
            leader = client.cluster.leader_for(tp.topic, tp.partition)
        if leader is None or leader < 0:
            raise for_code(5)(f"{tp.topic}-{tp.partition} has no leader")  # LEADER_NOT_AVAILABLE
        request = FetchRequest(
            replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, isolation_level=isolation,
            session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=tp.topic, partitions=[
                FetchRequest.FetchTopic.FetchPartition(partition=tp.partition, fetch_offset=offset,
                                                       partition_max_bytes=max_bytes)])])
        response = await client.send(leader, request, timeout=client.request_timeout + max_wait_ms / 1000)
        if response.error_code:
            raise for_code(response.error_code)("Fetch")
        answer = response.responses[0].partitions[0]
        if answer.error_code in _LEADER_ERRORS and not attempt:
            continue
        if answer.error_code:
            raise for_code(answer.error_code)(f"fetching {tp.topic}-{tp.partition} at offset {offset}")
        return _split(answer, offset)
    raise AssertionError("unreachable")


def _split(answer: Any, offset: int) -> FetchedPart:
    items: list[tuple] = []
    next_offset = offset
    for batch in iter_batches(answer.records or b""):
        batch.validate()
        next_offset = max(next_offset, batch.next_offset)
        if batch.last_offset < offset:
            continue
        if batch.is_control:
            marker, _ = read_control_batch(batch)
            items.append(("marker", {
                "offset": batch.base_offset, "timestamp": batch.max_timestamp, "producer_id": batch.producer_id,
                "marker": "COMMIT" if marker == ControlRecordType.COMMIT else "ABORT"}))
        elif batch.record_count:
            items.append(("data", batch_spec(batch, offset), batch))
    aborted = sorted((a.first_offset, a.producer_id) for a in answer.aborted_transactions or ())
    return FetchedPart(items, next_offset, answer.high_watermark, answer.last_stable_offset,
                       answer.log_start_offset, aborted)


class TransactionTracker:
    """Which transactional batches were aborted: a producer's batches are pending until its next marker."""

    def __init__(self) -> None:
        self.pending: dict[int, list[Any]] = {}  # producer id -> the rows (or row lists) waiting for a marker

    def add(self, producer_id: int, rows: Any) -> None:
        self.pending.setdefault(producer_id, []).append(rows)

    def settle(self, producer_id: int) -> list[Any]:
        """The rows a marker of ``producer_id`` settles (the caller marks them committed or aborted)."""
        return self.pending.pop(producer_id, [])


class AbortedTransactions:
    """read_committed: which batches belong to an aborted transaction, as the Java consumer decides it: a
    producer is aborting from its aborted transaction's first offset until its ABORT marker."""

    def __init__(self, aborted: list[tuple[int, int]]) -> None:
        self.aborted = aborted  # sorted (first offset, producer id)
        self.next = 0
        self.aborting: set[int] = set()

    def is_aborted(self, batch: Any) -> bool:
        while self.next < len(self.aborted) and self.aborted[self.next][0] <= batch.last_offset:
            self.aborting.add(self.aborted[self.next][1])
            self.next += 1
        return batch.is_transactional and batch.producer_id in self.aborting

    def marker(self, producer_id: int, kind: str) -> None:
        if kind == "ABORT":
            self.aborting.discard(producer_id)

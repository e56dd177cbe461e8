"""The message filter: a substring or regular expression on key, value or headers, evaluated here over a
bounded range of a topic, never in the browser. A search is a job: it runs in the background, the page
polls its progress (records scanned of the range, matches so far) and may cancel it.

Speed comes from never making a Python object per record: each Fetch answer's batches are decoded by
the compiled record codec into Arrow columns (``protocol/records/arrow.py``) and matched with Arrow's
compute kernels; only matching rows become JSON. The next Fetch is in flight while one is matched.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..clients import TopicPartition
from ..protocol.records import arrow

from .api_messages import encode_bytes
from .partition_reader import READ_COMMITTED, AbortedTransactions, fetch_part

MAX_MATCHES = 1000
SEARCH_FETCH_BYTES = 8 << 20
PARTITIONS_AT_ONCE = 4
FIELDS = ("any", "key", "value", "header")


class Search:
    def __init__(self, console: Any, topic: str, ranges: dict[TopicPartition, tuple[int, int]], pattern: str,
                 *, regex: bool = False, field: str = "any", ignore_case: bool = False,
                 isolation: int = 0, max_matches: int = 500) -> None:
        if field not in FIELDS:
            raise ValueError(f"field must be one of {', '.join(FIELDS)}, not {field!r}")
        if regex:
            re.compile(pattern)  # a bad expression is the caller's error, said before the job starts
        self.id = uuid.uuid4().hex[:12]
        self.console = console
        self.topic = topic
        self.ranges = ranges  # partition -> [from, to) offsets
        self.pattern, self.regex, self.field, self.ignore_case = pattern, regex, field, ignore_case
        self.isolation = isolation
        self.max_matches = min(max_matches, MAX_MATCHES)
        self.total = sum(max(0, end - start) for start, end in ranges.values())
        self.scanned = 0
        self.matches: list[dict[str, Any]] = []
        self.state = "running"
        self.error: str | None = None
        self.started = time.monotonic()
        self.finished: float | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def progress(self, after: int = 0) -> dict[str, Any]:
        elapsed = (self.finished or time.monotonic()) - self.started
        return {"id": self.id, "state": self.state, "error": self.error, "scanned": self.scanned,
                "total": self.total, "matched": len(self.matches), "elapsed_s": round(elapsed, 3),
                "records_per_s": round(self.scanned / elapsed) if elapsed > 0 else None,
                "matches": self.matches[after:]}

    async def _run(self) -> None:
        try:
            gate = asyncio.Semaphore(PARTITIONS_AT_ONCE)

            async def one(tp: TopicPartition, start: int, end: int) -> None:
                async with gate:
                    await self._scan(tp, start, end)

            await asyncio.gather(*(one(tp, s, e) for tp, (s, e) in self.ranges.items() if e > s))
            self.state = "done" if len(self.matches) < self.max_matches else "match limit"
        except asyncio.CancelledError:
            self.state = "cancelled"
        except Exception as exc:  # noqa: BLE001 - reported to the page
            from .json_api import error_text
            self.state, self.error = "failed", error_text(exc)
        finally:
            self.finished = time.monotonic()

    async def _scan(self, tp: TopicPartition, offset: int, end: int) -> None:
        fetch = lambda at: asyncio.ensure_future(fetch_part(  # noqa: E731
            self.console.client, tp, at, isolation=self.isolation, max_bytes=SEARCH_FETCH_BYTES))
        pending = fetch(offset)
        while True:
            part = await pending
            if part.next_offset <= offset:
                break  # nothing more below the high watermark
            offset = part.next_offset
            pending = fetch(offset) if offset < end else None
            self._match_part(tp, part, end)
            if pending is None or len(self.matches) >= self.max_matches:
                if pending is not None:
                    pending.cancel()
                break

    def _match_part(self, tp: TopicPartition, part: Any, end: int) -> None:
        aborted = AbortedTransactions(part.aborted if self.isolation == READ_COMMITTED else [])
        specs = []
        for item in part.items:
            if item[0] == "marker":
                aborted.marker(item[1]["producer_id"], item[1]["marker"])
            elif not aborted.is_aborted(item[2]):
                specs.append(item[1])
        if not specs:
            return
        batch = arrow.decode_record_batch(specs, tp.topic, tp.partition)
        offsets = batch.column(4)
        in_range = pc.less(offsets, end)
        batch = batch.filter(in_range)
        self.scanned += batch.num_rows
        hits = batch.filter(self._mask(batch))
        for row in hits.to_pylist()[:self.max_matches - len(self.matches)]:
            self.matches.append({
                "partition": row["partition"], "offset": row["offset"],
                "timestamp": int(row["timestamp"].timestamp() * 1000), "key": encode_bytes(row["key"]),
                "value": encode_bytes(row["value"]),
                "headers": [[h["key"], encode_bytes(h["value"])] for h in row["headers"] or ()]})

    def _match(self, column: pa.Array) -> pa.Array:
        if self.regex:
            found = pc.match_substring_regex(column, self.pattern, ignore_case=self.ignore_case)
        else:
            found = pc.match_substring(column, self.pattern, ignore_case=self.ignore_case)
        return pc.fill_null(found, False)

    def _mask(self, batch: pa.RecordBatch) -> pa.Array:
        masks = []
        if self.field in ("any", "key"):
            masks.append(self._match(batch.column(0)))
        if self.field in ("any", "value"):
            masks.append(self._match(batch.column(1)))
        if self.field in ("any", "header"):
            headers = batch.column(7)
            flat = pc.list_flatten(headers)
            hit = pc.or_(self._match(flat.field("key").cast(pa.binary())), self._match(flat.field("value")))
            parents = pc.filter(pc.list_parent_indices(headers), hit)
            if len(parents):  # offsets are unique within a partition: the rows whose offset a hit has
                offsets = batch.column(4)
                masks.append(pc.is_in(offsets, value_set=pc.take(offsets, parents)))
        mask = masks[0] if masks else pa.array([False] * batch.num_rows)
        for other in masks[1:]:
            mask = pc.or_(mask, other)
        return mask


MAX_KEPT = 20


def register(console: Any, search: Search) -> None:
    """Keep the latest searches; an older finished one is forgotten."""
    console.searches[search.id] = search
    while len(console.searches) > MAX_KEPT:
        oldest = next(iter(console.searches))
        console.searches.pop(oldest).cancel()

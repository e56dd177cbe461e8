"""Messages: browse a topic or one partition from an offset, a timestamp, the start or the end (with
transaction markers and aborted records shown as such), and produce a record."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from aiohttp import web

from ..clients import ConsumerRecord, TopicPartition
from ..protocol.errors import for_code
from ..protocol.records import codec

from .cluster_reads import EARLIEST, LATEST, list_offsets
from .context import console_of
from .json_api import BadRequest, body, endpoint, integer, text
from .partition_reader import (
    READ_COMMITTED, READ_UNCOMMITTED, AbortedTransactions, TransactionTracker, fetch_part,
)

MAX_LIMIT = 1000
MAX_SHOWN_BYTES = 64 * 1024  # a key or value longer than this is cut (the page says so)
BROWSE_FETCH_BYTES = 256 * 1024
MAX_FETCHES = 64  # per partition and request: a range of only markers or aborted data ends here


def encode_bytes(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    return {"b64": base64.b64encode(data[:MAX_SHOWN_BYTES]).decode(), "size": len(data),
            "truncated": len(data) > MAX_SHOWN_BYTES}


def record_row(record: ConsumerRecord) -> dict[str, Any]:
    return {"type": "record", "partition": record.partition, "offset": record.offset,
            "timestamp": record.timestamp, "timestamp_type": "LogAppendTime" if record.timestamp_type else "CreateTime",
            "key": encode_bytes(record.key), "value": encode_bytes(record.value),
            "headers": [[k, encode_bytes(v)] for k, v in record.headers], "transaction": None}


async def partition_metadata(console: Any, topic: str) -> dict[TopicPartition, int]:
    """partition -> leader for every partition of ``topic`` (fresh metadata); an unknown topic raises."""
    metadata = await console.client.metadata([topic])
    info = metadata.topics.get(topic)
    if info is None or info.error_code:
        raise for_code(info.error_code if info else 3)(f"topic {topic}")
    return {TopicPartition(topic, p): part.leader for p, part in sorted(info.partitions.items())}


async def chosen_partitions(console: Any, topic: str, partition: Any) -> dict[TopicPartition, int]:
    """partition -> leader of the one partition asked for, or of all (``partition`` empty or "all")."""
    leaders = await partition_metadata(console, topic)
    if partition in (None, "", "all"):
        return leaders
    tp = TopicPartition(topic, integer(partition, "partition"))
    if tp not in leaders:
        raise BadRequest(f"{topic} has no partition {tp.partition}")
    return {tp: leaders[tp]}


async def start_offsets(console: Any, leaders: dict[TopicPartition, int], mode: str, value: Any,
                        per_partition: int) -> dict[TopicPartition, int]:
    """Where reading starts in each partition for ``mode``: start, end (the last ``per_partition``
    records), offset (``value``, not before the log start) or timestamp (``value`` in ms)."""
    earliest = await list_offsets(console.client, leaders, EARLIEST, leaders)
    if mode == "start":
        found = earliest
    elif mode == "end":
        latest = await list_offsets(console.client, leaders, LATEST, leaders)
        found = {tp: None if end is None else max(earliest[tp] or 0, end - per_partition)
                 for tp, end in latest.items()}
    elif mode == "offset":
        offset = integer(value, "offset")
        found = {tp: None if start is None else max(start, offset) for tp, start in earliest.items()}
    elif mode == "timestamp":
        by_time = await list_offsets(console.client, leaders, integer(value, "timestamp"), leaders)
        latest = await list_offsets(console.client, leaders, LATEST, leaders)
        found = {tp: latest[tp] if o is None or o < 0 else o for tp, o in by_time.items()}
    else:
        raise BadRequest(f"from must be start, end, offset or timestamp, not {mode!r}")
    missing = [f"{tp.topic}-{tp.partition}" for tp, o in found.items() if o is None]
    if missing and len(missing) == len(found):
        raise for_code(5)(f"no leader answered for {', '.join(missing[:5])}")
    return {tp: o for tp, o in found.items() if o is not None}


async def read_rows(console: Any, tp: TopicPartition, offset: int, limit: int, isolation: int) -> dict[str, Any]:
    """Up to ``limit`` rows (records and markers) of ``tp`` from ``offset``, and where reading stopped."""
    rows: list[dict[str, Any]] = []
    tracker = TransactionTracker()
    end = None
    for _ in range(MAX_FETCHES):
        part = await fetch_part(console.client, tp, offset, isolation=isolation, max_bytes=BROWSE_FETCH_BYTES)
        end = part.last_stable_offset if isolation == READ_COMMITTED and part.last_stable_offset >= 0 \
            else part.high_watermark
        aborted = AbortedTransactions(part.aborted)
        for item in part.items:
            if len(rows) >= limit:
                break
            if item[0] == "marker":
                marker = item[1]
                for batch_rows in tracker.settle(marker["producer_id"]):
                    for row in batch_rows:
                        row["transaction"] = "aborted" if marker["marker"] == "ABORT" else "committed"
                aborted.marker(marker["producer_id"], marker["marker"])
                rows.append({"type": "marker", "partition": tp.partition, **marker})
                continue
            _, spec, batch = item
            if isolation == READ_COMMITTED and aborted.is_aborted(batch):
                continue  # read_committed: an aborted transaction's records are not shown
            records = codec.decode_consumer_records(*spec[:4], spec[5], spec[6], tp.topic, tp.partition, spec[4],
                                                    ConsumerRecord, None, None)
            batch_rows = [record_row(r) for r in records[:limit - len(rows)]]
            if batch.is_transactional:
                state = "committed" if isolation == READ_COMMITTED else "open"
                for row in batch_rows:
                    row["transaction"] = state
                tracker.add(batch.producer_id, batch_rows)
            rows.extend(batch_rows)
        offset = part.next_offset
        if len(rows) >= limit or offset >= end or not part.items:
            break
    return {"rows": rows, "next_offset": rows[-1]["offset"] + 1 if rows else offset, "end": end}


@endpoint
async def browse(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    topic = request.match_info["name"]
    q = request.query
    limit = min(integer(q.get("limit"), "limit", 100), MAX_LIMIT)
    isolation = READ_COMMITTED if q.get("isolation") == "read_committed" else READ_UNCOMMITTED
    mode = q.get("from", "start")
    leaders = await chosen_partitions(console, topic, q.get("partition"))
    per_partition = limit if len(leaders) == 1 or mode != "end" else max(1, -(-limit // len(leaders)))
    starts = await start_offsets(console, leaders, mode, q.get("value"), per_partition)
    parts = await asyncio.gather(*(read_rows(console, tp, offset, limit, isolation) for tp, offset in starts.items()))
    rows = [row for part in parts for row in part["rows"]]
    if len(starts) > 1:
        rows.sort(key=lambda r: (r["timestamp"], r["partition"], r["offset"]))
        rows = rows[-limit:] if mode == "end" else rows[:limit]
    return {"topic": topic, "rows": rows, "isolation": "read_committed" if isolation else "read_uncommitted",
            "partitions": {str(tp.partition): {"from": starts[tp], "next": part["next_offset"], "end": part["end"]}
                           for tp, part in zip(starts, parts)}}


@endpoint
async def produce(request: web.Request) -> dict[str, Any]:
    """``{"key": str|null, "value": str|null, "headers": [[key, value]], "partition": int|null}``."""
    console = console_of(request)
    topic = text(request.match_info["name"], "topic")
    data = await body(request)
    partition = data.get("partition")
    headers = [(str(k), None if v is None else str(v).encode()) for k, v in data.get("headers") or []]
    key, value = data.get("key"), data.get("value")
    producer = await console.producer()
    metadata = await producer.send_and_wait(
        topic, value=None if value is None else str(value).encode(), key=None if key is None else str(key).encode(),
        partition=None if partition in (None, "") else integer(partition, "partition"), headers=headers)
    return {"topic": metadata.topic, "partition": metadata.partition, "offset": metadata.offset}


ROUTES = [  # (method, path, handler): server.py adds them
    ("GET", "/api/topics/{name}/messages", browse),
    ("POST", "/api/topics/{name}/messages", produce),
]

"""The message filter's endpoints: start a search over a bounded range, poll its progress, cancel it."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from .api_messages import chosen_partitions, start_offsets
from .cluster_reads import LATEST, list_offsets
from .context import console_of
from .json_api import BadRequest, body, endpoint, integer
from .partition_reader import READ_COMMITTED, READ_UNCOMMITTED
from .search import Search, register

DEFAULT_MAX_RECORDS = 1_000_000
MAX_RECORDS = 50_000_000


@endpoint
async def start_search(request: web.Request) -> dict[str, Any]:
    """``{"pattern", "regex", "field": any|key|value|header, "ignore_case", "partition", "from", "value",
    "max_records", "max_matches", "isolation"}``: the range is at most ``max_records`` records, split
    evenly over the partitions, starting where browsing from ``from`` would."""
    console = console_of(request)
    topic = request.match_info["name"]
    data = await body(request)
    pattern = data.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise BadRequest("pattern is required")
    leaders = await chosen_partitions(console, topic, data.get("partition"))
    budget = min(integer(data.get("max_records"), "max_records", DEFAULT_MAX_RECORDS), MAX_RECORDS)
    per_partition = max(1, -(-budget // len(leaders)))
    starts = await start_offsets(console, leaders, data.get("from") or "start", data.get("value"), per_partition)
    ends = await list_offsets(console.client, starts, LATEST, leaders)
    ranges = {tp: (start, min(ends[tp], start + per_partition)) for tp, start in starts.items()
              if ends.get(tp) is not None}
    try:
        search = Search(console, topic, ranges, pattern, regex=bool(data.get("regex")),
                        field=data.get("field") or "any", ignore_case=bool(data.get("ignore_case")),
                        isolation=READ_COMMITTED if data.get("isolation") == "read_committed" else READ_UNCOMMITTED,
                        max_matches=integer(data.get("max_matches"), "max_matches", 500))
    except (ValueError, re.error) as exc:  # an unknown field or a bad regular expression
        raise BadRequest(f"bad filter: {exc}") from None
    register(console, search)
    search.start()
    return search.progress()


@endpoint
async def search_progress(request: web.Request) -> dict[str, Any]:
    search = console_of(request).searches.get(request.match_info["id"])
    if search is None:
        raise web.HTTPNotFound(text='{"error": "no such search (finished long ago?)"}', content_type="application/json")
    return search.progress(integer(request.query.get("after"), "after", 0))


@endpoint
async def cancel_search(request: web.Request) -> dict[str, Any]:
    search = console_of(request).searches.get(request.match_info["id"])
    if search is not None:
        search.cancel()
        await search.wait()
    return {"cancelled": request.match_info["id"]}


ROUTES = [  # (method, path, handler): server.py adds them
    ("POST", "/api/topics/{name}/search", start_search),
    ("GET", "/api/searches/{id}", search_progress),
    ("DELETE", "/api/searches/{id}", cancel_search),
]

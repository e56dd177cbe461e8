"""The web console's three timing targets (issue 31), against a real one-broker cluster:

    python benchmarks/bench_console.py [--partitions 10000] [--records 2000000]

- the topics page (GET /api/topics) of a cluster with ``--partitions`` partitions (target < 500 ms; it answers
  from a snapshot refreshed in the background, whose own time is printed too),
- the first 100 messages from an offset in the middle of a partition (target < 200 ms),
- the message filter's scan rate over ``--records`` records (target >= 200,000 records/s).

The console runs in this process (aiohttp on a free port) and is asked over HTTP, as a browser would.
Each timing is the median of several runs after one warm-up. Figures only, nothing asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import aiohttp

from odradek.clients import AIOAdmin, AIOProducer, NewTopic
from odradek.console.context import Console
from odradek.console.server import serve
from odradek.console.topic_list import read_topic_list
from odradek.tools.local_cluster import LocalCluster

SCAN_TOPIC = "scan"


async def timed(session: aiohttp.ClientSession, method: str, url: str, runs: int, **kwargs) -> tuple[float, dict]:
    """Median milliseconds of ``runs`` requests (after a warm-up) and the last answer."""
    times, data = [], {}
    for i in range(runs + 1):
        started = time.perf_counter()
        async with session.request(method, url, **kwargs) as response:
            data = await response.json()
            response.raise_for_status()
        if i:
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), data


async def setup(bootstrap: str, partitions: int, records: int) -> None:
    async with AIOAdmin(bootstrap, request_timeout_ms=120000) as admin:
        per_topic = 100
        topics = [NewTopic(f"bench-{i:04d}", per_topic, 1) for i in range(partitions // per_topic)]
        for start in range(0, len(topics), 10):
            await admin.create_topics(topics[start:start + 10], timeout_ms=120000)
        await admin.create_topics([NewTopic(SCAN_TOPIC, 4, 1)])
    producer = AIOProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=256 * 1024, acks=1)
    await producer.start()
    chunk = 50_000
    futures = []
    for start in range(0, records, chunk):
        values = [b'{"user": %d, "event": "click", "page": "/products/%d"}' % (n, n % 977)
                  for n in range(start, min(records, start + chunk))]
        keys = [b"user-%d" % (n % 5000) for n in range(start, min(records, start + chunk))]
        futures.append(await producer.send_batch(SCAN_TOPIC, values, keys=keys))
    await asyncio.gather(*futures)
    await producer.close()


async def bench(bootstrap: str, args: argparse.Namespace) -> None:
    print(f"creating {args.partitions} partitions and producing {args.records:,} records ...", flush=True)
    started = time.perf_counter()
    await setup(bootstrap, args.partitions, args.records)
    print(f"  set up in {time.perf_counter() - started:.1f} s", flush=True)
    console = Console(bootstrap, lag_interval_s=3600)
    runner, port = await serve(console, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
            ms, data = await timed(session, "GET", base + "/api/topics", 5)
            count = sum(t["partitions"] for t in data["topics"])
            print(f"topics page, {len(data['topics'])} topics / {count} partitions: {ms:.0f} ms (target < 500 ms)")
            refreshes = []
            for _ in range(3):
                started = time.perf_counter()
                await read_topic_list(console)
                refreshes.append((time.perf_counter() - started) * 1000)
            print(f"  (the page answers from a snapshot; taking one, in the background every 5 s: "
                  f"{statistics.median(refreshes):.0f} ms)")
            middle = args.records // 8
            ms, data = await timed(session, "GET", f"{base}/api/topics/{SCAN_TOPIC}/messages?partition=0&from=offset"
                                                  f"&value={middle}&limit=100", 10)
            print(f"first 100 messages from offset {middle}: {ms:.1f} ms, {len(data['rows'])} rows (target < 200 ms)")
            for pattern, field in (("/products/976", "value"), ("user-4999", "key")):
                async with session.post(f"{base}/api/topics/{SCAN_TOPIC}/search", json={
                        "pattern": pattern, "field": field, "max_records": args.records, "max_matches": 1000}) as r:
                    job = await r.json()
                while True:
                    async with session.get(f"{base}/api/searches/{job['id']}?after=1000000") as r:
                        progress = await r.json()
                    if progress["state"] != "running":
                        break
                    await asyncio.sleep(0.05)
                print(f"filter {field} ~ {pattern!r}: {progress['scanned']:,} records in {progress['elapsed_s']:.2f} s "
                      f"= {progress['records_per_s']:,} records/s, {progress['matched']} matches, {progress['state']} "
                      f"(target >= 200,000 records/s)")
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-console-") as data_dir:
        cluster = LocalCluster(data_dir, 1, broker_overrides={"num.partitions": 1})
        with cluster:
            asyncio.run(bench(cluster.bootstrap_servers, args))


if __name__ == "__main__":
    main()

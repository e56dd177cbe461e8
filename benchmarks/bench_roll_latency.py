"""Produce latency while segments roll and retention deletes them (issue 13; figures printed, nothing asserted).

    python benchmarks/bench_roll_latency.py [--seconds 20] [--rate 400] [--records 4] [--small-segment-bytes N]
    python benchmarks/bench_roll_latency.py --compare /path/to/other/checkout/.venv/bin/python

One real ZooKeeper and one `odradek` broker process (LocalCluster, `log.retention.check.interval.ms` 1000),
its log dirs on disk (`--data-dir`, default a temporary folder: fsync must cost what it costs). Two topics
of one partition: `large-segments` keeps Kafka's default segment.bytes (1 GiB: nothing rolls), and
`small-segments` rolls every `--small-segment-bytes` (512 KiB) with retention.bytes of four segments, so
the broker rolls a segment (an fsync of the one it leaves) several times a second and deletes old ones
every second.

The same sustained load runs on each, side by side in one run: `--rate` Produce requests per second
(acks=1, `--records` 1 KiB records in one batch each) spread over 8 connections, each request sent at its
scheduled time (open loop) or as soon as its connection's previous answer arrived. Phases: the large
topic alone, the small topic alone, then both at once, where the large topic's figures show what the
small topic's rolls cost everyone else on the broker's event loop. Latency is from send to answer, in ms.

`--compare PYTHON` runs the same phases first against a broker started with another interpreter (that of
another checkout's virtualenv, e.g. the commit before a change), then against this checkout's, each with
a cluster of its own, so that before and after are measured in one run.

First, the log alone in this process (`--log-appends`, 0 to skip): appends of the same batches paced as
above on a 512 KiB-segment log with retention every second, its roll flushes run inline on the appending
thread (what a roll cost the event loop before) and then on the log scheduler's thread: the time each
append took on the appending thread, and that of the appends that rolled.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import uvloop

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.scheduler import INLINE, Scheduler
from odradek.tools.local_cluster import LocalCluster
from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SyncSimpleClient, build_batch
from odradek.protocol.messages import ProduceRequest

LARGE, SMALL = "large-segments", "small-segments"
CONNECTIONS = 8
RECORD = b"v" * 1024


def produce_request(topic: str, records: int) -> ProduceRequest:
    batch = build_batch([(None, RECORD)] * records)
    return ProduceRequest(acks=1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])


async def load(port: int, topic: str, rate: float, records: int, seconds: float) -> list[float]:
    """Latencies (ms) of ``rate`` requests/s for ``seconds``, over CONNECTIONS connections."""
    request = produce_request(topic, records)
    connections = [await BrokerConnection.connect("127.0.0.1", port) for _ in range(CONNECTIONS)]
    latencies: list[float] = []
    interval = CONNECTIONS / rate
    start = time.perf_counter() + 0.1

    async def worker(i: int, conn: BrokerConnection) -> None:
        due = start + i * interval / CONNECTIONS
        while due < start + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            sent = time.perf_counter()
            response = await conn.send(request, timeout=60)
            latencies.append((time.perf_counter() - sent) * 1000)
            code = response.responses[0].partition_responses[0].error_code
            if code:
                raise RuntimeError(f"produce to {topic} failed with error {code}")
            due += interval

    try:
        await asyncio.gather(*(worker(i, c) for i, c in enumerate(connections)))
    finally:
        await asyncio.gather(*(c.close() for c in connections))
    return latencies


PERCENTILES = (("p50", 499), ("p90", 899), ("p99", 989), ("p99.9", 998))
PHASES = ((f"{LARGE} alone", (LARGE,)), (f"{SMALL} alone", (SMALL,)), ("both at once", (LARGE, SMALL)))


def figures(latencies: list[float]) -> dict[str, float]:
    q = statistics.quantiles(latencies, n=1000, method="inclusive")
    return {**{name: q[i] for name, i in PERCENTILES}, "max": max(latencies)}


def start_cluster(python: str | None, label: str, args: argparse.Namespace, root: Path) -> LocalCluster:
    cluster = LocalCluster(root / label, 1, python=python,
                           broker_overrides={"log.retention.check.interval.ms": "1000"})
    cluster.start(90)
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        small = {"segment.bytes": str(args.small_segment_bytes),
                 "retention.bytes": str(4 * args.small_segment_bytes)}
        for topic, configs in ((LARGE, {}), (SMALL, small)):
            assert client.create_topics({topic: (1, 1)}, configs=configs)[topic] == 0
            client.wait_for_leaders(topic)
    return cluster


async def run_phases(port: int, args: argparse.Namespace) -> dict[tuple[str, str], dict[str, float]]:
    out = {}
    for phase, topics in PHASES:
        results = await asyncio.gather(*(load(port, t, args.rate, args.records, args.seconds) for t in topics))
        for topic, latencies in zip(topics, results):
            out[(phase, topic)] = figures(latencies)
    return out


def log_appends(root: Path, scheduler, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """(ms per append that did not roll, ms per append that rolled) on this thread."""
    log = Log(str(root / f"log-{id(scheduler)}" / "t-0"), LogConfig(segment_bytes=args.small_segment_bytes,
                                                                      retention_bytes=4 * args.small_segment_bytes),
              scheduler=scheduler)
    stop = threading.Event()

    def retention() -> None:  # the broker's log-retention job, every second
        while not stop.wait(1.0):
            log.high_watermark = log.log_end_offset
            log.delete_old_segments()
    retainer = threading.Thread(target=retention)
    retainer.start()
    batch = build_batch([(None, RECORD)] * args.records)
    plain, rolled = [], []
    try:
        for _ in range(args.log_appends):
            started = time.perf_counter()
            info = log.append_as_leader(bytearray(batch), 0)
            (rolled if info.rolled else plain).append((time.perf_counter() - started) * 1000)
            time.sleep(1 / args.rate)
    finally:
        stop.set()
        retainer.join()
        log.close()
    return plain, rolled


def log_only(root: Path, args: argparse.Namespace) -> None:
    print(f"the log alone, {args.log_appends} appends at {args.rate:g}/s: ms on the appending thread")
    scheduler = Scheduler(2)
    try:
        for label, runs_on in (("roll flush inline", INLINE), ("roll flush on the scheduler", scheduler)):
            plain, rolled = log_appends(root, runs_on, args)
            p = figures(plain)
            print(f"  {label:<28} appends p50 {p['p50']:5.2f}  p99 {p['p99']:6.2f}  p99.9 {p['p99.9']:6.2f}  "
                  f"max {p['max']:6.1f} | {len(rolled)} rolls: median {statistics.median(rolled):6.2f}  "
                  f"max {max(rolled):6.1f}")
    finally:
        scheduler.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--rate", type=float, default=400.0, help="Produce requests per second (per topic)")
    parser.add_argument("--records", type=int, default=4, help="1 KiB records per request")
    parser.add_argument("--small-segment-bytes", type=int, default=512 * 1024)
    parser.add_argument("--rounds", type=int, default=3, help="the phases are run this many times (medians shown)")
    parser.add_argument("--data-dir", help="where the brokers' logs go (default: a temporary folder)")
    parser.add_argument("--compare", metavar="PYTHON", help="also run a broker with this interpreter ('before')")
    parser.add_argument("--log-appends", type=int, default=3000, help="appends of the log-alone part (0: skip it)")
    parser.add_argument("--brokers-too", action=argparse.BooleanOptionalAction, default=True,
                        help="run the broker phases (--no-brokers-too: the log alone)")
    args = parser.parse_args()
    root = Path(args.data_dir or tempfile.mkdtemp(prefix="odradek-bench-roll-"))
    request_bytes = args.records * (len(RECORD) + 10) + 61
    rolls_per_s = args.rate * request_bytes / args.small_segment_bytes
    print(f"{args.rate:g} Produce requests/s of {args.records} x 1 KiB records (acks=1), {args.seconds:g} s a "
          f"phase, {CONNECTIONS} connections; {SMALL}: segment.bytes {args.small_segment_bytes}, about "
          f"{rolls_per_s:.1f} rolls/s, retention.bytes {4 * args.small_segment_bytes}; logs in {root}")
    if args.log_appends:
        log_only(root, args)
    if not args.brokers_too:
        shutil.rmtree(root, ignore_errors=True)
        return 0
    builds = ([("before", args.compare)] if args.compare else []) + [("this checkout", None)]
    clusters: dict[str, LocalCluster] = {}
    rounds: dict[str, list[dict]] = {label: [] for label, _ in builds}
    try:
        for label, python in builds:
            clusters[label] = start_cluster(python, label.replace(" ", "-"), args, root)
            print(f"{label}: {python or sys.executable} -m odradek.broker.server")
        for round_ in range(args.rounds):
            for label, _ in (builds if round_ % 2 == 0 else builds[::-1]):
                rounds[label].append(uvloop.run(run_phases(clusters[label].broker_ports[0], args)))
    finally:
        for cluster in clusters.values():
            cluster.stop(30)
        if not args.data_dir:
            shutil.rmtree(root, ignore_errors=True)
    columns = [name for name, _ in PERCENTILES] + ["max"]
    print(f"latency in ms from send to answer, median of {args.rounds} rounds")
    print(f"  {'build':<14} {'phase':<22} {'topic':<15} " + " ".join(f"{c:>7}" for c in columns))
    for label, _ in builds:
        for phase, topics in PHASES:
            for topic in topics:
                values = [statistics.median(r[(phase, topic)][c] for r in rounds[label]) for c in columns]
                print(f"  {label:<14} {phase:<22} {topic:<15} " + " ".join(f"{v:7.1f}" for v in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())

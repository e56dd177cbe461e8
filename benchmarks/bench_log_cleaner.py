"""The log cleaner: its throughput on one core, and what it costs the broker's produce latency.

    python benchmarks/bench_log_cleaner.py            # 1M records for the throughput, 1M in the broker runs
    python benchmarks/bench_log_cleaner.py --quick    # 200k records each
    python benchmarks/bench_log_cleaner.py --skip-broker    # (or --skip-throughput) one half only

Throughput: a Log of 100-byte records (key + value, batches of 100 as a producer writes them) over a key
space of 10% of the records, written in a temporary folder; one Cleaner cleans it in this process, on one
core, with the broker's default cleaner settings. Prints MB/s and records/s of the whole cleaning, of the
offset-map pass and of the copy pass, the CPU time, and the log's size before and after.

Produce latency: a real broker (LocalCluster: ZooKeeper and one `odradek` process) per isolation mode
(odradek.log.cleaner.isolation: `process`, the default, and `thread`). A probe sends one 100-byte record
every 5 ms (acks=1, one request in flight, our SimpleClient) to a topic of its own and times each answer.
Each round fills a fresh delete-policy topic with the same records, takes 6 s of idle samples, then
switches the topic to cleanup.policy=compact and samples while the cleaner rewrites it. Prints p50, p99
and max of the idle and cleaning samples of all rounds, the p99 ratio (the goal: cleaning <= 1.5x idle),
a cleaning's duration and the log's size before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.cleaner.cleaner import Cleaner
from odradek.broker.log.cleaner.config import CleanerConfig
from odradek.broker.log.cleaner.log_cleaner import make_task, swap_in
from odradek.broker.log.cleaner.manager import LogCleanerManager
from odradek.tools.local_cluster import LocalCluster
from odradek.protocol.records import RecordBatchBuilder

RECORD_BYTES = 100
PER_BATCH = 100


def record_batches(records: int, seed: int = 1):
    """Batches of 100-byte records (a 12-byte key, the value filling up to 100 bytes of key + value) over
    records / 10 keys drawn at random: about 10% of the keys' latest values survive a cleaning."""
    draw = random.Random(seed).randrange
    keys = max(records // 10, 1)
    now = int(time.time() * 1000)
    for first in range(0, records, PER_BATCH):
        builder = RecordBatchBuilder()
        for i in range(first, min(first + PER_BATCH, records)):
            key = b"key-%08d" % draw(keys)
            builder.append(now, key, (b"%d|" % i).ljust(RECORD_BYTES - len(key), b"v"))
        yield bytearray(builder.build())


class _InlineControl:
    def __init__(self, manager, cleanable, segments) -> None:
        self.manager, self.cleanable, self.segments = manager, cleanable, segments

    def check_done(self) -> None:
        pass

    def throttle(self, nbytes: int) -> None:
        pass

    def swap(self, group) -> bool:
        return swap_in(self.manager, self.cleanable, self.segments, group)


def measure_throughput(records: int, workdir: Path) -> None:
    log = Log(str(workdir / "bench-0"), LogConfig(cleanup_policy="compact", segment_bytes=16 * 1024 * 1024))
    for batch in record_batches(records):
        log.append_as_leader(batch, 0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    before = log.size
    manager = LogCleanerManager([str(workdir)], lambda: {("bench", 0): log})
    cleanable = manager.grab_filthiest_compacted_log(int(time.time() * 1000))
    task, segments = make_task(cleanable)
    cleaner = Cleaner(CleanerConfig().worker_settings(), _InlineControl(manager, cleanable, segments))
    cpu, began = time.process_time(), time.perf_counter()
    _, stats = cleaner.clean(task)
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    map_secs = stats.elapsed_index_secs
    copy_secs = elapsed - map_secs
    mb = stats.bytes_read / 1e6
    print(f"\nCleaner throughput, one core: {records:,} records of {RECORD_BYTES} B (key + value), "
          f"{records // 10:,} keys, batches of {PER_BATCH}")
    print(f"  whole cleaning  {elapsed:6.2f} s  {mb / elapsed:7.1f} MB/s  {stats.messages_read / elapsed:10,.0f} "
          f"records/s")
    print(f"  per CPU second  {cpu:6.2f} s  {mb / cpu:7.1f} MB/s  {stats.messages_read / cpu:10,.0f} records/s"
          f"  (the figure for one core of its own; the wall clock above waits for a shared one)")
    print(f"  offset map      {map_secs:6.2f} s  {stats.map_bytes_read / 1e6 / max(map_secs, 1e-9):7.1f} MB/s  "
          f"{stats.map_messages_read / max(map_secs, 1e-9):10,.0f} records/s")
    print(f"  copy            {copy_secs:6.2f} s  {mb / max(copy_secs, 1e-9):7.1f} MB/s  "
          f"{stats.messages_read / max(copy_secs, 1e-9):10,.0f} records/s")
    print(f"  disk size       {before / 1e6:8.1f} MB before, {log.size / 1e6:8.1f} MB after "
          f"({stats.messages_written:,} records kept, {100 * log.size / before:.1f}%)")
    log.close()


# ------------------------------------------------------------------------------------------ broker runs

class LatencyProbe(threading.Thread):
    """One record every ``interval`` seconds, each request waiting for its answer; latencies in ms."""

    def __init__(self, client, topic: str, interval: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.client, self.topic, self.interval = client, topic, interval
        self.samples: list[tuple[float, float]] = []  # (monotonic time sent, latency ms)
        self._stopping = threading.Event()

    def run(self) -> None:
        value = b"p" * RECORD_BYTES
        next_at = time.monotonic()
        while not self._stopping.is_set():
            sent = time.monotonic()
            result = self.client.produce(self.topic, 0, [(None, value)], acks=1)
            if result.error_code == 0:
                self.samples.append((sent, (time.monotonic() - sent) * 1000))
            next_at += self.interval
            self._stopping.wait(max(0.0, next_at - time.monotonic()))

    def window(self, start: float, end: float) -> list[float]:
        return [ms for at, ms in self.samples if start <= at < end]

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), p99, ordered[-1]


def cleaner_checkpoint(log_dir: Path, topic: str) -> int:
    path = log_dir / "cleaner-offset-checkpoint"
    if not path.exists():
        return -1
    for line in path.read_text().splitlines()[2:]:
        name, _, offset = line.split()
        if name == topic:
            return int(offset)
    return -1


def fill(client, topic: str, records: int) -> int:
    """A delete-policy topic filled with the benchmark's records, its last segment closed; the end offset."""
    assert client.create_topics({topic: (1, 1)}, configs={topic: {
        "segment.bytes": str(16 * 1024 * 1024), "min.cleanable.dirty.ratio": "0.01"}}) == {topic: 0}
    client.wait_for_leaders(topic)
    for batch in record_batches(records):
        assert client.produce(topic, 0, bytes(batch), acks=1).error_code == 0
    # one record stamped a week ahead closes the last segment (segment.ms goes by record time)
    sentinel = int(time.time() * 1000) + 8 * 24 * 3_600_000
    return client.produce(topic, 0, [(b"~end", b"x", None, sentinel)], acks=1).base_offset


def broker_run(isolation: str, records: int, rounds: int, workdir: Path) -> dict:
    cluster = LocalCluster(workdir / f"cluster-{isolation}", 1, broker_overrides={
        "odradek.log.cleaner.isolation": isolation, "log.cleaner.backoff.ms": "100",
        "zookeeper.session.timeout.ms": "6000"})
    cluster.start(120)
    idle: list[float] = []
    cleaning: list[float] = []
    seconds, sizes = [], []
    try:
        with cluster.client() as client:
            assert client.create_topics({"probe": (1, 1)}) == {"probe": 0}
            client.wait_for_leaders("probe")
            log_dir = Path(cluster.brokers[0].log_dirs)
            probe = LatencyProbe(cluster.client(), "probe")
            probe.start()
            for round_ in range(rounds):
                topic = f"dirty-{round_}"
                end = fill(client, topic, records)
                size_before = sum(p.stat().st_size for p in (log_dir / f"{topic}-0").glob("*.log"))
                os.sync()  # the fill's dirty pages written back now, not in the middle of a window
                time.sleep(1.0)
                idle_start = time.monotonic()
                time.sleep(6.0)
                idle += probe.window(idle_start, time.monotonic())
                _compact(cluster, topic)
                began = time.monotonic()
                while cleaner_checkpoint(log_dir, topic) < end:
                    time.sleep(0.05)
                cleaning += probe.window(began, time.monotonic())
                seconds.append(time.monotonic() - began)
                sizes.append((size_before, sum(p.stat().st_size for p in (log_dir / f"{topic}-0").glob("*.log"))))
            probe.stop()
        return {"idle": percentiles(idle), "cleaning": percentiles(cleaning), "samples": len(cleaning),
                "seconds": statistics.mean(seconds), "size": sizes[-1]}
    finally:
        cluster.stop()


def _compact(cluster: LocalCluster, topic: str) -> None:
    from odradek.clients import Admin
    from odradek.clients.admin.client import AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigResourceType
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.incremental_alter_configs({ConfigResource(ConfigResourceType.TOPIC, topic): [
            AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.SET)]})


def measure_latency(records: int, rounds: int, workdir: Path, modes: list[str]) -> None:
    results = {mode: broker_run(mode, records, rounds, workdir) for mode in modes}
    print(f"\nProduce latency of a probe (1 record / 5 ms, acks=1) while the broker cleans {records:,} records "
          f"({rounds} rounds: 6 s idle, then the cleaning)")
    print("  isolation  window     p50 ms   p99 ms   max ms   p99 / idle p99")
    for mode, r in results.items():
        idle_p99 = r["idle"][1]
        for window in ("idle", "cleaning"):
            p50, p99, top = r[window]
            print(f"  {mode:9}  {window:9} {p50:8.2f} {p99:8.2f} {top:8.2f}   {p99 / idle_p99:6.2f}x")
        before, after = r["size"]
        print(f"  {mode:9}  a cleaning took {r['seconds']:.1f} s ({r['samples']} probe samples in all); "
              f"log {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k records instead of 1M")
    parser.add_argument("--records", type=int, help="records in the throughput log and in the broker runs")
    parser.add_argument("--isolation", choices=("process", "thread", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=3, help="cleanings per isolation mode (fresh topics)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-broker", action="store_true")
    args = parser.parse_args(argv)
    records = args.records or (200_000 if args.quick else 1_000_000)
    workdir = Path(tempfile.mkdtemp(prefix="bench-cleaner-"))
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; work dir {workdir}")
    try:
        if not args.skip_throughput:
            measure_throughput(records, workdir)
        if not args.skip_broker:
            measure_latency(records, args.rounds, workdir,
                            ["process", "thread"] if args.isolation == "both" else [args.isolation])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

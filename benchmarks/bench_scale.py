"""Many partitions: creation, controller failover, controlled shutdown, restarts, memory, descriptors and produce
throughput on a 3-broker cluster (issue 18; figures printed, nothing asserted).

    python benchmarks/bench_scale.py                        # 1,000 / 3,000 / 10,000 / 30,000 partitions, 1 round
    python benchmarks/bench_scale.py --points 1000,3000 --rounds 3
    python benchmarks/bench_scale.py --points 10000 --profile /tmp/prof   # py-spy on the brokers during each step
    python benchmarks/bench_scale.py --nofile 20000        # the brokers' RLIMIT_NOFILE (soft and hard)

Each point is a fresh LocalCluster: a real ZooKeeper and three `odradek` broker processes with
zookeeper.session.timeout.ms 6000 (as the issue's measurements), topics of 100 partitions with replication
factor 3 (so every broker holds a replica of every partition). In order:

1. create: CreateTopics (timeout 0, 20 topics a request, the requests one after another) until every
   broker's Metadata names a live leader for every partition; then until every ISR is full.
2. memory and descriptors: VmRSS and the number of entries in /proc/<pid>/fd of each broker.
3. produce: a confluent-kafka producer in a process of its own writes ``--records`` 100-byte records,
   acks=all, linger.ms 5, round-robin over the topics (librdkafka spreads them over each topic's
   partitions), i.e. over every partition of the cluster.
4. controller SIGKILL: the controller is killed; the script watches /controller in ZooKeeper (kazoo) and
   polls a survivor's Metadata until every partition the dead broker led has a live leader. "failover"
   is kill -> done; "work" is new /controller -> done, the time the new controller takes once the dead
   session expired (Kafka 1.1's 14 s for 100,000 partitions).
5. restart after SIGKILL of that broker: "up" when every broker's Metadata lists it (its logs recovered,
   registered), "isr" when every ISR is full again.
6. preferred election of every partition (ElectLeaders), timed until the controller answers.
7. controlled shutdown (SIGTERM) of the non-controller broker leading the most: "cs" is the broker's own
   log line (request to the controller until it answered that nothing is left); "moved" is SIGTERM until
   a survivor's Metadata shows none of its partitions led by it; "exit" until the process ended.
8. restart after that clean shutdown: "up" and "isr" as in 5.

``--profile DIR`` runs ``py-spy record`` (raw collapsed stacks, 50 Hz, every thread) on the brokers
during steps 1, 3, 4 and 7 and prints, per step, the functions where the busiest broker spent the most samples.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_vs_tansu import format_table, run_json_process
from odradek.tools.local_cluster import LocalCluster
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.messages import CreateTopicsRequest, ElectLeadersRequest

BROKERS = 3
REPLICATION = 3
TOPIC_PARTITIONS = 100
SESSION_TIMEOUT_MS = 6000
TOPICS_PER_REQUEST = 20
BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "auto.leader.rebalance.enable": "false",  # step 7 wants the leadership left as it is
                    "unclean.leader.election.enable": "false"}
POLL_S = 0.25


def poll_interval(partitions: int) -> float:
    """Between two Metadata polls: each costs a broker ~10 µs per partition, which the figures should not pay
    for; the resolution of a figure is about this much."""
    return max(POLL_S, partitions / 40000)

COLUMNS = (("create_s", "create s"), ("isr_full_s", "ISR full s"), ("rss_mb", "RSS MB/broker"),
           ("fds", "fds/broker"), ("produce_rec_s", "produce rec/s"), ("failover_s", "ctrl kill s"),
           ("failover_work_s", "ctrl work s"), ("sigkill_up_s", "SIGKILL restart up s"),
           ("sigkill_isr_s", "… ISR s"), ("elect_s", "pref. elect s"), ("led", "led"),
           ("cs_s", "ctrl shutdown s"), ("cs_moved_s", "moved s"), ("cs_exit_s", "exit s"),
           ("clean_up_s", "clean restart up s"), ("clean_isr_s", "… ISR s"))


# ------------------------------------------------------------------------------------------------ client

def run_producer(spec: dict) -> dict:
    """The produce step, in a process of its own (``--client``)."""
    from confluent_kafka import Producer
    failures: list = []
    producer = Producer({"bootstrap.servers": spec["bootstrap"], "acks": "all", "linger.ms": 5,
                         "enable.idempotence": False, "delivery.report.only.error": True,
                         "message.timeout.ms": 300000, "log_level": 3,
                         "on_delivery": lambda err, msg: failures.append(str(err)) if err else None})
    topics, value = spec["topics"], b"v" * spec["size"]
    for topic in topics:  # warm-up: metadata and connections outside the timed window
        producer.produce(topic, value)
    producer.flush(120)
    began = time.perf_counter()
    produce, poll = producer.produce, producer.poll
    for i in range(spec["count"]):
        while True:
            try:
                produce(topics[i % len(topics)], value)
                break
            except BufferError:
                poll(0.005)
        if not i & 0x3FFF:
            poll(0)
    left = producer.flush(300)
    seconds = time.perf_counter() - began
    if left or failures:
        raise RuntimeError(f"{left} records undelivered, {len(failures)} failed (first: {failures[:1]})")
    return {"seconds": seconds, "records": spec["count"]}


# ---------------------------------------------------------------------------------------------- brokers

def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def pid_of(cluster: LocalCluster, broker_id: int) -> int:
    return cluster.brokers[broker_id].process.pid


class Profiler:
    """``py-spy record`` on some brokers for the length of a ``with`` block (nothing without a directory)."""

    def __init__(self, directory: Path | None, step: str, pids: dict[int, int]) -> None:
        self.directory, self.step, self.pids = directory, step, pids
        self.procs: list[tuple[int, Path, subprocess.Popen]] = []

    def __enter__(self) -> "Profiler":
        if self.directory is None:
            return self
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        for broker_id, pid in self.pids.items():
            out = self.directory / f"{self.step}-broker{broker_id}.txt"
            proc = subprocess.Popen([py_spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "50",
                                     "--threads", "--output", str(out), "--nonblocking"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append((broker_id, out, proc))
        time.sleep(0.5)  # py-spy attaches
        return self

    def __exit__(self, *exc) -> None:
        for _, _, proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for _, _, proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.procs:
            print(summarize_profiles(self.step, [(b, out) for b, out, _ in self.procs]), flush=True)


_WAITING = ("_worker (concurrent/futures/thread.py:81)", "Condition.wait", "select (", "_select (")


def summarize_profiles(step: str, outputs: list[tuple[int, Path]], top: int = 12) -> str:
    """The broker with the most event-loop samples: samples per thread, then the event loop's functions by
    inclusive and by own samples (threads waiting on a queue, a lock or a socket are left out)."""
    parsed = {}
    for broker_id, path in outputs:
        if path.exists():
            # a line cut short when py-spy was stopped has no count: left out
            lines = [parts for line in path.read_text().splitlines()
                     if len(parts := line.rsplit(" ", 1)) == 2 and parts[1].isdigit()]
            parsed[broker_id] = (path, [(stack.split(";"), int(n)) for stack, n in lines])
    if not parsed:
        return f"profile {step}: no samples"

    def main_samples(entry) -> int:
        return sum(n for frames, n in entry[1] if "MainThread" in frames[0])

    broker_id = max(parsed, key=lambda b: main_samples(parsed[b]))
    path, samples = parsed[broker_id]
    threads: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    for frames, n in samples:
        if any(w in frames[-1] for w in _WAITING):
            continue
        thread = re.sub(r"^thread \(\d+\): ", "", frames[0])
        threads[re.sub(r"-\d+ ", " ", re.sub(r"[_-]?\d+$", "", thread))] += n
        if "MainThread" not in frames[0]:
            continue
        frames = [re.sub(r" \(/.*?/(odradek-?[^/]*/|issue-\d+[a-z]?/|site-packages/|lib/python3\.\d+/)?", " (", f)
                  for f in frames[1:]]
        if not frames:
            continue
        for frame in set(frames):
            if "runpy" not in frame and "uvloop/__init__" not in frame and "server.py:4" not in frame \
                    and "Runner.run" not in frame:
                inclusive[frame] += n
        own[frames[-1]] += n
    busy = sum(own.values()) or 1
    lines = [f"profile {step}: broker {broker_id} ({path}), busy samples at 50 Hz per thread: "
             + ", ".join(f"{name} {n}" for name, n in threads.most_common(6))]
    lines += [f"  {n * 100 / busy:5.1f}% incl  {frame}" for frame, n in inclusive.most_common(top)]
    lines += [f"  {n * 100 / busy:5.1f}% own   {frame}" for frame, n in own.most_common(top)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- helpers

async def metadata(client: SimpleClient, node: int | None, topics: list[str] | None = None):
    """Metadata of every topic from one broker: (controller, {(t, p): (leader, isr)}, live brokers)."""
    from odradek.protocol.messages import MetadataRequest
    request = MetadataRequest(topics=None if topics is None else
                              [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False)
    response = await client.send(node, request, timeout=60)
    partitions = {(t.name, p.partition_index): (p.leader_id, list(p.isr_nodes))
                  for t in response.topics for p in t.partitions}
    return response.controller_id, partitions, {b.node_id for b in response.brokers}


async def wait_for(check, timeout: float, what: str, poll_s: float = POLL_S):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            result = await check()
            if result:
                return result
            last = result
        except (OSError, asyncio.TimeoutError) as e:
            last = e
        await asyncio.sleep(poll_s)
    raise TimeoutError(f"{what} not reached within {timeout:g} s (last: {last!r})")


async def all_led(client: SimpleClient, nodes: list[int], expected: int) -> bool:
    for node in nodes:
        _, partitions, live = await metadata(client, node)
        if len(partitions) < expected or any(leader not in live for leader, _ in partitions.values()):
            return False
    return True


async def isr_full(client: SimpleClient, node: int, expected: int) -> bool:
    _, partitions, _ = await metadata(client, node)
    return len(partitions) >= expected and all(len(isr) == REPLICATION for _, isr in partitions.values())


class ControllerWatch:
    """When /controller (in the cluster's chroot) names a broker other than ``old``: kazoo's watch thread."""

    def __init__(self, cluster: LocalCluster, old: int) -> None:
        from kazoo.client import KazooClient
        self.changed_at: float | None = None
        self.zk = KazooClient(hosts=cluster.zookeeper_connect)
        self.zk.start(10)
        self.old = old

        def fire(data, stat):
            if data and json.loads(data).get("brokerid") != old and self.changed_at is None:
                self.changed_at = time.monotonic()

        self.zk.DataWatch("/controller", fire)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


def controlled_shutdown_ms(log_path: Path, since: int) -> float | None:
    """The broker's own 'controlled shutdown succeeded in N ms' line written after ``since`` bytes."""
    with open(log_path, "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    found = re.findall(r"controlled shutdown succeeded in (\d+) ms", text)
    return float(found[-1]) if found else None


async def sigterm_until_moved_and_gone(client: SimpleClient, slot, led: list, other: int, timeout: float,
                                      poll: float) -> tuple[float, float]:
    """SIGTERM to ``slot``'s broker: (seconds until broker ``other``'s Metadata names another leader for every
    partition of ``led``, seconds until the process has gone)."""
    exited: list[float] = []  # when the process went, seen by a thread of its own (it may go before the move shows)

    def watch_exit() -> None:
        if slot.process.wait(timeout):
            exited.append(time.monotonic())

    watcher = threading.Thread(target=watch_exit, daemon=True)
    began = time.monotonic()
    slot.process.send(signal.SIGTERM)
    watcher.start()

    async def moved_away() -> bool:
        _, now, _ = await metadata(client, other)
        return all(now.get(tp, (slot.broker_id,))[0] != slot.broker_id for tp in led)

    await wait_for(moved_away, timeout, "leaders moved off the shutting-down broker", poll)
    moved = time.monotonic() - began
    await asyncio.get_running_loop().run_in_executor(None, watcher.join)
    if not exited:
        raise RuntimeError(f"broker {slot.broker_id} did not exit")
    return moved, exited[0] - began


# ------------------------------------------------------------------------------------------------ steps

async def create_all(client: SimpleClient, topics: list[str]) -> None:
    for i in range(0, len(topics), TOPICS_PER_REQUEST):
        chunk = topics[i:i + TOPICS_PER_REQUEST]
        request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=t, num_partitions=TOPIC_PARTITIONS, replication_factor=REPLICATION) for t in chunk], timeout_ms=0)
        for attempt in range(50):
            controller, _, _ = await metadata(client, None, [])
            response = await client.send(controller, request, timeout=120)
            errors = {t.name: t.error_code for t in response.topics if t.error_code not in (0, 36)}
            if not errors:
                break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError(f"CreateTopics failed: {errors}")


async def run_point(partitions: int, workdir: Path, args: argparse.Namespace) -> dict:
    topics = [f"scale-{i:04d}" for i in range(partitions // TOPIC_PARTITIONS)]
    expected = len(topics) * TOPIC_PARTITIONS
    cluster = LocalCluster(workdir / f"cluster-{partitions}", BROKERS, broker_overrides=BROKER_OVERRIDES)
    profile_dir = Path(args.profile) / str(partitions) if args.profile else None
    if profile_dir:
        profile_dir.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    timeout = max(120.0, partitions / 50)
    poll = poll_interval(partitions)
    cluster.start()
    try:
        pids = {b.broker_id: pid_of(cluster, b.broker_id) for b in cluster.brokers}
        async with SimpleClient(cluster.bootstrap_servers, request_timeout=120) as client:
            ids = [b.broker_id for b in cluster.brokers]
            # 1. create
            with Profiler(profile_dir, "create", pids):
                began = time.monotonic()
                await create_all(client, topics)
                await wait_for(lambda: all_led(client, ids, expected), timeout, "every leader known", poll)
                result["create_s"] = time.monotonic() - began
            await wait_for(lambda: isr_full(client, ids[0], expected), timeout, "every ISR full")
            result["isr_full_s"] = time.monotonic() - began
            print(f"  {partitions}: created in {result['create_s']:.1f} s, ISR full at {result['isr_full_s']:.1f} s",
                  flush=True)
            # 2. memory and descriptors
            result["rss_mb"] = max(rss_mb(pid) for pid in pids.values())
            result["fds"] = max(open_fds(pid) for pid in pids.values())
            # 3. produce
            if args.records:
                spec = {"bootstrap": cluster.bootstrap_servers, "topics": topics, "size": 100, "count": args.records}
                with Profiler(profile_dir, "produce", pids):
                    produced = run_json_process([__file__, "--client", json.dumps(spec)], "producer", timeout=1800)
                result["produce_rec_s"] = produced["records"] / produced["seconds"]
                result["rss_mb"] = max(result["rss_mb"], *(rss_mb(pid) for pid in pids.values()))
                result["fds"] = max(result["fds"], *(open_fds(pid) for pid in pids.values()))
                print(f"  {partitions}: produced {result['produce_rec_s']:.0f} rec/s", flush=True)
            # 4. controller SIGKILL
            controller, before, _ = await metadata(client, None)
            led = [tp for tp, (leader, _) in before.items() if leader == controller]
            survivors = [b for b in ids if b != controller]
            watch = ControllerWatch(cluster, controller)
            try:
                with Profiler(profile_dir, "failover", {b: pids[b] for b in survivors}):
                    began = time.monotonic()
                    cluster.kill_broker(controller, signal.SIGKILL)

                    async def moved() -> bool:
                        _, now, live = await metadata(client, survivors[0])
                        return all(now.get(tp, (-1,))[0] in live and now[tp][0] != controller for tp in led)

                    await wait_for(moved, timeout, "every moved leader in Metadata", poll)
                    done = time.monotonic()
                result["failover_s"] = done - began
                result["failover_work_s"] = done - watch.changed_at if watch.changed_at else float("nan")
            finally:
                watch.close()
            print(f"  {partitions}: controller {controller} (led {len(led)}) killed: failover {result['failover_s']:.1f}"
                  f" s, work {result['failover_work_s']:.1f} s", flush=True)
            # 5. restart after SIGKILL
            began = time.monotonic()
            cluster.start_broker(controller, timeout=timeout)
            result["sigkill_up_s"] = time.monotonic() - began
            pids[controller] = pid_of(cluster, controller)
            await wait_for(lambda: isr_full(client, survivors[0], expected), timeout, "every ISR full")
            result["sigkill_isr_s"] = time.monotonic() - began
            print(f"  {partitions}: restart after SIGKILL: up {result['sigkill_up_s']:.1f} s, ISR "
                  f"{result['sigkill_isr_s']:.1f} s", flush=True)
            # 6. preferred election
            began = time.monotonic()
            controller, _, _ = await metadata(client, None, [])
            await client.send(controller, ElectLeadersRequest(election_type=0, topic_partitions=None,
                                                              timeout_ms=60000), timeout=120)
            result["elect_s"] = time.monotonic() - began
            # 7. controlled shutdown of the non-controller broker leading the most
            await asyncio.sleep(1.0)  # the brokers' metadata catch up with the election
            controller, now, _ = await metadata(client, None)
            counts = collections.Counter(leader for leader, _ in now.values())
            victim = max((b for b in ids if b != controller), key=lambda b: counts[b])
            led = [tp for tp, (leader, _) in now.items() if leader == victim]
            result["led"] = len(led)
            other = next(b for b in ids if b not in (victim,))
            slot = cluster.brokers[victim]
            log_offset = slot.log_path.stat().st_size
            with Profiler(profile_dir, "controlled-shutdown", {controller: pids[controller]}):
                result["cs_moved_s"], result["cs_exit_s"] = await sigterm_until_moved_and_gone(
                    client, slot, led, other, timeout, poll)
            cs_ms = controlled_shutdown_ms(slot.log_path, log_offset)
            result["cs_s"] = cs_ms / 1000 if cs_ms is not None else float("nan")
            print(f"  {partitions}: controlled shutdown of broker {victim} leading {len(led)}: {result['cs_s']:.2f} s"
                  f" (moved {result['cs_moved_s']:.1f} s, exit {result['cs_exit_s']:.1f} s)", flush=True)
            # 8. restart after a clean shutdown
            began = time.monotonic()
            cluster.start_broker(victim, timeout=timeout)
            result["clean_up_s"] = time.monotonic() - began
            await wait_for(lambda: isr_full(client, other, expected), timeout, "every ISR full")
            result["clean_isr_s"] = time.monotonic() - began
            print(f"  {partitions}: restart after a clean shutdown: up {result['clean_up_s']:.1f} s, ISR "
                  f"{result['clean_isr_s']:.1f} s", flush=True)
    finally:
        cluster.stop(timeout=120)
        if not args.keep:
            shutil.rmtree(cluster.data_dir, ignore_errors=True)
    return result


def format_value(key: str, value: float) -> str:
    if value != value:  # NaN
        return "-"
    if key in ("rss_mb", "fds", "led", "produce_rec_s"):
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def table(results: dict[int, list[dict]]) -> str:
    header = ["partitions"] + [label for _, label in COLUMNS]
    rows = []
    for partitions, runs in results.items():
        row = [f"{partitions:,}"]
        for key, _ in COLUMNS:
            values = [r[key] for r in runs if key in r]
            row.append(format_value(key, statistics.median(values)) if values else "-")
        rows.append(row)
    return format_table(header, rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default="1000,3000,10000,30000", help="partition counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="runs per point; the table shows medians")
    parser.add_argument("--records", type=int, default=200_000, help="records of the produce step (0: skip it)")
    parser.add_argument("--nofile", type=int, default=0, help="RLIMIT_NOFILE for the brokers (0: inherit)")
    parser.add_argument("--profile", metavar="DIR", help="py-spy record the brokers during the steps into DIR")
    parser.add_argument("--keep", action="store_true", help="keep the clusters' folders")
    parser.add_argument("--workdir", help="where the clusters go (default: a temporary folder)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    if argv is None and len(sys.argv) > 2 and sys.argv[1] == "--client":
        print(json.dumps(run_producer(json.loads(sys.argv[2]))), flush=True)
        return
    args = parse_args(argv)
    if args.nofile:
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))  # the brokers inherit it
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    points = [int(p) for p in args.points.split(",")]
    print(f"bench_scale: {BROKERS} brokers, RF {REPLICATION}, topics of {TOPIC_PARTITIONS} partitions, "
          f"overrides {BROKER_OVERRIDES}, RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)}, "
          f"{os.cpu_count()} CPUs, rounds {args.rounds}, produce {args.records} records", flush=True)
    results: dict[int, list[dict]] = {}
    for partitions in points:
        for round_ in range(args.rounds):
            print(f"point {partitions:,} partitions, round {round_ + 1}", flush=True)
            try:
                results.setdefault(partitions, []).append(asyncio.run(run_point(partitions, workdir, args)))
            except Exception as e:  # a point that fails is reported, the others still run
                print(f"  {partitions}: FAILED: {type(e).__name__}: {e}", flush=True)
            print(table(results), flush=True)
    print()
    print(table(results))
    if not args.keep and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Controlled shutdown at scale, Odradek against Apache Kafka 2.8.2 in one run (issue 30; figures, no asserts).

    python benchmarks/bench_controlled_shutdown.py                       # 10,000 partitions, both systems
    python benchmarks/bench_controlled_shutdown.py --points 10000,30000  # then a broker leading ~10,000
    python benchmarks/bench_controlled_shutdown.py --systems odradek --profile /tmp/prof   # py-spy too
    python benchmarks/bench_controlled_shutdown.py --baseline main   # before/after: main's tree first

Per system and point: ZooKeeper and three brokers (Odradek's ``LocalCluster``; Kafka 2.8.2's ``KafkaCluster``
from tests/kafka with the same keys and a ``--heap-mb`` heap), topics of 100 partitions with replication factor
3 (so a broker leads a third of them), created until every ISR is full. Then SIGTERM to the non-controller
broker leading the most, and:

- "moved": SIGTERM until a surviving broker's Metadata names another leader for every partition it led;
- "exit": SIGTERM until its process has gone.

And the phases, from the brokers' own log lines (the same wording in both, Kafka's; times from their
timestamps, to the millisecond):

- "ask": SIGTERM until the controller logs the ControlledShutdown request ("Shutting down broker N" in Kafka,
  "controlled shutdown of broker N" in ours);
- "ctrl": that until the controller's last "Sending LeaderAndIsr request" line of the shutdown (elections, the
  partition-state writes to ZooKeeper, the requests built);
- "wait": from that line until a surviving broker logs "Handling LeaderAndIsr request" (the longest of the two:
  sending, the broker's request queue, decoding);
- "apply": the longest "Finished LeaderAndIsr request in N ms" of a surviving broker after SIGTERM;
- "cs": the shutting-down broker's own "Starting controlled shutdown" until it succeeded (the controller's answer);
- "logs": LogManager "Shutting down." until "Shutdown complete" (flush, close, checkpoints, clean-shutdown marker);
- "tail": its "shut down completed" until the process has gone (the JVM's or the interpreter's exit);
- "rest": exit less cs, logs and tail (from SIGTERM to the request, and the other services' shutdown).

Odradek also prints its own timing lines: the controller's split of the shutdown request (elections with their
ZooKeeper writes, followers taken offline, requests queued), each LeaderAndIsr/UpdateMetadata/StopReplica
request's build and answer times, and the broker's shutdown phases.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.kafka.kafka_cluster

from bench_scale import (Profiler, create_all, metadata, poll_interval, sigterm_until_moved_and_gone,  # noqa: E402
                         wait_for)
from bench_vs_tansu import format_table  # noqa: E402
from odradek.clients.simple_client import SimpleClient  # noqa: E402
from odradek.tools.local_cluster import LocalCluster  # noqa: E402

BROKERS = 3
REPLICATION = 3
TOPIC_PARTITIONS = 100
OVERRIDES = {"auto.leader.rebalance.enable": "false",  # the leadership stays as created until the SIGTERM
             "unclean.leader.election.enable": "false"}
# our controller's per-request build/answer times (DEBUG lines of the channel manager)
ODRADEK_LOG_LEVELS = "odradek.controller.channel_manager=DEBUG"

COLUMNS = (("led", "led"), ("moved_s", "moved s"), ("exit_s", "exit s"), ("ask_s", "ask s"), ("ctrl_s", "ctrl s"),
           ("wait_s", "wait s"), ("apply_s", "apply s"), ("cs_s", "cs s"), ("logs_s", "logs s"), ("tail_s", "tail s"),
           ("rest_s", "rest s"))

# our lines and log4j's "[2026-11-29 05:11:00,123] INFO ..."; slf4j-simple's (when that binding wins on Kafka's
# class path) "2026-11-29 05:11:00,123 [thread] INFO ...", with the date the JVM options below ask for
_STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]? ")
_WORDS = (b"ontrolled shutdown", b"Shutting down", b"Shutdown complete", b"shut down completed", b"shutdown phases",
          b"LeaderAndIsr", b"built in")
KAFKA_JVM_OPTIONS = ("-Dorg.slf4j.simpleLogger.showDateTime=true",
                     "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS")


def stamped_lines(path: Path, since: int = 0) -> list[tuple[float, str]]:
    """(epoch seconds, line) of the timestamped lines after ``since`` bytes that hold one of ``_WORDS`` (Kafka's
    logs run to hundreds of MB: only those are decoded and matched)."""
    if not path.exists():
        return []
    out = []
    with open(path, "rb") as f:
        f.seek(since)
        for raw in f:
            if not any(word in raw for word in _WORDS):
                continue
            line = raw.decode(errors="replace").rstrip("\n")
            m = _STAMP.match(line)
            if m:
                stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                out.append((stamp, line))
    return out


def first(lines: list[tuple[float, str]], pattern: str) -> float | None:
    found = [t for t, line in lines if re.search(pattern, line)]
    return found[0] if found else None


def last(lines: list[tuple[float, str]], pattern: str) -> float | None:
    found = [t for t, line in lines if re.search(pattern, line)]
    return found[-1] if found else None


def log_files(cluster: LocalCluster) -> dict[str, Path]:
    """Every file a broker logs to: its server log (Kafka's state-change lines go there too) and our shared
    state-change.log."""
    files = {f"broker-{b.broker_id}": b.log_path for b in cluster.brokers}
    files["state-change"] = cluster.data_dir / "state-change.log"
    return files


def breakdown(files: dict[str, Path], offsets: dict[str, int], sigterm: float, victim: int, controller: int,
              exited: float) -> tuple[dict, list[str]]:
    """The phases (seconds) and the lines of our own timing worth printing."""
    lines = {name: stamped_lines(path, offsets.get(name, 0)) for name, path in files.items()}
    victim_lines = lines[f"broker-{victim}"]
    everything = sorted(line for name_lines in lines.values() for line in name_lines)
    asked = first(lines[f"broker-{controller}"], rf"(Shutting down broker {victim}\b|controlled shutdown of broker "
                                                 rf"{victim} \(shutting)")
    cs_began = first(victim_lines, r"(?i)starting controlled shutdown")
    cs_done = first(victim_lines, r"(?i)controlled shutdown succeeded")
    # the shutdown's requests, not those of the broker's death that follows its exit (or its last attempt's)
    sent = last([(t, line) for t, line in everything if t <= (exited if cs_done is None else cs_done)],
                rf"Controller id={controller} .*Sending LeaderAndIsr request")
    log_manager = r"(?=.*(kafka\.log\.LogManager|odradek\.broker\.log\.log_manager))"  # its name: before or after
    logs_began = first(victim_lines, log_manager + r".*Shutting down\.")
    logs_done = first(victim_lines, log_manager + r".*Shutdown complete[.:]")
    survivor = r"\[Broker id=(?!%d\])(\d+)\] " % victim
    applied = [float(m.group(2)) / 1000 for t, line in everything  # requests begun while it was there
               if (m := re.search(survivor + r"Finished LeaderAndIsr request in (\d+) ?ms", line))
               and t - float(m.group(2)) / 1000 <= exited]
    # from the controller's last LeaderAndIsr of the shutdown to each survivor's first one handled after it
    handled: dict[str, float] = {}
    for t, line in everything:
        if sent is not None and t >= sent and (m := re.search(survivor + r"Handling LeaderAndIsr request", line)):
            handled.setdefault(m.group(1), t - sent)
    completed = first(victim_lines, r"shut down completed")

    def span(a: float | None, b: float | None) -> float:
        return b - a if a is not None and b is not None else float("nan")

    result = {"ask_s": span(sigterm, asked), "ctrl_s": span(asked, sent), "apply_s": max(applied, default=float("nan")),
              "wait_s": max(handled.values(), default=float("nan")), "cs_s": span(cs_began, cs_done),
              "logs_s": span(logs_began, logs_done), "tail_s": span(completed, exited)}
    result["rest_s"] = exited - sigterm - result["cs_s"] - result["logs_s"] - result["tail_s"]
    notes = [line.split("] ", 1)[1] for _, line in everything
             if re.search(r"controlled shutdown of broker \d+ took|built in \d+ ms, answered|shutdown phases:"
                          r"|Shutdown complete: |Finished LeaderAndIsr request in \d+ms .* for \d{3,} partitions"
                          r"|LeaderAndIsr of \d{3,} partitions: states applied", line)]
    return result, notes


async def run_point(system: str, partitions: int, workdir: Path, args: argparse.Namespace) -> dict:
    topics = [f"cs-{i:04d}" for i in range(partitions // TOPIC_PARTITIONS)]
    expected = len(topics) * TOPIC_PARTITIONS
    data_dir = workdir / f"{system.replace('@', '-')}-{partitions}"
    if system == "kafka":
        from tests.kafka.kafka_cluster import KafkaCluster
        cluster: LocalCluster = KafkaCluster(data_dir, BROKERS, broker_overrides=OVERRIDES, heap_mb=args.heap_mb,
                                             jvm_options=KAFKA_JVM_OPTIONS)
    else:
        cluster = LocalCluster(data_dir, BROKERS, broker_overrides=OVERRIDES)
    timeout = max(args.create_timeout, partitions / 10)
    # a Metadata of 10,000 partitions costs the polled broker, which must also apply the LeaderAndIsr: --poll-s
    poll = args.poll_s or poll_interval(partitions)
    result: dict = {}
    path_before = os.environ.get("PYTHONPATH")
    if "@" in system:  # the brokers import the baseline's tree (ahead of the editable install)
        os.environ["PYTHONPATH"] = str(args.baseline_dir)
    try:
        cluster.start(timeout=180)
    finally:
        os.environ.pop("PYTHONPATH", None)
        if path_before is not None:
            os.environ["PYTHONPATH"] = path_before
    try:
        async with SimpleClient(cluster.bootstrap_servers, request_timeout=120) as client:
            ids = [b.broker_id for b in cluster.brokers]
            began = time.monotonic()
            await create_all(client, topics)

            async def isr_full() -> bool:
                for node in ids:
                    _, now, _ = await metadata(client, node)
                    if len(now) < expected or any(len(isr) < REPLICATION for _, isr in now.values()):
                        return False
                return True

            await wait_for(isr_full, timeout, "every ISR full", poll)
            print(f"  {system} {partitions:,}: created, every ISR full in {time.monotonic() - began:.1f} s", flush=True)
            controller, now, _ = await metadata(client, None)
            counts = collections.Counter(leader for leader, _ in now.values())
            victim = max((b for b in ids if b != controller), key=lambda b: counts[b])
            other = next(b for b in ids if b not in (victim, controller))
            led = [tp for tp, (leader, _) in now.items() if leader == victim]
            result["led"] = len(led)
            files = log_files(cluster)
            offsets = {name: path.stat().st_size if path.exists() else 0 for name, path in files.items()}
            slot = cluster.brokers[victim]
            pids = {b.broker_id: b.process.pid for b in cluster.brokers if b.process is not None}
            profile_dir = Path(args.profile) / f"{system}-{partitions}" if args.profile and system == "odradek" else None
            if profile_dir:
                profile_dir.mkdir(parents=True, exist_ok=True)
            with Profiler(profile_dir, "controlled-shutdown", pids):
                sigterm = time.time()
                result["moved_s"], result["exit_s"] = await sigterm_until_moved_and_gone(
                    client, slot, led, other, timeout, poll)
            phases, notes = breakdown(files, offsets, sigterm, victim, controller, sigterm + result["exit_s"])
            result.update(phases)
            print(f"  {system} {partitions:,}: SIGTERM to broker {victim} leading {len(led):,} (controller "
                  f"{controller}): moved {result['moved_s']:.2f} s, exit {result['exit_s']:.2f} s", flush=True)
            for note in notes:
                print(f"    {note[:240]}", flush=True)
    finally:
        cluster.stop(timeout=120)
        if not args.keep:
            shutil.rmtree(cluster.data_dir, ignore_errors=True)
    return result


def fmt(value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def table(results: dict[tuple[str, int], dict]) -> str:
    header = ["system", "partitions"] + [label for _, label in COLUMNS]
    rows = []
    for (system, partitions), r in results.items():
        rows.append([system, f"{partitions:,}"] + [fmt(r.get(key)) for key, _ in COLUMNS])
        theirs = results.get(("kafka", partitions))
        if system.startswith("odradek") and theirs:
            rows.append([f"{system}/kafka", f"{partitions:,}"] + [
                "-" if key == "led" else fmt(r[key] / theirs[key]) if r.get(key) and theirs.get(key) else "-"
                for key, _ in COLUMNS])
    return format_table(header, rows)


def baseline_tree(rev: str, workdir: Path) -> Path:
    """A folder holding ``odradek/`` as of git revision ``rev`` (with this tree's compiled extensions), to put
    on the baseline brokers' PYTHONPATH."""
    root = Path(__file__).resolve().parent.parent
    target = workdir / f"baseline-{rev}"
    package = target / "odradek"
    package.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(package)], input=archive, check=True)
    for built in root.glob("**/*.so"):
        relative = built.relative_to(root)
        if relative.parts[0] not in (".venv", "build"):
            shutil.copy2(built, package / relative)
    return target


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default="10000", help="partition counts, comma-separated")
    parser.add_argument("--systems", default="odradek,kafka", help="odradek, kafka or both, in that order")
    parser.add_argument("--baseline", metavar="REV", help="also run Odradek as of this git revision (before/after "
                        "in one run): system odradek@REV, first")
    parser.add_argument("--heap-mb", type=int, default=1024, help="each Kafka broker's heap")
    parser.add_argument("--poll-s", type=float, default=0, help="seconds between two Metadata polls of a survivor "
                        "(default: bench_scale's, 0.25 s up to 10,000 partitions)")
    parser.add_argument("--create-timeout", type=float, default=900, help="seconds the creation may take until "
                        "every ISR is full (Kafka 2.8.2 took over 250 s for 10,000 partitions on 2 loaded cores)")
    parser.add_argument("--profile", metavar="DIR", help="py-spy record our brokers during the shutdown into DIR")
    parser.add_argument("--keep", action="store_true", help="keep the clusters' folders")
    parser.add_argument("--workdir", help="where the clusters go (default: a temporary folder)")
    args = parser.parse_args(argv)
    for system in args.systems.split(","):
        if system not in ("odradek", "kafka"):
            parser.error(f"--systems: unknown system {system!r} (accepted: odradek, kafka)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    systems = args.systems.split(",")
    if args.baseline:
        systems.insert(0, f"odradek@{args.baseline}")
    os.environ.setdefault("ODRADEK_LOG_LEVELS", ODRADEK_LOG_LEVELS)  # the brokers inherit it
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-cs-"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.baseline_dir = baseline_tree(args.baseline, workdir) if args.baseline else None
    print(f"bench_controlled_shutdown: {BROKERS} brokers, RF {REPLICATION}, topics of {TOPIC_PARTITIONS} "
          f"partitions, overrides {OVERRIDES}, Kafka heap {args.heap_mb} MB, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    results: dict[tuple[str, int], dict] = {}
    for partitions in [int(p) for p in args.points.split(",")]:
        for system in systems:
            try:
                results[(system, partitions)] = asyncio.run(run_point(system, partitions, workdir, args))
            except Exception as e:  # a point that fails (a JVM out of memory maps, say) is reported, the rest run
                print(f"  {system} {partitions:,}: FAILED: {type(e).__name__}: {e}", flush=True)
    print("\n" + table(results))
    if args.workdir is None and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

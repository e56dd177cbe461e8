"""A broker per core: the aggregate produce rate of 1, 2, ... brokers on this one host (issue 30; figures
printed, nothing asserted).

    python benchmarks/bench_brokers_per_host.py                     # 1 .. os.cpu_count() brokers (at most 4)
    python benchmarks/bench_brokers_per_host.py --brokers 1,2,4 --rounds 5 --producers 4

One Odradek broker runs its request path on one event loop, so it uses about one core; several brokers on
one host (``odradek-cluster start --brokers N --brokers-per-rack K``) use several. Each broker count has a
LocalCluster of its own (a real ZooKeeper, N broker processes, ``broker.rack=rack-<i>``), all started
first; each round measures them in turn, so a slow moment of a shared host falls on all of them. A
measurement is ``--producers`` confluent-kafka producer processes at once (kafka_client_workloads.py's
``produce``: 100-byte records, acks=1, ``--linger-ms`` (5), no key), each on a topic of its own with
``--partitions`` partitions of replication factor 1, placed round-robin over the brokers. Its aggregate
rate is the sum of the producers' rates (each over its own timed window, the windows overlapping);
"broker µs/rec" is the CPU all brokers used from the producers' start to their end, per record, "client
µs/rec" the producers' own. The table shows the medians over the rounds side by side, with the number of
cores this ran on (``os.cpu_count()``): the producers share those cores too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_vs_tansu import WORKLOAD_SCRIPT, format_table, run_json_process
from kafka_client_workloads import process_cpu_seconds
from odradek.tools.local_cluster import LocalCluster


def parse_args(argv: list[str]) -> argparse.Namespace:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", default=",".join(str(n) for n in range(1, max(2, min(cores, 4)) + 1)),
                        help="broker counts to compare (default 1 .. cores, at least 2, at most 4)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--producers", type=int, default=2, help="producer processes at once")
    parser.add_argument("--records", type=int, default=200_000, help="records per producer per round")
    parser.add_argument("--partitions", type=int, default=12, help="partitions of each producer's topic")
    parser.add_argument("--linger-ms", type=int, default=5,
                        help="the producers' linger.ms (0: many small requests, the brokers' per-request work)")
    return parser.parse_args(argv)


def produce_round(cluster: LocalCluster, args: argparse.Namespace) -> dict:
    """The producers at once, each on a new topic; their summed rate and the brokers' CPU per record."""
    pids = [b.process.pid for b in cluster.brokers]
    specs = [{"workload": "produce", "bootstrap": cluster.bootstrap_servers, "broker_pid": pids[0],
              "topic": f"per-host-{uuid.uuid4().hex[:8]}", "partitions": args.partitions, "size": 100,
              "count": args.records, "acks": 1, "linger_ms": args.linger_ms} for _ in range(args.producers)]
    cpu_before = sum(process_cpu_seconds(pid) for pid in pids)
    with ThreadPoolExecutor(len(specs)) as pool:
        results = list(pool.map(lambda spec: run_json_process([str(WORKLOAD_SCRIPT), json.dumps(spec)], "producer"),
                                specs))
    broker_cpu = sum(process_cpu_seconds(pid) for pid in pids) - cpu_before
    records = sum(r["records"] for r in results)
    return {"rec/s": sum(r["records"] / r["seconds"] for r in results),
            "broker µs/rec": broker_cpu / records * 1e6,
            "client µs/rec": sum(r["client_cpu"] for r in results) / records * 1e6}


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    counts = [int(n) for n in args.brokers.split(",")]
    rounds: dict[int, list[dict]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="bench-per-host-") as tmp, contextlib.ExitStack() as stack:
        clusters = {}
        for n in counts:  # all up at once, idle but for the one measured: a round of each in turn
            clusters[n] = LocalCluster(Path(tmp) / f"brokers-{n}", n, brokers_per_rack=1).start(timeout=120)
            stack.callback(clusters[n].stop, 30)
        for i in range(args.rounds):
            for n in counts:
                rounds[n].append(produce_round(clusters[n], args))
                print(f"  round {i + 1}, {n} broker(s): {rounds[n][-1]['rec/s']:,.0f} rec/s", file=sys.stderr,
                      flush=True)
    medians = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in rounds.items()}
    base = medians[counts[0]]["rec/s"]
    print(f"Aggregate produce rate on one host: {os.cpu_count()} cores (os.cpu_count()), {args.producers} "
          f"producer processes x {args.records:,} records of 100 B, acks=1, linger.ms {args.linger_ms}, RF 1, medians of {args.rounds} rounds "
          "(the rounds of each broker count in turn)")
    print(format_table(["brokers", "rec/s", f"x {counts[0]} broker(s)", "broker µs/rec", "client µs/rec"], [
        [str(n), f"{m['rec/s']:,.0f}", f"{m['rec/s'] / base:.2f}", f"{m['broker µs/rec']:.2f}",
         f"{m['client µs/rec']:.2f}"] for n, m in medians.items()]))


if __name__ == "__main__":
    main(sys.argv[1:])

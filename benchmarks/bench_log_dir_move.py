"""Moving a replica between two log dirs while it is appended to (AlterReplicaLogDirs; figures printed, nothing
asserted).

    python benchmarks/bench_log_dir_move.py [--mb 200] [--batch-kb 16] [--append-every-ms 1] [--step-kb N]
                                            [--throttle-mb R] [--data-dir DIR]

In this process: a ReplicaManager on a LogManager with two dirs (under ``--data-dir``, default a temporary folder
on disk), one partition led here holding ``--mb`` MB of ``--batch-kb`` KiB batches. The move is asked for while a
coroutine on the same event loop appends one batch ``--append-every-ms`` after the previous one (an idempotent
producer), so the figures say how long the move takes while serving and what it costs the event loop: how long an
append waited beyond its time (the copy runs on the loop, one step at a time, and the appender gets its turn
between two steps). ``--throttle-mb`` sets replica.alter.log.dirs.io.max.bytes.per.second to R MB/s first, so the
move's rate is the quota's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from types import SimpleNamespace

from odradek.broker.log import LogManager
from odradek.broker.log.scheduler import Scheduler
from odradek.broker.metadata_cache import MetadataCache
from odradek.broker.replica_manager import ReplicaManager
from odradek.protocol.records import RecordBatchBuilder

TP = ("bench", 0)


def batch(producer_id: int, sequence: int, size: int) -> bytearray:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    records = max(1, size // 1024)
    for i in range(records):
        builder.append(1_700_000_000_000 + i, None, b"v" * 1000)
    return bytearray(builder.build())


async def run(args: argparse.Namespace, root: str) -> None:
    dirs = [os.path.join(root, "a"), os.path.join(root, "b")]
    lm = LogManager(dirs, broker_id=1, cluster_id="bench", scheduler=Scheduler(2))  # flushes, deletes: as the broker
    rm = ReplicaManager(1, lm, MetadataCache(1))
    rm.start()
    leader = SimpleNamespace(partition_index=0, controller_epoch=1, leader=1, leader_epoch=0, isr=[1],
                             partition_epoch=0, replicas=[1], is_new=True)  # a LeaderAndIsr partition state
    rm.become_leader_or_follower(1, [("bench", leader)], {})
    per_batch = max(1, args.batch_kb)
    sequence = 0
    began = time.perf_counter()
    while lm.get_log(*TP).size < args.mb * 1_000_000:
        rm.append_records(1, 1000, {TP: batch(1, sequence, per_batch * 1024)})
        sequence += per_batch
    print(f"filled {lm.get_log(*TP).size / 1e6:.0f} MB in {time.perf_counter() - began:.1f} s")

    source = os.path.dirname(lm.get_log(*TP).dir)
    target = next(d for d in dirs if d != source)
    late_ms: list[float] = []
    appended = 0

    async def appender() -> None:
        nonlocal sequence, appended
        interval = args.append_every_ms / 1000
        while lm.future_log(*TP) is not None:
            due = time.perf_counter() + interval
            await asyncio.sleep(interval)
            late_ms.append((time.perf_counter() - due) * 1000)
            rm.append_records(1, 1000, {TP: batch(2, appended, 1024)})
            appended += 1

    if args.step_kb:
        rm.log_dir_mover.step_bytes = args.step_kb * 1024
    if args.throttle_mb:
        rm.replication_quotas.alter_log_dirs.update_quota(int(args.throttle_mb * 1_000_000))
    began, cpu = time.perf_counter(), time.process_time()
    assert rm.log_dir_mover.alter_replica_log_dirs({TP: target}) == {TP: 0}
    await appender()
    took, cpu = time.perf_counter() - began, time.process_time() - cpu
    size = lm.get_log(*TP).size / 1e6
    late_ms.sort()
    bound = f", throttled to {args.throttle_mb:g} MB/s" if args.throttle_mb else ""
    print(f"moved {size:.0f} MB from {source} to {target} in {took:.2f} s ({size / took:.1f} MB/s{bound}; "
          f"{cpu:.2f} s of CPU, steps of {rm.log_dir_mover.step_bytes // 1024} KiB) while "
          f"{appended} batches were appended; an append's wait beyond its time: median "
          f"{late_ms[len(late_ms) // 2]:.2f} ms, p99 {late_ms[int(len(late_ms) * 0.99)]:.2f} ms, "
          f"max {late_ms[-1]:.2f} ms")
    rm.shutdown()
    lm.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--batch-kb", type=int, default=16)
    parser.add_argument("--append-every-ms", type=float, default=1.0)
    parser.add_argument("--step-kb", type=int, default=0, help="the copy's step (default: the broker's)")
    parser.add_argument("--throttle-mb", type=float, default=0,
                        help="replica.alter.log.dirs.io.max.bytes.per.second, in MB/s (default: none)")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.data_dir) as root:
        asyncio.run(run(args, root))


if __name__ == "__main__":
    main()

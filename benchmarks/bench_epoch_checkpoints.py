"""Batched leader epoch checkpoints: the C writer against its Python-thread twin (figures printed, nothing
asserted).

    python benchmarks/bench_epoch_checkpoints.py [--counts 1667,5000] [--rounds 3] [--data-dir DIR]

N partition directories on disk (`--data-dir`, default a temporary folder: fsync must cost what it costs),
each with a leader epoch cache. A round bumps every cache's epoch inside `batched_checkpoints()` (as a
LeaderAndIsr making this broker leader of N partitions does) and awaits `write_concurrently()`, once with the
compiled writer (`broker/log/checkpoint_writer_c`: 64 pthreads, the GIL released once) and once with the
pure-Python twin (64 Python threads), alternating which goes first. Meanwhile a CPU-bound Python loop runs
on the event loop's thread, yielding to the loop every few thousand iterations (the request path of the
broker applying the LeaderAndIsr): its iterations/s during the write, against the same loop alone, is how
much of the loop's thread the write leaves free, and "loop s lost" the loop's time it took (elapsed x the
share not kept). "writers CPU s" is the process's CPU time outside the loop's thread meanwhile. A third way,
"none", replaces the writer by one that writes nothing: what the batch costs the loop's thread itself
(the epoch bumps and the checkpoint texts). Medians over the rounds; ratios Python/C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from odradek.broker.log import LeaderEpochCheckpointFile, LeaderEpochFileCache, checkpoint_writer  # noqa: E402
from odradek.broker.log.checkpoint_batch import batched_checkpoints  # noqa: E402

CHUNK = 2000  # iterations between yields to the loop: ~0.1 ms here


def _spin_chunk() -> int:
    x = 0
    for i in range(CHUNK):
        x += i * i
    return x


async def _spin(stop: asyncio.Event) -> int:
    iterations = 0
    while not stop.is_set():
        _spin_chunk()
        iterations += CHUNK
        await asyncio.sleep(0)
    return iterations


async def _spin_alone(seconds: float) -> float:
    stop = asyncio.Event()
    task = asyncio.ensure_future(_spin(stop))
    await asyncio.sleep(seconds)
    stop.set()
    return await task / seconds


async def _round(caches: list[LeaderEpochFileCache], epoch: int) -> tuple[float, float, float]:
    """(seconds to write every checkpoint, spin iterations/s meanwhile, CPU seconds of the other threads)."""
    stop = asyncio.Event()
    spinning = asyncio.ensure_future(_spin(stop))
    await asyncio.sleep(0)
    began, cpu_began, loop_cpu_began = time.perf_counter(), time.process_time(), time.thread_time()
    with batched_checkpoints() as batch:
        for cache in caches:
            cache.assign(epoch, epoch * 100)
    await batch.write_concurrently()
    elapsed = time.perf_counter() - began
    others_cpu = (time.process_time() - cpu_began) - (time.thread_time() - loop_cpu_began)
    stop.set()
    return elapsed, await spinning / elapsed, others_cpu


def _write_nothing(items: list, threads: int) -> list:
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1667,5000", help="checkpoints per batch, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", default=None, help="where the partition directories go (on the disk to measure)")
    args = parser.parse_args()
    try:
        from odradek.broker.log import _checkpoint_writer
    except ImportError:
        sys.exit("the compiled checkpoint writer is not built (pip install -e .)")
    # "none": the writer replaced by one that writes nothing, what the batch costs the loop's thread itself
    ways = {"C": _checkpoint_writer.write_files, "Python": checkpoint_writer.write_files_py,
            "none": _write_nothing}
    root = tempfile.mkdtemp(prefix="bench-epoch-checkpoints-", dir=args.data_dir)
    try:
        asyncio.run(_run(root, [int(c) for c in args.counts.split(",")], args.rounds, ways))
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _run(root: str, counts: list[int], rounds: int, ways: dict) -> None:
    alone = await _spin_alone(1.0)
    print(f"CPU-bound loop alone on the event loop: {alone / 1e6:.2f} M iterations/s\n")
    print(f"{'checkpoints':>11} {'way':>6} {'write s':>8} {'per file ms':>11} {'writers CPU s':>13} "
          f"{'loop M it/s':>11} {'loop kept':>9} {'loop s lost':>11}")
    for count in counts:
        directory = os.path.join(root, str(count))
        caches = []
        for i in range(count):
            partition_dir = os.path.join(directory, f"topic-{i}")
            os.makedirs(partition_dir)
            caches.append(LeaderEpochFileCache(LeaderEpochCheckpointFile(
                os.path.join(partition_dir, "leader-epoch-checkpoint"))))
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
        epoch = 0
        for r in range(rounds):
            order = list(ways) if r % 2 == 0 else list(reversed(ways))
            for name in order:
                checkpoint_writer.write_files = ways[name]
                epoch += 1
                results[name].append(await _round(caches, epoch))
        medians = {}
        for name in ways:
            seconds = statistics.median(r[0] for r in results[name])
            rate = statistics.median(r[1] for r in results[name])
            cpu = statistics.median(r[2] for r in results[name])
            lost = statistics.median(r[0] * (1 - r[1] / alone) for r in results[name])  # of the loop's time
            medians[name] = (seconds, rate, cpu, lost)
            print(f"{count:>11} {name:>6} {seconds:>8.3f} {seconds / count * 1000:>11.3f} {cpu:>13.3f} "
                  f"{rate / 1e6:>11.2f} {rate / alone:>9.0%} {lost:>11.3f}")
        c, py = medians["C"], medians["Python"]
        print(f"{count:>11} {'Py/C':>6} {py[0] / c[0]:>8.2f} {'':>11} {py[2] / max(c[2], 1e-9):>13.2f} "
              f"{py[1] / c[1]:>11.2f} {'':>9} {py[3] / c[3]:>11.2f}\n")


if __name__ == "__main__":
    main()

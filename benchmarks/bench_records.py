"""Record-batch micro-benchmarks: prints medians over repeated runs (nothing is asserted).

    python benchmarks/bench_records.py [--repeat N]

Figures: CRC-32C of a 1 MiB batch (goal < 0.2 ms), header view + validation of a 16 KiB batch,
the produce-path rewrite of baseOffset/partitionLeaderEpoch, frame splitting, and building and
iterating 1000 small records per codec.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

from odradek.protocol.framing import FrameSplitter, frame
from odradek.protocol.records import (
    HEADER_SIZE, Compression, RecordBatchBuilder, RecordBatchView, read_produce_batch,
)


def median_time(func: Callable[[], object], repeat: int, number: int) -> float:
    """Median over ``repeat`` runs of the mean time of ``number`` calls, in seconds."""
    func()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            func()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.3f} ms"
    return f"{seconds * 1e6:8.2f} µs"


def batch_of_size(target: int) -> bytes:
    """An uncompressed batch of exactly ``target`` bytes of random (incompressible) 1 KiB values."""
    values = []
    while HEADER_SIZE + 1040 * (len(values) + 2) < target:
        values.append(os.urandom(1024))
    last = max(target - HEADER_SIZE - 1040 * len(values) - 16, 0)
    for _ in range(4):  # the last value's size converges in a step or two (varint widths)
        builder = RecordBatchBuilder()
        for value in [*values, os.urandom(last)]:
            builder.append(1_700_000_000_000, b"key", value)
        data = builder.build()
        if len(data) == target:
            break
        last += target - len(data)
    return data


def small_records() -> list[tuple[int, bytes, bytes, list]]:
    return [(1_700_000_000_000 + i, b"key-%d" % i, b"small value number %d" % i,
             [("h", b"v")] if i % 10 == 0 else []) for i in range(1000)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    repeat = args.repeat

    big = batch_of_size(1 << 20)
    big_view = RecordBatchView(big)
    print(f"{'CRC-32C verify, ' + str(len(big)) + ' B batch':<40}"
          f"{fmt(median_time(big_view.verify_crc, repeat, 50))}  (goal < 0.2 ms)")

    medium = batch_of_size(16 * 1024)

    def view_and_validate() -> None:
        RecordBatchView(medium).validate()

    print(f"{'view + validate (CRC), ' + str(len(medium)) + ' B batch':<40}"
          f"{fmt(median_time(view_and_validate, repeat, 2000))}")
    print(f"{'read_produce_batch, ' + str(len(medium)) + ' B batch':<40}"
          f"{fmt(median_time(lambda: read_produce_batch(medium), repeat, 2000))}")

    writable = bytearray(medium)

    def rewrite() -> None:
        view = RecordBatchView(writable)
        view.set_base_offset(123_456)
        view.set_partition_leader_epoch(7)

    print(f"{'view + rewrite offset/epoch':<40}{fmt(median_time(rewrite, repeat, 5000))}")

    splitter = FrameSplitter()
    one_frame = frame(medium)
    print(f"{'FrameSplitter.feed, one whole frame':<40}"
          f"{fmt(median_time(lambda: splitter.feed(one_frame), repeat, 20000))}")

    records = small_records()
    print("\n1000 small records per batch      build          iterate      batch size")
    for codec in Compression:
        def build(codec: int = codec) -> bytes:
            builder = RecordBatchBuilder(codec)
            for record in records:
                builder.append(*record)
            return builder.build()

        data = build()
        view = RecordBatchView(data)

        def iterate() -> None:
            for _ in view.records():
                pass

        print(f"  {Compression(codec).name:<8}                   {fmt(median_time(build, repeat, 5))}"
              f"   {fmt(median_time(iterate, repeat, 5))}   {len(data):>7} B")


if __name__ == "__main__":
    main()

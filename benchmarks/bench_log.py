"""Log micro-benchmarks: append, read and recovery throughput (figures printed, nothing asserted).

    python benchmarks/bench_log.py [--dir DIR] [--recovery-mb 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from odradek.broker.log import Log, LogConfig
from odradek.protocol.records import RecordBatchBuilder


def build(records: int, value_size: int) -> bytes:
    builder = RecordBatchBuilder()
    for i in range(records):
        builder.append(1_700_000_000_000 + i, None, b"v" * value_size)
    return builder.build()


def bench_append(root: str, name: str, template: bytes, total_bytes: int) -> Log:
    log = Log(os.path.join(root, f"{name}-0"), LogConfig())
    count = max(1, total_bytes // len(template))
    start = time.perf_counter()
    for _ in range(count):
        log.append_as_leader(bytearray(template), 1)
    elapsed = time.perf_counter() - start
    print(f"append {name:>10}: {count / elapsed:10.0f} batches/s {count * len(template) / elapsed / 1e6:8.1f} MB/s"
          f"  ({len(template)} B/batch)")
    return log


def bench_read(log: Log, name: str, max_bytes: int) -> None:
    start, offset, total = time.perf_counter(), log.log_start_offset, 0
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes).records
        total += len(data)
        last = data[-1]  # touch
        del last
        # next offset: walk headers of the returned data
        pos = 0
        while pos < len(data):
            length = int.from_bytes(data[pos + 8:pos + 12], "big")
            base = int.from_bytes(data[pos:pos + 8], "big")
            delta = int.from_bytes(data[pos + 23:pos + 27], "big")
            offset = base + delta + 1
            pos += length + 12
    elapsed = time.perf_counter() - start
    print(f"read   {name:>10}: {total / elapsed / 1e6:8.1f} MB/s with max_bytes={max_bytes}")


def bench_recovery(root: str, megabytes: int) -> None:
    directory = os.path.join(root, "recover-0")
    log = Log(directory, LogConfig())
    template = build(16, 1000)
    for _ in range(megabytes * 1_000_000 // len(template)):
        log.append_as_leader(bytearray(template), 1)
    size = log.size
    log.close()
    start = time.perf_counter()
    Log(directory, LogConfig(), recovery_point=0, had_clean_shutdown=False).close()
    elapsed = time.perf_counter() - start
    print(f"recovery: {size / 1e6:.0f} MB scanned (CRC + index rebuild) in {elapsed:.2f} s "
          f"= {size / elapsed / 1e6:.0f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--append-mb", type=int, default=100)
    parser.add_argument("--recovery-mb", type=int, default=100)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="bench-log-", dir=args.dir)
    try:
        big = bench_append(root, "16KiB", build(1, 16 * 1024 - 80), args.append_mb * 1_000_000)
        small = bench_append(root, "100x100B", build(100, 100), args.append_mb * 1_000_000 // 4)
        bench_read(big, "16KiB", 1024 * 1024)
        bench_read(small, "100x100B", 1024 * 1024)
        bench_read(small, "100x100B", 16 * 1024)
        big.close()
        small.close()
        bench_recovery(root, args.recovery_mb)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

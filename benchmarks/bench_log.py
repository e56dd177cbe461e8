"""Log micro-benchmarks: append, read and recovery throughput (figures printed, nothing asserted).

    python benchmarks/bench_log.py [--dir DIR] [--recovery-mb 100] [--idempotent-appends 100000]

The idempotence case appends the same small batches with and without a producer id and prints the
cost per append (the producer-state check is on the produce hot path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import time

from crc32c import crc32c

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


def producer_batches(count: int, records: int, value_size: int, producers: int) -> list[bytearray]:
    """``count`` batches from ``producers`` idempotent producers in turn, each with its next sequence."""
    template = RecordBatchBuilder(producer_id=0, producer_epoch=0, base_sequence=0)
    for i in range(records):
        template.append(1_700_000_000_000 + i, None, b"v" * value_size)
    built = template.build()
    batches = []
    for i in range(count):
        batch = bytearray(built)
        struct.pack_into(">qhi", batch, 43, i % producers, 0, (i // producers) * records)
        struct.pack_into(">I", batch, 17, crc32c(batch[21:]))  # the producer fields are under the CRC
        batches.append(batch)
    return batches


def bench_idempotence(root: str, appends: int) -> None:
    for records in (1, 10):
        plain = [bytearray(build(records, 100)) for _ in range(appends)]
        cases = [("no producer id", plain, 0), ("1 producer", producer_batches(appends, records, 100, 1), 1),
                 ("1000 producers", producer_batches(appends, records, 100, 1000), 1000)]
        for name, batches, producers in cases:
            log = Log(os.path.join(root, f"idem-{records}-{name.replace(' ', '_')}-0"), LogConfig())
            start = time.perf_counter()
            for batch in batches:
                log.append_as_leader(batch, 1)
            elapsed = time.perf_counter() - start
            retry_start = time.perf_counter()
            duplicates = 0
            if producers:  # retries of the last 5 batches of each producer
                for batch in batches[-min(5 * producers, appends):]:
                    duplicates += log.append_as_leader(batch, 1).duplicate
            retry_elapsed = time.perf_counter() - retry_start
            figures = f"append {records:>2}x100B {name:>15}: {elapsed / appends * 1e6:6.2f} us/append"
            if duplicates:
                figures += f", duplicate answered in {retry_elapsed / duplicates * 1e6:6.2f} us"
            print(figures)
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--append-mb", type=int, default=100)
    parser.add_argument("--recovery-mb", type=int, default=100)
    parser.add_argument("--idempotent-appends", type=int, default=100_000)
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
        bench_idempotence(root, args.idempotent_appends)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

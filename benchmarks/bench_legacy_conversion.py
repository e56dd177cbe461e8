"""Legacy message formats (magic 0/1): what conversion costs on the broker's event loop. Prints medians.

    python benchmarks/bench_legacy_conversion.py [--repeat N]

Figures: a Fetch v0-3 partition of 1 MiB of stored v2 batches (100-byte records, 500 per batch)
down-converted to magic 1, uncompressed and per codec (kept), in ms and records/s; and a produced magic 1
message set of 500 records converted to a v2 batch. Kafka does the same work (LogValidator, lazily in
LazyDownConversionRecordsSend). Produce conversion runs on the event loop; fetch conversion runs in an
executor thread (broker/apis/fetch_down_conversion.py), sharing the GIL with the loop.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_records import fmt, median_time  # noqa: E402

from odradek.protocol.records import Compression, RecordBatchBuilder  # noqa: E402
from odradek.protocol.records.legacy_conversion import (  # noqa: E402
    convert_produced_message_set, down_convert_fetched,
)
from odradek.protocol.records.legacy_records import LegacyMessageSetBuilder  # noqa: E402

PER_BATCH, VALUE = 500, b"v" * 100


def stored_partition(codec: int, size: int = 1 << 20) -> tuple[bytes, int]:
    parts, offset, total = [], 0, 0
    while total < size:
        builder = RecordBatchBuilder(codec, base_offset=offset)
        for i in range(PER_BATCH):
            builder.append(1_700_000_000_000 + i, b"key-%d" % i, VALUE)
        batch = builder.build()
        parts.append(batch)
        offset += PER_BATCH
        total += len(batch)
    return b"".join(parts), offset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for codec in (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4):
        records, count = stored_partition(codec)
        seconds = median_time(lambda: down_convert_fetched(records, 1, 0), args.repeat, 1)
        converted = len(down_convert_fetched(records, 1, 0))
        print(f"down-convert 1 MiB to magic 1, {codec.name:6}: {fmt(seconds)}  "
              f"({count / seconds / 1e6:5.2f} M records/s stored, {converted} bytes out)")
    builder = LegacyMessageSetBuilder(1)
    for i in range(PER_BATCH):
        builder.append(i, 1_700_000_000_000 + i, b"key-%d" % i, VALUE)
    produced = builder.build()
    seconds = median_time(lambda: convert_produced_message_set(produced), args.repeat, 10)
    print(f"produce: {PER_BATCH} magic 1 messages to one v2 batch:  {fmt(seconds)}  "
          f"({PER_BATCH / seconds / 1e6:5.2f} M records/s)")


if __name__ == "__main__":
    main()

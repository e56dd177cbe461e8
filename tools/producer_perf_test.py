"""odradek-producer-perf-test: Kafka 2.8's ProducerPerformance (kafka-producer-perf-test.sh) on our AIOProducer.

    odradek-producer-perf-test --topic perf --num-records 100000 --record-size 100 --throughput -1 \\
        --producer-props bootstrap.servers=localhost:9092 acks=1

As Kafka's tool: the payload is one random uppercase-letter record of --record-size bytes, or lines of
--payload-file (split at --payload-delimiter, one picked at random per record); --throughput N holds the
send rate at N records/s with ThroughputThrottler's sleep-deficit rule (-1: no limit); every 5 s a
window line, at the end the total line with latency percentiles, in Kafka's formats:

    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency.
    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency, a ms 50th, b ms 95th, c ms 99th, d ms 99.9th.

Latency is from send to the record's acknowledgement, in whole milliseconds; at most 500,000 samples
are kept for the percentiles (every ``num_records / 500000``-th record), as Kafka keeps them.

Failed sends: Kafka prints each one's stack trace; a producer that cannot write fails every record the same
way, so after the total line we print one line on stderr, the number of failures and the first error,
and exit 1 (``delivery.timeout.ms`` bounds how long the records are retried).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from typing import Sequence

from ..protocol.errors import KafkaError
from ..clients.types import KafkaConfigurationError
from .common import failure_report, print_metrics, run_tool
from .kafka_properties import ToolParser, UsageError, key_values, load_properties, producer_kwargs

DESCRIPTION = "This tool is used to verify the producer performance."
REPORTING_INTERVAL_MS = 5000
MIN_SLEEP_NS = 2_000_000


def build_parser() -> ToolParser:
    parser = ToolParser("producer-performance", DESCRIPTION)
    add = parser.add_argument
    add("--topic", metavar="TOPIC", help="produce messages to this topic")
    add("--num-records", type=int, metavar="NUM-RECORDS", help="number of messages to produce")
    payload = parser.add_mutually_exclusive_group()
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE",
                         help="message size in bytes. Note that you must provide exactly one of --record-size "
                              "or --payload-file.")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="file to read the message payloads from. This works only for UTF-8 encoded text "
                              "files. Payloads will be read from this file and a payload will be randomly "
                              "selected when sending messages.")
    add("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
        help='provides delimiter to be used when --payload-file is provided. Defaults to new line. Note that '
             'this parameter will be ignored if --payload-file is not provided. (default: \\n)')
    add("--throughput", type=int, metavar="THROUGHPUT",
        help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this to -1 "
             "to disable throttling.")
    add("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
        help="kafka producer related configuration properties like bootstrap.servers,client.id etc. These "
             "configs take precedence over those passed via --producer.config.")
    add("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
        help="producer config properties file.")
    add("--print-metrics", action="store_true", help="print out metrics at the end of the test. (default: false)")
    add("--transactional-id", metavar="TRANSACTIONAL-ID", help=argparse.SUPPRESS)
    add("--transaction-duration-ms", type=int, default=0, metavar="TRANSACTION-DURATION", help=argparse.SUPPRESS)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    opts = build_parser().parse_strict(argv)
    for flag in ("topic", "num_records", "throughput"):  # argparse4j's wording for required arguments
        if getattr(opts, flag) is None:
            raise UsageError(f"argument --{flag.replace('_', '-')} is required")
    if opts.record_size is None and opts.payload_file is None:
        raise UsageError("one of the arguments --record-size --payload-file is required")
    if opts.producer_props is None and opts.producer_config is None:
        raise UsageError("Either --producer-props or --producer.config must be specified.")
    if opts.num_records < 0:
        raise UsageError(f"Invalid --num-records {opts.num_records}: must be non-negative")
    if opts.record_size is not None and opts.record_size < 0:
        raise UsageError(f"Invalid --record-size {opts.record_size}: must be non-negative")
    if opts.transactional_id is not None:
        raise UsageError("--transactional-id is not supported by this tool yet")
    props = load_properties(opts.producer_config, "--producer.config") if opts.producer_config else {}
    props.update(key_values(opts.producer_props or [], "--producer-props"))
    if "bootstrap.servers" not in props:
        raise UsageError("Missing required configuration \"bootstrap.servers\" which has no default value.")
    opts.props = props
    opts.kwargs = producer_kwargs(props)
    # Kafka 2.8's producer defaults, where ours differ (ours: idempotent with acks=all unless told)
    opts.kwargs.setdefault("acks", "1")
    return opts


def read_payloads(path: str, delimiter: str) -> list[bytes]:
    delimiter = delimiter.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    print(f"Reading payloads from: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read --payload-file {path}: {exc.strerror}") from None
    payloads = [p.encode("utf-8") for p in text.split(delimiter) if p]
    print(f"Number of messages read: {len(payloads)}")
    if not payloads:
        raise UsageError(f"File is empty: {path}")
    return payloads


class Stats:
    """ProducerPerformance.Stats: totals, a 5 s window, and sampled latencies for the percentiles."""

    def __init__(self, num_records: int, reporting_interval_ms: int = REPORTING_INTERVAL_MS) -> None:
        self.start = time.monotonic()
        self.window_start = self.start
        self.sampling = max(1, num_records // min(max(num_records, 1), 500000))
        self.latencies: list[int] = []
        self.count = self.bytes = self.total_latency = 0
        self.max_latency = 0
        self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0
        self.reporting_interval = reporting_interval_ms / 1000

    def record(self, iteration: int, latency_ms: int, size: int, now: float) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency_ms
        self.window_max_latency = max(self.window_max_latency, latency_ms)
        if iteration % self.sampling == 0:
            self.latencies.append(latency_ms)
        if now - self.window_start >= self.reporting_interval:
            self.print_window(now)
            self.window_start = now
            self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0

    def print_window(self, now: float) -> None:
        elapsed = max(now - self.window_start, 1e-9)
        per_sec = self.window_count / elapsed
        mb_per_sec = self.window_bytes / elapsed / (1024 * 1024)
        avg = self.window_total_latency / max(self.window_count, 1)
        print(f"{self.window_count} records sent, {per_sec:.1f} records/sec ({mb_per_sec:.2f} MB/sec), "
              f"{avg:.1f} ms avg latency, {float(self.window_max_latency):.1f} ms max latency.", flush=True)

    def print_total(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        per_sec = self.count / elapsed
        mb_per_sec = self.bytes / elapsed / (1024 * 1024)
        avg = self.total_latency / self.count if self.count else float("nan")
        p50, p95, p99, p999 = percentiles(self.latencies, 0.5, 0.95, 0.99, 0.999)
        print(f"{self.count} records sent, {per_sec:f} records/sec ({mb_per_sec:.2f} MB/sec), {avg:.2f} ms avg "
              f"latency, {float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, {p99} ms 99th, "
              f"{p999} ms 99.9th.", flush=True)


def percentiles(latencies: list[int], *quantiles: float) -> list[int]:
    """Kafka's rule: sorted samples, the one at index int(q * n)."""
    ordered = sorted(latencies)
    return [ordered[int(q * len(ordered))] if ordered else 0 for q in quantiles]


class Throttler:
    """Kafka's ThroughputThrottler: sleep when the rate so far is above the target, paying a deficit of
    1/target s per record and sleeping only once it reaches 2 ms."""

    def __init__(self, target: int, start: float) -> None:
        self.target = target
        self.start = start
        self.sleep_ns = 1_000_000_000 // target if target > 0 else 0
        self.deficit_ns = 0

    def should_throttle(self, sent: int, now: float) -> bool:
        if self.target < 0:
            return False
        elapsed = now - self.start
        return elapsed > 0 and sent / elapsed > self.target

    async def throttle(self) -> None:
        if self.target == 0:
            await asyncio.Event().wait()  # Kafka sleeps forever
        self.deficit_ns += self.sleep_ns
        if self.deficit_ns >= MIN_SLEEP_NS:
            started = time.monotonic_ns()
            await asyncio.sleep(self.deficit_ns / 1e9)
            slept = time.monotonic_ns() - started
            self.deficit_ns = max(self.deficit_ns - slept, 0)


class SendsFailed(Exception):
    """Some records were not acknowledged (reported in one line, exit 1)."""


async def produce(opts: argparse.Namespace, payloads: list[bytes] | None) -> None:
    from ..clients.producer.producer import AIOProducer

    fixed = bytes(random.randint(65, 90) for _ in range(opts.record_size)) if payloads is None else None
    stats: Stats  # started once the producer is connected
    failures: list[BaseException] = []
    unrecorded = 0  # records sent whose done callback has not run yet

    def on_done(future: asyncio.Future, iteration: int, sent_at: float, size: int) -> None:
        nonlocal unrecorded
        unrecorded -= 1
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            failures.append(error)
            return
        now = time.monotonic()
        stats.record(iteration, int((now - sent_at) * 1000), size, now)

    async with AIOProducer(**opts.kwargs) as producer:
        await producer.partitions_for(opts.topic)  # metadata (and auto-creation) before the clock runs
        stats = Stats(opts.num_records)
        throttler = Throttler(opts.throughput, stats.start)
        for i in range(opts.num_records):
            value = fixed if fixed is not None else random.choice(payloads)  # type: ignore[arg-type]
            sent_at = time.monotonic()
            future = await producer.send(opts.topic, value)
            unrecorded += 1
            future.add_done_callback(lambda f, i=i, t=sent_at, n=len(value): on_done(f, i, t, n))
            if throttler.should_throttle(i + 1, sent_at):
                await throttler.throttle()
            elif i % 256 == 255:
                await asyncio.sleep(0)  # let the sender and the answers in
        await producer.flush()
        while unrecorded:  # flush returns once every future is done; their callbacks are queued, not yet run
            await asyncio.sleep(0)
        stats.print_total()  # before the metrics, as Kafka's tool
        if opts.print_metrics:
            print_producer_metrics(stats)
    if failures:
        raise SendsFailed(f"{len(failures)} of {opts.num_records} records could not be sent to topic {opts.topic}; "
                          f"the first error: {failures[0]}")



def print_producer_metrics(stats: Stats) -> None:
    """A few of the Java producer's metric names, laid out as Kafka's tool prints them."""
    elapsed = max(time.monotonic() - stats.start, 1e-9)
    print_metrics({
        "producer-metrics:record-send-total:{client-id=producer-1}": float(stats.count),
        "producer-metrics:record-send-rate:{client-id=producer-1}": stats.count / elapsed,
        "producer-metrics:outgoing-byte-total:{client-id=producer-1}": float(stats.bytes),
        "producer-metrics:request-latency-avg:{client-id=producer-1}":
            stats.total_latency / stats.count if stats.count else 0.0,
        "producer-metrics:request-latency-max:{client-id=producer-1}": float(stats.max_latency),
    })


def run(opts: argparse.Namespace) -> None:
    payloads = read_payloads(opts.payload_file, opts.payload_delimiter) if opts.payload_file else None
    asyncio.run(produce(opts, payloads))


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, run, argv,
                    (KafkaConfigurationError, failure_report("Invalid producer configuration: {exc}", stderr=True)),
                    ((KafkaError, OSError), failure_report("Error while producing: {exc}", stderr=True)),
                    (SendsFailed, failure_report("{exc}", stderr=True)))


if __name__ == "__main__":
    sys.exit(main())

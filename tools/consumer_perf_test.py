"""odradek-consumer-perf-test: Kafka 2.8's ConsumerPerformance (kafka-consumer-perf-test.sh) on our AIOConsumer.

    odradek-consumer-perf-test --bootstrap-server localhost:9092 --topic perf --messages 100000

As Kafka's tool: subscribe to the topic in group --group (default ``perf-consumer-NNNNN``), from the
earliest offset unless --from-latest, poll every 100 ms until --messages records were read or no
record came for --timeout ms (then the WARNING line Kafka prints), and print one CSV line:

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec

With --show-detailed-stats a line per --reporting-interval instead (``time, threadId, ...``); --print-metrics
adds a few of the Java consumer's metrics after it, in Kafka's table (client id ``consumer-<group>-1``).
rebalance.time.ms is the time until the consumer had its partitions; fetch.time.ms the rest. Sizes
count keys and values. --date-format takes Java's SimpleDateFormat letters (default
``yyyy-MM-dd HH:mm:ss:SSS``). While our consumer cannot join groups, the group is used for its name
only and every partition of the topic is taken.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import time
from datetime import datetime
from typing import Any, Sequence

from ..protocol.errors import KafkaError
from ..clients.types import KafkaConfigurationError
from .common import add_version_flag, failure_report, print_metrics, run_tool
from .kafka_properties import (
    ToolParser, UsageError, bootstrap_servers, consumer_kwargs, load_properties, require,
)

DESCRIPTION = "This tool helps in performance test for the full zookeeper consumer"
HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
MB = 1024 * 1024


def build_parser() -> ToolParser:
    parser = ToolParser("odradek-consumer-perf-test", DESCRIPTION)
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>",
        help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to.")
    add("--broker-list", metavar="<String: broker-list>",
        help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
    add("--topic", metavar="<String: topic>", help="REQUIRED: The topic to consume from.")
    add("--messages", type=int, metavar="<Long: count>", help="REQUIRED: The number of messages to send or consume")
    add("--group", metavar="<String: gid>", help="The group id to consume on. (default: perf-consumer-NNNNN)")
    add("--fetch-size", type=int, default=1024 * 1024, metavar="<Integer: size>",
        help="The amount of data to fetch in a single request. (default: 1048576)")
    add("--from-latest", action="store_true",
        help="If the consumer does not already have an established offset to consume from, start with the "
             "latest message present in the log rather than the earliest message.")
    add("--socket-buffer-size", type=int, default=2 * 1024 * 1024, metavar="<Integer: size>",
        help="The size of the tcp RECV size. (default: 2097152)")
    add("--threads", type=int, metavar="<Integer: count>", help="DEPRECATED AND IGNORED: Number of processing threads.")
    add("--num-fetch-threads", type=int, metavar="<Integer: count>",
        help="DEPRECATED AND IGNORED: Number of fetcher threads.")
    add("--consumer.config", dest="consumer_config", metavar="<String: config file>",
        help="Consumer config properties file.")
    add("--print-metrics", action="store_true", help="Print out the metrics.")
    add("--show-detailed-stats", action="store_true",
        help="If set, stats are reported for each reporting interval as configured by reporting-interval")
    add("--timeout", type=int, default=10000, metavar="<Long: milliseconds>",
        help="The maximum allowed time in milliseconds between returned records. (default: 10000)")
    add("--reporting-interval", type=int, default=5000, metavar="<Integer: interval_ms>",
        help="Interval in milliseconds at which to print progress info. (default: 5000)")
    add("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", metavar="<String: date format>",
        help="The date format to use for formatting the time field. See java.text.SimpleDateFormat for "
             "options. (default: yyyy-MM-dd HH:mm:ss:SSS)")
    add("--hide-header", action="store_true", help="If set, skips printing the header for the stats")
    add_version_flag(parser)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return build_parser().parse_strict(argv, _check)


def _check(opts: argparse.Namespace) -> None:
    """ConsumerPerformance.ConsumerPerfConfig's checks, then the consumer's properties."""
    require(opts, "topic", "messages")
    opts.servers = bootstrap_servers(opts)
    for flag in ("messages", "fetch_size", "timeout", "reporting_interval"):
        value = getattr(opts, flag)
        if value < (0 if flag == "messages" else 1):
            raise UsageError(f"Invalid --{flag.replace('_', '-')} {value}: must be "
                             f"{'non-negative' if flag == 'messages' else 'positive'}")
    opts.formatter = JavaDateFormat(opts.date_format)
    props = load_properties(opts.consumer_config, "--consumer.config") if opts.consumer_config else {}
    props.update({
        "bootstrap.servers": opts.servers,
        "group.id": opts.group or props.get("group.id") or f"perf-consumer-{random.randrange(100000)}",
        "max.partition.fetch.bytes": str(opts.fetch_size),
        "auto.offset.reset": "latest" if opts.from_latest else "earliest",
    })
    # The Java consumer's own default (ConsumerPerformance 2.8 sets none): consumer-<group>-<sequence>.
    props.setdefault("client.id", f"consumer-{props['group.id']}-1")
    opts.kwargs = consumer_kwargs(props)


class JavaDateFormat:
    """The common SimpleDateFormat letters (y M d H h m s S a E Z) and 'quoted' text, in local time."""

    _TOKEN = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+")

    def __init__(self, pattern: str) -> None:
        self.parts: list[Any] = []
        for match in self._TOKEN.finditer(pattern):
            text = match.group(0)
            if match.group(1) is not None:
                self.parts.append(match.group(1) or "'")
            elif match.group(2):
                letter, width = match.group(2), len(text)
                if letter not in "yMdHhmsSaEZ":
                    raise UsageError(f"Invalid --date-format {pattern!r}: unsupported pattern letter {letter!r}")
                self.parts.append((letter, width))
            else:
                self.parts.append(text)

    def format(self, epoch_ms: float) -> str:
        moment = datetime.fromtimestamp(epoch_ms / 1000).astimezone()
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            letter, width = part
            if letter == "y":
                out.append(str(moment.year % 100).zfill(2) if width == 2 else str(moment.year).zfill(width))
            elif letter == "M":
                out.append(moment.strftime("%B" if width >= 4 else "%b") if width >= 3 else str(moment.month).zfill(width))
            elif letter == "S":
                out.append(str(moment.microsecond // 1000).zfill(width))
            elif letter == "a":
                out.append(moment.strftime("%p"))
            elif letter == "E":
                out.append(moment.strftime("%A" if width >= 4 else "%a"))
            elif letter == "Z":
                out.append(moment.strftime("%z"))
            else:
                value = {"d": moment.day, "H": moment.hour, "h": (moment.hour % 12) or 12,
                         "m": moment.minute, "s": moment.second}[letter]
                out.append(str(value).zfill(width))
        return "".join(out)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _progress(opts: argparse.Namespace, bytes_read: int, last_bytes: int, read: int, last_read: int,
              start_ms: int, end_ms: int, join_ms: int) -> None:
    """ConsumerPerformance.printConsumerProgress (thread id always 0)."""
    elapsed = max(end_ms - start_ms, 1)
    interval_mb = (bytes_read - last_bytes) / MB
    fetch_ms = end_ms - start_ms - join_ms
    fetch_mb_sec, fetch_msg_sec = ((0.0, 0.0) if fetch_ms <= 0 else
                                   (1000.0 * interval_mb / fetch_ms, 1000.0 * (read - last_read) / fetch_ms))
    print(f"{opts.formatter.format(end_ms)}, 0, {bytes_read / MB:.4f}, {1000.0 * interval_mb / elapsed:.4f}, {read}, "
          f"{(read - last_read) / elapsed * 1000.0:.4f}, {join_ms}, {fetch_ms}, {fetch_mb_sec:.4f}, "
          f"{fetch_msg_sec:.4f}", flush=True)


async def consume(opts: argparse.Namespace) -> None:
    from ..clients.consumer.consumer import AIOConsumer

    kwargs = dict(opts.kwargs)
    consumer = AIOConsumer(**kwargs)
    try:
        await consumer.start()
        start_ms = _now_ms()
        try:
            await consumer.subscribe([opts.topic])
        except NotImplementedError:  # no group membership in our consumer yet: every partition, no group
            await consumer.close()
            kwargs.pop("group_id", None)
            consumer = AIOConsumer(**kwargs)
            await consumer.start()
            await consumer.subscribe([opts.topic])
        join_ms = None if not consumer.assignment() else _now_ms() - start_ms
        read = bytes_read = last_read = last_bytes = 0
        now = last_report = last_consumed = _now_ms()
        join_in_round = join_ms or 0
        while read < opts.messages and now - last_consumed <= opts.timeout:
            batches = await consumer.getmany(timeout_ms=100, max_records=opts.messages - read)
            now = _now_ms()
            if join_ms is None and consumer.assignment():  # partitions arrive with the group's assignment
                join_ms = join_in_round = now - start_ms
            records = [r for rs in batches.values() for r in rs]
            if records:
                last_consumed = now
            for record in records:
                read += 1
                bytes_read += max(record.serialized_key_size, 0) + max(record.serialized_value_size, 0)
                if now - last_report >= opts.reporting_interval:
                    if opts.show_detailed_stats:
                        _progress(opts, bytes_read, last_bytes, read, last_read, last_report, now, join_in_round)
                    join_in_round = 0
                    last_report, last_read, last_bytes = now, read, bytes_read
        if read < opts.messages:
            print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({opts.timeout} ms) "
                  f"exceeded. You can use the --timeout option to increase the timeout.", flush=True)
        end_ms = _now_ms()
    finally:
        await consumer.close()
    if not opts.show_detailed_stats:
        elapsed_s = max(end_ms - start_ms, 1) / 1000.0
        join = join_ms or 0
        fetch_ms = end_ms - start_ms - join
        mb = bytes_read / MB
        fetch_s = fetch_ms / 1000.0
        print(f"{opts.formatter.format(start_ms)}, {opts.formatter.format(end_ms)}, {mb:.4f}, {mb / elapsed_s:.4f}, "
              f"{read}, {read / elapsed_s:.4f}, {join}, {fetch_ms}, "
              f"{mb / fetch_s if fetch_s > 0 else 0.0:.4f}, {read / fetch_s if fetch_s > 0 else 0.0:.4f}", flush=True)
    if opts.print_metrics:  # after the stats, as Kafka's tool
        print_consumer_metrics(opts, read, bytes_read, max(end_ms - start_ms, 1) / 1000.0)


def print_consumer_metrics(opts: argparse.Namespace, read: int, bytes_read: int, elapsed_s: float) -> None:
    """A few of the Java consumer's fetch-manager metrics, laid out as Kafka's tool prints them."""
    tags = f"{{client-id={opts.kwargs['client_id']}}}"
    print_metrics({f"consumer-fetch-manager-metrics:{name}:{tags}": value for name, value in (
        ("records-consumed-total", float(read)), ("records-consumed-rate", read / elapsed_s),
        ("bytes-consumed-total", float(bytes_read)), ("bytes-consumed-rate", bytes_read / elapsed_s))})


def run(opts: argparse.Namespace) -> None:
    if not opts.hide_header:
        print((DETAILED_HEADER if opts.show_detailed_stats else HEADER) + NEW_FIELDS, flush=True)
    asyncio.run(consume(opts))


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, run, argv,
                    (KafkaConfigurationError, failure_report("Invalid consumer configuration: {exc}", stderr=True)),
                    ((KafkaError, OSError), failure_report("Error while consuming: {exc}", stderr=True)))


if __name__ == "__main__":
    sys.exit(main())

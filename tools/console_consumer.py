"""odradek-console-consumer: records to stdout, as Kafka 2.8's kafka-console-consumer.sh.

    odradek-console-consumer --bootstrap-server localhost:9092 --topic events --from-beginning \\
        --property print.key=true --property print.offset=true --max-messages 10

ConsoleConsumer's rules (Kafka 2.8): exactly one of --topic / --whitelist (--include); --partition
needs --topic and consumes that partition alone (assign, then seek to --offset: earliest, latest
(default) or a number; --from-beginning means earliest); --offset without --partition, --partition
with --group, and --from-beginning with --offset are usage errors. Without --group (or group.id in
the properties) the group is a random ``console-consumer-NNNNN`` with auto-commit off. Group ids
given in several places must agree. Records are printed by DefaultMessageFormatter's rules (see
``MessageFormatter``). --timeout-ms ends the run when a poll of that long returns nothing, logged as
Kafka logs its TimeoutException; the tool always ends with "Processed a total of N messages" on stderr.

--topic and --whitelist subscribe in the group (a pattern subscription for --whitelist, so topics
created later are picked up); a consumer without group membership (AIOConsumer.subscribe raising
NotImplementedError) falls back to every partition of the matching topics, without a group.
"""

from __future__ import annotations

import argparse
import inspect
import random
import re
import signal
import sys
from typing import Any, BinaryIO, Sequence

from ..protocol.errors import KafkaError
from ..clients.types import ConsumerRecord, KafkaConfigurationError, TopicPartition
from .common import add_version_flag, run_tool
from .tool_log import log_line
from .kafka_properties import (
    ToolParser, UsageError, consumer_kwargs, key_values, load_properties, require,
)

DESCRIPTION = "This tool helps to read data from Kafka topics and outputs it to standard output."
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
EARLIEST, LATEST = "earliest", "latest"


def build_parser() -> ToolParser:
    parser = ToolParser("odradek-console-consumer", DESCRIPTION)
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>",
        help="REQUIRED: The server(s) to connect to.")
    add("--topic", metavar="<String: topic>", help="The topic id to consume on.")
    add("--whitelist", "--include", dest="whitelist", metavar="<String: whitelist>",
        help="Regular expression specifying whitelist of topics to include for consumption.")
    add("--partition", type=int, metavar="<Integer: partition>",
        help="The partition to consume from. Consumption starts from the end of the partition unless "
             "'--offset' is specified.")
    add("--offset", metavar="<String: consume offset>",
        help="The offset id to consume from (a non-negative number), or 'earliest' which means from beginning, "
             "or 'latest' which means from end (default: latest)")
    add("--consumer-property", action="append", default=[], metavar="<String: consumer_prop>",
        help="A mechanism to pass user-defined properties in the form key=value to the consumer.")
    add("--consumer.config", dest="consumer_config", metavar="<String: config file>",
        help="Consumer config properties file. Note that [consumer-property] takes precedence over this config.")
    add("--formatter", metavar="<String: class>",
        help="Only kafka.tools.DefaultMessageFormatter (the default) is available.")
    add("--property", action="append", default=[], metavar="<String: prop>",
        help="The properties to initialize the message formatter. Default properties include: print.timestamp="
             "false, print.key=false, print.offset=false, print.partition=false, print.headers=false, "
             "print.value=true, key.separator=<tab>, line.separator=<newline>, headers.separator=<comma>, "
             "null.literal=null")
    add("--from-beginning", action="store_true",
        help="If the consumer does not already have an established offset to consume from, start with the "
             "earliest message present in the log rather than the latest message.")
    add("--max-messages", type=int, metavar="<Integer: num_messages>",
        help="The maximum number of messages to consume before exiting. If not set, consumption is continual.")
    add("--timeout-ms", type=int, metavar="<Integer: timeout_ms>",
        help="If specified, exit if no message is available for consumption for the specified interval.")
    add("--skip-message-on-error", action="store_true",
        help="If there is an error when processing a message, skip it instead of halt.")
    add("--key-deserializer", metavar="<String: deserializer for key>", help=argparse.SUPPRESS)
    add("--value-deserializer", metavar="<String: deserializer for values>", help=argparse.SUPPRESS)
    add("--isolation-level", default="read_uncommitted", metavar="<String>",
        help="Set to read_committed in order to filter out transactional messages which are not committed. Set "
             "to read_uncommitted to read all messages. (default: read_uncommitted)")
    add("--group", metavar="<String: consumer group id>", help="The consumer group id of the consumer.")
    add_version_flag(parser)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return build_parser().parse_strict(argv, _check)


def _check(opts: argparse.Namespace) -> None:
    """ConsoleConsumer.ConsumerConfig's checks, in Kafka 2.8's order and wording."""
    if (opts.topic is None) == (opts.whitelist is None):
        raise UsageError("Exactly one of whitelist/topic is required.")
    if opts.partition is not None:
        if opts.topic is None:
            raise UsageError("The topic is required when partition is specified.")
        if opts.from_beginning and opts.offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
        if opts.partition < 0:
            raise UsageError(f"Invalid --partition {opts.partition}: must be non-negative")
    elif opts.offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    opts.start = _start_offset(opts)
    require(opts, "bootstrap-server")
    if opts.formatter not in (None, "kafka.tools.DefaultMessageFormatter"):
        raise UsageError(f"Invalid --formatter {opts.formatter!r}: only kafka.tools.DefaultMessageFormatter "
                         f"is available")
    if opts.isolation_level not in ("read_uncommitted", "read_committed"):
        raise UsageError(f"Invalid --isolation-level {opts.isolation_level!r}: accepted values are "
                         f"read_committed, read_uncommitted")
    for flag in ("max_messages", "timeout_ms"):
        value = getattr(opts, flag)
        if value is not None and value < 0:
            raise UsageError(f"Invalid --{flag.replace('_', '-')} {value}: must be non-negative")
    if opts.whitelist is not None:
        try:
            opts.pattern = re.compile(opts.whitelist.strip().strip("'\"").replace(",", "|"))  # Kafka's IncludeList
        except re.error as exc:
            raise UsageError(f"Invalid --whitelist {opts.whitelist!r}: {exc}") from None
    opts.consumer = consumer_properties(opts)
    opts.formatter_props = key_values(opts.property, "--property")


def _start_offset(opts: argparse.Namespace) -> str | int:
    if opts.offset is None:
        return EARLIEST if opts.from_beginning else LATEST
    text = opts.offset.lower()
    if text in (EARLIEST, LATEST):
        return text
    try:
        offset = int(text)
    except ValueError:
        offset = -1
    if offset < 0:
        raise UsageError(f"The provided offset value '{opts.offset}' is incorrect. Valid values are 'earliest', "
                         f"'latest', or a non-negative long.")
    return offset


def consumer_properties(opts: argparse.Namespace) -> dict[str, str]:
    """File < --consumer-property < the tool's settings; the group id as ConsoleConsumer 2.8 picks it."""
    file_props = load_properties(opts.consumer_config, "--consumer.config") if opts.consumer_config else {}
    extra = key_values(opts.consumer_property, "--consumer-property")
    props = {**file_props, **extra}
    groups = []
    for group in (opts.group, file_props.get("group.id"), extra.get("group.id")):
        if group is not None and group not in groups:
            groups.append(group)
    if len(groups) > 1:
        raise UsageError("The group ids provided in different places (directly using '--group', via "
                         "'--consumer-property', or via '--consumer.config') do not match. Detected group ids: "
                         + ", ".join(f"'{g}'" for g in groups))
    opts.group_passed = bool(groups)
    if groups:
        props["group.id"] = groups[0]
        if opts.partition is not None:
            raise UsageError("Options group and partition cannot be specified together.")
    else:
        props["group.id"] = f"console-consumer-{random.randrange(100000)}"
        props.setdefault("enable.auto.commit", "false")  # the random group is never used again
    reset = props.get("auto.offset.reset")
    if reset is not None and opts.from_beginning and reset != EARLIEST:
        raise UsageError(f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', please "
                         f"remove one option")
    props.setdefault("auto.offset.reset", EARLIEST if opts.from_beginning else LATEST)
    props["bootstrap.servers"] = opts.bootstrap_server
    props["isolation.level"] = opts.isolation_level
    props.setdefault("client.id", "console-consumer")
    return props


def _flag(props: dict[str, str], name: str, default: bool) -> bool:
    return props[name].strip().lower() == "true" if name in props else default


def _unescape(text: str) -> str:
    """The shell hands "\\t" over as two characters; Kafka's formatter takes the escapes (StringEscapeUtils)."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


class MessageFormatter:
    """Kafka 2.8's DefaultMessageFormatter: timestamp, partition, offset, headers, key, value, in that
    order, each printed only when asked for, columns split by key.separator, lines ended by line.separator."""

    def __init__(self, props: dict[str, str]) -> None:
        self.print_timestamp = _flag(props, "print.timestamp", False)
        self.print_key = _flag(props, "print.key", False)
        self.print_offset = _flag(props, "print.offset", False)
        self.print_partition = _flag(props, "print.partition", False)
        self.print_headers = _flag(props, "print.headers", False)
        self.print_value = _flag(props, "print.value", True)
        self.key_separator = _unescape(props.get("key.separator", "\t")).encode("utf-8")
        self.line_separator = _unescape(props.get("line.separator", "\n")).encode("utf-8")
        self.headers_separator = _unescape(props.get("headers.separator", ",")).encode("utf-8")
        self.null_literal = props.get("null.literal", "null").encode("utf-8")

    def format(self, record: ConsumerRecord) -> bytes:
        out: list[bytes] = []
        wanted = [self.print_timestamp, self.print_partition, self.print_offset, self.print_headers,
                  self.print_key, self.print_value]

        def column(index: int, data: bytes) -> None:
            out.append(data)
            if index < 5:  # the value always ends the line; the others end it when nothing follows
                out.append(self.key_separator if any(wanted[index + 1:]) else self.line_separator)

        if self.print_timestamp:
            if record.timestamp < 0:
                column(0, b"NO_TIMESTAMP")
            else:
                kind = "LogAppendTime" if record.timestamp_type == 1 else "CreateTime"
                column(0, f"{kind}:{record.timestamp}".encode())
        if self.print_partition:
            column(1, f"Partition:{record.partition}".encode())
        if self.print_offset:
            column(2, f"Offset:{record.offset}".encode())
        if self.print_headers:
            headers = [key.encode("utf-8") + b":" + (self.null_literal if value is None else value)
                       for key, value in record.headers or ()]
            column(3, self.headers_separator.join(headers) if headers else b"NO_HEADERS")
        if self.print_key:
            column(4, self.null_literal if record.key is None else record.key)
        if self.print_value:
            out.append(self.null_literal if record.value is None else record.value)
            out.append(self.line_separator)
        return b"".join(out)


def _log(level: str, message: str) -> None:
    log_line(level, message, "kafka.tools.ConsoleConsumer$")


class _Stop(Exception):
    """SIGTERM: stop as Kafka's shutdown hook does (close the consumer, report the count)."""


def _open_consumer(opts: argparse.Namespace) -> Any:
    """A started Consumer, assigned (--partition) or subscribed (--topic / --whitelist)."""
    from ..clients.consumer.consumer import AIOConsumer
    from ..clients.consumer.sync_consumer import Consumer

    kwargs = consumer_kwargs(opts.consumer)
    consumer = Consumer(**kwargs)
    try:
        if opts.partition is not None:
            tp = TopicPartition(opts.topic, opts.partition)
            partitions = consumer.partitions_for_topic(opts.topic)
            if opts.partition not in partitions:
                raise KafkaError(f"Partition {opts.partition} of topic {opts.topic} does not exist "
                                 f"(it has {len(partitions)})")
            consumer.assign([tp])
            if opts.start == EARLIEST:
                consumer.seek_to_beginning(tp)
            elif opts.start == LATEST:
                consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, opts.start)
            return consumer
        if opts.whitelist is not None and "pattern" in inspect.signature(AIOConsumer.subscribe).parameters:
            consumer.subscribe(pattern=opts.pattern)  # the group follows topics created later, as Kafka's
            return consumer
        topics = [opts.topic] if opts.topic is not None else sorted(
            t for t in consumer.topics() if t not in INTERNAL_TOPICS and opts.pattern.fullmatch(t))
        try:
            consumer.subscribe(topics)
        except NotImplementedError:  # a consumer without group membership: every partition, no group
            consumer.close()
            kwargs.pop("group_id", None)
            kwargs.pop("enable_auto_commit", None)
            consumer = Consumer(**kwargs)
            consumer.subscribe(topics)
        return consumer
    except BaseException:
        consumer.close()
        raise


def run(opts: argparse.Namespace, out: BinaryIO | None = None) -> int:
    out = out or sys.stdout.buffer
    formatter = MessageFormatter(opts.formatter_props)
    count = 0
    previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(_Stop()))
    consumer = None
    status = 0
    try:
        consumer = _open_consumer(opts)
        if opts.topic is not None and opts.partition is None and opts.topic not in consumer.topics():
            # Kafka's consumer waits for the topic too, warning from its NetworkClient meanwhile.
            log_line("WARN", f"Error while fetching metadata: {{{opts.topic}=UNKNOWN_TOPIC_OR_PARTITION}}; "
                     "waiting for the topic", "org.apache.kafka.clients.NetworkClient")
        limit = opts.max_messages
        while limit is None or count < limit:
            # ConsumerWrapper.receive: one poll of timeout-ms that returns nothing is a TimeoutException
            batches = consumer.poll(timeout_ms=opts.timeout_ms if opts.timeout_ms is not None else 1000,
                                    max_records=None if limit is None else limit - count)
            records = [r for rs in batches.values() for r in rs]
            if not records and opts.timeout_ms is not None:
                _log("ERROR", "Error processing message, terminating consumer process: ")
                print(f"org.apache.kafka.common.errors.TimeoutException: no message within --timeout-ms "
                      f"{opts.timeout_ms} ms", file=sys.stderr)
                break
            for record in records:
                count += 1
                try:
                    out.write(formatter.format(record))
                except BrokenPipeError:
                    print("Unable to write to standard out, closing consumer.", file=sys.stderr)
                    return 0
                except Exception as exc:
                    if not opts.skip_message_on_error:
                        raise
                    _log("ERROR", f"Error processing message, skipping this message: {exc}")
            out.flush()
    except (KeyboardInterrupt, _Stop):
        pass
    except (KafkaError, OSError, KafkaConfigurationError, ValueError) as exc:
        _log("ERROR", f"Error processing message, terminating consumer process: {exc}")
        status = 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        try:
            out.flush()
        except BrokenPipeError:
            pass
        if consumer is not None:
            consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())

"""odradek-console-producer: one record per line of stdin, as Kafka 2.8's kafka-console-producer.sh.

    odradek-console-producer --bootstrap-server localhost:9092 --topic events \\
        --property parse.key=true --property key.separator=:

Flags and defaults are ConsoleProducer's (Kafka 2.8): --request-required-acks 1, --timeout 1000 ms
(linger.ms), --request-timeout-ms 1500, --message-send-max-retries 3, client.id console-producer.
The line reader is LineMessageReader's: ``parse.key`` splits each line at the first ``key.separator``
(TAB by default); a line without one stops the tool with "No key found on line N" unless
``ignore.error=true``, which sends the whole line as a value without key. The ">" prompt is printed
only when stdin and stdout are a terminal (``System.console() != null``). At EOF the producer flushes
(``delivery.timeout.ms`` bounds that) and the tool exits. The first failed send is logged on stderr as
Kafka's ErrorLoggingCallback does; Kafka logs every one, which buries the cause under thousands of
identical lines when a topic cannot be written (too few in-sync replicas, a leader gone), so we count
the others and say how many at the end, and exit 1 if any send failed (Kafka exits 0).

Precedence of producer settings: --producer.config file < --producer-property < the tool's own flags
given explicitly < the tool's defaults for what is still unset. Kafka 2.8 let the flags' defaults
override --producer-property (so ``--producer-property acks=all`` was silently ignored); Kafka 3.0
fixed that (``CommandLineUtils.maybeMergeOptions``), and we follow the fix.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, BinaryIO, Iterator, Sequence

from ..protocol.errors import KafkaError
from ..clients.types import KafkaConfigurationError
from .common import add_version_flag, run_tool
from .tool_log import log_line
from .kafka_properties import (
    ToolParser, UsageError, bootstrap_servers, key_values, load_properties, producer_kwargs, require,
)

DESCRIPTION = "This tool helps to read data from standard input and publish it to Kafka."
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("all", "-1", "0", "1")
# flag dest -> (Kafka property, default as ConsoleProducer 2.8 sets it)
_FLAG_PROPERTIES = {
    "request_required_acks": ("acks", "1"),
    "timeout": ("linger.ms", "1000"),
    "request_timeout_ms": ("request.timeout.ms", "1500"),
    "message_send_max_retries": ("retries", "3"),
    "retry_backoff_ms": ("retry.backoff.ms", "100"),
    "max_block_ms": ("max.block.ms", "60000"),
    "max_memory_bytes": ("buffer.memory", "33554432"),
    "max_partition_memory_bytes": ("batch.size", "16384"),
    "batch_size": ("batch.size", "16384"),  # 2.8 ignored --batch-size; 3.0 maps it onto batch.size
    "metadata_expiry_ms": ("metadata.max.age.ms", "300000"),
}


def build_parser() -> ToolParser:
    parser = ToolParser("odradek-console-producer", DESCRIPTION)
    add = parser.add_argument
    add("--bootstrap-server", metavar="<String: server to connect to>",
        help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to. The broker "
             "list string in the form HOST1:PORT1,HOST2:PORT2.")
    add("--broker-list", metavar="<String: broker-list>",
        help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
    add("--topic", metavar="<String: topic>", help="REQUIRED: The topic id to produce messages to.")
    add("--sync", action="store_true",
        help="If set message send requests to the brokers are synchronously, one at a time as they arrive.")
    add("--compression-codec", nargs="?", const="gzip", metavar="[String: compression-codec]",
        help="The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'. If specified without "
             "value, then it defaults to 'gzip'")
    add("--batch-size", type=int, metavar="<Integer: size>",
        help="Number of bytes to send in a single batch if they are not being sent synchronously "
             "(batch.size). (default: 16384)")
    add("--message-send-max-retries", type=int, metavar="<Integer>",
        help="The number of retries before the producer gives up and drops the message (retries). (default: 3)")
    add("--retry-backoff-ms", type=int, metavar="<Long>",
        help="The time to wait before each retry (retry.backoff.ms). (default: 100)")
    add("--timeout", type=int, metavar="<Long: timeout_ms>",
        help="If set and the producer is running in asynchronous mode, this gives the maximum amount of time a "
             "message will queue awaiting sufficient batch size. The value is given in ms (linger.ms). "
             "(default: 1000)")
    add("--request-required-acks", metavar="<String: request required acks>",
        help="The required acks of the producer requests (default: 1)")
    add("--request-timeout-ms", type=int, metavar="<Integer: request timeout ms>",
        help="The ack timeout of the producer requests. Value must be non-negative and non-zero "
             "(default: 1500)")
    add("--metadata-expiry-ms", type=int, metavar="<Long: metadata expiration interval>",
        help="The period of time in milliseconds after which we force a refresh of metadata "
             "(metadata.max.age.ms). (default: 300000)")
    add("--max-block-ms", type=int, metavar="<Long: max block on send>",
        help="The max time that the producer will block for during a send request (default: 60000)")
    add("--max-memory-bytes", type=int, metavar="<Long: total memory in bytes>",
        help="The total memory used by the producer to buffer records waiting to be sent to the server "
             "(buffer.memory). (default: 33554432)")
    add("--max-partition-memory-bytes", type=int, metavar="<Long: memory in bytes per partition>",
        help="The buffer size allocated for a partition (batch.size). (default: 16384)")
    add("--socket-buffer-size", type=int, metavar="<Integer: size>",
        help="The size of the tcp RECV size (accepted; the operating system's default is used).")
    add("--line-reader", metavar="<String: reader_class>",
        help="Only kafka.tools.ConsoleProducer$LineMessageReader (the default) is available.")
    add("--property", action="append", default=[], metavar="<String: prop>",
        help="Properties for the line reader: parse.key=true, key.separator=<sep> (default TAB), "
             "ignore.error=true.")
    add("--producer-property", action="append", default=[], metavar="<String: producer_prop>",
        help="A mechanism to pass user-defined properties in the form key=value to the producer.")
    add("--producer.config", dest="producer_config", metavar="<String: config file>",
        help="Producer config properties file. Note that [producer-property] takes precedence over this config.")
    add_version_flag(parser)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = build_parser()
    opts = parser.parse_strict(argv)
    require(opts, "topic")
    opts.servers = bootstrap_servers(opts)
    if opts.compression_codec is not None and opts.compression_codec.lower() not in CODECS:
        raise UsageError(f"Invalid --compression-codec {opts.compression_codec!r}: accepted values are "
                         f"{', '.join(CODECS)}")
    if opts.request_required_acks is not None and opts.request_required_acks.lower() not in ACKS:
        raise UsageError(f"Invalid --request-required-acks {opts.request_required_acks!r}: accepted values are "
                         f"all, -1, 0, 1")
    if opts.line_reader not in (None, "kafka.tools.ConsoleProducer$LineMessageReader"):
        raise UsageError(f"Invalid --line-reader {opts.line_reader!r}: only "
                         f"kafka.tools.ConsoleProducer$LineMessageReader is available")
    for flag in ("timeout", "request_timeout_ms", "batch_size", "max_block_ms"):
        value = getattr(opts, flag)
        if value is not None and value < (1 if flag == "request_timeout_ms" else 0):
            raise UsageError(f"Invalid --{flag.replace('_', '-')} {value}: must be "
                             f"{'positive' if flag == 'request_timeout_ms' else 'non-negative'}")
    opts.reader = key_values(opts.property, "--property")
    opts.producer = producer_properties(opts)
    opts.kwargs = producer_kwargs(opts.producer)
    return opts


def producer_properties(opts: argparse.Namespace) -> dict[str, str]:
    """The producer's Kafka properties (see the module docstring for the precedence)."""
    props = load_properties(opts.producer_config, "--producer.config") if opts.producer_config else {}
    props.update(key_values(opts.producer_property, "--producer-property"))
    for flag, (name, default) in _FLAG_PROPERTIES.items():
        value = getattr(opts, flag)
        if value is not None:
            props[name] = str(value)
    for flag, (name, default) in _FLAG_PROPERTIES.items():
        props.setdefault(name, default)
    if opts.compression_codec is not None:
        props["compression.type"] = opts.compression_codec.lower()
    props.setdefault("compression.type", "none")
    props["bootstrap.servers"] = opts.servers
    props.setdefault("client.id", "console-producer")
    return props


class LineReader:
    """Kafka's LineMessageReader: one (key, value) per line of ``stream``."""

    def __init__(self, stream: BinaryIO, props: dict[str, str], prompt: bool) -> None:
        self.stream = stream
        self.parse_key = props.get("parse.key", "false").strip().lower() == "true"
        self.key_separator = props.get("key.separator", "\t")
        self.ignore_error = props.get("ignore.error", "false").strip().lower() == "true"
        self.prompt = prompt
        self.line_number = 0

    def __iter__(self) -> Iterator[tuple[bytes | None, bytes]]:
        while True:
            self.line_number += 1
            if self.prompt:
                sys.stdout.write(">")
                sys.stdout.flush()
            raw = self.stream.readline()
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
            yield self.parse(line)

    def parse(self, line: str) -> tuple[bytes | None, bytes]:
        if not self.parse_key:
            return None, line.encode("utf-8")
        cut = line.find(self.key_separator)
        if cut < 0:
            if self.ignore_error:
                return None, line.encode("utf-8")
            raise ValueError(f"No key found on line {self.line_number}: {line}")
        return line[:cut].encode("utf-8"), line[cut + len(self.key_separator):].encode("utf-8")


def _log(level: str, message: str, logger: str) -> None:
    """A line in Kafka's tools-log4j layout: ``[date] LEVEL message (logger)``."""
    log_line(level, message, logger)


class SendFailures:
    """The failed sends: the first logged at once in ErrorLoggingCallback's words, the rest counted."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.count = 0  # callbacks run on the producer's one thread

    def errback(self, key: bytes | None, value: bytes) -> Any:
        def log(error: BaseException) -> None:
            self.count += 1
            if self.count == 1:
                key_text = "null" if key is None else f"{len(key)} bytes"
                _log("ERROR", f"Error when sending message to topic {self.topic} with key: {key_text}, value: "
                     f"{len(value)} bytes with error: {error}",
                     "org.apache.kafka.clients.producer.internals.ErrorLoggingCallback")
        return log

    def report(self) -> None:
        if self.count > 1:
            _log("ERROR", f"{self.count - 1} more messages to topic {self.topic} failed (the first error is above)",
                 "kafka.tools.ConsoleProducer$")


def run(opts: argparse.Namespace, stdin: BinaryIO | None = None) -> int:
    from ..clients.producer.sync_producer import Producer

    stdin = stdin or sys.stdin.buffer
    prompt = sys.stdin.isatty() and sys.stdout.isatty()
    try:
        producer = Producer(**opts.kwargs)
    except (KafkaConfigurationError, ValueError) as exc:
        print(f"Invalid producer configuration: {exc}", file=sys.stderr)
        return 1
    except (KafkaError, OSError) as exc:
        _log("ERROR", f"Could not connect to {opts.servers}: {exc}", "kafka.tools.ConsoleProducer$")
        return 1
    reader = LineReader(stdin, opts.reader, prompt)
    failures = SendFailures(opts.topic)
    status = 0
    try:
        for key, value in reader:
            future = producer.send(opts.topic, value, key=key)
            if opts.sync:
                future.get()
            else:
                future.add_errback(failures.errback(key, value))
    except ValueError as exc:  # a line without key: Kafka throws and exits 1 (the shutdown hook closes the producer)
        _log("ERROR", str(exc), "kafka.tools.ConsoleProducer$")
        status = 1
    except KafkaError as exc:  # --sync: the failed send stops the tool
        _log("ERROR", f"Error when sending message to topic {opts.topic}: {exc}", "kafka.tools.ConsoleProducer$")
        status = 1
    except KeyboardInterrupt:
        status = 130
    finally:
        producer.close()
    failures.report()
    return status or (1 if failures.count else 0)


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())

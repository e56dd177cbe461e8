"""``odradek-replica-verification``: Kafka 2.8's ReplicaVerificationTool (kafka-replica-verification.sh).

Checks that every replica of the matching topics holds the same data and reports how far verification
lags behind the high watermark::

    odradek-replica-verification --broker-list localhost:9092 --topic-white-list 'events.*' \\
        --report-interval-ms 5000
    2026-11-21 08:53:10,123: verification process is started.
    2026-11-21 08:53:15,130: max lag is 0 for partition events-0 at offset 1200 among 8 partitions

As Kafka's tool: the topics' partitions and replicas come from the metadata (internal topics included);
fetching starts at --time's offsets (-1 latest, -2 earliest, else the first offset at or after that
timestamp); each round sends one Fetch with replica id -2 (Kafka's DebuggingConsumerId, which brokers let
read followers, below their high watermark) to every broker hosting a replica, waits for all answers, then
walks the replicas' batches in step: a batch counts only below its replica's high watermark; the first
replica's batch is the reference; a different last offset is printed and ends the tool with exit code 1,
a different checksum (the batch CRC) is printed and verification goes on. The verified offset moves past a
batch every replica holds. Every --report-interval-ms the largest (high watermark - verified offset) is
printed with its partition. A broker that cannot be reached counts as an empty answer, so its partitions
wait for it (as Kafka). The tool runs until interrupted.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Sequence

from ..protocol.api_keys import ApiKey
from ..protocol.errors import KafkaError  # type: ignore[attr-defined]
from ..protocol.messages import FetchRequest
from ..protocol.records.batch import iter_batches
from ..clients.security.client_security import client_security
from ..clients.simple_client import SimpleClient
from .common import Parser, UsageError, command_config_security, failure_report, parse_known, run_tool
from .tool_log import log4j_timestamp

DEBUGGING_CONSUMER_ID = -2  # Kafka's Request.DebuggingConsumerId
LATEST, EARLIEST = -1, -2
DEFAULT_FETCH_SIZE = 1048576  # ConsumerConfig.DEFAULT_MAX_PARTITION_FETCH_BYTES
FETCH_MAX_BYTES = 52428800    # ConsumerConfig.DEFAULT_FETCH_MAX_BYTES, the request's overall limit
CLIENT_ID = "replicaVerificationTool"
# How long a broker may take past --max-wait-ms before its answer counts as empty. Kafka waits for the
# consumer's request.timeout.ms (30 s); a stopped broker then stalls every round that long, so we wait 10 s.
RESPONSE_GRACE_S = 10.0

TopicPartition = tuple[str, int]


def now_string(ms: float | None = None) -> str:
    """Kafka's "yyyy-MM-dd HH:mm:ss,SSS" in local time."""
    return log4j_timestamp(datetime.fromtimestamp((time.time() * 1000 if ms is None else ms) / 1000.0))


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


# -- command line ---------------------------------------------------------------------------------

@dataclass
class VerificationOptions:
    broker_list: str
    topic_pattern: re.Pattern
    fetch_size: int = DEFAULT_FETCH_SIZE
    max_wait_ms: int = 1000
    initial_time: int = LATEST
    report_interval_ms: int = 30000
    security: dict = field(default_factory=dict)  # --command-config's TLS/SASL keywords (an Odradek addition)


def _parser() -> Parser:
    parser = Parser(prog="odradek-replica-verification",
                    description="Validate that all replicas for a set of topics have the same data.")
    parser.add_argument("--broker-list", help="REQUIRED: The list of hostname and port of the server to connect to.",
                        metavar="hostname:port,...,hostname:port")
    parser.add_argument("--bootstrap-server", help="The same as --broker-list.", metavar="hostname:port,...")
    parser.add_argument("--fetch-size", default=str(DEFAULT_FETCH_SIZE), metavar="bytes",
                        help="The fetch size of each request.")
    parser.add_argument("--max-wait-ms", default="1000", metavar="ms",
                        help="The max amount of time each fetch request waits.")
    parser.add_argument("--topic-white-list", default=".*", metavar="Java regex (String)",
                        help="White list of topics to verify replica consistency. Defaults to all topics.")
    parser.add_argument("--time", default="-1", metavar="timestamp/-1(latest)/-2(earliest)",
                        help="Timestamp for getting the initial offsets.")
    parser.add_argument("--report-interval-ms", default="30000", metavar="ms", help="The reporting interval.")
    parser.add_argument("--command-config", metavar="<String: config file>",
                        help="Client properties for a secured cluster (security.protocol, sasl.*, ssl.*); Kafka's "
                             "tool has no such flag.")
    return parser


def _int(flag: str, value: str, minimum: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or (minimum is not None and number < minimum):
        wanted = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise UsageError(f"--{flag} {value!r}: expected {wanted}")
    return number


def include_list_pattern(regex: str) -> re.Pattern:
    """Kafka's IncludeList: commas mean "or", spaces and surrounding quotes are dropped, the whole name
    must match."""
    cleaned = regex.strip().replace(",", "|").replace(" ", "")
    cleaned = re.sub(r"""^["']+""", "", cleaned)
    cleaned = re.sub(r"""["']+$""", "", cleaned)
    try:
        return re.compile(cleaned)
    except re.error:
        raise UsageError(f"{regex} is an invalid regex.") from None


_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\s,]+):[0-9]+$")


def parse_args(argv: Sequence[str]) -> VerificationOptions:
    if not argv:  # as Kafka: no arguments at all prints the tool's purpose with the usage
        raise UsageError("Validate that all replicas for a set of topics have the same data. "
                         "Missing required argument \"[broker-list]\"")
    opts = parse_known(_parser(), argv)
    brokers = opts.broker_list or opts.bootstrap_server
    if not brokers:
        raise UsageError("Missing required argument \"[broker-list]\"")
    if not all(_HOST_PORT.match(b.strip()) for b in brokers.split(",")):  # ToolsUtils.validatePortOrDie
        raise UsageError(f"--broker-list {brokers!r}: Please provide valid host:port like host1:9091,host2:9092")
    return VerificationOptions(
        broker_list=brokers, topic_pattern=include_list_pattern(opts.topic_white_list),
        fetch_size=_int("fetch-size", opts.fetch_size, 1), max_wait_ms=_int("max-wait-ms", opts.max_wait_ms, 0),
        initial_time=_int("time", opts.time, -2), report_interval_ms=_int("report-interval-ms",
                                                                         opts.report_interval_ms, 0),
        security=command_config_security(opts))


# -- verification ---------------------------------------------------------------------------------

@dataclass
class ReplicaAnswer:
    """One replica's Fetch answer for one partition (an unreachable broker: hw -1, no records)."""
    high_watermark: int
    records: bytes | memoryview = b""


class OffsetMismatch(Exception):
    """Replicas disagree on batch boundaries: Kafka prints it and exits with 1."""


@dataclass
class ReplicaBuffer:
    """Kafka's ReplicaBuffer: the verified offset per partition and the latest answers of each replica."""
    expected_replicas: dict[TopicPartition, int]
    fetch_offsets: dict[TopicPartition, int]
    report_interval_ms: int
    clock_ms: Callable[[], float] = lambda: time.time() * 1000
    last_report_ms: float = field(default=-1.0)
    answers: dict[TopicPartition, dict[int, ReplicaAnswer]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.last_report_ms < 0:
            self.last_report_ms = self.clock_ms()

    def add(self, tp: TopicPartition, replica_id: int, answer: ReplicaAnswer) -> None:
        self.answers.setdefault(tp, {})[replica_id] = answer

    def verify(self, out: Callable[[str], None]) -> tuple[int, TopicPartition | None, int]:
        """Compare what every replica returned; returns (max lag, its partition, its offset)."""
        max_lag, lag_tp, lag_offset = -1, None, -1
        for tp in sorted(self.expected_replicas):
            per_replica = self.answers.get(tp, {})
            if len(per_replica) != self.expected_replicas[tp]:
                raise AssertionError(f"fetched {len(per_replica)} replicas for {tp_name(tp)}, but expected "
                                     f"{self.expected_replicas[tp]} replicas")
            self._verify_partition(tp, per_replica, out)
            max_hw = max(a.high_watermark for a in per_replica.values())
            offset = self.fetch_offsets[tp]
            if max_hw - offset > max_lag:
                max_lag, lag_tp, lag_offset = max_hw - offset, tp, offset
            per_replica.clear()
        now = self.clock_ms()
        if now - self.last_report_ms > self.report_interval_ms:
            partition = tp_name(lag_tp) if lag_tp is not None else "null"
            out(f"{now_string(now)}: max lag is {max_lag} for partition {partition} at offset {lag_offset} "
                f"among {len(self.expected_replicas)} partitions")
            self.last_report_ms = now
        return max_lag, lag_tp, lag_offset

    def _verify_partition(self, tp: TopicPartition, per_replica: dict[int, ReplicaAnswer],
                          out: Callable[[str], None]) -> None:
        batches = {r: iter_batches(a.records) for r, a in sorted(per_replica.items())}
        while True:
            reference: tuple[int, int, int, int] | None = None  # replica, last offset, next offset, crc
            in_all = True
            for replica_id, walk in batches.items():
                batch = next(walk, None)
                if batch is None or batch.last_offset >= per_replica[replica_id].high_watermark:
                    in_all = False  # only verify up to the high watermark
                    continue
                if reference is None:
                    reference = (replica_id, batch.last_offset, batch.next_offset, batch.crc)
                    continue
                if reference[1] != batch.last_offset:
                    out(f"{now_string()}: partition {tp_name(tp)}: replica {reference[0]}'s offset {reference[1]} "
                        f"doesn't match replica {replica_id}'s offset {batch.last_offset}")
                    raise OffsetMismatch(tp_name(tp))
                if reference[3] != batch.crc:
                    out(f"{now_string()}: partition {tp_name(tp)} has unmatched checksum at offset "
                        f"{batch.last_offset}; replica {reference[0]}'s checksum {reference[3]}; "
                        f"replica {replica_id}'s checksum {batch.crc}")
            if not in_all or reference is None:
                return
            self.fetch_offsets[tp] = reference[2]


# -- fetching -------------------------------------------------------------------------------------

class ReplicaVerification:
    def __init__(self, options: VerificationOptions, out: Callable[[str], None]) -> None:
        self.options = options
        self.out = out
        self.client = SimpleClient(options.broker_list, client_id=CLIENT_ID, request_timeout=RESPONSE_GRACE_S,
                                   security=client_security(options.security))

    async def close(self) -> None:
        await self.client.close()

    async def prepare(self) -> tuple[ReplicaBuffer, dict[int, list[TopicPartition]]]:
        cluster = await self.client.metadata(None)
        replicas: dict[TopicPartition, list[int]] = {}
        for name, topic in sorted(cluster.topics.items()):
            if not self.options.topic_pattern.fullmatch(name):
                continue
            for index, p in sorted(topic.partitions.items()):
                replicas[(name, index)] = list(p.replicas)
        if not replicas:
            raise UsageError("No topics found. topic-white-list if specified, is either filtering out all topics "
                             "or there is no topic.")
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, ids in replicas.items():
            for broker_id in ids:
                by_broker.setdefault(broker_id, []).append(tp)
        offsets = await self._initial_offsets(list(replicas))
        buffer = ReplicaBuffer({tp: len(ids) for tp, ids in replicas.items()}, offsets,
                               self.options.report_interval_ms)
        return buffer, dict(sorted(by_broker.items()))

    async def _initial_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        when = self.options.initial_time

        async def one(tp: TopicPartition) -> int:
            offset, _ = await self.client.list_offsets(tp[0], tp[1], when)
            if offset < 0:  # no record at or after the timestamp: start at the end
                offset, _ = await self.client.list_offsets(tp[0], tp[1], LATEST)
            return offset

        found = await asyncio.gather(*(one(tp) for tp in partitions))
        return dict(zip(partitions, found))

    async def _fetch(self, broker_id: int, partitions: list[TopicPartition], buffer: ReplicaBuffer) -> None:
        topics: dict[str, list[Any]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(FetchRequest.FetchTopic.FetchPartition(
                partition=partition, fetch_offset=buffer.fetch_offsets[(topic, partition)],
                partition_max_bytes=self.options.fetch_size))
        request = FetchRequest(replica_id=DEBUGGING_CONSUMER_ID, max_wait_ms=self.options.max_wait_ms, min_bytes=1,
                               max_bytes=FETCH_MAX_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
                               topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])
        answered: dict[TopicPartition, ReplicaAnswer] = {}
        try:
            conn = await self.client.connection(broker_id)
            response = await conn.send(request, version=conn.version_for(ApiKey.FETCH),
                                       timeout=RESPONSE_GRACE_S + self.options.max_wait_ms / 1000.0)
            for topic in response.responses:
                for p in topic.partitions:
                    answered[(topic.topic, p.partition_index)] = ReplicaAnswer(
                        p.high_watermark if not p.error_code else -1, p.records or b"")
        except (OSError, KafkaError, asyncio.TimeoutError):
            pass  # Kafka's fetcher records an empty answer (high watermark -1) and tries again next round
        for tp in partitions:
            buffer.add(tp, broker_id, answered.get(tp, ReplicaAnswer(-1)))

    async def run(self, rounds: int | None = None) -> None:
        buffer, by_broker = await self.prepare()
        self.out(f"{now_string()}: verification process is started.")
        done = 0
        while rounds is None or done < rounds:
            started = time.monotonic()
            await asyncio.gather(*(self._fetch(b, tps, buffer) for b, tps in by_broker.items()))
            buffer.verify(self.out)
            done += 1
            if time.monotonic() - started < 0.01:  # every answer came back at once (errors): don't spin
                await asyncio.sleep(min(self.options.max_wait_ms, 1000) / 1000.0)


def _print(line: str) -> None:
    print(line, flush=True)


async def _run(options: VerificationOptions) -> None:
    tool = ReplicaVerification(options, _print)
    try:
        await tool.run()
    finally:
        await tool.close()


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(parse_args, lambda options: asyncio.run(_run(options)), argv, (OffsetMismatch, None),
                    ((KafkaError, OSError), failure_report("Error while verifying replicas: {kind}: {message}",
                                                           stderr=True)))


if __name__ == "__main__":
    sys.exit(main())

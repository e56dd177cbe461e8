"""Unmodified third-party clients, driven the same way: produce planned records, read a topic back with assign().

Producers: kafka-python 3.0.12 (its default producer, idempotent), confluent-kafka 2.16.1 (idempotent,
acks=-1), aiokafka 0.14.0 (its defaults, acks=1) and kcat 1.7.1 (librdkafka 2.0.2, a subprocess per codec).
Each one writes partition i of its topic with codec ``CODECS[i]``, so one topic covers every codec.

Readers start from earliest on every partition with assign() (no group coordinator) and read until each
partition's position reaches the given end offset, or until nothing arrives for ``STALL_SECONDS``; the caller
compares what they return with the log on disk.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PRODUCERS = ("kafka-python", "confluent-kafka", "aiokafka", "kcat")
READERS = PRODUCERS
STALL_SECONDS = 30.0  # a reader that gets nothing for this long gives up; the comparison then shows what is missing
KCAT_TIMEOUT = 180.0

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Planned:
    """A record to produce: no empty keys or values (kcat -Z turns those into null), no tabs or newlines
    (kcat's input and output lines), no ':' (kcat's key delimiter)."""
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True)
class Read:
    """A record as a reader (or the log on disk) returns it."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers


def plan(producer: str, codec: str, count: int) -> list[Planned]:
    """Deterministic records: some null keys and null values, values of varying (compressible) length.

    kcat's -H headers are the same for every record of a run; the Python clients also carry a per-record one.
    """
    records = []
    for i in range(count):
        key = None if i % 97 == 0 else f"key-{i}".encode()
        value = None if i % 211 == 5 else f"{producer}/{codec}/{i}/ödradek-{'lorem ipsum ' * (i % 13)}".encode()
        headers: Headers = (("producer", producer.encode()), ("codec", codec.encode()))
        if producer != "kcat":
            headers += (("n", str(i).encode()),)
        records.append(Planned(key, value, headers))
    return records


def _headers(pairs: Iterable[tuple[str, bytes | None]] | None) -> Headers:
    return tuple((name, None if value is None else bytes(value)) for name, value in pairs or ())


# ---------------------------------------------------------------------------------------------------------------
# Producers: produce(bootstrap, topic, {partition: (codec, records)}) raises on any delivery error

def produce_kafka_python(bootstrap: str, topic: str, plans: dict[int, tuple[str, list[Planned]]]) -> None:
    from kafka import KafkaProducer

    for partition, (codec, records) in plans.items():
        # Default settings on purpose: kafka-python 3 is idempotent (acks=all) unless told otherwise.
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=f"compat-kp-{codec}",
                                 compression_type=None if codec == "none" else codec, linger_ms=5)
        try:
            assert producer.config["enable_idempotence"], "kafka-python's default producer should be idempotent"
            futures = [producer.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=partition)
                       for r in records]
            producer.flush(timeout=60)
            for future in futures:
                future.get(timeout=60)  # raises the delivery error, if any
        finally:
            producer.close(timeout=10)


def produce_confluent_kafka(bootstrap: str, topic: str, plans: dict[int, tuple[str, list[Planned]]]) -> None:
    import confluent_kafka

    for partition, (codec, records) in plans.items():
        producer = confluent_kafka.Producer({
            "bootstrap.servers": bootstrap, "client.id": f"compat-ck-{codec}", "compression.codec": codec,
            "enable.idempotence": True, "acks": -1, "linger.ms": 5,
        })
        errors: list[str] = []

        def delivered(err, msg) -> None:
            if err is not None:
                errors.append(f"{msg.partition()}: {err}")

        for r in records:
            while True:
                try:
                    producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers), partition=partition,
                                     on_delivery=delivered)
                    break
                except BufferError:  # local queue full: serve delivery reports, then retry
                    producer.poll(0.1)
            producer.poll(0)
        remaining = producer.flush(60)
        assert remaining == 0 and not errors, f"confluent-kafka {codec}: {remaining} undelivered, errors {errors[:5]}"


def produce_aiokafka(bootstrap: str, topic: str, plans: dict[int, tuple[str, list[Planned]]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        for partition, (codec, records) in plans.items():
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=f"compat-aio-{codec}",
                                        compression_type=None if codec == "none" else codec, linger_ms=5)
            await producer.start()
            try:
                futures = [await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                               partition=partition) for r in records]
                await asyncio.gather(*futures)  # raises the first delivery error
            finally:
                await producer.stop()

    asyncio.run(run())


def kcat_input(records: Sequence[Planned]) -> bytes:
    """kcat -P -K: -Z lines: no ':' means a null key, nothing after it a null value."""
    lines = []
    for r in records:
        value = r.value or b""
        lines.append(value if r.key is None else r.key + b":" + value)
    return b"\n".join(lines) + b"\n"


def produce_kcat(bootstrap: str, topic: str, plans: dict[int, tuple[str, list[Planned]]]) -> None:
    for partition, (codec, records) in plans.items():
        headers = records[0].headers
        assert all(r.headers == headers for r in records), "kcat sends the same -H headers with every record"
        command = [kcat_path(), "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), "-K", ":", "-Z",
                   "-z", codec, "-X", "client.id=compat-kc"]
        for name, value in headers:
            command += ["-H", f"{name}={value.decode()}"]
        done = subprocess.run(command, input=kcat_input(records), capture_output=True, timeout=KCAT_TIMEOUT)
        assert done.returncode == 0 and b"ERROR" not in done.stderr, (
            f"kcat -P -z {codec} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")


PRODUCE: dict[str, Callable[[str, str, dict[int, tuple[str, list[Planned]]]], None]] = {
    "kafka-python": produce_kafka_python,
    "confluent-kafka": produce_confluent_kafka,
    "aiokafka": produce_aiokafka,
    "kcat": produce_kcat,
}


# ---------------------------------------------------------------------------------------------------------------
# Readers: read(bootstrap, topic, {partition: end offset}) -> {partition: [Read, ...]} in the order received

class _Progress:
    """Collects records per partition and says when to stop: every end offset reached, or a stall."""

    def __init__(self, ends: dict[int, int]):
        self.ends = ends
        self.records: dict[int, list[Read]] = {p: [] for p in ends}
        self.next_offset = {p: 0 for p in ends}
        self.last_progress = time.monotonic()

    def add(self, partition: int, record: Read) -> None:
        self.records[partition].append(record)
        self.next_offset[partition] = record.offset + 1
        self.last_progress = time.monotonic()

    def done(self) -> bool:
        if all(self.next_offset[p] >= end for p, end in self.ends.items()):
            return True
        return time.monotonic() - self.last_progress > STALL_SECONDS


def read_kafka_python(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[Read]]:
    from kafka import KafkaConsumer, TopicPartition

    # group_id=None: no coordinator yet, so no commits; check_crcs is on by default
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="compat-kp-reader", group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        partitions = [TopicPartition(topic, p) for p in ends]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        progress = _Progress(ends)
        while not progress.done():
            for tp, messages in consumer.poll(timeout_ms=500, max_records=5000).items():
                for m in messages:
                    progress.add(tp.partition, Read(m.offset, m.timestamp, m.key, m.value, _headers(m.headers)))
        return progress.records
    finally:
        consumer.close()


def read_confluent_kafka(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[Read]]:
    import confluent_kafka

    # group.id is mandatory even with assign(); isolation.level stays at its default, read_committed (uses the LSO)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "client.id": "compat-ck-reader", "group.id": "compat-ck-reader",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "check.crcs": True,
    })
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in ends])
        progress = _Progress(ends)
        while not progress.done():
            for m in consumer.consume(num_messages=5000, timeout=0.5):
                if m.error() is not None:
                    raise AssertionError(f"confluent-kafka read error on {topic} [{m.partition()}]: {m.error()}")
                progress.add(m.partition(), Read(m.offset(), m.timestamp()[1], m.key(), m.value(),
                                                 _headers(m.headers())))
        return progress.records
    finally:
        consumer.close()


def read_aiokafka(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[Read]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> dict[int, list[Read]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id="compat-aio-reader", group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            partitions = [TopicPartition(topic, p) for p in ends]
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            progress = _Progress(ends)
            while not progress.done():
                for tp, messages in (await consumer.getmany(timeout_ms=500, max_records=5000)).items():
                    for m in messages:
                        progress.add(tp.partition, Read(m.offset, m.timestamp, m.key, m.value, _headers(m.headers)))
            return progress.records
        finally:
            await consumer.stop()

    return asyncio.run(run())


KCAT_FORMAT = r"%p\t%o\t%T\t%K\t%k\t%S\t%s\t%h\n"  # %K/%S are -1 for a null key/value


def parse_kcat_line(line: bytes) -> tuple[int, Read]:
    partition, offset, timestamp, key_len, key, value_len, value, headers = line.split(b"\t")
    pairs = tuple((name.decode(), value_) for name, _, value_ in
                  (item.partition(b"=") for item in headers.split(b",") if item))
    return int(partition), Read(int(offset), int(timestamp), None if int(key_len) < 0 else key,
                                None if int(value_len) < 0 else value, pairs)


def read_kcat(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[Read]]:
    # -C without -G: librdkafka's simple (assign) consumer; -e exits once every partition reached its end
    command = [kcat_path(), "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
               "-X", "client.id=compat-kc-reader", "-f", KCAT_FORMAT]
    done = subprocess.run(command, capture_output=True, timeout=KCAT_TIMEOUT)
    assert done.returncode == 0 and b"ERROR" not in done.stderr, (
        f"kcat -C exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    records: dict[int, list[Read]] = {p: [] for p in ends}
    for line in done.stdout.split(b"\n")[:-1]:
        partition, record = parse_kcat_line(line)
        records.setdefault(partition, []).append(record)
    return records


READ: dict[str, Callable[[str, str, dict[int, int]], dict[int, list[Read]]]] = {
    "kafka-python": read_kafka_python,
    "confluent-kafka": read_confluent_kafka,
    "aiokafka": read_aiokafka,
    "kcat": read_kcat,
}


def kcat_path() -> str:
    path = shutil.which("kcat")
    if path is None:
        import pytest
        pytest.skip("kcat is not installed (tests/run.sh installs Debian's kcat package)")
    return path


def kcat_metadata(bootstrap: str) -> str:
    done = subprocess.run([kcat_path(), "-b", bootstrap, "-L"], capture_output=True, timeout=KCAT_TIMEOUT)
    assert done.returncode == 0, f"kcat -L exited {done.returncode}: {done.stderr.decode(errors='replace')}"
    return done.stdout.decode()

"""confluent-kafka workloads for ``bench_vs_tansu.py``, each run in a process of its own.

    python benchmarks/kafka_client_workloads.py '<json spec>'

The spec names the workload (``produce``, ``prefill``, ``consume``, ``e2e``), the bootstrap servers,
the topic, the counts and the pid of the broker under test; ``client_config`` (optional) adds librdkafka
settings to every client (``security.protocol``, ``sasl.*``, ``ssl.*``: bench_security.py). The last line printed is a JSON result:
records, bytes, seconds of the timed window, the broker's and this client's CPU seconds over that
window, and latency samples' percentiles for ``e2e``. Running the client apart from the script keeps
its CPU out of the orchestrating process, and reading the broker's /proc counters here brackets the
timed window exactly (topic creation and connection set-up stay outside it).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_STAMP = struct.Struct(">qq")  # sequence number, send time (CLOCK_MONOTONIC ns, one clock for all processes)


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (all its threads) from /proc/<pid>/stat, in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        text = stat.read()
    # The command name (field 2) may hold spaces and ')': the fields we want follow its last ')'.
    fields = text[text.rindex(b")") + 2:].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def own_cpu_seconds() -> float:
    """User + system CPU of this client process, librdkafka's threads included."""
    times = os.times()
    return times.user + times.system


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def brokers_cpu_seconds(pids: list[int]) -> float:
    return sum(process_cpu_seconds(pid) for pid in pids)


class Window:
    """The timed window: wall time, broker CPU (all the brokers' together) and client CPU between ``start()``
    and ``stop()``. ``spec["broker_pid"]`` is one broker, ``spec["broker_pids"]`` a cluster's."""

    def __init__(self, spec: dict) -> None:
        self.broker_pids = spec.get("broker_pids") or [spec["broker_pid"]]

    def start(self) -> None:
        self.broker_cpu = brokers_cpu_seconds(self.broker_pids)
        self.client_cpu = own_cpu_seconds()
        self.began = time.perf_counter()

    def stop(self) -> dict:
        seconds = time.perf_counter() - self.began
        return {"seconds": seconds,
                "broker_cpu": brokers_cpu_seconds(self.broker_pids) - self.broker_cpu,
                "client_cpu": own_cpu_seconds() - self.client_cpu}


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0,
                 client_config: dict | None = None, replication: int = 1) -> None:
    """CreateTopics, then wait until Metadata shows a leader for every partition."""
    create_topics(bootstrap, [topic], partitions, timeout, client_config, replication)


def create_topics(bootstrap: str, topics: list[str], partitions: int, timeout: float = 30.0,
                  client_config: dict | None = None, replication: int = 1) -> None:
    """CreateTopics of ``topics`` (already there is fine), then wait until Metadata shows a leader for every
    partition of each and, with replication > 1, a full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client_config or {})})
    for i in range(0, len(topics), 20):
        new = [NewTopic(t, partitions, replication) for t in topics[i:i + 20]]
        for future in admin.create_topics(new, operation_timeout=timeout).values():
            try:
                future.result(timeout)
            except KafkaException as exc:
                if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                    raise
    deadline = time.monotonic() + timeout
    pending = set(topics)
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=30).topics
        for topic in list(pending):
            metadata = listed.get(topic)
            if (metadata is not None and metadata.error is None and len(metadata.partitions) == partitions
                    and all(p.leader >= 0 and p.error is None and len(p.isrs) >= replication
                            for p in metadata.partitions.values())):
                pending.discard(topic)
        if not pending:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{len(pending)} topics ({sorted(pending)[:3]}) lack a leader or a full ISR after {timeout}s")


def _producer(spec: dict, **overrides) -> tuple[Producer, list]:
    """A producer that reports only failed deliveries (a per-record callback would cost the client CPU)."""
    failures: list = []
    config = {"bootstrap.servers": spec["bootstrap"], "acks": spec.get("acks", 1),
              "linger.ms": spec.get("linger_ms", 5), "enable.idempotence": False,
              "delivery.report.only.error": True,
              "on_delivery": lambda err, msg: failures.append(str(err)) if err else None,
              **spec.get("client_config", {})}
    config.update(overrides)
    return Producer(config), failures


def _produce_all(producer: Producer, topic: str, value: bytes, count: int) -> None:
    produce, poll = producer.produce, producer.poll
    for i in range(count):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # the local queue is full: let librdkafka drain it
                poll(0.005)
        if not i & 0x3FFF:
            poll(0)


def _flush(producer: Producer, failures: list, timeout: float = 300.0) -> None:
    left = producer.flush(timeout)
    if left or failures:
        raise RuntimeError(f"{left} records undelivered, {len(failures)} failed (first: {failures[:1]})")


def _create(spec: dict) -> None:
    create_topic(spec["bootstrap"], spec["topic"], spec["partitions"], client_config=spec.get("client_config"),
                 replication=spec.get("replication", 1))


def run_produce(spec: dict) -> dict:
    """Produce ``count`` values of ``size`` bytes (no key: librdkafka spreads them over the partitions)."""
    _create(spec)
    producer, failures = _producer(spec)
    value = b"v" * spec["size"]
    producer.produce(spec["topic"], value)  # warm-up: connections and metadata outside the window
    _flush(producer, failures)
    window = Window(spec)
    window.start()
    _produce_all(producer, spec["topic"], value, spec["count"])
    _flush(producer, failures)
    return {**window.stop(), "records": spec["count"], "bytes": spec["count"] * spec["size"]}


def run_prefill(spec: dict) -> dict:
    """Fill a topic for the consume workload (acks=1); nothing is measured."""
    _create(spec)
    producer, failures = _producer(spec, acks=1)
    _produce_all(producer, spec["topic"], b"v" * spec["size"], spec["count"])
    _flush(producer, failures)
    return {"records": spec["count"]}


def _consumer(spec: dict, **overrides) -> Consumer:
    # librdkafka insists on a group.id; with assign() and no commits the group is never joined.
    config = {"bootstrap.servers": spec["bootstrap"], "group.id": f"bench-{uuid.uuid4().hex[:8]}",
              "enable.auto.commit": False, "enable.auto.offset.store": False, **spec.get("client_config", {})}
    config.update(overrides)
    return Consumer(config)


def _assign_from_earliest(consumer: Consumer, topic: str, partitions: int) -> None:
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])


def run_consume(spec: dict) -> dict:
    """Read ``count`` records from earliest with assign.

    librdkafka's defaults but one: once its queue holds queued.min.messages (100,000) it stops fetching
    for fetch.queue.backoff.ms, 1 s by default, which caps both brokers alike near 200k records/s; the
    spec's shorter backoff keeps the broker, not that pause, the limit.
    """
    consumer = _consumer(spec, **{"fetch.queue.backoff.ms": spec["queue_backoff_ms"]})
    count, received = spec["count"], 0
    window = Window(spec)
    window.start()
    _assign_from_earliest(consumer, spec["topic"], spec["partitions"])
    deadline = time.monotonic() + spec.get("timeout", 300.0)
    while received < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"consumed {received} of {count} records before the timeout")
        batch = consumer.consume(10_000, 1.0)
        for message in batch:
            if message.error() is not None:
                raise KafkaException(message.error())
        received += len(batch)
    result = window.stop()
    consumer.close()
    return {**result, "records": received, "bytes": received * spec["size"]}


def _paced_sender(producer: Producer, topic: str, size: int, rate: float, total: int, errors: list) -> None:
    """Send ``total`` stamped records at ``rate`` per second, on a fixed schedule (no catch-up bursts lost)."""
    padding = b"p" * max(0, size - _STAMP.size)
    interval = 1.0 / rate
    began = time.perf_counter()
    try:
        for sequence in range(total):
            delay = began + sequence * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            producer.produce(topic, _STAMP.pack(sequence, time.monotonic_ns()) + padding)
            producer.poll(0)
        producer.flush(30)
    except Exception as exc:  # reported by the consuming thread
        errors.append(repr(exc))


def run_e2e(spec: dict) -> dict:
    """End-to-end latency: records stamped at send, timed when ``poll`` hands them to the consumer."""
    _create(spec)
    consumer = _consumer(spec, **{"fetch.wait.max.ms": spec["fetch_wait_max_ms"]})
    _assign_from_earliest(consumer, spec["topic"], spec["partitions"])
    producer, failures = _producer(spec, acks=1, **{"linger.ms": spec["e2e_linger_ms"]})
    rate = spec["rate"]
    warmup = int(rate * spec["warmup_seconds"])
    total = warmup + spec["count"]
    errors: list = []
    sender = threading.Thread(target=_paced_sender, daemon=True,
                              args=(producer, spec["topic"], spec["size"], rate, total, errors))
    latencies_ms: list[float] = []
    seen, started = 0, False
    window = Window(spec)
    sender.start()
    deadline = time.monotonic() + total / rate + 30.0
    while seen < total and time.monotonic() < deadline and not errors:
        message = consumer.poll(0.05)
        if message is None:
            continue
        if message.error() is not None:
            raise KafkaException(message.error())
        received = time.monotonic_ns()
        sequence, sent = _STAMP.unpack_from(message.value())
        seen += 1
        if not started and sequence >= warmup - 1:
            window.start()  # the warm-up is over: measure from here on
            started = True
        if sequence >= warmup:
            latencies_ms.append((received - sent) / 1e6)
    if not started:
        raise RuntimeError(f"no record arrived within {total / rate + 30.0:.0f}s: {errors or failures}")
    result = window.stop()
    sender.join(5)
    consumer.close()
    if errors or failures:
        raise RuntimeError(f"producer failed: {errors or failures}")
    if seen < total:
        raise RuntimeError(f"received {seen} of {total} records before the deadline")
    measured = len(latencies_ms)
    return {**result, "records": measured, "bytes": measured * spec["size"],
            "p50_ms": percentile(latencies_ms, 50), "p99_ms": percentile(latencies_ms, 99),
            "max_ms": max(latencies_ms)}


def run_spread(spec: dict) -> dict:
    """Produce ``count`` values round-robin over every partition of ``topics`` (created beforehand, each of
    ``partitions`` partitions), one record per partition in turn: the many-partition path, tiny batches."""
    producer, failures = _producer(spec)
    value = b"v" * spec["size"]
    targets = [(topic, p) for p in range(spec["partitions"]) for topic in spec["topics"]]
    for topic, p in targets:  # warm-up: metadata, connections and every partition's first batch
        producer.produce(topic, value, partition=p)
    _flush(producer, failures)
    window = Window(spec)
    window.start()
    produce, poll, n = producer.produce, producer.poll, len(targets)
    for i in range(spec["count"]):
        topic, p = targets[i % n]
        while True:
            try:
                produce(topic, value, partition=p)
                break
            except BufferError:
                poll(0.005)
        if not i & 0x3FFF:
            poll(0)
    _flush(producer, failures)
    return {**window.stop(), "records": spec["count"], "bytes": spec["count"] * spec["size"]}


WORKLOADS = {"produce": run_produce, "spread": run_spread, "prefill": run_prefill, "consume": run_consume, "e2e": run_e2e}


def main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    result = WORKLOADS[spec["workload"]](spec)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv)

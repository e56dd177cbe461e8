"""Helpers of the log-compaction tests: compacted topics, keyed updates written with confluent-kafka, the
cleaner's checkpoint read from a broker's log dir, and a compacted partition read back by three clients."""

from __future__ import annotations

import itertools
import os
import random
import time
from pathlib import Path

from odradek.clients import Consumer, TopicPartition
from odradek.clients.simple_client import SimpleClient

from .helpers import run, wait_until

# segment.ms: the sentinel record (stamped an hour ahead) rolls the active segment
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.bytes": str(256 * 1024),
             "segment.ms": "600000"}
# Broker settings that make the cleaner look for work often (Kafka's default backoff is 15 s).
CLEANER_OVERRIDES = {"log.cleaner.backoff.ms": "200"}
HOUR_MS = 3_600_000


def cleaner_checkpoint(log_dir: Path, topic: str, partition: int) -> int | None:
    """The first dirty offset the broker owning ``log_dir`` checkpointed for the partition (None: none yet)."""
    path = Path(log_dir) / "cleaner-offset-checkpoint"
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        name, index, offset = line.split()
        if (name, int(index)) == (topic, partition):
            return int(offset)
    return None


def wait_cleaned(cluster, topic: str, partition: int, offset: int, brokers=None, timeout: float = 180.0) -> None:
    """Until every given broker (default: all) has cleaned the partition up to ``offset``."""
    slots = [b for b in cluster.brokers if brokers is None or b.broker_id in brokers]
    wait_until(lambda: all((cleaner_checkpoint(b.log_dirs, topic, partition) or -1) >= offset for b in slots),
               timeout, f"the cleaner of {topic}-{partition} to reach offset {offset}")


def create_compacted(bootstrap: str, topic: str, partitions: int = 1, replication: int = 1, **configs: str) -> None:
    """A compacted topic (COMPACTED plus ``configs``), once its partitions have leaders."""
    async def create() -> None:
        async with SimpleClient(bootstrap) as client:
            codes = await client.create_topics({topic: (partitions, replication)},
                                               configs={topic: {**COMPACTED, **configs}})
            assert codes[topic] == 0, codes
            await client.wait_for_leaders(topic)
    run(create())


def partition_files(log_dir: Path, topic: str, partition: int) -> list[str]:
    return sorted(os.listdir(Path(log_dir) / f"{topic}-{partition}"))


def produce_updates(bootstrap: str, topic: str, updates: int, keys: int, partition: int = 0,
                    value_size: int = 0, batch_size: int = 65536, seed: int | None = None) -> dict[bytes, bytes]:
    """``updates`` values over ``keys`` keys (update i sets key i % keys, or a key drawn with ``seed``, to b"<i>"
    padded to ``value_size``) with an idempotent confluent-kafka producer, in batches of at most ``batch_size``
    bytes (a batch larger than segment.bytes is refused, as by Kafka); returns the latest value of each key."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                         "batch.num.messages": 10000, "batch.size": batch_size,
                         "queue.buffering.max.messages": 200000})
    failed: list[str] = []
    expected: dict[bytes, bytes] = {}
    draw = random.Random(seed).randrange if seed is not None else None
    for i in range(updates):
        key, value = b"key-%06d" % (draw(keys) if draw else i % keys), (b"%d" % i).ljust(value_size, b".")
        while True:
            try:
                producer.produce(topic, value, key, partition=partition,
                                 on_delivery=lambda err, msg: err is not None and failed.append(str(err)))
                break
            except BufferError:
                producer.poll(0.05)
        expected[key] = value
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0 and not failed, failed[:3]
    return expected


_sentinels = itertools.count(1)


def produce_sentinel(bootstrap: str, topic: str, partition: int = 0) -> int:
    """One record stamped hours ahead (each an hour after the previous one), which rolls the active segment
    (segment.ms goes by record time): every earlier record becomes cleanable. Returns its offset."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    offsets: list[int] = []
    producer.produce(topic, b"sentinel", b"~sentinel", partition=partition,
                     timestamp=int(time.time() * 1000) + next(_sentinels) * HOUR_MS,
                     on_delivery=lambda err, msg: offsets.append(msg.offset()))
    assert producer.flush(30) == 0
    return offsets[0]


def read_ours(bootstrap: str, topic: str, end: int, partition: int = 0, **configs) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of the partition's records below ``end``, with our consumer (assign, earliest)."""
    tp = TopicPartition(topic, partition)
    out: list[tuple[int, bytes, bytes]] = []
    with Consumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                  auto_offset_reset="earliest", **configs) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 120
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} of {end}"
            for record in consumer.poll(timeout_ms=500, max_records=10000).get(tp, []):
                if record.offset < end:
                    out.append((record.offset, record.key, record.value))
    return out


def latest(records) -> dict:
    """Key -> value after applying ``records`` (offset, key, value) in order; tombstones delete."""
    out: dict = {}
    for _, key, value in records:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out

"""The Java client's murmur2 and default partitioner, checked against Java's own test vectors and kafka-python."""

from __future__ import annotations

import random

import pytest
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from odradek.clients.producer.partitioner import DefaultPartitioner, murmur2, partition_for_key, to_positive

# Apache Kafka's UtilsTest.testMurmur2 (values of the Java implementation).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key,expected", sorted(JAVA_VECTORS.items()))
def test_murmur2_matches_java(key, expected):
    assert murmur2(key) == expected


def test_murmur2_matches_kafka_python_on_many_keys():
    rng = random.Random(5)
    keys = [b"", b"\x00", b"\xff" * 7] + [f"key-{i}".encode() for i in range(2000)]
    keys += [rng.randbytes(rng.randrange(0, 64)) for _ in range(3000)]
    for key in keys:
        # kafka-python returns the unsigned 32-bit pattern of the same hash.
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key), key


class _TheirCluster:
    """The three questions kafka-python's partitioner asks of its cluster metadata."""

    def __init__(self, count: int) -> None:
        self.count = count

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return set(range(self.count))

    available_partitions_for_topic = partitions_for_topic


def test_keyed_partition_matches_kafka_python_default_partitioner():
    theirs = KafkaPythonPartitioner()
    rng = random.Random(7)
    for count in (1, 3, 6, 7, 50, 101):
        cluster = _TheirCluster(count)
        for _ in range(500):
            key = rng.randbytes(rng.randrange(1, 40))
            assert partition_for_key(key, count) == theirs.partition("t", key, key, None, None, cluster)


def test_to_positive_clears_the_sign_bit():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_keyed_records_ignore_availability():
    partitioner = DefaultPartitioner()
    expected = partition_for_key(b"k", 6)
    assert partitioner.partition("t", b"k", range(6), [p for p in range(6) if p != expected]) == expected


def test_keyless_records_stick_until_a_new_batch():
    partitioner = DefaultPartitioner()
    every = list(range(6))
    available = [1, 3, 5]
    first = partitioner.partition("t", None, every, available)
    assert first in available
    assert {partitioner.partition("t", None, every, available) for _ in range(20)} == {first}
    partitioner.new_batch("t", first, every, available)
    second = partitioner.partition("t", None, every, available)
    assert second in available and second != first
    partitioner.new_batch("t", first, every, available)  # a stale notice does not move it again
    assert partitioner.partition("t", None, every, available) == second


def test_keyless_records_use_any_partition_when_none_is_available():
    partitioner = DefaultPartitioner()
    assert partitioner.partition("t", None, [0, 1, 2], []) in (0, 1, 2)

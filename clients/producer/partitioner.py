"""Choosing a record's partition the way Apache Kafka 2.8's Java producer does.

Keyed records: ``toPositive(murmur2(key)) % partitions`` over *all* partitions of the topic
(Java's DefaultPartitioner; kafka-python's DefaultPartitioner computes the same), so a key lands in
the same partition whichever of these clients wrote it. Records without a key use the sticky
partitioner (KIP-480, Kafka 2.4+): one random available partition until its batch is sent, which
fills batches faster than round-robin.
"""

from __future__ import annotations

import random
from typing import Sequence

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Java's ``Utils.murmur2``: MurmurHash2, 32 bits, seed 0x9747b28c, as a signed int32."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    extra = length & 3
    # The Java switch falls through from 3 to 1.
    if extra == 3:
        h ^= data[whole + 2] << 16
    if extra >= 2:
        h ^= data[whole + 1] << 8
    if extra >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: the sign bit cleared (not ``abs``, which fails for MIN_VALUE)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Java's and kafka-python's default partitioners pick for a serialized key."""
    return to_positive(murmur2(key)) % num_partitions


class DefaultPartitioner:
    """Kafka 2.8's DefaultPartitioner: murmur2 for keys, sticky per topic for null keys.

    ``partition(topic, key, all_partitions, available)`` takes the serialized key (or None), every
    partition of the topic and those with a leader; ``new_batch(topic, previous)`` is called when the
    sticky partition's batch was closed, so that the next keyless record moves on.
    """

    def __init__(self) -> None:
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, all_partitions: Sequence[int],
                  available: Sequence[int]) -> int:
        if key is not None:
            return partition_for_key(key, len(all_partitions))
        current = self._sticky.get(topic)
        if current is None or current not in all_partitions:
            current = self._pick(all_partitions, available, None)
            self._sticky[topic] = current
        return current

    def new_batch(self, topic: str, previous: int, all_partitions: Sequence[int],
                  available: Sequence[int]) -> None:
        """Java's StickyPartitionCache.nextPartition: change only if ``previous`` is still the sticky one."""
        if self._sticky.get(topic, previous) == previous:
            self._sticky[topic] = self._pick(all_partitions, available, previous)

    @staticmethod
    def _pick(all_partitions: Sequence[int], available: Sequence[int], previous: int | None) -> int:
        candidates = list(available) or list(all_partitions)
        if len(candidates) > 1 and previous is not None:
            candidates = [p for p in candidates if p != previous]
        return random.choice(candidates)

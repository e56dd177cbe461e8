"""Offset ranges to Spark input partitions (Spark's KafkaOffsetRangeCalculator).

Without minPartitions each Kafka partition with records in range is one task. With minPartitions
larger than that, big ranges are split into parts proportional to their share of all records, so
Spark can read one Kafka partition with several tasks.
"""

from __future__ import annotations

from ..clients.types import TopicPartition
from .partition_reader import KafkaInputPartition


def plan_ranges(starts: dict[TopicPartition, int], ends: dict[TopicPartition, int],
                min_partitions: int | None) -> list[KafkaInputPartition]:
    ranges = [(tp, starts[tp], ends[tp]) for tp in sorted(ends) if tp in starts and ends[tp] > starts[tp]]
    if not min_partitions or min_partitions <= len(ranges):
        return [KafkaInputPartition(tp.topic, tp.partition, start, end) for tp, start, end in ranges]
    total = sum(end - start for _, start, end in ranges)
    # Spark rounds each share (so the count is only near minPartitions); shares are rounded down here and
    # the parts left over go to the largest remainders, so there are at least minPartitions when possible.
    counts = [max(min_partitions * (end - start) // total, 1) for _, start, end in ranges]
    remainders = sorted(range(len(ranges)), key=lambda i: -((min_partitions * (ranges[i][2] - ranges[i][1])) % total))
    for i in remainders[:max(min_partitions - sum(counts), 0)]:
        counts[i] += 1
    planned: list[KafkaInputPartition] = []
    for (tp, start, end), parts in zip(ranges, counts):
        size = end - start
        parts = min(parts, size)
        for i in range(parts):
            lo = start + size * i // parts
            hi = start + size * (i + 1) // parts
            if hi > lo:
                planned.append(KafkaInputPartition(tp.topic, tp.partition, lo, hi))
    return planned

"""The micro-batch stream reader: ``spark.readStream.format("odradek")`` (Spark's KafkaMicroBatchStream).

Offsets are Spark's per-partition JSON ({"topic": {"0": 42}}), the offset after the last record of a
micro-batch; Spark checkpoints them, so a restarted query resumes exactly there and a replayed batch
reads the same range. One instance lives in the driver's streaming planner process for the query's
life (initialOffset, latestOffset, partitions, commit); the tasks get a fresh one only to call
``read``, so the cluster connection is opened lazily and never pickled.

- New partitions (subscribe/subscribePattern) start at their earliest offset.
- Partitions that vanished (topic deleted) or whose offsets went backwards (topic re-created) are data
  loss: the query fails, or with failOnDataLoss=false they are dropped/skipped with a warning.
- maxOffsetsPerTrigger caps a micro-batch, shared out in proportion to each partition's backlog;
  minOffsetsPerTrigger holds a trigger back until that many records wait or maxTriggerDelay passed.
- Trigger.AvailableNow reads up to the offsets that were latest when the query started
  (prepareForTriggerAvailableNow), in as many micro-batches as the limits need.
- With ``commitOffsetsToGroup`` each committed micro-batch's end offsets are committed as that group's
  offsets, so kafka-consumer-groups-style lag tools see the query.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow,
)

from ..clients.types import TopicPartition
from .batch_reader import read_settings
from .offset_reader import KafkaOffsetReader, Offsets, offsets_from_json, offsets_to_json
from .options import SourceOptions
from .partition_reader import KafkaInputPartition, read_range, report_data_loss
from .ranges import plan_ranges

log = logging.getLogger(__name__)


def rate_limit(starts: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """At most ``max_rows`` records in all, shared out in proportion to each partition's backlog
    (KafkaMicroBatchStream.rateLimit), rounding so the total never exceeds the cap."""
    sizes = {tp: latest[tp] - starts.get(tp, latest[tp]) for tp in latest}
    backlog = {tp: size for tp, size in sizes.items() if size > 0}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    shares = {tp: max_rows * size // total for tp, size in backlog.items()}
    left = max_rows - sum(shares.values())
    for tp in sorted(backlog, key=lambda tp: (-(backlog[tp] - shares[tp]), tp)):
        if left <= 0:
            break
        if shares[tp] < backlog[tp]:
            shares[tp] += 1
            left -= 1
    return {tp: (starts[tp] + shares[tp] if tp in backlog else latest[tp]) for tp in latest}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.settings = read_settings(options)
        self._offsets: KafkaOffsetReader | None = None
        self._available_now: Offsets | None = None
        self._last_trigger = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offsets"] = None  # a live connection stays in the process that opened it
        return state

    def _reader(self) -> KafkaOffsetReader:
        if self._offsets is None:
            self._offsets = KafkaOffsetReader(self.options)
        return self._offsets

    # -- offsets ----------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        reader = self._reader()
        partitions = reader.partitions()
        return offsets_to_json(reader.resolve(self.options.starting, partitions, True, "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        reader = self._reader()
        self._available_now = reader.latest(reader.partitions())

    def reportLatestOffset(self) -> dict | None:
        reader = self._reader()
        return offsets_to_json(reader.latest(reader.partitions()))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        reader = self._reader()
        starts = offsets_from_json(start)
        partitions = reader.partitions()
        gone = sorted(set(starts) - partitions)
        if gone:
            report_data_loss(self.options.fail_on_data_loss, f"{gone} are gone.")
            if self.options.strategy == "assign":
                partitions |= set(gone)  # kept: an assigned partition may come back
        new = partitions - set(starts)
        starts = {tp: o for tp, o in starts.items() if tp in partitions}
        starts.update(reader.earliest(new))
        latest = reader.latest(partitions - set(gone)) if gone else reader.latest(partitions)
        for tp in gone:
            latest.setdefault(tp, starts.get(tp, 0))
        if self._available_now is not None:
            cap = self._available_now
            latest = {tp: min(o, cap[tp]) if tp in cap else starts[tp] for tp, o in latest.items()}
        for tp in sorted(latest):
            if latest[tp] < starts[tp]:
                report_data_loss(self.options.fail_on_data_loss,
                                 f"Partition {tp.topic}-{tp.partition}'s offset was changed from {starts[tp]} to "
                                 f"{latest[tp]}, some data may have been missed.")
        if isinstance(limit, ReadAllAvailable):
            end = latest
        else:
            waiting = sum(max(latest[tp] - starts[tp], 0) for tp in latest)
            min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else self.options.min_offsets_per_trigger
            if (min_rows and self._available_now is None and waiting < min_rows
                    and (time.monotonic() - self._last_trigger) * 1000 < self.options.max_trigger_delay_ms):
                return start  # not enough yet (Spark: delayed until minOffsetsPerTrigger or maxTriggerDelay)
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            end = rate_limit(starts, latest, max_rows) if max_rows else latest
        end_json = offsets_to_json(end)
        if end_json != start:
            self._last_trigger = time.monotonic()
        return end_json

    # -- planning and reading ---------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        starts = offsets_from_json(start)
        ends = offsets_from_json(end)
        new = {tp for tp in ends if tp not in starts}
        if new:
            starts.update(self._reader().earliest(new))
        for tp in sorted(ends):
            if ends[tp] < starts[tp]:
                report_data_loss(self.options.fail_on_data_loss,
                                 f"Partition {tp.topic}-{tp.partition}'s offset was changed from {starts[tp]} to "
                                 f"{ends[tp]}, some data may have been missed.")
        return plan_ranges(starts, ends, self.options.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        yield from read_range(self.settings, partition)

    def commit(self, end: dict) -> None:
        if self.options.commit_group:
            self._reader().commit_group_offsets(self.options.commit_group, offsets_from_json(end))

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


__all__ = ["KafkaStreamReader", "rate_limit", "TopicPartition"]

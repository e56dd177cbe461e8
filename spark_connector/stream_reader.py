"""The micro-batch stream reader: ``spark.readStream.format("odradek")`` (Spark's KafkaMicroBatchStream).

Offsets are Spark's per-partition JSON ({"topic": {"0": 42}}), the offset after the last record of a
micro-batch; Spark checkpoints them, so a restarted query resumes exactly there and a replayed batch
reads the same range. One instance lives in the driver's streaming planner process for the query's
life (initialOffset, latestOffset, partitions, commit); the tasks get a fresh one only to call
``read``, so the cluster connection is opened lazily and never pickled.

- New partitions (subscribe/subscribePattern) start at their earliest offset.
- Data loss is checked when a batch is planned (Spark's getOffsetRangesFromResolvedOffsets), with Spark
  4's KAFKA_DATA_LOSS conditions: partitions that vanished (topic deleted: PARTITIONS_DELETED), offsets
  that went backwards (topic re-created before a trigger saw it gone: PARTITION_OFFSET_CHANGED), new
  partitions not starting at 0. The query fails, or with failOnDataLoss=false a warning is logged, a
  deleted partition is dropped from the offsets (so a re-created topic is new, read from its start) and
  a backwards one goes on from its new end. Offsets aged out below the log start are the tasks' to
  report (partition_reader).
- maxOffsetsPerTrigger caps a micro-batch, shared out in proportion to each partition's backlog;
  minOffsetsPerTrigger holds a trigger back until that many records wait or maxTriggerDelay passed since
  the last trigger that went through; a query's first trigger is never held (Spark's delayBatch).
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
from .partition_reader import KafkaInputPartition, read_range, report_data_loss, report_offset_changed, tp_names
from .ranges import plan_ranges
from .typed_columns import TypedColumns, decode_batches

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
    def __init__(self, options: SourceOptions, typed: TypedColumns | None = None) -> None:
        self.options = options
        self.settings = read_settings(options)
        self.typed = typed
        self._offsets: KafkaOffsetReader | None = None
        self._available_now: Offsets | None = None
        self._last_trigger: float | None = None  # the last trigger that went through (minOffsetsPerTrigger)
        self._latest: Offsets = {}

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
        # Spark's: the latest offsets the last latestOffset call found (shown as the progress' latestOffset).
        return offsets_to_json(self._latest) if self._latest else None

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """KafkaMicroBatchStream.latestOffset. Deleted partitions are left out of the end offsets (and
        reported when the batch is planned); new ones count from their earliest offset."""
        reader = self._reader()
        starts = offsets_from_json(start)
        drop_missing = self.options.strategy != "assign"  # a topic deleted meanwhile is left out
        latest = reader.latest(reader.partitions(), drop_missing)
        new = set(latest) - set(starts)
        starts = {tp: o for tp, o in starts.items() if tp in latest}
        starts.update(reader.earliest(new, drop_missing))
        latest = {tp: o for tp, o in latest.items() if tp in starts}
        if self._available_now is not None:
            cap = self._available_now
            latest = {tp: min(o, cap[tp]) if tp in cap else starts[tp] for tp, o in latest.items()}
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return offsets_to_json(latest)
        # pyspark has no composite limit: with both options the limit is ReadMaxRows and the minimum
        # comes from the options. Under AvailableNow the run ends at fixed offsets, so no minimum applies.
        min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else self.options.min_offsets_per_trigger
        if min_rows and self._available_now is None:
            waiting = sum(latest[tp] - starts[tp] for tp in latest)
            if self._hold_batch(waiting, min_rows):
                return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return offsets_to_json(rate_limit(starts, latest, max_rows) if max_rows else latest)

    def _hold_batch(self, waiting: int, min_rows: int) -> bool:
        """KafkaMicroBatchStream.delayBatch: hold the batch while fewer than ``min_rows`` offsets wait,
        unless maxTriggerDelay passed since the last trigger that went through. Spark's clock starts at 0,
        so a query's first trigger is never held."""
        now = time.monotonic()
        if self._last_trigger is not None and (now - self._last_trigger) * 1000 < self.options.max_trigger_delay_ms \
                and waiting < min_rows:
            return True
        self._last_trigger = now
        return False

    # -- planning and reading ---------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """KafkaOffsetReader.getOffsetRangesFromResolvedOffsets: the ranges, after its data-loss checks."""
        starts = offsets_from_json(start)
        ends = offsets_from_json(end)
        fail = self.options.fail_on_data_loss
        new = {tp for tp in ends if tp not in starts}
        if new:
            found = self._reader().earliest(new, drop_missing=self.options.strategy != "assign")
            if set(found) != new:
                report_data_loss(fail, f"Cannot find initial offsets for partitions {tp_names(new - set(found))}. "
                                       f"They may have been deleted.", "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS")
            for tp in sorted(found):
                if found[tp] != 0:
                    report_data_loss(fail, f"Added partition {tp.topic}-{tp.partition} starts from {found[tp]} "
                                           f"instead of 0.", "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO")
            starts.update(found)
        deleted = set(starts) - set(ends)
        if deleted:
            # Spark reports this only when other partitions remain (an empty end offset is "no new data"
            # there, so deleting a query's only topic stalls it); here the end offset may be empty.
            report_data_loss(fail, f"Partitions {tp_names(deleted)} have been deleted.", "PARTITIONS_DELETED")
        for tp in sorted(ends):
            if tp in starts and ends[tp] < starts[tp]:
                report_offset_changed(fail, tp, starts[tp], ends[tp])
        # Spark wants at least one input partition, even when nothing is left to read.
        return plan_ranges(starts, ends, self.options.min_partitions) or [KafkaInputPartition("", 0, 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        yield from decode_batches(read_range(self.settings, partition), self.typed)

    def commit(self, end: dict) -> None:
        if self.options.commit_group:
            self._reader().commit_group_offsets(self.options.commit_group, offsets_from_json(end))

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


__all__ = ["KafkaStreamReader", "rate_limit", "TopicPartition"]

"""The batch reader: ``spark.read.format("odradek")``.

The offsets are resolved once, on the driver, when Spark plans the read (``partitions``); the tasks
then read exactly those ranges, whatever arrives meanwhile.
"""

from __future__ import annotations

import logging
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from .offset_reader import KafkaOffsetReader
from .options import SourceOptions
from .partition_reader import KafkaInputPartition, ReadSettings, read_range, report_offset_changed
from .ranges import plan_ranges
from .typed_columns import TypedColumns, decode_batches

log = logging.getLogger(__name__)


def read_settings(options: SourceOptions) -> ReadSettings:
    return ReadSettings(options.bootstrap_servers, options.read_committed, options.include_headers,
                        options.fail_on_data_loss, options.poll_timeout_ms, dict(options.consumer_params))


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions, typed: TypedColumns | None = None) -> None:
        self.options = options
        self.settings = read_settings(options)
        self.typed = typed

    def partitions(self) -> Sequence[InputPartition]:
        offsets = KafkaOffsetReader(self.options)
        try:
            partitions = offsets.partitions()
            starts = offsets.resolve(self.options.starting, partitions, True, "startingOffsets")
            ends = offsets.resolve(self.options.ending, partitions, False, "endingOffsets")
        finally:
            offsets.close()
        for tp in sorted(partitions):
            if starts[tp] > ends[tp]:
                report_offset_changed(self.options.fail_on_data_loss, tp, starts[tp], ends[tp])
        planned = plan_ranges(starts, ends, self.options.min_partitions)
        return planned or [KafkaInputPartition("", 0, 0, 0)]  # Spark wants at least one partition

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        yield from decode_batches(read_range(self.settings, partition), self.typed)

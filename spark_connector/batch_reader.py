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
from .partition_reader import KafkaInputPartition, ReadSettings, read_range, report_data_loss
from .ranges import plan_ranges

log = logging.getLogger(__name__)


def read_settings(options: SourceOptions) -> ReadSettings:
    return ReadSettings(options.bootstrap_servers, options.read_committed, options.include_headers,
                        options.fail_on_data_loss, options.poll_timeout_ms, dict(options.consumer_params))


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.settings = read_settings(options)

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
                report_data_loss(self.options.fail_on_data_loss,
                                 f"Partition {tp.topic}-{tp.partition} offset was changed from {starts[tp]} to "
                                 f"{ends[tp]}. This could either be a user error that the start offset is set too "
                                 f"high and this is the first batch, or the kafka topic-partition is broken, and "
                                 f"some data may have been missed.", "PARTITION_OFFSET_CHANGED")
        planned = plan_ranges(starts, ends, self.options.min_partitions)
        return planned or [KafkaInputPartition("", 0, 0, 0)]  # Spark wants at least one partition

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        yield from read_range(self.settings, partition)

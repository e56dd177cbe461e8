"""What Kafka's LogValidator does to a leader's batches before offsets are assigned (magic 2 in and out).

- A record whose batch claims LogAppendTime is refused: only the broker sets it (INVALID_TIMESTAMP).
- ``message.timestamp.type=CreateTime`` with ``message.timestamp.difference.max.ms`` set: a record
  whose timestamp is further than that from the broker's clock is refused, the whole batch with it
  (INVALID_TIMESTAMP, with the record's index and Kafka's message in the answer's record errors).
- ``compression.type`` other than ``producer``: a batch compressed otherwise is rebuilt with the
  topic's codec (``uncompressed`` stores it uncompressed), keeping its producer id, epoch, base
  sequence, transactional flag and every record's timestamp, key, value and headers; offsets become
  consecutive, as Kafka's buildRecordsAndAssignOffsets. Control batches are never recompressed.
(LogAppendTime itself is stamped by ``Log.append_as_leader`` once offsets are known.)

Records are decoded only when one of these needs them: with Kafka's defaults (``producer``, no
timestamp bound) a batch passes untouched, as the design wants for the produce path.
"""

from __future__ import annotations

from typing import Any

from ...protocol.errors import InvalidTimestampError  # type: ignore[attr-defined]
from ...protocol.records import (
    LOG_APPEND_TIME, Compression, RecordBatchBuilder, RecordBatchView, decode_batch,
)

from .log_config import LogConfig
from .segment import walk_headers

LONG_MAX = (1 << 63) - 1
NO_TIMESTAMP = -1
CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
          "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


class RecordValidationError(InvalidTimestampError):  # type: ignore[misc, valid-type]
    """Kafka's RecordValidationException for timestamps: the partition's error, and per record
    (index in the batch, message) for the answer's ``record_errors``."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        super().__init__("One or more records have been rejected due to invalid timestamp")
        self.record_errors = record_errors


def validate_for_leader(records: bytearray, config: LogConfig, now: int) -> bytearray:
    """``records`` as the leader will append them (the same object when nothing changes)."""
    target = CODECS.get(config.compression_type)  # None: "producer", keep the producer's codec
    check_times = config.message_timestamp_type == "CreateTime" and \
        config.message_timestamp_difference_max_ms < LONG_MAX
    out: list[bytes] | None = None
    for header in list(walk_headers(records)):
        batch = RecordBatchView(records, header.position)
        recompress = target is not None and batch.compression != target and not batch.is_control
        if batch.timestamp_type == LOG_APPEND_TIME or check_times or recompress:
            decoded = decode_batch(batch)
            _check_timestamps(batch, decoded, now, config.message_timestamp_difference_max_ms if check_times
                              else None)
            if recompress:
                out = out if out is not None else [bytes(records[:header.position])]
                out.append(_rebuild(batch, decoded, target))
                continue
        if out is not None:
            out.append(bytes(batch.buffer))
    return records if out is None else bytearray(b"".join(out))


def _check_timestamps(batch: RecordBatchView, decoded: list[Any], now: int, max_difference: int | None) -> None:
    errors: list[tuple[int, str]] = []
    for index, record in enumerate(decoded):
        if max_difference is not None and record.timestamp != NO_TIMESTAMP and \
                abs(record.timestamp - now) > max_difference:
            errors.append((index, f"Timestamp {record.timestamp} of message with offset {record.offset} is out of "
                                  f"range. The timestamp should be within [{now - max_difference}, "
                                  f"{now + max_difference}]"))
        elif batch.timestamp_type == LOG_APPEND_TIME:
            errors.append((index, f"Invalid timestamp type in message {record}. Producer should not set "
                                  "timestamp type to LogAppendTime."))
    if errors:
        raise RecordValidationError(errors)


def _rebuild(batch: RecordBatchView, decoded: list[Any], codec: int) -> bytes:
    builder = RecordBatchBuilder(codec, producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                 base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
                                 partition_leader_epoch=batch.partition_leader_epoch)
    for record in decoded:
        builder.append(record.timestamp, record.key, record.value, record.headers)
    return builder.build()

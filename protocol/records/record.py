"""Records inside a v2 batch: decoding (with decompression) into ``Record`` tuples.

The record layout and the decoding itself are in the codec (``codec.py``: the compiled ``codec_c/`` or
``pure_codec.py``); this module gives them a batch's records blob, decompressed.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from . import codec
from .batch import LOG_APPEND_TIME, RecordBatchView
from .compression import decompress


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def iter_records(batch: RecordBatchView) -> Iterator[Record]:
    """Decode ``batch``'s records; record offsets and timestamps are absolute.

    The whole batch is decoded before the first record is returned, so a corrupt batch fails as a
    unit. With LogAppendTime every record carries the batch's maxTimestamp, as in Kafka. Raises
    CorruptRecordBatchError for undecodable data or a record count that disagrees with the bytes.
    """
    return iter(decode_batch(batch))


def decode_batch(batch: RecordBatchView) -> list[Record]:
    """``iter_records`` as a list."""
    codec_id = batch.compression
    data = decompress(codec_id, batch.records_data) if codec_id else batch.records_data
    fixed = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    return codec.decode_records(data, batch.record_count, batch.base_offset, batch.base_timestamp, fixed, Record)


def decode_records(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0) -> list[Record]:
    """Decode ``count`` records from an uncompressed records blob (tests, tools)."""
    return codec.decode_records(data, count, base_offset, base_timestamp, None, Record)

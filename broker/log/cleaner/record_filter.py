"""Per-record work of the cleaner: find each record's key in a batch, and rewrite a batch with fewer records.

This is the one per-record hot loop of the broker (the produce and fetch paths never decode records), so
``scan_records`` decodes only what the cleaner needs (where each record lies, its timestamp and offset
deltas, its key and whether it has a value), with the one- and two-byte varints inline.

A rewritten batch keeps everything of the original header but the record count, the maximum timestamp
and the CRC (Kafka's MemoryRecords.filterTo with buildRetainedRecordsInto): the same base offset and
last offset delta (so the producer's last sequence survives, as Kafka overrides the last offset), the
same base timestamp, and the retained records' bytes exactly as they were stored, recompressed with the
batch's codec. Kafka's builder re-encodes the records against the first retained record's timestamp;
keeping the base timestamp gives the same absolute timestamps without re-encoding anything.
"""

from __future__ import annotations

from ....protocol.errors import InvalidRecordError  # type: ignore[attr-defined]
from ....protocol.records import (
    LOG_APPEND_TIME, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, CorruptRecordBatchError, RecordBatchView,
    compress, decode_varint, decode_varlong, decompress,
)
from ....protocol.records.batch import CONTROL_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK
from ....protocol.records.builder import encode_batch

# (position, end, timestamp delta, offset delta, key or None, has value) of one record
ScannedRecord = tuple[int, int, int, int, "bytes | None", bool]


def scan_records(data: bytes, count: int) -> list[ScannedRecord]:
    """The records of an uncompressed records blob; CorruptRecordBatchError when the bytes disagree."""
    out: list[ScannedRecord] = []
    append = out.append
    end = len(data)
    pos = 0
    try:
        for _ in range(count):
            start = pos
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            rec_end = pos + length
            if length < 6 or rec_end > end:
                raise CorruptRecordBatchError(f"record length {length} at byte {start} is invalid")
            pos += 1  # attributes
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                ts_delta, pos = decode_varlong(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                offset_delta, pos = decode_varint(data, pos)
            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                z = (b & 0x7F) | (data[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = decode_varint(data, pos)
            if size < 0:
                key = None
            else:
                key = data[pos:pos + size]
                pos += size
            # the value's length: only its sign matters (a null value is a tombstone)
            append((start, rec_end, ts_delta, offset_delta, key, data[pos] != 1))
            pos = rec_end
    except IndexError:
        raise CorruptRecordBatchError(f"record data ends inside a record (byte {pos} of {end})") from None
    if pos != end:
        raise CorruptRecordBatchError(f"{end - pos} bytes remain after the batch's {count} records")
    return out


def batch_records(batch: RecordBatchView) -> tuple[bytes, list[ScannedRecord]]:
    """The (decompressed) records blob of ``batch`` and its scanned records."""
    data = decompress(batch.compression, batch.records_data)
    return data, scan_records(data, batch.record_count)


def retained_batch(batch: RecordBatchView, data: bytes, kept: list[ScannedRecord]) -> bytes:
    """``batch`` with only the ``kept`` records (their stored bytes), its offset range unchanged."""
    records: bytes = b"".join([data[r[0]:r[1]] for r in kept])
    codec = batch.compression
    if codec:
        records = compress(codec, records)
    if batch.timestamp_type == LOG_APPEND_TIME:
        max_timestamp = batch.max_timestamp
    else:
        max_timestamp = batch.base_timestamp + max(r[2] for r in kept)
    return encode_batch(records, len(kept), base_offset=batch.base_offset, last_offset_delta=batch.last_offset_delta,
                        attributes=batch.attributes, base_timestamp=batch.base_timestamp, max_timestamp=max_timestamp,
                        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                        base_sequence=batch.base_sequence, partition_leader_epoch=batch.partition_leader_epoch)


def empty_batch(batch: RecordBatchView, keep_producer: bool = True) -> bytes:
    """Kafka's writeEmptyHeader: ``batch``'s header and offset range without records (RETAIN_EMPTY keeps the
    producer's id, epoch and sequence). Without ``keep_producer`` it carries no producer at all."""
    attributes = batch.attributes & TIMESTAMP_TYPE_MASK
    if keep_producer:
        attributes |= batch.attributes & (TRANSACTIONAL_MASK | CONTROL_MASK)
        producer = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
    else:
        producer = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE)
    return encode_batch(b"", 0, base_offset=batch.base_offset, last_offset_delta=batch.last_offset_delta,
                        attributes=attributes, base_timestamp=-1, max_timestamp=batch.max_timestamp,
                        producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2],
                        partition_leader_epoch=batch.partition_leader_epoch)


def require_keys(records: bytes | bytearray | memoryview, partition_name: str) -> None:
    """Kafka's LogValidator for compacted topics: every record needs a key, else INVALID_RECORD."""
    view = memoryview(records)
    pos = 0
    while pos < len(view):
        batch = RecordBatchView(view, pos)
        pos += batch.size_in_bytes
        if batch.is_control:
            continue
        if any(record[4] is None for record in batch_records(batch)[1]):
            raise InvalidRecordError(f"Compacted topic cannot accept message without key in topic partition "
                                     f"{partition_name}.")


"""Between legacy message sets (magic 0/1) and v2 record batches, as a Kafka 2.8 broker converts.

Up (Produce v0-2 carrying magic 0/1, ``log.message.format.version`` >= 0.11, the 2.8 default):
LogValidator's convertAndAssignOffsetsNonCompressed and validateMessagesAndAssignOffsetsCompressed.
Uncompressed messages (any number) become one uncompressed v2 batch; a compressed wrapper (exactly
one) becomes one v2 batch of the same codec. Records keep their timestamps (NO_TIMESTAMP, -1, for
magic 0), get offsets 0..n-1 (the log assigns the real ones, stamps LogAppendTime and the leader epoch),
and carry no producer id, so they are never idempotent or transactional.

Down (Fetch v0-1 read magic 0, v2-3 magic 1): RecordsUtil.downConvert per batch, and the way
LazyDownConversionRecords(Send) fills the partition's share of the response (``down_convert_fetched``).
"""

from __future__ import annotations

import struct

from .batch import LOG_APPEND_TIME as V2_LOG_APPEND_TIME, RecordBatchView, iter_batches
from .builder import RecordBatchBuilder
from .compression import Compression
from .errors import (
    CorruptRecordBatchError, InvalidRecordBatchError, RecordBatchError, UnsupportedCodecError,
)
from ..errors import InvalidTimestampError, MessageTooLargeError  # type: ignore[attr-defined]
from .legacy_records import (
    LOG_APPEND_TIME, LegacyMessage, LegacyMessageSetBuilder, entry_magic, inner_messages, iter_messages,
)
from .batch import decode_batch

Buffer = bytes | bytearray | memoryview

# LazyDownConversionRecordsSend: converted chunks of up to 128 KiB of stored batches; when they run out
# before the size promised in the response, "overflow" bytes the client reads as a partial message.
MAX_READ_SIZE = 128 * 1024
MIN_OVERFLOW_MESSAGE_LENGTH = 12   # Records.LOG_OVERHEAD
_RECORD_BATCH_OVERHEAD = 61        # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_OVERFLOW_HEADER = struct.Struct(">qi")


# -- up: a produced legacy message set into one v2 batch --------------------------------------------

def is_legacy_message_set(data: Buffer) -> bool:
    """True when the first entry of ``data`` is a magic 0 or 1 message."""
    return entry_magic(data) in (0, 1)


def convert_produced_message_set(data: Buffer, *, max_message_bytes: int | None = None) -> bytes:
    """The v2 batch a Kafka 2.8 leader appends for a produced legacy message set (base offset 0).

    Raises CORRUPT_MESSAGE (bad size or CRC, a truncated message: stricter than Kafka, which drops a
    truncated tail), MESSAGE_TOO_LARGE (an entry over ``max.message.bytes``), INVALID_RECORD (mixed magics,
    more than one compressed wrapper, bad inner messages) or INVALID_TIMESTAMP (a message claiming
    LogAppendTime), as LogValidator does.
    """
    entries = _shallow_entries(data)
    first = entries[0]
    codec = Compression.NONE
    for entry in entries:
        if max_message_bytes is not None and entry.size_in_bytes > max_message_bytes:
            raise MessageTooLargeError(
                f"the record batch size in the append is {entry.size_in_bytes} bytes which exceeds the maximum "
                f"configured value of {max_message_bytes}.")
        entry.ensure_valid()  # the outer CRC (Log.analyzeAndValidateRecords)
        if entry.compression != Compression.NONE:
            codec = entry.compression  # the source codec is the last compressed entry's
    if codec == Compression.NONE:
        # each uncompressed message is its own "batch"; their CRCs were checked as entries
        pairs = [(entry, entry) for entry in entries]
    else:
        if len(entries) > 1:
            raise InvalidRecordBatchError("Compressed outer record has more than one batch")
        pairs = [(first, record) for record in inner_messages(first)]
    builder = RecordBatchBuilder(codec)
    errors = []
    for batch, record in pairs:
        error = _record_error(batch, record, check_crc=batch is not record)
        if error is not None:
            errors.append(error)
        elif not errors:  # Kafka stops appending at the first bad record, and fails the batch
            builder.append(record.timestamp, record.key, record.value)
    if errors:
        if any(e is InvalidTimestampError for e in errors):
            raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp")
        raise InvalidRecordBatchError("One or more records have been rejected")
    return builder.build()


def _shallow_entries(data: Buffer) -> list[LegacyMessage]:
    entries: list[LegacyMessage] = []
    for entry in iter_messages(data, allow_partial=False):
        entries.append(entry)
    if not entries:
        raise InvalidRecordBatchError("a produce request must carry at least one message")
    magic = entries[0].magic
    for entry in entries:
        if entry.magic != magic:  # LogValidator.validateBatch
            raise InvalidRecordBatchError(
                f"Batch magic {entry.magic} is not the same as the first batch's magic byte {magic}")
    return entries


def _record_error(batch: LegacyMessage, record: LegacyMessage, check_crc: bool) -> type | None:
    """LogValidator.validateRecord for one message of ``batch`` (its wrapper, or itself when
    uncompressed): its error class, or None; a bad inner CRC raises CORRUPT_MESSAGE."""
    if record.magic != batch.magic:
        return InvalidRecordBatchError
    if check_crc:
        try:
            record.ensure_valid()
        except CorruptRecordBatchError as exc:
            raise CorruptRecordBatchError(f"inner {exc}") from None
    # Compacted topics' key check and message.timestamp.difference.max.ms apply to the v2 batch
    # the log receives, as for any producer; a client may never claim LogAppendTime.
    if batch.timestamp_type == LOG_APPEND_TIME:
        return InvalidTimestampError
    return None


# -- down: stored v2 batches for a Fetch below v4 -----------------------------------------------------

def down_convert_batch(batch: RecordBatchView, to_magic: int, first_offset: int) -> bytes:
    """RecordsUtil.downConvert of one v2 batch to magic 0 or 1.

    Control batches vanish (old formats have no markers), so do headers; zstd cannot be converted
    (UNSUPPORTED_COMPRESSION_TYPE); an uncompressed batch loses its records below ``first_offset``
    (the fetch offset), a compressed one is kept whole inside its wrapper. LogAppendTime batches stamp
    every message with the batch's time; the codec is kept.
    """
    if batch.is_control:
        return b""
    codec = batch.compression
    if codec == Compression.ZSTD:
        raise UnsupportedCodecError("Down-conversion of zstandard-compressed batches is not supported")
    records = decode_batch(batch)
    if codec == Compression.NONE:
        records = [r for r in records if r.offset >= first_offset]
    if not records:
        return b""
    log_append = batch.timestamp_type == V2_LOG_APPEND_TIME
    builder = LegacyMessageSetBuilder(to_magic, codec, timestamp_type=LOG_APPEND_TIME if log_append else 0,
                                      base_offset=records[0].offset,
                                      log_append_time=batch.max_timestamp if log_append else -1)
    for record in records:
        builder.append(record.offset, record.timestamp, record.key, record.value)
    return builder.build()


def _overflow(remaining: int) -> bytes:
    """What LazyDownConversionRecordsSend.buildOverflowBatch writes into ``remaining`` bytes: an
    offset of -1 and a length past the end, so the client sees a partial message and ignores it."""
    size = max(MIN_OVERFLOW_MESSAGE_LENGTH, min(remaining + 1, MAX_READ_SIZE))
    chunk = _OVERFLOW_HEADER.pack(-1, max(remaining + 1, _RECORD_BATCH_OVERHEAD)) + bytes(size - 12)
    return chunk[:min(size, remaining)]


def down_convert_fetched(records: Buffer, to_magic: int, first_offset: int) -> bytes:
    """A partition's fetched v2 batches as a Fetch v0-3 consumer receives them from Kafka 2.8.

    The partition's records take max(the stored bytes read, the first converted batch) bytes, so at
    least one whole converted message goes out even when conversion made it bigger; the converted data
    is cut at that size (the client drops the partial message at the end), and when it is shorter the
    rest is filled with overflow bytes. Nothing convertible at all: 12 overflow bytes. Conversion stops
    once the size is filled, as Kafka's lazy send does. A zstd batch after converted data ends the data
    (the consumer gets UNSUPPORTED_COMPRESSION_TYPE when it fetches from it); as the first one it raises.
    """
    batches = iter(iter_batches(records))
    first = b""
    for batch in batches:  # the first batch that converts to something
        first = down_convert_batch(batch, to_magic, first_offset)
        if first:
            break
    size = max(len(records), len(first)) if first else MIN_OVERFLOW_MESSAGE_LENGTH
    out = bytearray(first)
    try:
        for batch in batches:
            if len(out) >= size:
                break
            out += down_convert_batch(batch, to_magic, first_offset)
    except UnsupportedCodecError:
        pass  # Kafka sends overflow bytes from there on
    del out[size:]
    while len(out) < size:
        out += _overflow(size - len(out))
    return bytes(out)


__all__ = [
    "MAX_READ_SIZE", "MIN_OVERFLOW_MESSAGE_LENGTH", "RecordBatchError", "convert_produced_message_set",
    "down_convert_batch", "down_convert_fetched", "is_legacy_message_set",
]

"""Exceptions raised by the record-batch code.

Each one is also a Kafka error with the code the broker answers for a bad batch, so a handler can
put ``exc.code`` straight into a per-partition response. ``RecordBatchError`` is the common base that
callers (and the fuzz tests) catch: anything else escaping this package is a bug.
"""

from __future__ import annotations

from ..errors import (  # type: ignore[attr-defined]
    CorruptMessageError,
    InvalidRecordError,
    KafkaError,
    UnsupportedCompressionTypeError,
)


class RecordBatchError(KafkaError):
    """Base of every error raised while reading, validating or building record batches."""


class CorruptRecordBatchError(CorruptMessageError, RecordBatchError):  # type: ignore[misc, valid-type]
    """Bytes that are not a well-formed batch: bad length, CRC, varint, truncated record, ... (code 2)."""


class InvalidRecordBatchError(InvalidRecordError, RecordBatchError):  # type: ignore[misc, valid-type]
    """A well-formed batch that is not acceptable: wrong magic, inconsistent counts, ... (code 87)."""


class UnsupportedCodecError(UnsupportedCompressionTypeError, RecordBatchError):  # type: ignore[misc, valid-type]
    """A compression codec id outside 0-4 (code 76)."""

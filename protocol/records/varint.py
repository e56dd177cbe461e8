"""Zigzag varints (protobuf style), the integer encoding used inside records only.

Protocol-level lengths use *unsigned* varints and live in the message codec, not here. Decoders take
``bytes`` (indexing bytes is the cheapest way to read one octet in CPython) and return
``(value, next_position)``; running off the end, an over-long encoding or a value wider than the
type (32 bits for a varint, 64 for a varlong) raises CorruptRecordBatchError, never IndexError.
"""

from __future__ import annotations

from ..types import base128
from .errors import CorruptRecordBatchError

# Kafka rejects a varint longer than 5 bytes and a varlong longer than 10.
_VARINT_MAX_SHIFT = 28
_VARLONG_MAX_SHIFT = 63
# How many payload bits the last byte may carry: a varint must fit 32 bits, a varlong 64.
_LAST_BYTE_BITS = {_VARINT_MAX_SHIFT: 4, _VARLONG_MAX_SHIFT: 1}


def _decode(buf: bytes, pos: int, max_shift: int, kind: str) -> tuple[int, int]:
    end = len(buf)
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise CorruptRecordBatchError(f"{kind} runs past the end of the data")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if shift == max_shift and b >> _LAST_BYTE_BITS[max_shift]:
                raise CorruptRecordBatchError(f"{kind} does not fit in its type")
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > max_shift:
            raise CorruptRecordBatchError(f"{kind} is too long")


def decode_varint(buf: bytes, pos: int = 0) -> tuple[int, int]:
    """A zigzag int32 at ``pos``: (value, position after it)."""
    return _decode(buf, pos, _VARINT_MAX_SHIFT, "varint")


def decode_varlong(buf: bytes, pos: int = 0) -> tuple[int, int]:
    """A zigzag int64 at ``pos``: (value, position after it)."""
    return _decode(buf, pos, _VARLONG_MAX_SHIFT, "varlong")


def encode_varint(value: int) -> bytes:
    """Zigzag-encode an int32 or int64 (the same bytes: the width only bounds the length)."""
    return base128((value << 1) ^ (value >> 63))


encode_varlong = encode_varint


def size_of_varint(value: int) -> int:
    """How many bytes ``encode_varint(value)`` takes."""
    z = (value << 1) ^ (value >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size

"""Wire primitives of the Kafka protocol.

Fixed-width values are big-endian ``struct`` formats (``FIXED_FORMATS``); the generated codecs merge
runs of them into one ``struct.Struct``. Variable-length values are written here once:

- unsigned varints (protobuf style, at most 5 bytes for 32 bits) carry the lengths of compact
  strings, bytes and arrays (length + 1, 0 = null) and the tagged-field sections;
- zigzag varints/varlongs appear only inside record batches (``records/varint.py``);
- classic strings carry an int16 length, bytes and arrays an int32 one (-1 = null).

Every reader takes ``(buffer, position)`` and returns ``(value, new_position)``. Readers raise
``ProtocolError`` on a malformed value and never read past the end silently.
"""

from __future__ import annotations

import struct
import uuid

from .errors import ProtocolError

# type name -> struct format character (big-endian is added by the user of the table)
FIXED_FORMATS = {
    "bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "float64": "d", "uuid": "16s",
}

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")

ZERO_UUID = uuid.UUID(int=0)
_ZERO_UUID_BYTES = bytes(16)

# Single-byte varints are by far the most common (small lengths, counts, empty tag sections).
_ONE_BYTE = tuple(bytes((i,)) for i in range(128))


class TruncatedError(ProtocolError):
    """A length or count points past the end of the frame."""


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    return ZERO_UUID if raw == _ZERO_UUID_BYTES else uuid.UUID(bytes=bytes(raw))


# --- unsigned varints -------------------------------------------------------------------------

def read_uvarint_tail(data, pos: int, first: int) -> tuple[int, int]:
    """Finish an unsigned varint whose first byte (>= 0x80) was already read at ``pos - 1``.

    Unrolled: lengths of 128 B to 2 MiB (two or three bytes) are common in record fields."""
    try:
        byte = data[pos]
        value = (first & 0x7F) | ((byte & 0x7F) << 7)
        if byte < 0x80:
            return value, pos + 1
        byte = data[pos + 1]
        value |= (byte & 0x7F) << 14
        if byte < 0x80:
            return value, pos + 2
        byte = data[pos + 2]
        value |= (byte & 0x7F) << 21
        if byte < 0x80:
            return value, pos + 3
        byte = data[pos + 3]
        value |= (byte & 0x7F) << 28
        if byte < 0x80:
            return value, pos + 4
    except IndexError:
        raise TruncatedError("varint runs past the end of the frame") from None
    raise ProtocolError("unsigned varint is longer than 5 bytes")


def read_uvarint(data, pos: int) -> tuple[int, int]:
    if pos >= len(data):
        raise TruncatedError("varint runs past the end of the frame")
    first = data[pos]
    if first < 0x80:
        return first, pos + 1
    return read_uvarint_tail(data, pos + 1, first)


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (0 <= value < 2**32)."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0 or value >= 1 << 32:
        raise ValueError(f"unsigned varint out of range: {value}")
    return base128(value)


def base128(value: int) -> bytes:
    """The base-128 groups of a non-negative integer, low first (the body of every varint)."""
    if value < 0x80:
        return _ONE_BYTE[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- tagged fields ----------------------------------------------------------------------------

def write_tag_section(tags: list[tuple[int, bytes]], append) -> None:
    """Write a tagged-field section; ``tags`` must be sorted by tag."""
    append(uvarint(len(tags)))
    for tag, payload in tags:
        append(uvarint(tag))
        append(uvarint(len(payload)))
        append(payload)


def read_unknown_tag_section(data, pos: int) -> tuple[dict[int, bytes] | None, int]:
    """Read a tagged-field section whose tags are all unknown to the reader."""
    count, pos = read_uvarint(data, pos)
    if count == 0:
        return None, pos
    found: dict[int, bytes] = {}
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        end = pos + size
        if end > len(data):
            raise TruncatedError("tagged field runs past the end of the frame")
        found[tag] = bytes(data[pos:end])
        pos = end
    return found, pos

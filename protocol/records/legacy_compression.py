"""Compression of legacy message sets (magic 0 and 1): the v2 codecs, with Kafka's own LZ4 framing.

A compressed legacy wrapper's value is the inner message set compressed as one stream. gzip and
snappy (xerial framing) are the same streams as in v2 batches. LZ4 is the LZ4 frame format as Kafka's
KafkaLZ4BlockOutputStream writes it: FLG 0x60 (version 1, independent blocks, no checksums), BD 0x40
(64 KiB blocks), blocks stored raw when they do not shrink, an end mark and no content checksum. Before
KIP-57 Kafka computed the frame descriptor's header checksum over the magic number too; magic 0 keeps
that "broken" checksum on both sides (Kafka ignores it when reading magic 0 and writes it when writing
magic 0), magic 1 uses the correct one. zstd has no legacy form.
"""

from __future__ import annotations

import struct

import cramjam

from .compression import Compression, check_codec, compress, decompress
from .errors import CorruptRecordBatchError, UnsupportedCodecError

Buffer = bytes | bytearray | memoryview

LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, block independence; no block/content checksum, no content size
_LZ4_BD = 0x40   # maximum block size 64 KiB
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000
_LZ4_CONTENT_SIZE_FLAG = 0x08
_UINT32_LE = struct.Struct("<I")

# xxHash32 primes (the frame descriptor's header checksum is its second byte)
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_FOUR_UINT32_LE = struct.Struct("<4I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """XXH32 of ``data`` (only ever a few header bytes here, so plain Python is enough)."""
    data = bytes(data)
    n, i = len(data), 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = _FOUR_UINT32_LE.unpack_from(data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (h + _UINT32_LE.unpack_from(data, i)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (h + data[i] * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def lz4_header_checksum(descriptor: Buffer, *, broken: bool) -> int:
    """The HC byte of an LZ4 frame whose descriptor (FLG, BD[, content size]) is ``descriptor``."""
    covered = LZ4_MAGIC + bytes(descriptor) if broken else bytes(descriptor)
    return (xxh32(covered) >> 8) & 0xFF


def kafka_lz4_compress(data: Buffer, *, broken_checksum: bool) -> bytes:
    """An LZ4 frame laid out as Kafka's KafkaLZ4BlockOutputStream writes it."""
    view = memoryview(data)
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    parts = [LZ4_MAGIC, descriptor, bytes((lz4_header_checksum(descriptor, broken=broken_checksum),))]
    for start in range(0, len(view), _LZ4_BLOCK):
        block = view[start:start + _LZ4_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        if len(packed) >= len(block):  # incompressible: stored as is
            parts += (_UINT32_LE.pack(len(block) | _LZ4_UNCOMPRESSED), bytes(block))
        else:
            parts += (_UINT32_LE.pack(len(packed)), packed)
    parts.append(_UINT32_LE.pack(0))  # end mark
    return b"".join(parts)


def _with_correct_header_checksum(data: Buffer) -> bytes:
    """A magic-0 frame (any header checksum, as Kafka ignores it there) with the correct one."""
    frame = bytearray(data)
    if len(frame) < 7 or frame[:4] != LZ4_MAGIC:
        raise CorruptRecordBatchError("lz4: not an LZ4 frame")
    descriptor_end = 6 + (8 if frame[4] & _LZ4_CONTENT_SIZE_FLAG else 0)
    if len(frame) <= descriptor_end:
        raise CorruptRecordBatchError("lz4: truncated frame descriptor")
    frame[descriptor_end] = lz4_header_checksum(frame[4:descriptor_end], broken=False)
    return bytes(frame)


def compress_legacy(codec: int, data: Buffer, magic: int) -> bytes:
    """The value of a compressed wrapper message holding the inner message set ``data``."""
    codec = check_codec(codec)
    if codec == Compression.ZSTD:
        raise UnsupportedCodecError(f"zstd compression is not supported for magic {magic}")
    if codec == Compression.LZ4:
        return kafka_lz4_compress(data, broken_checksum=magic == 0)
    return compress(codec, data)


def decompress_legacy(codec: int, data: Buffer, magic: int) -> bytes:
    """The inner message set of a compressed wrapper; corrupt input raises CorruptRecordBatchError."""
    if codec == Compression.LZ4 and magic == 0:
        data = _with_correct_header_checksum(data)
    return decompress(codec, data)

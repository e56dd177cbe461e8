"""Compression codecs of record batches (attributes bits 0-2).

The whole records blob after the batch header is compressed as one unit. gzip uses the standard
library; snappy, lz4 and zstd use cramjam. Snappy has two framings in the wild: the Java client and
kafka-python write xerial's (a magic header, then length-prefixed raw blocks) while librdkafka writes
one raw snappy block, so decompression accepts both and compression writes xerial like Java.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from enum import IntEnum
from typing import Callable

import cramjam
import lz4.frame

from .errors import CorruptRecordBatchError, UnsupportedCodecError

Buffer = bytes | bytearray | memoryview


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# Java's defaults: gzip uses Deflater's default level, zstd level 3.
GZIP_LEVEL = 6
ZSTD_LEVEL = 3

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, min compatible version 1
_XERIAL_BLOCK = 32 * 1024  # Java's SnappyOutputStream block size
_INT32 = struct.Struct(">i")


def _gzip_compress(data: Buffer, level: int | None) -> bytes:
    # mtime=0 keeps the output deterministic (and takes zlib's one-shot path).
    return gzip.compress(data, GZIP_LEVEL if level is None else level, mtime=0)


def _gzip_decompress(data: Buffer) -> bytes:
    return gzip.decompress(data)  # handles multi-member streams, as Java's GZIPInputStream does


def _snappy_compress(data: Buffer, level: int | None) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: Buffer) -> bytes:
    view = memoryview(data)
    if len(view) >= 16 and view[:8] == XERIAL_MAGIC:
        return _xerial_decompress(view)
    return bytes(cramjam.snappy.decompress_raw(view))


def _xerial_decompress(view: memoryview) -> bytes:
    out = []
    pos, end = 16, len(view)  # skip magic, version, compatible version
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordBatchError("xerial snappy: truncated block length")
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordBatchError(f"xerial snappy: block length {size} exceeds the data")
        out.append(bytes(cramjam.snappy.decompress_raw(view[pos:pos + size])))
        pos += size
    return b"".join(out)


def _lz4_compress(data: Buffer, level: int | None) -> bytes:
    # The frame Java's KafkaLZ4BlockInputStream accepts: independent 64 KiB blocks (it refuses a dependent
    # block stream, which is what cramjam writes), no content size (Java's own writer sets neither).
    return lz4.frame.compress(data, compression_level=level or 0, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                              block_linked=False, content_checksum=False, store_size=False)


def _lz4_decompress(data: Buffer) -> bytes:
    return bytes(cramjam.lz4.decompress(data))


def _zstd_compress(data: Buffer, level: int | None) -> bytes:
    return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL if level is None else level))


def _zstd_decompress(data: Buffer) -> bytes:
    return bytes(cramjam.zstd.decompress(data))


_COMPRESSORS: dict[int, Callable[[Buffer, int | None], bytes]] = {
    Compression.GZIP: _gzip_compress,
    Compression.SNAPPY: _snappy_compress,
    Compression.LZ4: _lz4_compress,
    Compression.ZSTD: _zstd_compress,
}
_DECOMPRESSORS: dict[int, Callable[[Buffer], bytes]] = {
    Compression.GZIP: _gzip_decompress,
    Compression.SNAPPY: _snappy_decompress,
    Compression.LZ4: _lz4_decompress,
    Compression.ZSTD: _zstd_decompress,
}
# What each library raises on garbage; all of it becomes CORRUPT_MESSAGE.
_CODEC_ERRORS = (cramjam.DecompressionError, zlib.error, EOFError, OSError, ValueError)


def check_codec(codec: int) -> Compression:
    """The codec as an enum member, or UnsupportedCodecError for ids 5-7."""
    try:
        return Compression(codec)
    except ValueError:
        raise UnsupportedCodecError(f"unknown compression codec {codec}") from None


def compress(codec: int, data: Buffer, level: int | None = None) -> bytes:
    """Compress a records blob with ``codec`` (NONE returns the bytes unchanged)."""
    if check_codec(codec) == Compression.NONE:
        return bytes(data)
    return _COMPRESSORS[codec](data, level)


def decompress(codec: int, data: Buffer) -> bytes:
    """Decompress a records blob; corrupt input raises CorruptRecordBatchError."""
    if check_codec(codec) == Compression.NONE:
        return bytes(data)
    try:
        return _DECOMPRESSORS[codec](data)
    except CorruptRecordBatchError:
        raise
    except _CODEC_ERRORS as exc:
        name = Compression(codec).name.lower()
        raise CorruptRecordBatchError(f"cannot decompress {name} records: {exc}") from exc

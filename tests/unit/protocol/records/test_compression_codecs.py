"""Codecs: round trips, snappy's two framings, corrupt input, unknown codec ids."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest

from odradek.protocol.records import Compression, CorruptRecordBatchError, UnsupportedCodecError, compress, decompress
from odradek.protocol.records.compression import XERIAL_MAGIC

DATA = b"".join(b"record %d with some repetitive payload; " % i for i in range(4000))  # ~160 KB


@pytest.mark.parametrize("codec", list(Compression))
@pytest.mark.parametrize("payload", [b"", b"x", DATA])
def test_round_trip(codec, payload):
    packed = compress(codec, payload)
    assert decompress(codec, packed) == payload
    assert decompress(codec, memoryview(packed)) == payload
    if codec and payload == DATA:
        assert len(packed) < len(DATA) / 3


def test_none_is_identity():
    assert compress(Compression.NONE, bytearray(b"abc")) == b"abc"
    assert decompress(0, memoryview(b"abc")) == b"abc"


def test_snappy_writes_xerial_framing_with_32k_blocks():
    packed = compress(Compression.SNAPPY, DATA)
    assert packed[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", packed[8:16]) == (1, 1)
    pos, blocks = 16, []
    while pos < len(packed):
        (size,) = struct.unpack_from(">i", packed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4:pos + 4 + size])))
        pos += 4 + size
    assert pos == len(packed)
    assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(DATA) // (32 * 1024))
    assert b"".join(blocks) == DATA


def test_lz4_writes_the_frame_java_reads():
    """Kafka's Java reader (KafkaLZ4BlockInputStream) refuses a frame without the block-independence flag."""
    packed = compress(Compression.LZ4, DATA)
    assert packed[:4] == bytes.fromhex("04224d18")
    flg, bd = packed[4], packed[5]
    assert flg >> 6 == 1 and flg & 0b0010_0000, f"FLG {flg:08b}: version 1 with independent blocks"
    assert flg & 0b0000_1000 == 0 and bd == 0x40  # no content size; 64 KiB blocks
    assert bytes(cramjam.lz4.decompress(packed)) == DATA  # librdkafka-style readers still read it


def test_snappy_reads_raw_blocks_like_librdkafka_writes():
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(DATA))) == DATA


def test_snappy_reads_xerial_written_by_kafka_python():
    from kafka.codec import snappy_encode
    packed = snappy_encode(DATA, xerial_compatible=True, xerial_blocksize=4096)
    assert packed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, packed) == DATA


def test_gzip_reads_multi_member_streams():
    packed = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(Compression.GZIP, packed) == b"first second"


def test_gzip_output_is_deterministic():
    assert compress(Compression.GZIP, DATA) == compress(Compression.GZIP, DATA)


@pytest.mark.parametrize("codec", [c for c in Compression if c])
@pytest.mark.parametrize("garbage", [b"\xff" * 40, b"not compressed at all, just text"])
def test_garbage_raises_corrupt(codec, garbage):
    with pytest.raises(CorruptRecordBatchError) as info:
        decompress(codec, garbage)
    assert info.value.code == 2


@pytest.mark.parametrize("codec", [c for c in Compression if c])
def test_truncated_stream_raises_corrupt(codec):
    packed = compress(codec, DATA)
    with pytest.raises(CorruptRecordBatchError):
        decompress(codec, packed[: len(packed) // 2])


@pytest.mark.parametrize("bad_block", [
    struct.pack(">i", 1000) + b"short",      # block longer than the data
    struct.pack(">i", -3),                   # negative block length
    b"\x00\x00",                             # truncated block length
])
def test_broken_xerial_framing_raises_corrupt(bad_block):
    header = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    with pytest.raises(CorruptRecordBatchError, match="xerial"):
        decompress(Compression.SNAPPY, header + bad_block)


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec):
    with pytest.raises(UnsupportedCodecError) as info:
        decompress(codec, b"")
    assert info.value.code == 76
    with pytest.raises(UnsupportedCodecError):
        compress(codec, b"")

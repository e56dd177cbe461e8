"""Legacy message sets (magic 0/1) against kafka-python's own legacy codec (kafka.record.legacy_records).

Uncompressed sets must be byte-identical to kafka-python's; compressed wrappers must carry byte-identical
inner message sets (kafka-python always writes wrapper offset 0 and timestamp 0, Kafka's builder writes the
last offset and the largest timestamp, as we do) and each side must read the other's, for every codec.
Magic 0 LZ4 keeps the pre-KIP-57 frame header checksum (over the magic number too), checked against the
xxhash module kafka-python uses for it.
"""

from __future__ import annotations

import os
import struct
import zlib

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from odradek.protocol.errors import InvalidTimestampError, MessageTooLargeError  # type: ignore[attr-defined]
from odradek.protocol.records import Compression, CorruptRecordBatchError, InvalidRecordBatchError
from odradek.protocol.records.legacy_compression import (
    LZ4_MAGIC, decompress_legacy, kafka_lz4_compress, lz4_header_checksum, xxh32,
)
from odradek.protocol.records.legacy_conversion import convert_produced_message_set
from odradek.protocol.records.legacy_records import (
    LOG_APPEND_TIME, LegacyMessageSetBuilder, encode_message, inner_messages, iter_messages,
)

CODECS = (Compression.GZIP, Compression.SNAPPY, Compression.LZ4)
SAMPLES = [(b"key-0", b"value" * 20), (None, b"no key"), (b"no value", None), (None, None), (b"", b"")]


def kafka_python_set(magic: int, codec: int, base_timestamp: int = 1_600_000_000_000) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 20)
    for i, (key, value) in enumerate(SAMPLES):
        builder.append(i, base_timestamp + i, key, value)
    return bytes(builder.build())


def our_set(magic: int, codec: int, base_offset: int = 0, base_timestamp: int = 1_600_000_000_000, **kw) -> bytes:
    builder = LegacyMessageSetBuilder(magic, codec, base_offset=base_offset, **kw)
    for i, (key, value) in enumerate(SAMPLES):
        builder.append(base_offset + i, base_timestamp + i, key, value)
    return builder.build()


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_sets_are_byte_identical_to_kafka_python(magic):
    assert our_set(magic, Compression.NONE) == kafka_python_set(magic, Compression.NONE)
    messages = list(iter_messages(kafka_python_set(magic, Compression.NONE)))
    assert [(m.offset, m.key, m.value, m.crc_valid) for m in messages] == \
        [(i, k, v, True) for i, (k, v) in enumerate(SAMPLES)]
    assert [m.timestamp for m in messages] == ([-1] * 5 if magic == 0 else [1_600_000_000_000 + i for i in range(5)])


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_compressed_wrappers_nest_the_same_inner_set_as_kafka_python(magic, codec):
    [theirs] = list(iter_messages(kafka_python_set(magic, codec)))
    [ours] = list(iter_messages(our_set(magic, codec)))
    assert theirs.crc_valid and ours.crc_valid and ours.key is None and ours.compression == codec
    assert decompress_legacy(codec, ours.value, magic) == decompress_legacy(codec, theirs.value, magic)
    # Kafka's wrapper: the last offset, the largest timestamp (kafka-python writes 0 and 0)
    assert ours.offset == len(SAMPLES) - 1 and ours.timestamp == (-1 if magic == 0 else 1_600_000_000_004)
    for wrapper in (theirs, ours):
        assert [(m.offset, m.key, m.value, m.crc_valid) for m in inner_messages(wrapper)] == \
            [(i, k, v, True) for i, (k, v) in enumerate(SAMPLES)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", (Compression.NONE,) + CODECS, ids=lambda c: c.name)
def test_kafka_python_reads_our_sets_with_absolute_offsets(magic, codec):
    batches = []
    data = memoryview(our_set(magic, codec, base_offset=1000))
    while data:
        size = 12 + struct.unpack_from(">i", data, 8)[0]
        batches.append(LegacyRecordBatch(bytes(data[:size]), magic))
        data = data[size:]
    assert all(b.validate_crc() for b in batches)
    records = [r for b in batches for r in b]
    assert [(r.offset, r.key, r.value) for r in records] == [(1000 + i, k, v) for i, (k, v) in enumerate(SAMPLES)]
    assert all(r.validate_crc() for r in records)
    if magic:
        assert [r.timestamp for r in records] == [1_600_000_000_000 + i for i in range(5)]


def test_v1_relative_inner_offsets_and_wrapper_offset_rules():
    inner = b"".join(encode_message(i, 1, 0, 1000 + i, None, b"v%d" % i) for i in range(3))  # relative 0..2

    def wrapper(offset: int):
        [message] = iter_messages(encode_message(offset, 1, Compression.GZIP, 1002, None, _gzip(inner)))
        return message
    assert [m.offset for m in inner_messages(wrapper(41))] == [39, 40, 41]   # base = wrapper - last inner
    assert [m.offset for m in inner_messages(wrapper(0))] == [0, 1, 2]      # 0: some producers never set it
    with pytest.raises(InvalidRecordBatchError, match="wrapper offset '1'"):
        inner_messages(wrapper(1))


def _gzip(data: bytes) -> bytes:
    from odradek.protocol.records import compress
    return compress(Compression.GZIP, data)


def test_log_append_time_wrapper_gives_its_timestamp_to_inner_messages():
    builder = LegacyMessageSetBuilder(1, Compression.SNAPPY, timestamp_type=LOG_APPEND_TIME, log_append_time=777,
                                      base_offset=5)
    for i in range(3):
        builder.append(5 + i, 100 + i, b"k", b"v")
    [wrapper] = list(iter_messages(builder.build()))
    assert (wrapper.timestamp, wrapper.timestamp_type, wrapper.offset) == (777, LOG_APPEND_TIME, 7)
    assert [(m.offset, m.timestamp, m.attributes) for m in inner_messages(wrapper)] == [(5, 777, 8), (6, 777, 8),
                                                                                         (7, 777, 8)]


def test_crc_is_crc32_and_checked():
    data = bytearray(kafka_python_set(1, Compression.NONE))
    [first, *_] = iter_messages(data)
    assert first.crc == zlib.crc32(bytes(data[16:12 + first.size]))
    data[30] ^= 0x01  # inside the first message's key
    [damaged, *rest] = iter_messages(data)
    assert not damaged.crc_valid and all(m.crc_valid for m in rest)
    with pytest.raises(CorruptRecordBatchError, match="corrupt"):
        damaged.ensure_valid()


def test_structural_damage_is_corrupt_message():
    good = kafka_python_set(0, Compression.NONE)
    with pytest.raises(CorruptRecordBatchError, match="minimum record overhead"):
        list(iter_messages(good[:8] + struct.pack(">i", 13) + good[12:]))
    with pytest.raises(CorruptRecordBatchError, match="trailing"):
        list(iter_messages(good[:-3], allow_partial=False))
    assert len(list(iter_messages(good[:-3]))) == len(SAMPLES) - 1  # a fetch's partial tail is dropped
    bad_magic = bytearray(good)
    bad_magic[16] = 7
    with pytest.raises(CorruptRecordBatchError, match="invalid magic 7"):
        list(iter_messages(bad_magic))


def test_xxh32_matches_the_xxhash_module():
    for size in (0, 1, 3, 4, 15, 16, 17, 31, 64, 1000):
        data = os.urandom(size)
        assert xxh32(data) == xxhash.xxh32(data).intdigest()
        assert xxh32(data, 7) == xxhash.xxh32(data, seed=7).intdigest()


def test_lz4_frames_carry_kafkas_header_checksums():
    import lz4.frame
    payload = os.urandom(100) + b"abc" * 70_000  # two 64 KiB blocks and a bit, one incompressible start
    for magic in (0, 1):
        frame = kafka_lz4_compress(payload, broken_checksum=magic == 0)
        assert frame[:4] == LZ4_MAGIC and frame[4:6] == b"\x60\x40"
        covered = frame[:6] if magic == 0 else frame[4:6]
        assert frame[6] == (xxhash.xxh32(covered).intdigest() >> 8) & 0xFF
        assert decompress_legacy(Compression.LZ4, frame, magic) == payload
    assert lz4.frame.decompress(kafka_lz4_compress(payload, broken_checksum=False)) == payload
    assert lz4_header_checksum(b"\x60\x40", broken=True) != lz4_header_checksum(b"\x60\x40", broken=False)


# -- produce: LogValidator's rules ---------------------------------------------------------------------------

def v2_records(batch: bytes) -> list:
    from odradek.protocol.records import RecordBatchView, decode_batch
    view = RecordBatchView(batch)
    view.validate_produce()
    return [(r.offset, r.timestamp, r.key, r.value) for r in decode_batch(view)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", (Compression.NONE,) + CODECS, ids=lambda c: c.name)
def test_produced_sets_become_one_v2_batch_of_the_same_codec(magic, codec):
    from odradek.protocol.records import RecordBatchView
    batch = convert_produced_message_set(kafka_python_set(magic, codec))
    view = RecordBatchView(batch)
    assert (view.compression, view.producer_id, view.base_sequence, view.is_transactional) == (codec, -1, -1, False)
    timestamps = [-1] * 5 if magic == 0 else [1_600_000_000_000 + i for i in range(5)]
    assert v2_records(batch) == [(i, timestamps[i], k, v) for i, (k, v) in enumerate(SAMPLES)]
    assert view.max_timestamp == max(timestamps) and view.timestamp_type == 0


def test_produce_refusals_follow_log_validator():
    with pytest.raises(InvalidTimestampError):  # a producer may not claim LogAppendTime
        convert_produced_message_set(our_set(1, Compression.NONE, timestamp_type=LOG_APPEND_TIME, log_append_time=5))
    with pytest.raises(InvalidTimestampError):
        convert_produced_message_set(our_set(1, Compression.GZIP, timestamp_type=LOG_APPEND_TIME, log_append_time=5))
    with pytest.raises(InvalidRecordBatchError, match="is not the same"):  # mixed magics
        convert_produced_message_set(our_set(0, Compression.NONE) + our_set(1, Compression.NONE))
    with pytest.raises(InvalidRecordBatchError, match="more than one batch"):  # two wrappers
        convert_produced_message_set(our_set(1, Compression.GZIP) + our_set(1, Compression.GZIP))
    with pytest.raises(MessageTooLargeError):
        convert_produced_message_set(our_set(1, Compression.NONE), max_message_bytes=40)
    corrupt = bytearray(kafka_python_set(0, Compression.NONE))
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordBatchError):
        convert_produced_message_set(bytes(corrupt))
    # an inner message whose magic differs from its wrapper's, and one that is itself compressed
    mixed = encode_message(0, 0, 0, -1, None, b"v0 inside v1")
    with pytest.raises(InvalidRecordBatchError, match="rejected"):
        convert_produced_message_set(encode_message(0, 1, Compression.GZIP, 5, None, _gzip(mixed)))
    nested = encode_message(0, 1, Compression.GZIP, 5, None, b"x")
    with pytest.raises(InvalidRecordBatchError, match="must not be compressed"):
        convert_produced_message_set(encode_message(0, 1, Compression.GZIP, 5, None, _gzip(nested)))
    with pytest.raises(InvalidRecordBatchError, match="null value"):
        convert_produced_message_set(encode_message(0, 1, Compression.GZIP, 5, None, None))


# -- fuzz: mutated legacy sets either convert or raise a Kafka error --------------------------------------------

LEGACY_SAMPLES = [our_set(magic, codec, base_offset=3) for magic in (0, 1) for codec in (Compression.NONE,) + CODECS]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.sampled_from(LEGACY_SAMPLES), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)),
                                                              max_size=4), cut=st.integers(0, 10_000))
def test_mutated_legacy_sets_convert_or_raise_kafka_errors(sample, flips, cut):
    from odradek.protocol.errors import KafkaError
    data = bytearray(sample)
    for position, mask in flips:
        data[position % len(data)] ^= mask
    data = bytes(data[:max(1, len(data) - cut % 40)])
    try:
        batch = convert_produced_message_set(data)
    except KafkaError:
        return
    v2_records(batch)  # what was accepted is a valid v2 batch


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_garbage_converts_or_raises_kafka_errors(data):
    from odradek.protocol.errors import KafkaError
    try:
        convert_produced_message_set(data)
    except KafkaError:
        pass

"""Builder -> view -> records round trips, record decoding edge cases, zigzag varints."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    CorruptRecordBatchError,
    Record,
    RecordBatchBuilder,
    RecordBatchView,
    decode_records,
    decode_varint,
    decode_varlong,
    encode_varint,
    iter_records,
    size_of_varint,
)
from odradek.protocol.records.batch import HEADER_SIZE

pytestmark = pytest.mark.usefixtures("each_codec")  # every test with both record codecs

SAMPLE = [
    (1_700_000_000_000, b"k1", b"v1", [("trace", b"abc"), ("null-header", None)]),
    (1_700_000_000_005, None, b"value with null key", []),
    (1_700_000_000_001, b"key with null value", None, [("h", b"")]),
    (1_699_999_999_000, None, None, []),  # earlier than the base: negative delta
    (1_700_000_000_010, b"", b"", [("ünïcödé", "ключ".encode())]),
    (1_700_000_000_020, b"\x00" * 300, bytes(range(256)) * 40, [("x" * 200, b"y" * 500)] * 3),
]


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip_all_codecs(codec):
    builder = RecordBatchBuilder(codec, producer_id=9, producer_epoch=2, base_sequence=40,
                                 is_transactional=True, base_offset=1000, partition_leader_epoch=4)
    deltas = [builder.append(*record) for record in SAMPLE]
    assert deltas == list(range(len(SAMPLE)))
    data = builder.build()
    view = RecordBatchView(data)
    view.validate()
    assert view.compression == codec
    assert view.record_count == len(SAMPLE) and view.last_offset_delta == len(SAMPLE) - 1
    assert view.base_timestamp == SAMPLE[0][0]
    assert view.max_timestamp == max(r[0] for r in SAMPLE)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (9, 2, 40)
    assert view.is_transactional and view.partition_leader_epoch == 4
    records = list(view.records())
    assert records == [Record(1000 + i, ts, key, value, list(headers))
                       for i, (ts, key, value, headers) in enumerate(SAMPLE)]
    assert all(type(r.key) is bytes for r in records if r.key is not None)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compression_shrinks_compressible_records(codec):
    plain, packed = RecordBatchBuilder(), RecordBatchBuilder(codec)
    for i in range(200):
        for builder in (plain, packed):
            builder.append(i, b"key", b"the same value again and again " * 4)
    assert len(packed.build()) < len(plain.build()) / 4
    assert [r.value for r in RecordBatchView(packed.build()).records()] == \
           [r.value for r in RecordBatchView(plain.build()).records()]


def test_record_encoding_matches_the_spec_bytes():
    builder = RecordBatchBuilder()
    builder.append(5, b"k", None, [("h", b"v")])
    data = builder.build()
    # length 11 | attrs 0 | tsDelta 0 | offDelta 0 | keyLen 1 'k' | valueLen -1 | 1 header: 1 'h' 1 'v'
    assert data[HEADER_SIZE:] == bytes([22, 0, 0, 0, 2]) + b"k" + bytes([1, 2, 2]) + b"h" + bytes([2]) + b"v"


def test_header_values_accept_bytes_keys_and_bytes_like_values():
    builder = RecordBatchBuilder()
    builder.append(1, bytearray(b"k"), memoryview(b"v"), [(b"raw", bytearray(b"1"))])
    (record,) = RecordBatchView(builder.build()).records()
    assert (record.key, record.value, record.headers) == (b"k", b"v", [("raw", b"1")])


def test_timestamp_none_means_now():
    import time
    before = time.time_ns() // 1_000_000
    builder = RecordBatchBuilder()
    builder.append(None, b"k", b"v")
    (record,) = RecordBatchView(builder.build()).records()
    assert before <= record.timestamp <= time.time_ns() // 1_000_000


def test_out_of_range_timestamp_is_refused():
    with pytest.raises(ValueError):
        RecordBatchBuilder().append(1 << 63, None, None)


def test_building_an_empty_batch_is_refused():
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()


def test_size_estimate_and_rebuild_after_more_appends():
    builder = RecordBatchBuilder()
    builder.append(1, b"a", b"b")
    first = builder.build()
    assert builder.size_in_bytes == len(first)
    builder.append(2, b"c", b"d")
    second = RecordBatchView(builder.build())
    assert builder.record_count == 2 == second.record_count
    assert [r.key for r in second.records()] == [b"a", b"c"]


def test_unknown_codec_is_refused_by_the_builder():
    from odradek.protocol.records import UnsupportedCodecError
    with pytest.raises(UnsupportedCodecError):
        RecordBatchBuilder(6)


def test_iter_records_function_matches_method():
    builder = RecordBatchBuilder(Compression.ZSTD)
    for i in range(10):
        builder.append(i, str(i).encode(), None)
    view = RecordBatchView(builder.build())
    assert list(iter_records(view)) == list(view.records())


def test_decode_records_of_a_plain_blob():
    builder = RecordBatchBuilder()
    builder.append(10, b"a", b"1")
    builder.append(12, b"b", b"2")
    blob = builder.build()[HEADER_SIZE:]
    assert decode_records(blob, 2, base_offset=7, base_timestamp=100) == [
        Record(7, 100, b"a", b"1", []), Record(8, 102, b"b", b"2", [])]


def _batch_with_records_blob(blob: bytes, count: int) -> bytes:
    """A plain batch whose records are replaced by ``blob`` (the CRC is not recomputed)."""
    builder = RecordBatchBuilder()
    builder.append(0, b"", b"")
    header = bytearray(builder.build()[:HEADER_SIZE])
    header[8:12] = (HEADER_SIZE - 12 + len(blob)).to_bytes(4, "big")
    header[57:61] = count.to_bytes(4, "big", signed=True)
    return bytes(header) + blob


@pytest.mark.parametrize("blob, count, match", [
    (b"", 1, "cannot fit"),
    (b"\x0c\x00\x00\x00\x01\x01\x00", -1, "cannot fit"),
    (b"\x0c\x00\x00\x00\x01\x01\x00\x00", 1, "remain after"),
    (b"\x0c\x00\x00\x00\x01\x01\x00" * 2, 1, "remain after"),
    (b"\x0e\x00\x00\x00\x01\x01\x00\x00", 1, "record fields end"),  # length says 7, fields take 6
    (b"\x0a\x00\x00\x00\x01\x01\x00", 1, "record length"),  # length 5 < minimum 6
    (b"\x0c\x00\x00\x00\x03\x01\x00", 1, "invalid key length"),  # key length -2
    (b"\x0c\x00\x00\x00\x08\x01\x00", 1, "key length 4 runs past"),
    (b"\x0c\x00\x00\x00\x01\x01\x02\x00\x00", 1, "header count"),
    (b"\x10\x00\x00\x00\x01\x01\x02\x01\x00", 1, "invalid header key length"),  # null header key
    (b"\x12\x00\x00\x00\x01\x01\x02\x02\xff\x00", 1, "not UTF-8"),
    (b"\x12\x00\x00\x00\x01\x01\x02\x02\x41\x0a", 1, "header value length 5 runs past"),
    (b"\xff\xff\xff\xff\xff\xff\x00", 1, "varint is too long"),
    (b"\x0c\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 1, "varlong is too long"),
    (b"\x20\x00\x00\x00\x01\x01\x00", 1, "record length 16"),  # runs past the data
])
def test_malformed_records_raise_corrupt(blob, count, match):
    view = RecordBatchView(_batch_with_records_blob(blob, count))
    with pytest.raises(CorruptRecordBatchError, match=match):
        list(view.records())


def test_a_good_blob_passes_the_helper():
    view = RecordBatchView(_batch_with_records_blob(b"\x0c\x00\x00\x00\x01\x01\x00", 1))
    assert list(view.records()) == [Record(0, 0, None, None, [])]


def test_corrupt_compressed_data_raises_corrupt():
    builder = RecordBatchBuilder(Compression.LZ4)
    builder.append(0, b"k", b"v" * 100)
    data = bytearray(builder.build())
    data[HEADER_SIZE + 8:] = b"\xAA" * (len(data) - HEADER_SIZE - 8)
    with pytest.raises(CorruptRecordBatchError, match="lz4"):
        list(RecordBatchView(data).records())


# Known encodings (zigzag: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ...).
VARINT_VECTORS = [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (-65, b"\x81\x01"), (300, b"\xd8\x04"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
    (-(2**31), b"\xff\xff\xff\xff\x0f"),
]


@pytest.mark.parametrize("value, encoded", VARINT_VECTORS)
def test_varint_vectors(value, encoded):
    assert encode_varint(value) == encoded
    assert size_of_varint(value) == len(encoded)
    assert decode_varint(encoded + b"tail") == (value, len(encoded))


def test_varlong_extremes():
    for value in (2**63 - 1, -(2**63)):
        encoded = encode_varint(value)
        assert len(encoded) == 10
        assert decode_varlong(encoded) == (value, 10)
    with pytest.raises(CorruptRecordBatchError, match="too long"):
        decode_varint(encode_varint(2**40))


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_truncated_varint_raises_corrupt(data):
    with pytest.raises(CorruptRecordBatchError, match="past the end"):
        decode_varlong(data)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value):
    encoded = encode_varint(value)
    assert size_of_varint(value) == len(encoded)
    assert decode_varlong(b"\x05" + encoded, 1) == (value, 1 + len(encoded))


records_strategy = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2**41),
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=200)),
        st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3),
    ),
    min_size=1, max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(records=records_strategy, codec=st.sampled_from(list(Compression)))
def test_random_records_round_trip(records, codec):
    builder = RecordBatchBuilder(codec)
    for record in records:
        builder.append(*record)
    view = RecordBatchView(builder.build())
    view.validate()
    assert list(view.records()) == [Record(i, *r) for i, r in enumerate(records)]

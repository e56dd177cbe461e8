"""The compiled record codec (codec_c/) against the pure-Python one (pure_codec.py): identical bytes, values
and errors on random records (hypothesis), Arrow columns in and out, mutated and truncated data.

Both must give exactly the same results; the pure one is the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.clients.types import ConsumerRecord
from odradek.protocol.records import (
    Compression, CorruptRecordBatchError, Record, RecordBatchBuilder, RecordBatchView, build_control_batch, codec,
    pure_codec, read_control_batch,
)
from odradek.protocol.records.arrow import binary_column, int64_column, record_batch

COMPILED = codec.compiled_module()
IMPLS = [pure_codec, COMPILED]
NOW = 1_700_000_000_000
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

keys = st.one_of(st.none(), st.binary(max_size=40))
values = st.one_of(st.none(), st.binary(max_size=300))
headers = st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=30))),
                                        max_size=3))
timestamps = st.one_of(st.none(), st.integers(-(2**40), 2**40).map(lambda d: NOW + d))
records = st.lists(st.tuples(timestamps, keys, values, headers), min_size=1, max_size=60)


def test_compiled_codec_is_built():
    assert COMPILED is not None, "pip install -e . did not build protocol/records/codec_c/ (gcc, python3-dev?)"


def _encode(impl, recs, max_bytes=1 << 40, start=0, out=None, delta=0, base=0, meta=None):
    out = bytearray() if out is None else out
    result = impl.encode_records(out, base, delta, -1, NOW, [r[0] for r in recs], [r[1] for r in recs],
                                 [r[2] for r in recs], [r[3] for r in recs], start, len(recs), max_bytes, meta)
    return bytes(out), result, None if meta is None else bytes(meta)


@PROPERTY
@given(recs=records, max_bytes=st.integers(0, 6000), start=st.integers(0, 5))
def test_encode_identical(recs, max_bytes, start):
    start = min(start, len(recs))
    pure = _encode(pure_codec, recs, max_bytes, start, meta=bytearray())
    assert pure == _encode(COMPILED, recs, max_bytes, start, meta=bytearray())
    rows = [(None, r[0], r[2], r[1], r[3]) for r in recs]  # the same columns as (rows, index)
    for impl in IMPLS:
        out, meta = bytearray(), bytearray()
        result = impl.encode_records(out, 0, 0, -1, NOW, (rows, 1), (rows, 3), (rows, 2), (rows, 4), start, len(recs),
                                     max_bytes, meta)
        assert (bytes(out), result, bytes(meta)) == pure
    assert len(meta) == 20 * result[0]
    assert [pure_codec.RECORD_META.unpack_from(meta, 20 * i) for i in range(result[0])] == [
        (NOW if ts is None else ts, -1 if k is None else len(k), -1 if v is None else len(v),
         sum(len(hk.encode()) + len(hv or b"") for hk, hv in h or ())) for ts, k, v, h in recs[start:start + result[0]]]


@PROPERTY
@given(recs=records, base_offset=st.integers(0, 2**62), fixed=st.one_of(st.none(), st.integers(0, 2**50)),
       skip=st.integers(0, 70), timestamp_type=st.integers(0, 1))
def test_decode_identical(recs, base_offset, fixed, skip, timestamp_type):
    blob, (count, base_timestamp, _), _ = _encode(pure_codec, recs)
    assert count == len(recs)
    args = (blob, count, base_offset, base_timestamp, fixed)
    decoded = [impl.decode_records(*args, Record) for impl in IMPLS]
    assert decoded[0] == decoded[1]
    assert [r[1:4] for r in decoded[0]] == [
        (fixed if fixed is not None else NOW if ts is None else ts, key, value) for ts, key, value, _ in recs]
    assert [r.headers for r in decoded[0]] == [list(h or []) for *_, h in recs]
    min_offset = base_offset + skip
    consumer = [impl.decode_consumer_records(*args, min_offset, "topic", 7, timestamp_type, ConsumerRecord, None, None)
                for impl in IMPLS]
    assert consumer[0] == consumer[1]
    assert all(type(r) is ConsumerRecord for r in consumer[1])
    assert consumer[0] == [ConsumerRecord("topic", 7, r.offset, r.timestamp, timestamp_type, r.key, r.value, r.headers,
                                          -1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value))
                           for r in decoded[0] if r.offset >= min_offset]
    spec = [(blob, count, base_offset, base_timestamp, timestamp_type, fixed, min_offset)] * 2
    buffers = [impl.decode_arrow(spec) for impl in IMPLS]
    assert buffers[0] == buffers[1]
    batch = record_batch(buffers[1], "topic", 7)
    batch.validate(full=True)
    expected = consumer[0] * 2
    assert batch.column("offset").to_pylist() == [r.offset for r in expected]
    assert batch.column("key").to_pylist() == [r.key for r in expected]
    assert batch.column("value").to_pylist() == [r.value for r in expected]
    assert batch.column("timestamp").cast(pa.int64()).to_pylist() == [r.timestamp * 1000 for r in expected]
    assert batch.column("headers").to_pylist() == [[{"key": k, "value": v} for k, v in r.headers] for r in expected]


@PROPERTY
@given(recs=records, slice_at=st.integers(0, 10), large=st.booleans(), as_string=st.booleans())
def test_arrow_columns_encode_like_lists(recs, slice_at, large, as_string):
    """keys/values/timestamps given as Arrow arrays (sliced, large offsets, strings) encode the same bytes."""
    slice_at = min(slice_at, len(recs) - 1)
    kind = (pa.large_string() if as_string else pa.large_binary()) if large else (pa.string() if as_string else pa.binary())
    def column(items):
        if as_string:
            items = [None if i is None else i.decode("latin-1") for i in items]
        return pa.array([None] * slice_at + items, kind).slice(slice_at)
    key_list = [r[1] for r in recs]
    value_list = [r[2] for r in recs]
    if as_string:  # what the string column holds, encoded as UTF-8
        key_list = [None if k is None else k.decode("latin-1").encode() for k in key_list]
        value_list = [None if v is None else v.decode("latin-1").encode() for v in value_list]
    ts = [r[0] for r in recs]
    ts_column = int64_column(pa.array([0] * slice_at + ts, pa.int64()).slice(slice_at))
    for impl in IMPLS:
        listed, arrowed = bytearray(), bytearray()
        impl.encode_records(listed, 0, 0, -1, NOW, ts, key_list, value_list, None, 0, len(recs), 1 << 40, None)
        impl.encode_records(arrowed, 0, 0, -1, NOW, ts_column, binary_column(column([r[1] for r in recs])),
                            binary_column(column([r[2] for r in recs])), None, 0, len(recs), 1 << 40, None)
        assert arrowed == listed


@pytest.mark.parametrize("codec_id", list(Compression))
def test_builder_bytes_identical_every_codec(codec_id):
    sample = [(NOW + i, None if i % 4 == 0 else b"key-%d" % i, None if i % 7 == 3 else b"value %d " % i * 9,
               [("trace", b"%d" % i), ("ü", None)] if i % 3 == 0 else []) for i in range(80)]
    built = []
    for impl in IMPLS:
        previous = codec.use(impl)
        try:
            one = RecordBatchBuilder(codec_id, producer_id=5, producer_epoch=1, base_sequence=10)
            for record in sample:
                one.append(*record)
            many = RecordBatchBuilder(codec_id, producer_id=5, producer_epoch=1, base_sequence=10)
            assert many.append_many([r[2] for r in sample], keys=[r[1] for r in sample],
                                    headers=[r[3] for r in sample], timestamps=[r[0] for r in sample]) == len(sample)
            built.append(one.build())
            assert many.build() == built[-1]
            assert [tuple(r) for r in RecordBatchView(built[-1]).records()] == [
                (i, *r[:3], list(r[3])) for i, r in enumerate(sample)]
        finally:
            codec.use(previous)
    assert built[0] == built[1]


def test_control_batches_identical():
    built = []
    for impl in IMPLS:
        previous = codec.use(impl)
        try:
            batch = build_control_batch(1, producer_id=4, producer_epoch=2, coordinator_epoch=9, timestamp=NOW)
            assert read_control_batch(RecordBatchView(batch)) == (1, 9)
            built.append(batch)
        finally:
            codec.use(previous)
    assert built[0] == built[1]


def _outcome(call):
    try:
        return call()
    except CorruptRecordBatchError:
        return CorruptRecordBatchError


FUZZ_BLOB, (FUZZ_COUNT, FUZZ_BASE, _), _ = _encode(pure_codec, [
    (NOW + i, b"k%d" % i if i % 2 else None, b"value-%d" % i * 3, [("h", b"x"), ("é", None)] if i % 3 == 0 else None)
    for i in range(12)])


@settings(max_examples=1500, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, len(FUZZ_BLOB) - 1), st.integers(0, 255)), max_size=4),
       cut=st.integers(0, len(FUZZ_BLOB)), count=st.integers(0, 14))
def test_mutated_records_same_outcome(edits, cut, count):
    """Garbage decodes to the same values or the same error (CorruptRecordBatchError) in both codecs."""
    blob = bytearray(FUZZ_BLOB)
    for position, byte in edits:
        blob[position] = byte
    blob = bytes(blob[:cut])
    spec = (blob, count, 100, FUZZ_BASE, 0, None, 0)
    for call in (lambda impl: impl.decode_records(blob, count, 100, FUZZ_BASE, None, Record),
                 lambda impl: impl.decode_consumer_records(blob, count, 100, FUZZ_BASE, None, 0, "t", 0, 0,
                                                           ConsumerRecord, None, None),
                 lambda impl: impl.decode_arrow([spec])):
        assert _outcome(lambda: call(pure_codec)) == _outcome(lambda: call(COMPILED))


@pytest.mark.parametrize("blob", [
    b"\x0e\x00\x00\x00\x01\x01\x02\x06\x00\xff\x01",  # a header key that is not UTF-8 (0xff)
    b"\x10\x00\x00\x00\x01\x01\x02\x06\x00\xed\xa0\x80",  # a surrogate in UTF-8
    b"\x10\x00\x00\x00\x01\x01\x02\x06\x00\xe0\x80\x80",  # an overlong form
])
def test_invalid_utf8_header_keys_raise_in_both(blob):
    for impl in IMPLS:
        with pytest.raises(CorruptRecordBatchError):
            impl.decode_records(blob, 1, 0, 0, None, Record)
        with pytest.raises(CorruptRecordBatchError):
            impl.decode_arrow([(blob, 1, 0, 0, 0, None, 0)])


@pytest.mark.parametrize("blob, message", [
    (b"\x14\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x03\x00\x01\x01\x00", "varlong"),  # a timestamp delta past 64 bits
    (b"\x10\x00\x00\xff\xff\xff\xff\x1f\x01\x01\x00", "varint"),  # an offset delta past 32 bits
])
def test_varints_wider_than_their_type_raise_in_both(blob, message):
    for impl in IMPLS:
        with pytest.raises(CorruptRecordBatchError, match=message):
            impl.decode_records(blob, 1, 0, 0, None, Record)


def test_deserializers_and_bad_inputs():
    blob, (count, base, _), _ = _encode(pure_codec, [(NOW, b"k", b"v", None), (NOW, None, b"w", None)])
    for impl in IMPLS:
        got = impl.decode_consumer_records(blob, count, 0, base, None, 0, "t", 0, 0, ConsumerRecord, bytes.upper,
                                           lambda v: v + b"!")
        assert [(r.key, r.value, r.serialized_key_size) for r in got] == [(b"K", b"v!", 1), (None, b"w!", -1)]
        with pytest.raises(ZeroDivisionError):
            impl.decode_consumer_records(blob, count, 0, base, None, 0, "t", 0, 0, ConsumerRecord, None,
                                         lambda v: 1 / 0)
        with pytest.raises(TypeError):
            impl.encode_records(bytearray(), 0, 0, -1, NOW, NOW, ["a string"], [b"v"], None, 0, 1, 1 << 40, None)
        with pytest.raises(ValueError):
            impl.encode_records(bytearray(), 0, 0, -1, NOW, [2**63], [None], [b"v"], None, 0, 1, 1 << 40, None)
        out, meta = bytearray(b"kept"), bytearray(b"m")
        with pytest.raises(ValueError):  # the second record fails: the first is taken back too
            impl.encode_records(out, 0, 0, -1, NOW, [-(2**62), 2**62], None, [b"a", b"b"], None, 0, 2, 1 << 40, meta)
        assert (out, meta) == (b"kept", b"m")


@pytest.mark.parametrize("setup, env, compiled, warned", [
    ("", {}, True, False),
    ("import sys; sys.modules['odradek.protocol.records._codec'] = None", {}, False, True),  # not built
    ("", {"ODRADEK_PURE_PYTHON": "1"}, False, False),  # forced: no warning
])
def test_codec_choice(setup, env, compiled, warned):
    script = (f"{setup}\nimport warnings\nwarnings.simplefilter('always')\n"
              "from odradek.protocol.records import codec\nprint(codec.COMPILED)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ODRADEK_PURE_PYTHON": "", **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(compiled)
    assert done.stderr.count("RuntimeWarning: odradek: the compiled record codec") == (1 if warned else 0), done.stderr

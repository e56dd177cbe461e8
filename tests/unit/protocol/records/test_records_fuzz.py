"""Hypothesis: garbage and mutated batches either parse or raise RecordBatchError.

Never IndexError, struct.error, UnicodeDecodeError, a codec library's own exception, or a hang
(pytest-timeout bounds every test).
"""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    RecordBatchBuilder,
    RecordBatchError,
    RecordBatchView,
    build_control_batch,
    decompress,
    iter_batches,
    parse_control_record,
    read_produce_batch,
)
from odradek.protocol.records.batch import HEADER_SIZE

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("each_codec")]
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sample_batches() -> list[bytes]:
    batches = []
    for i, codec in enumerate(Compression):
        builder = RecordBatchBuilder(codec, producer_id=3, producer_epoch=0, base_sequence=i * 10,
                                     base_offset=i * 100)
        for j in range(6):
            builder.append(1_000 + j, b"k%d" % j if j % 3 else None, b"value %d " % j * 5,
                           [("h%d" % j, b"x"), ("n", None)] if j % 2 else [])
        batches.append(builder.build())
    batches.append(build_control_batch(1, producer_id=3, producer_epoch=0, coordinator_epoch=2, timestamp=5))
    return batches


SAMPLES = _sample_batches()
STREAM = b"".join(SAMPLES)


def _consume_everything(data: bytes, *, allow_partial: bool = True) -> None:
    """Walk, validate and decode all of ``data``; only RecordBatchError may escape."""
    try:
        for view in iter_batches(data, allow_partial=allow_partial):
            view.verify_crc()
            try:
                view.validate()
            except RecordBatchError:
                pass
            # Decode even when the CRC is wrong: the record parser must survive garbage on its own.
            records = list(view.records())
            assert len(records) == view.record_count
            assert all(isinstance(r.headers, list) for r in records)
            if view.is_control and records:
                parse_control_record(records[0])
    except RecordBatchError:
        pass


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes(data):
    _consume_everything(data)
    _consume_everything(data, allow_partial=False)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_behind_a_plausible_header(data):
    # A header that passes the structural checks puts random bytes in front of the record parser.
    header = bytearray(SAMPLES[0][:HEADER_SIZE])
    struct.pack_into(">i", header, 8, HEADER_SIZE - 12 + len(data))
    _consume_everything(bytes(header) + data)


@FUZZ
@given(
    mutations=st.lists(st.tuples(st.integers(min_value=0, max_value=len(STREAM) - 1),
                                 st.integers(min_value=1, max_value=255)), min_size=1, max_size=8),
)
def test_flipped_bytes(mutations):
    data = bytearray(STREAM)
    for pos, xor in mutations:
        data[pos] ^= xor
    _consume_everything(bytes(data))


@FUZZ
@given(
    which=st.integers(min_value=0, max_value=len(SAMPLES) - 1),
    mutations=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
                       min_size=1, max_size=6),
    recompute_crc=st.booleans(),
)
def test_mutated_records_with_valid_header(which, mutations, recompute_crc):
    """Mutate only the records blob (and maybe fix the CRC), so validation passes and decoding runs."""
    data = bytearray(SAMPLES[which])
    span = len(data) - HEADER_SIZE
    for pos, value in mutations:
        data[HEADER_SIZE + pos % span] = value
    if recompute_crc:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    _consume_everything(bytes(data))
    try:
        read_produce_batch(bytes(data))
    except RecordBatchError:
        pass


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(STREAM)), junk=st.binary(max_size=40))
def test_truncation_and_trailing_junk(cut, junk):
    complete = []
    pos = 0
    for sample in SAMPLES:
        if pos + len(sample) <= cut:
            complete.append(sample)
        pos += len(sample)
    # A clean cut loses only the partial batch.
    assert [bytes(v) for v in iter_batches(STREAM[:cut])] == complete
    _consume_everything(STREAM[:cut] + junk)
    _consume_everything(STREAM[:cut] + junk, allow_partial=False)


@FUZZ
@given(
    count=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    last_delta=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    attributes=st.integers(min_value=-(2**15), max_value=2**15 - 1),
)
def test_random_header_counts_and_attributes(count, last_delta, attributes):
    data = bytearray(SAMPLES[1])
    struct.pack_into(">hi", data, 21, attributes, last_delta)
    struct.pack_into(">i", data, 57, count)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    _consume_everything(bytes(data))
    try:
        read_produce_batch(bytes(data))
    except RecordBatchError:
        pass


@FUZZ
@given(codec=st.sampled_from([c for c in Compression if c]), data=st.binary(max_size=400))
def test_decompress_garbage(codec, data):
    try:
        decompress(codec, data)
    except RecordBatchError:
        pass


@FUZZ
@given(codec=st.sampled_from([c for c in Compression if c]), data=st.binary(min_size=1, max_size=200),
       cut=st.integers(min_value=0), flip=st.integers(min_value=0))
def test_decompress_damaged_streams(codec, data, cut, flip):
    from odradek.protocol.records import compress
    packed = bytearray(compress(codec, data))
    packed[flip % len(packed)] ^= 0x5A
    for candidate in (bytes(packed), bytes(packed[: cut % len(packed)])):
        try:
            decompress(codec, candidate)
        except RecordBatchError:
            pass


@FUZZ
@given(key=st.one_of(st.none(), st.binary(max_size=8)), value=st.one_of(st.none(), st.binary(max_size=10)))
def test_control_record_parser(key, value):
    from odradek.protocol.records import Record
    try:
        marker, epoch = parse_control_record(Record(0, 0, key, value, []))
    except RecordBatchError:
        return
    assert marker in (0, 1) and isinstance(epoch, int)


def test_samples_are_valid_to_begin_with():
    views = list(iter_batches(STREAM, allow_partial=False))
    assert len(views) == len(SAMPLES)
    for view in views:
        view.validate()
        assert len(list(view.records())) == view.record_count
    assert isinstance(RecordBatchView(SAMPLES[0]), RecordBatchView)

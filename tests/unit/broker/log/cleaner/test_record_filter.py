"""Scanning records for the cleaner and rewriting batches with fewer records (Kafka's filterTo)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.broker.log.cleaner.record_filter import batch_records, empty_batch, retained_batch
from odradek.protocol.records import (
    LOG_APPEND_TIME, Compression, RecordBatchBuilder, RecordBatchView, decode_batch,
)

record = st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.one_of(st.none(), st.binary(max_size=300)),
                   st.integers(min_value=0, max_value=10 ** 9))


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=40), st.sampled_from(list(Compression)), st.data())
def test_a_rewritten_batch_keeps_offsets_timestamps_and_the_kept_records(records, codec, data):
    builder = RecordBatchBuilder(codec, producer_id=7, producer_epoch=2, base_sequence=100, base_offset=1000,
                                 partition_leader_epoch=5)
    for key, value, ts in records:
        builder.append(1_700_000_000_000 + ts, key, value, [("h", b"v")])
    batch = RecordBatchView(builder.build())
    original = decode_batch(batch)
    blob, scanned = batch_records(batch)
    assert [(1000 + r[3], r[4], r[5]) for r in scanned] == [(o.offset, o.key, o.value is not None) for o in original]
    keep = data.draw(st.lists(st.integers(0, len(records) - 1), min_size=1, unique=True).map(sorted))
    rewritten = RecordBatchView(retained_batch(batch, blob, [scanned[i] for i in keep]))
    rewritten.validate()
    assert rewritten.compression == codec
    assert (rewritten.base_offset, rewritten.last_offset, rewritten.base_sequence, rewritten.producer_id,
            rewritten.producer_epoch, rewritten.partition_leader_epoch) == (1000, batch.last_offset, 100, 7, 2, 5)
    assert decode_batch(rewritten) == [original[i] for i in keep]
    assert rewritten.max_timestamp == max(original[i].timestamp for i in keep)


def test_log_append_time_keeps_the_batch_timestamp():
    builder = RecordBatchBuilder(timestamp_type=LOG_APPEND_TIME)
    builder.append(5, b"a", b"1")
    builder.append(9, b"b", b"2")
    raw = bytearray(builder.build())
    RecordBatchView(raw).set_log_append_time(1234)
    batch = RecordBatchView(raw)
    blob, scanned = batch_records(batch)
    rewritten = RecordBatchView(retained_batch(batch, blob, scanned[:1]))
    assert rewritten.max_timestamp == 1234 and [r.timestamp for r in decode_batch(rewritten)] == [1234]


def test_an_empty_batch_keeps_the_header_and_offset_range():
    builder = RecordBatchBuilder(Compression.GZIP, producer_id=3, producer_epoch=1, base_sequence=9,
                                 is_transactional=True, base_offset=50)
    for i in range(4):
        builder.append(100 + i, b"k", b"v")
    batch = RecordBatchView(builder.build())
    empty = RecordBatchView(empty_batch(batch))
    empty.validate()
    assert (empty.base_offset, empty.last_offset, empty.record_count, empty.compression) == (50, 53, 0, 0)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence, empty.is_transactional) == (3, 1, 9, True)
    assert empty.base_timestamp == -1 and empty.max_timestamp == 103 and decode_batch(empty) == []
    bare = RecordBatchView(empty_batch(batch, keep_producer=False))
    assert (bare.producer_id, bare.base_sequence, bare.is_transactional, bare.last_offset) == (-1, -1, False, 53)


def test_a_compacted_topic_refuses_records_without_a_key():
    from odradek.broker.log.cleaner.record_filter import require_keys
    from odradek.protocol.errors import InvalidRecordError  # type: ignore[attr-defined]
    keyed = RecordBatchBuilder(Compression.LZ4)
    keyed.append(1, b"k", None)
    require_keys(keyed.build(), "t-0")
    keyless = RecordBatchBuilder(Compression.LZ4)
    keyless.append(1, b"k", b"v")
    keyless.append(1, None, b"v")
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key in topic "
                                                 "partition t-0."):
        require_keys(keyed.build() + keyless.build(), "t-0")

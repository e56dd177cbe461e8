"""Down-conversion of stored v2 batches for Fetch v0-3: Kafka 2.8's RecordsUtil.downConvert per batch, and the
sizing of LazyDownConversionRecords(Send): max(stored bytes, first converted batch), cut there, or filled with
overflow bytes (offset -1, a length past the end) that clients read as a partial message."""

from __future__ import annotations

import struct

import pytest
from kafka.record.memory_records import MemoryRecords

from odradek.protocol.records import (
    Compression, ControlRecordType, RecordBatchBuilder, RecordBatchView, UnsupportedCodecError, build_control_batch,
)
from odradek.protocol.records.legacy_conversion import down_convert_batch, down_convert_fetched
from odradek.protocol.records.legacy_records import iter_messages, inner_messages


def batch(base_offset: int, values: list[bytes], codec: int = Compression.NONE, *, ts: int = 1000,
          headers: bool = False, log_append_time: int | None = None) -> bytes:
    builder = RecordBatchBuilder(codec, base_offset=base_offset)
    for i, value in enumerate(values):
        builder.append(ts + i, b"k%d" % i, value, [("h", b"x")] if headers else ())
    data = bytearray(builder.build())
    if log_append_time is not None:
        RecordBatchView(data).set_log_append_time(log_append_time)
    return bytes(data)


def kafka_python_reads(data: bytes) -> list[tuple]:
    records, out = MemoryRecords(data), []
    while records.has_next():
        b = records.next_batch()
        if b is None:
            break
        out += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b]
    return out


def test_a_partition_gets_max_of_stored_and_first_converted_size_and_a_partial_tail():
    values = [b"v" * 10 for _ in range(20)]
    stored = batch(0, values) + batch(20, values) + batch(40, values)  # v1 messages outgrow v2 records
    out = down_convert_fetched(stored, 1, 0)
    first = down_convert_batch(RecordBatchView(stored), 1, 0)
    assert len(first) < len(stored) < len(first) * 2
    assert len(out) == len(stored) and out[:len(first)] == first
    complete = list(iter_messages(out))
    assert [m.offset for m in complete] == list(range(len(complete))) and 20 <= len(complete) < 40
    assert sum(m.size_in_bytes for m in complete) < len(out)  # the last message is cut

    one = batch(0, values)
    converted = down_convert_fetched(one, 1, 0)  # one batch, bigger once converted: sent whole
    assert len(converted) > len(one) and len(list(iter_messages(converted))) == 20


def test_converted_data_shorter_than_stored_is_filled_with_overflow_bytes():
    stored = batch(0, [b"a"])  # one record: a 61-byte batch header vs one 34-byte v1 message
    out = down_convert_fetched(stored, 1, 0)
    [message] = iter_messages(out)
    rest = out[message.size_in_bytes:]
    assert len(out) == len(stored)
    assert rest == (struct.pack(">qi", -1, 61) + bytes(len(rest)))[:len(rest)]  # offset -1, length past the end
    assert kafka_python_reads(out) == [(0, 1000, b"k0", b"a", [])]


def test_only_markers_give_twelve_overflow_bytes():
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=5)
    assert down_convert_fetched(marker, 0, 5) == b"\xff" * 8 + struct.pack(">i", 61)


def test_markers_and_headers_vanish_and_offsets_and_timestamps_stay():
    marker = build_control_batch(ControlRecordType.ABORT, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=2)
    stored = batch(0, [b"a", b"b"], headers=True) + marker + batch(3, [b"c"], Compression.GZIP, ts=5000)
    out = down_convert_fetched(stored, 1, 0)
    assert kafka_python_reads(out) == [(0, 1000, b"k0", b"a", []), (1, 1001, b"k1", b"b", []),
                                       (3, 5000, b"k0", b"c", [])]


def test_fetch_offset_inside_a_batch_drops_earlier_records_unless_compressed():
    plain = down_convert_batch(RecordBatchView(batch(10, [b"a", b"b", b"c"])), 0, 12)
    assert [(m.offset, m.value) for m in iter_messages(plain)] == [(12, b"c")]
    gzipped = down_convert_batch(RecordBatchView(batch(10, [b"a", b"b", b"c"], Compression.GZIP)), 0, 12)
    [wrapper] = iter_messages(gzipped)
    assert wrapper.offset == 12 and [(m.offset, m.value) for m in inner_messages(wrapper)] == \
        [(10, b"a"), (11, b"b"), (12, b"c")]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4],
                         ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_each_codec_is_kept_and_read_by_kafka_python(codec, magic):
    out = down_convert_fetched(batch(100, [b"x" * i for i in range(30)], codec), magic, 100)
    shallow = list(iter_messages(out))
    assert {m.compression for m in shallow} == {codec} and {m.magic for m in shallow} == {magic}
    read = kafka_python_reads(out)
    assert [(o, k, v) for o, _, k, v, _ in read] == [(100 + i, b"k%d" % i, b"x" * i) for i in range(30)]
    assert [t for _, t, *_ in read] == ([None] * 30 if magic == 0 else [1000 + i for i in range(30)])


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4], ids=lambda c: c.name)
def test_log_append_time_batches_stamp_every_message(codec):
    out = down_convert_fetched(batch(0, [b"a", b"b"], codec, log_append_time=424242), 1, 0)
    [first, *_] = iter_messages(out)
    messages = inner_messages(first) if codec else list(iter_messages(out))
    assert [(m.timestamp, m.timestamp_type) for m in messages] == [(424242, 1), (424242, 1)]
    assert first.timestamp == 424242


def test_zstd_cannot_be_converted():
    zstd = batch(0, [b"a"], Compression.ZSTD)
    with pytest.raises(UnsupportedCodecError):
        down_convert_fetched(zstd, 1, 0)
    plain = batch(0, [b"p" * 50])
    out = down_convert_fetched(plain + batch(1, [b"z"], Compression.ZSTD), 1, 0)
    assert [m.value for m in iter_messages(out)] == [b"p" * 50]  # then overflow bytes, as Kafka's send

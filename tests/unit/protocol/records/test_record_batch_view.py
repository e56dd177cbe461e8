"""RecordBatchView: header fields, CRC, in-place rewrites, the batch walker, produce validation."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from odradek.protocol.records import (
    Compression,
    CorruptRecordBatchError,
    InvalidRecordBatchError,
    RecordBatchBuilder,
    RecordBatchError,
    RecordBatchView,
    UnsupportedCodecError,
    iter_batches,
    read_produce_batch,
    set_base_offset,
    set_partition_leader_epoch,
)
from odradek.protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH


def make_batch(n: int = 3, codec: int = Compression.NONE, **kwargs) -> bytes:
    builder = RecordBatchBuilder(codec, **kwargs)
    for i in range(n):
        builder.append(1_000 + 10 * i, b"key-%d" % i, b"value-%d" % i)
    return builder.build()


def restamp_crc(buf: bytearray) -> None:
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))


def test_header_fields_are_read_from_the_bytes():
    data = make_batch(3, producer_id=42, producer_epoch=7, base_sequence=100, base_offset=500,
                      partition_leader_epoch=9, is_transactional=True)
    view = RecordBatchView(data)
    assert view.base_offset == 500
    assert view.batch_length == len(data) - LOG_OVERHEAD
    assert view.size_in_bytes == len(data)
    assert view.partition_leader_epoch == 9
    assert view.magic == 2
    assert view.attributes == 0x10
    assert view.compression == Compression.NONE
    assert view.timestamp_type == 0
    assert view.is_transactional and not view.is_control
    assert view.last_offset_delta == 2
    assert view.base_timestamp == 1_000 and view.max_timestamp == 1_020
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (42, 7, 100)
    assert view.last_sequence == 102
    assert view.record_count == 3
    assert (view.last_offset, view.next_offset) == (502, 503)
    assert bytes(view.records_data) == data[HEADER_SIZE:]
    assert bytes(view) == data


def test_view_does_not_copy_and_ignores_bytes_after_the_batch():
    data = bytearray(make_batch() + b"trailing")
    view = RecordBatchView(data)
    assert view.buffer.obj is data
    assert len(view.buffer) == len(data) - len(b"trailing")


def test_view_at_a_position_inside_a_larger_buffer():
    first, second = make_batch(1), make_batch(2, base_offset=1)
    view = RecordBatchView(first + second, position=len(first))
    assert view.base_offset == 1 and view.record_count == 2 and bytes(view) == second


def test_attribute_flags():
    data = bytearray(make_batch(codec=Compression.LZ4))
    struct.pack_into(">h", data, 21, 0x3B)  # lz4 | LogAppendTime | transactional | control
    view = RecordBatchView(data)
    assert view.compression == Compression.LZ4
    assert view.timestamp_type == 1
    assert view.is_transactional and view.is_control and not view.has_delete_horizon


def test_last_sequence_wraps_at_int32_max():
    view = RecordBatchView(make_batch(3, producer_id=1, producer_epoch=0, base_sequence=0x7FFFFFFF))
    assert view.last_sequence == 1
    assert RecordBatchView(make_batch(3)).last_sequence == -1


def test_crc_matches_crc32c_of_attributes_to_end():
    data = make_batch(5, Compression.GZIP)
    view = RecordBatchView(data)
    assert view.crc == crc32c(data[21:]) == view.compute_crc()
    assert view.verify_crc()
    view.validate()


def test_every_flipped_byte_under_the_crc_fails_verification():
    data = make_batch(2)
    for pos in range(21, len(data)):
        corrupted = bytearray(data)
        corrupted[pos] ^= 0x01
        view = RecordBatchView(corrupted)
        assert not view.verify_crc(), pos
        with pytest.raises(CorruptRecordBatchError, match="CRC"):
            view.validate()


def test_flipped_crc_byte_fails_verification():
    corrupted = bytearray(make_batch())
    corrupted[18] ^= 0x80
    assert not RecordBatchView(corrupted).verify_crc()


def test_in_place_rewrite_of_base_offset_and_leader_epoch_keeps_crc_valid():
    data = bytearray(make_batch(4))
    crc_before = RecordBatchView(data).crc
    view = RecordBatchView(data)
    view.set_base_offset(123_456_789_012)
    view.set_partition_leader_epoch(17)
    assert (view.base_offset, view.partition_leader_epoch) == (123_456_789_012, 17)
    reread = RecordBatchView(data)  # the bytes changed, not only the view's fields
    assert (reread.base_offset, reread.partition_leader_epoch) == (123_456_789_012, 17)
    assert reread.crc == crc_before and reread.verify_crc()
    assert [r.offset for r in reread.records()] == [123_456_789_012 + i for i in range(4)]


def test_module_level_rewrites_at_a_position():
    first, second = make_batch(1), make_batch(2)
    buf = bytearray(first + second)
    set_base_offset(buf, 10, position=len(first))
    set_partition_leader_epoch(buf, 3, position=len(first))
    views = list(iter_batches(buf))
    assert views[0].base_offset == 0 and views[0].partition_leader_epoch == -1
    assert views[1].base_offset == 10 and views[1].partition_leader_epoch == 3
    assert all(v.verify_crc() for v in views)


def test_rewrite_of_read_only_buffer_is_refused():
    view = RecordBatchView(make_batch())
    with pytest.raises(TypeError):
        view.set_base_offset(5)


def test_log_append_time_stamp_recomputes_crc_and_sets_record_timestamps():
    data = bytearray(make_batch(3))
    view = RecordBatchView(data)
    view.set_log_append_time(99_999)
    reread = RecordBatchView(data)
    assert reread.timestamp_type == 1 and reread.max_timestamp == 99_999
    assert reread.verify_crc()
    assert [r.timestamp for r in reread.records()] == [99_999] * 3


@pytest.mark.parametrize("size", [0, 1, LOG_OVERHEAD, HEADER_SIZE - 1])
def test_view_of_too_few_bytes_is_corrupt(size):
    with pytest.raises(CorruptRecordBatchError):
        RecordBatchView(make_batch()[:size])


def test_view_of_truncated_batch_is_corrupt():
    data = make_batch()
    with pytest.raises(CorruptRecordBatchError, match="runs past"):
        RecordBatchView(data[:-1])


def test_batch_length_below_minimum_is_corrupt():
    data = bytearray(make_batch())
    struct.pack_into(">i", data, 8, MIN_BATCH_LENGTH - 1)
    with pytest.raises(CorruptRecordBatchError, match="below the minimum"):
        RecordBatchView(data)
    with pytest.raises(CorruptRecordBatchError, match="below the minimum"):
        list(iter_batches(data))


@pytest.mark.parametrize("magic, error", [(0, InvalidRecordBatchError), (1, InvalidRecordBatchError),
                                          (3, CorruptRecordBatchError), (-1, CorruptRecordBatchError)])
def test_wrong_magic(magic, error):
    data = bytearray(make_batch())
    data[16] = magic & 0xFF
    with pytest.raises(error, match="magic"):
        RecordBatchView(data)
    with pytest.raises(error, match="magic"):
        list(iter_batches(data))


def test_unknown_codec_fails_validation_with_code_76():
    data = bytearray(make_batch())
    struct.pack_into(">h", data, 21, 5)
    restamp_crc(data)
    with pytest.raises(UnsupportedCodecError) as info:
        RecordBatchView(data).validate()
    assert info.value.code == 76


def test_walker_yields_every_complete_batch():
    batches = [make_batch(n, codec, base_offset=10 * n) for n, codec in zip(range(1, 6), Compression)]
    views = list(iter_batches(b"".join(batches)))
    assert [bytes(v) for v in views] == batches
    assert [v.base_offset for v in views] == [10, 20, 30, 40, 50]


def test_walker_on_empty_buffer():
    assert list(iter_batches(b"")) == []
    assert list(iter_batches(b"", allow_partial=False)) == []


def test_walker_stops_cleanly_at_a_truncated_trailing_batch():
    whole = make_batch(2) + make_batch(3)
    tail = make_batch(4)
    for cut in range(len(tail)):
        views = list(iter_batches(whole + tail[:cut]))
        assert [v.record_count for v in views] == [2, 3], cut


def test_walker_without_partial_raises_on_truncation():
    data = make_batch(2) + make_batch(3)[:40]
    with pytest.raises(CorruptRecordBatchError, match="trailing bytes"):
        list(iter_batches(data, allow_partial=False))
    with pytest.raises(CorruptRecordBatchError):
        list(iter_batches(data[:len(data) - 35], allow_partial=False))


def test_walker_raises_on_broken_length_after_good_batches():
    good = make_batch(2)
    bad = bytearray(make_batch(1))
    struct.pack_into(">i", bad, 8, -5)
    walker = iter_batches(good + bytes(bad))
    assert next(walker).record_count == 2
    with pytest.raises(CorruptRecordBatchError, match="batchLength -5"):
        next(walker)


def test_walker_max_batch_size():
    data = make_batch(3)
    assert len(list(iter_batches(data, max_batch_size=len(data)))) == 1
    with pytest.raises(CorruptRecordBatchError, match="exceeds the maximum"):
        list(iter_batches(data, max_batch_size=len(data) - 1))


def test_walker_does_not_check_crc_but_validate_does():
    data = bytearray(make_batch(2))
    data[-1] ^= 0xFF
    (view,) = iter_batches(data)
    with pytest.raises(CorruptRecordBatchError):
        view.validate()


def test_read_produce_batch_accepts_one_valid_batch():
    data = make_batch(3, producer_id=5, producer_epoch=0, base_sequence=0)
    view = read_produce_batch(data)
    assert view.record_count == 3 and view.producer_id == 5


def test_read_produce_batch_rejects_two_batches_as_invalid_record():
    with pytest.raises(InvalidRecordBatchError) as info:
        read_produce_batch(make_batch(1) + make_batch(1))
    assert info.value.code == 87


@pytest.mark.parametrize("tail", [b"\x00", b"garbage-garbage-garbage"])
def test_read_produce_batch_rejects_trailing_garbage_as_corrupt(tail):
    with pytest.raises(CorruptRecordBatchError) as info:
        read_produce_batch(make_batch(1) + tail)
    assert info.value.code == 2


def test_read_produce_batch_rejects_bad_crc():
    data = bytearray(make_batch(2))
    data[30] ^= 1
    with pytest.raises(CorruptRecordBatchError, match="CRC"):
        read_produce_batch(data)


def _produced(mutate) -> bytearray:
    data = bytearray(make_batch(3, producer_id=5, producer_epoch=0, base_sequence=0))
    mutate(data)
    restamp_crc(data)
    return data


@pytest.mark.parametrize("mutate, match", [
    (lambda d: struct.pack_into(">h", d, 21, 0x30), "control"),
    (lambda d: struct.pack_into(">i", d, 57, 0), "record count"),
    (lambda d: struct.pack_into(">i", d, 23, 5), "lastOffsetDelta"),
    (lambda d: struct.pack_into(">i", d, 53, -1), "sequence"),
])
def test_produce_validation_rejects_what_kafka_rejects_from_clients(mutate, match):
    with pytest.raises(InvalidRecordBatchError, match=match):
        read_produce_batch(_produced(mutate))


def test_errors_share_a_base_and_carry_kafka_codes():
    assert issubclass(CorruptRecordBatchError, RecordBatchError)
    assert CorruptRecordBatchError.code == 2
    assert InvalidRecordBatchError.code == 87
    assert UnsupportedCodecError.code == 76

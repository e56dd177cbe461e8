"""Transaction markers: the construct-declared key/value formats and whole control batches."""

from __future__ import annotations

import pytest

from odradek.protocol.records import (
    ControlRecordType,
    CorruptRecordBatchError,
    InvalidRecordBatchError,
    Record,
    RecordBatchBuilder,
    RecordBatchView,
    build_control_batch,
    control_record_type,
    parse_control_record,
    read_control_batch,
)
from odradek.protocol.records.control import ControlRecordKey, EndTxnMarkerValue

pytestmark = pytest.mark.usefixtures("each_codec")  # every test with both record codecs


def test_formats_have_kafkas_byte_layout():
    assert ControlRecordKey.build({"version": 0, "type": 1}) == b"\x00\x00\x00\x01"
    assert EndTxnMarkerValue.build({"version": 0, "coordinator_epoch": 258}) == b"\x00\x00\x00\x00\x01\x02"
    assert ControlRecordKey.sizeof() == 4 and EndTxnMarkerValue.sizeof() == 6


@pytest.mark.parametrize("marker", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_control_batch_layout(marker):
    data = build_control_batch(marker, producer_id=1234, producer_epoch=5, coordinator_epoch=77,
                               timestamp=1_700_000_000_000, base_offset=40, partition_leader_epoch=3)
    view = RecordBatchView(data)
    view.validate()
    assert view.attributes == 0x30 and view.is_control and view.is_transactional
    assert view.compression == 0
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (1234, 5, -1)
    assert (view.base_offset, view.partition_leader_epoch) == (40, 3)
    assert view.record_count == 1 and view.last_offset_delta == 0
    (record,) = view.records()
    assert record.offset == 40 and record.timestamp == 1_700_000_000_000
    assert record.key == b"\x00\x00" + int(marker).to_bytes(2, "big")
    assert record.value == b"\x00\x00" + (77).to_bytes(4, "big")
    assert record.headers == []
    assert parse_control_record(record) == (marker, 77)
    assert read_control_batch(view) == (marker, 77)


def test_third_party_readers_see_a_control_batch():
    from aiokafka.record.control_record import ControlRecord
    from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
    from kafka.record.default_records import DefaultRecordBatch as KpBatch

    data = build_control_batch(ControlRecordType.ABORT, producer_id=8, producer_epoch=1,
                               coordinator_epoch=3, timestamp=10)
    kp = KpBatch(bytearray(data))
    assert kp.is_control_batch and kp.is_transactional and kp.validate_crc()
    aio = AioBatch(data)
    assert aio.is_control_batch and aio.validate_crc()
    (aio_record,) = list(aio)
    parsed = ControlRecord.parse(aio_record.key)
    assert parsed.version == 0 and parsed.type_ == 0  # ABORT


def test_control_record_type_passes_unknown_types_through():
    assert control_record_type(b"\x00\x00\x00\x07") == 7
    assert control_record_type(b"\x00\x01\x00\x01extra") == 1  # a newer key version keeps the prefix


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"])
def test_bad_control_keys(key):
    with pytest.raises(CorruptRecordBatchError):
        control_record_type(key)


@pytest.mark.parametrize("value", [None, b"\x00\x00\x00\x00\x01", b"\xff\xff\x00\x00\x00\x01"])
def test_bad_marker_values(value):
    with pytest.raises(CorruptRecordBatchError):
        parse_control_record(Record(0, 0, b"\x00\x00\x00\x01", value, []))


def test_non_marker_control_record_is_invalid():
    with pytest.raises(InvalidRecordBatchError):
        parse_control_record(Record(0, 0, b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x00", []))


def test_builder_refuses_non_marker_types():
    with pytest.raises(ValueError):
        build_control_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0,
                            coordinator_epoch=0)


def test_read_control_batch_refuses_data_batches():
    builder = RecordBatchBuilder()
    builder.append(0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")
    with pytest.raises(InvalidRecordBatchError, match="not a control batch"):
        read_control_batch(RecordBatchView(builder.build()))

"""The leader's batch checks and conversions (Kafka's LogValidator): timestamps and compression.type."""

from __future__ import annotations

import pytest

from odradek.broker.log import Log, LogConfig
from odradek.broker.log.validator import RecordValidationError, validate_for_leader
from odradek.protocol import errors
from odradek.protocol.records import (
    CREATE_TIME, LOG_APPEND_TIME, Compression, ControlRecordType, RecordBatchBuilder, RecordBatchView,
    build_control_batch, decode_batch,
)

NOW = 1_700_000_000_000


def batch(codec=Compression.NONE, timestamps=(NOW, NOW + 1), **kwargs) -> bytearray:
    builder = RecordBatchBuilder(codec, **kwargs)
    for i, ts in enumerate(timestamps):
        builder.append(ts, b"k%d" % i, b"value-%d" % i, [("h", b"%d" % i)])
    return bytearray(builder.build())


def view(records) -> RecordBatchView:
    return RecordBatchView(records)


def contents(records) -> list[tuple]:
    return [(r.timestamp, r.key, r.value, r.headers) for r in decode_batch(view(records))]


def test_kafkas_defaults_pass_the_batch_untouched():
    records = batch(Compression.LZ4)
    assert validate_for_leader(records, LogConfig(), NOW) is records


@pytest.mark.parametrize("topic_codec, stored", [("gzip", Compression.GZIP), ("zstd", Compression.ZSTD),
                                                 ("uncompressed", Compression.NONE), ("snappy", Compression.SNAPPY)])
def test_a_topic_codec_other_than_producer_recompresses(topic_codec, stored):
    sent = batch(Compression.LZ4, producer_id=7, producer_epoch=2, base_sequence=10, is_transactional=True,
                 partition_leader_epoch=3)
    kept = validate_for_leader(sent, LogConfig(compression_type=topic_codec), NOW)
    out = view(kept)
    assert out.compression == stored
    assert (out.producer_id, out.producer_epoch, out.base_sequence, out.is_transactional, out.record_count) == \
        (7, 2, 10, True, 2)
    assert out.timestamp_type == CREATE_TIME and out.verify_crc()
    assert contents(kept) == contents(sent)


def test_the_same_codec_and_control_batches_are_kept_as_they_are():
    gzip = batch(Compression.GZIP)
    assert validate_for_leader(gzip, LogConfig(compression_type="gzip"), NOW) is gzip
    marker = bytearray(build_control_batch(ControlRecordType.COMMIT, producer_id=5, producer_epoch=0,
                                           coordinator_epoch=1, timestamp=NOW))
    assert validate_for_leader(marker, LogConfig(compression_type="gzip"), NOW) is marker


def test_create_time_out_of_range_is_refused_with_kafkas_record_errors():
    config = LogConfig(message_timestamp_difference_max_ms=60_000)
    assert validate_for_leader(batch(timestamps=(NOW - 59_000, NOW + 60_000, -1)), config, NOW)
    with pytest.raises(RecordValidationError) as refused:
        validate_for_leader(batch(timestamps=(NOW, NOW - 60_001, NOW + 70_000)), config, NOW)
    exc = refused.value
    assert exc.code == errors.InvalidTimestampError.code
    assert exc.detail == "One or more records have been rejected due to invalid timestamp"
    assert [i for i, _ in exc.record_errors] == [1, 2]
    assert exc.record_errors[0][1] == (f"Timestamp {NOW - 60_001} of message with offset 1 is out of range. The "
                                       f"timestamp should be within [{NOW - 60_000}, {NOW + 60_000}]")
    # LogAppendTime topics take the broker's time instead: no bound applies.
    assert validate_for_leader(batch(timestamps=(1,)), LogConfig(message_timestamp_type="LogAppendTime",
                                                                 message_timestamp_difference_max_ms=1), NOW)


def test_a_producer_may_not_claim_log_append_time():
    with pytest.raises(RecordValidationError) as refused:
        validate_for_leader(batch(timestamp_type=LOG_APPEND_TIME), LogConfig(), NOW)
    assert "Producer should not set timestamp type to LogAppendTime" in refused.value.record_errors[0][1]


def test_the_log_stores_the_topics_codec_and_keeps_idempotence(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(compression_type="gzip"), clock=lambda: NOW)
    first = log.append_as_leader(batch(producer_id=9, producer_epoch=0, base_sequence=0), 0)
    again = log.append_as_leader(batch(producer_id=9, producer_epoch=0, base_sequence=0), 0)
    assert (first.first_offset, first.last_offset) == (0, 1)
    assert again.duplicate and again.first_offset == 0  # a retry is still recognised after recompression
    stored = view(log.read(0, 1 << 20).records)
    assert stored.compression == Compression.GZIP and stored.base_offset == 0
    assert contents(stored.buffer) == contents(batch())

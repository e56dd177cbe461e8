"""Cross-implementation checks against kafka-python 3.0.12 and aiokafka 0.14 (C and pure-Python).

Their builders' batches must parse with our reader, and our batches (every codec) with theirs: same
offsets, timestamps, keys, values and headers, and a CRC they accept.
"""

from __future__ import annotations

import warnings

import pytest
from aiokafka.record import default_records as aio_records
from aiokafka.record import memory_records as aio_memory
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords
from kafka.record.memory_records import MemoryRecordsBuilder as KpMemoryRecordsBuilder

from odradek.protocol.records import Compression, Record, RecordBatchBuilder, RecordBatchView, iter_batches
from odradek.protocol.records.compression import XERIAL_MAGIC

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.usefixtures("each_codec")]

CODECS = list(Compression)
BASE_TS = 1_700_000_000_000

# Compressible values, so that no library skips compression as not worth it.
RECORDS = [
    (BASE_TS + i * 7 - (50 if i == 3 else 0),
     None if i % 5 == 4 else b"key-%d" % i,
     None if i % 7 == 6 else b"value %d " % i * 20,
     [("idx", str(i).encode()), ("null", None)] if i % 3 == 0 else [])
    for i in range(40)
]
EXPECTED = [Record(i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(RECORDS)]

AIO_BUILDERS = [aio_records._DefaultRecordBatchBuilderPy, aio_records._DefaultRecordBatchBuilderCython]
AIO_READERS = [aio_records._DefaultRecordBatchPy, aio_records._DefaultRecordBatchCython]
AIO_MEMORY = [aio_memory._MemoryRecordsPy, aio_memory._MemoryRecordsCython]


def _theirs(batch) -> list[Record]:
    return [Record(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def _ours(data) -> list[Record]:
    (view,) = iter_batches(bytes(data), allow_partial=False)
    view.validate()
    return list(view.records())


def _build_ours(codec: int, **kwargs) -> bytes:
    builder = RecordBatchBuilder(codec, **kwargs)
    for record in RECORDS:
        builder.append(*record)
    return builder.build()


# -- theirs -> ours ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batch_builder_parses_with_ours(codec):
    builder = KpBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=77,
                        producer_epoch=3, base_sequence=12, batch_size=1 << 20)
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        builder.append(i, ts, key, value, headers)
    data = bytes(builder.build())
    view = RecordBatchView(data)
    assert view.compression == codec
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (77, 3, 12)
    assert view.max_timestamp == max(r[0] for r in RECORDS)
    if codec == Compression.SNAPPY:
        assert bytes(view.records_data[:8]) == XERIAL_MAGIC  # exercises the xerial reader
    assert _ours(data) == EXPECTED


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_memory_records_builder_parses_with_ours(codec):
    builder = KpMemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20, offset=500)
    for ts, key, value, headers in RECORDS:
        builder.append(ts, key, value, headers)
    builder.close()
    data = bytes(builder.buffer())
    assert RecordBatchView(data).compression == codec
    assert _ours(data) == [r._replace(offset=r.offset + 500) for r in EXPECTED]


@pytest.mark.parametrize("builder_class", AIO_BUILDERS, ids=["py", "cython"])
@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_batch_builder_parses_with_ours(builder_class, codec):
    builder = builder_class(2, codec, True, 99, 4, 0, 1 << 20)
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        builder.append(i, ts, key, value, headers)
    data = bytes(builder.build())
    view = RecordBatchView(data)
    assert view.compression == codec and view.is_transactional
    assert view.producer_id == 99
    assert _ours(data) == EXPECTED


# -- ours -> theirs ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_ours_parses_with_kafka_python(codec):
    data = _build_ours(codec, producer_id=5, producer_epoch=1, base_sequence=0, base_offset=100)
    batch = KpBatch(bytearray(data))
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 1, 0)
    assert batch.last_offset == 100 + len(RECORDS) - 1
    assert _theirs(batch) == [r._replace(offset=r.offset + 100) for r in EXPECTED]

    memory = KpMemoryRecords(data + data[:30])  # with a trailing partial batch, as Fetch may return
    assert _theirs(memory.next_batch()) == [r._replace(offset=r.offset + 100) for r in EXPECTED]
    assert memory.next_batch() is None


@pytest.mark.parametrize("reader_class", AIO_READERS, ids=["py", "cython"])
@pytest.mark.parametrize("codec", CODECS)
def test_ours_parses_with_aiokafka(reader_class, codec):
    data = _build_ours(codec, producer_id=5, producer_epoch=1, base_sequence=0, is_transactional=True)
    batch = reader_class(data)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert batch.is_transactional and not batch.is_control_batch
    assert _theirs(batch) == EXPECTED


@pytest.mark.parametrize("memory_class", AIO_MEMORY, ids=["py", "cython"])
def test_several_of_our_batches_walk_with_aiokafka(memory_class):
    batches = [_build_ours(codec, base_offset=1000 * i) for i, codec in enumerate(CODECS)]
    memory = memory_class(b"".join(batches))
    seen = []
    while memory.has_next():
        batch = memory.next_batch()
        assert batch.validate_crc()
        seen.append([r.offset for r in batch][:2])
    assert seen == [[1000 * i, 1000 * i + 1] for i in range(len(CODECS))]


def test_our_rewritten_offsets_are_what_their_readers_see():
    data = bytearray(_build_ours(Compression.LZ4))
    view = RecordBatchView(data)
    view.set_base_offset(7_000)
    view.set_partition_leader_epoch(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = KpBatch(bytearray(data))
    assert batch.validate_crc() and batch.leader_epoch == 12
    assert [r.offset for r in batch] == [7_000 + i for i in range(len(RECORDS))]
    aio = aio_records._DefaultRecordBatchCython(bytes(data))
    assert aio.validate_crc() and aio.base_offset == 7_000

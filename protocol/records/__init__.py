"""RecordBatch v2 (magic 2): header view, CRC-32C, records, builder, codecs, control records."""

from .batch import (
    CREATE_TIME,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RecordBatchView,
    decode_batch,
    iter_batches,
    iter_records,
    read_produce_batch,
    set_base_offset,
    set_partition_leader_epoch,
)
from .builder import RecordBatchBuilder
from .compression import Compression, compress, decompress
from .control import (
    ControlRecordType,
    build_control_batch,
    control_record_type,
    parse_control_record,
    read_control_batch,
)
from .errors import (
    CorruptRecordBatchError,
    InvalidRecordBatchError,
    RecordBatchError,
    UnsupportedCodecError,
)
from .record import Record, decode_records
from .varint import decode_varint, decode_varlong, encode_varint, size_of_varint

__all__ = [
    "CREATE_TIME", "HEADER_SIZE", "LOG_APPEND_TIME", "LOG_OVERHEAD", "MIN_BATCH_LENGTH",
    "NO_PARTITION_LEADER_EPOCH", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "NO_SEQUENCE",
    "Compression", "ControlRecordType", "CorruptRecordBatchError", "InvalidRecordBatchError",
    "Record", "RecordBatchBuilder", "RecordBatchError", "RecordBatchView", "UnsupportedCodecError",
    "build_control_batch", "compress", "control_record_type", "decode_batch", "decode_records", "decode_varint",
    "decode_varlong", "decompress", "encode_varint", "iter_batches", "iter_records",
    "parse_control_record", "read_control_batch", "read_produce_batch", "set_base_offset",
    "set_partition_leader_epoch", "size_of_varint",
]

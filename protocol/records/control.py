"""Control records: the transaction markers (COMMIT / ABORT) the leader writes for WriteTxnMarkers.

A control batch has attributes transactional|control (0x30), no compression, the transaction's
producer id and epoch, baseSequence -1 and one record at offset delta 0 whose key and value are
the two small formats below. They are rare and off the hot path, so they are declared with
``construct`` rather than hand-written struct code.
"""

from __future__ import annotations

from enum import IntEnum

from construct import Int16sb, Int32sb, Struct, StreamError, ConstructError

from .batch import NO_PARTITION_LEADER_EPOCH, RecordBatchView
from .builder import RecordBatchBuilder
from .errors import CorruptRecordBatchError, InvalidRecordBatchError
from .record import Record


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1
    # KRaft-only types, listed so they parse; this broker never writes them.
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4


CONTROL_RECORD_VERSION = 0
END_TXN_MARKER_VERSION = 0

# Key of every control record: int16 version, int16 type.
ControlRecordKey = Struct("version" / Int16sb, "type" / Int16sb)
# Value of a transaction marker: int16 version, int32 coordinator epoch.
EndTxnMarkerValue = Struct("version" / Int16sb, "coordinator_epoch" / Int32sb)


def build_control_batch(marker: ControlRecordType | int, *, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, timestamp: int | None = None, base_offset: int = 0,
                        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """A whole transaction-marker batch (ABORT or COMMIT), ready to append to the log."""
    marker = ControlRecordType(marker)
    if marker not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"{marker.name} is not a transaction marker")
    builder = RecordBatchBuilder(
        producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True,
        is_control=True, base_offset=base_offset, partition_leader_epoch=partition_leader_epoch)
    key = ControlRecordKey.build({"version": CONTROL_RECORD_VERSION, "type": marker})
    value = EndTxnMarkerValue.build({"version": END_TXN_MARKER_VERSION, "coordinator_epoch": coordinator_epoch})
    builder.append(timestamp, key, value)
    return builder.build()


def control_record_type(key: bytes | None) -> int:
    """The type of a control record from its key (an int: unknown future types are passed through)."""
    if key is None or len(key) < ControlRecordKey.sizeof():
        raise CorruptRecordBatchError("control record key is shorter than 4 bytes")
    parsed = ControlRecordKey.parse(key)  # longer keys are a newer version: read the known prefix
    if parsed.version < 0:
        raise CorruptRecordBatchError(f"invalid control record key version {parsed.version}")
    return parsed.type


def parse_control_record(record: Record) -> tuple[ControlRecordType, int]:
    """A transaction marker record as (ABORT or COMMIT, coordinator epoch)."""
    marker = control_record_type(record.key)
    if marker not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordBatchError(f"control record type {marker} is not a transaction marker")
    value = record.value
    if value is None or len(value) < EndTxnMarkerValue.sizeof():
        raise CorruptRecordBatchError("transaction marker value is shorter than 6 bytes")
    try:
        parsed = EndTxnMarkerValue.parse(value)
    except (StreamError, ConstructError) as exc:  # defensive: the length is checked above
        raise CorruptRecordBatchError(f"invalid transaction marker value: {exc}") from None
    if parsed.version < 0:
        raise CorruptRecordBatchError(f"invalid transaction marker version {parsed.version}")
    return ControlRecordType(marker), parsed.coordinator_epoch


def read_control_batch(batch: RecordBatchView) -> tuple[ControlRecordType, int]:
    """The marker of a control batch (its single record)."""
    if not batch.is_control:
        raise InvalidRecordBatchError("not a control batch")
    records = list(batch.records())
    if len(records) != 1:
        raise InvalidRecordBatchError(f"a control batch holds one record, not {len(records)}")
    return parse_control_record(records[0])

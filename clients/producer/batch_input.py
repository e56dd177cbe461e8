"""What ``send_batch`` accepts, turned into the record codec's column forms (``producer_batch.Columns``).

values: a sequence of bytes (or None), a pyarrow binary/string array, or a pyarrow Table/RecordBatch with a
``value`` column and optionally ``key``, ``headers`` (list<struct<key: string, value: binary>>) and
``timestamp`` columns (Spark's Kafka sink schema); keys: None, a sequence or an array; headers: None or one
sequence of (str, bytes) pairs per record; timestamps: None (now), one int for all (ms), a sequence, or an
int64/timestamp array. Arrow columns are read by the codec from their buffers, not record by record.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, NamedTuple, Sequence

from .batch import Columns
from ..types import TopicPartition


class SendBatchResult(NamedTuple):
    """What a ``send_batch`` future resolves to once every record is acknowledged."""

    records: int
    # (partition, offset of the first record, how many) for each produced batch the call's records went
    # into, in the order they were acknowledged; the offset is -1 with acks=0.
    offsets: list[tuple[TopicPartition, int, int]]


class BatchInput(NamedTuple):
    columns: Columns
    count: int
    keys: list | None  # the keys as bytes (or None), when records are placed by key


def batch_input(values: Any, keys: Any = None, headers: Any = None, timestamps: Any = None,
                key_serializer: Callable | None = None, value_serializer: Callable | None = None) -> BatchInput:
    """Check and convert ``send_batch``'s arguments; ValueError/TypeError on bad input."""
    pa = _arrow_module()
    if pa is not None and isinstance(values, (pa.Table, pa.RecordBatch)):
        names = values.schema.names
        if "value" not in names:
            raise ValueError("a Table or RecordBatch given as values needs a 'value' column")
        if keys is None and "key" in names:
            keys = values.column("key")
        if headers is None and "headers" in names:
            headers = values.column("headers")
        if timestamps is None and "timestamp" in names:
            timestamps = values.column("timestamp")
        values = values.column("value")
    if keys is not None:  # records are placed by key, so grouped by partition: Python objects throughout
        keys, values = _as_list(keys), _as_list(values)
        if _is_arrow(timestamps):
            timestamps = _timestamp_list(timestamps)
    value_column, count = _binary(values, value_serializer, "values")
    key_column, _ = _binary(keys, key_serializer, "keys", count) if keys is not None else (None, count)
    header_column = _headers(headers, count)
    timestamp_column = _timestamps(timestamps, count)
    return BatchInput(Columns(timestamp_column, key_column, value_column, header_column), count, key_column)


class SendBatchCall:
    """One ``send_batch`` call on its way: its future resolves when all ``count`` records are acknowledged,
    or fails with the first error one of its batches met (or that stopped the call)."""

    def __init__(self, future: Any, count: int) -> None:
        self.future = future
        self.pending = count
        self.offsets: list[tuple[TopicPartition, int, int]] = []
        self.count = count
        if count == 0:
            future.set_result(SendBatchResult(0, []))

    def settle(self, batch: Any, first: int, start: int, count: int) -> None:
        """Records ``first..`` of ``batch`` are ``count`` of ours (an ``AIOProducer._append_columns`` step)."""
        batch.add_call(self, first, count)

    def acknowledged(self, batch: Any, first: int, count: int) -> None:
        base_offset = batch.result[0]
        self.offsets.append((batch.tp, base_offset + first if base_offset >= 0 else -1, count))
        self.pending -= count
        if self.pending == 0 and not self.future.done():
            self.future.set_result(SendBatchResult(self.count, self.offsets))

    def failed(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)


def _arrow_module() -> Any:
    """pyarrow if it was imported: Arrow input can only come from a program that imported it (so a call
    with lists does not pay for importing it)."""
    return sys.modules.get("pyarrow")


def _is_arrow(column: Any) -> bool:
    pa = _arrow_module()
    return pa is not None and isinstance(column, (pa.Array, pa.ChunkedArray))


def _binary(column: Any, serializer: Callable | None, what: str, count: int | None = None) -> tuple[Any, int]:
    if _is_arrow(column) and serializer is None:
        from ...protocol.records import arrow  # noqa: PLC0415

        described = arrow.binary_column(column)
        size = len(column)
    else:
        if _is_arrow(column):
            column = column.to_pylist()
        if isinstance(column, (str, bytes, bytearray, memoryview)) or not isinstance(column, Sequence):
            raise TypeError(f"{what} must be a sequence of bytes or a pyarrow array, not {type(column).__name__}")
        # As given (bytes-likes or None; the codec refuses anything else), or through the serializer.
        described = [_serialized(item, serializer, what) for item in column] if serializer is not None else \
            column if isinstance(column, list) else list(column)
        size = len(described)
    if count is not None and size != count:
        raise ValueError(f"{what} has {size} items for {count} records")
    return described, size


def _serialized(item: Any, serializer: Callable, what: str) -> Any:
    if item is None:
        return None
    item = serializer(item)
    return item.encode("utf-8") if isinstance(item, str) else item


def _headers(headers: Any, count: int) -> list | None:
    if headers is None:
        return None
    if _is_arrow(headers):  # list<struct<key, value>>: Python pairs (headers are rare; this is not the fast path)
        headers = [None if h is None else [(pair["key"], pair["value"]) for pair in h] for h in headers.to_pylist()]
    headers = list(headers)
    if len(headers) != count:
        raise ValueError(f"headers has {len(headers)} items for {count} records")
    return headers


def _timestamps(timestamps: Any, count: int) -> Any:
    if timestamps is None or isinstance(timestamps, int):
        return timestamps
    if _is_arrow(timestamps):
        from ...protocol.records import arrow  # noqa: PLC0415

        if len(timestamps) != count:
            raise ValueError(f"timestamps has {len(timestamps)} items for {count} records")
        return arrow.int64_column(timestamps)
    timestamps = list(timestamps)
    if len(timestamps) != count:
        raise ValueError(f"timestamps has {len(timestamps)} items for {count} records")
    return timestamps


def _as_list(column: Any) -> Any:
    """An Arrow column's items as bytes (a string column's UTF-8, what the codec writes); other input as is."""
    if not _is_arrow(column):
        return column
    return [item.encode("utf-8") if isinstance(item, str) else item for item in column.to_pylist()]


def _timestamp_list(array: Any) -> list:
    from ...protocol.records import arrow  # noqa: PLC0415

    validity, data, offset = arrow.int64_column(array)
    pa = _arrow_module()
    return pa.Array.from_buffers(pa.int64(), len(array), [validity, data], offset=offset).to_pylist()


__all__ = ["BatchInput", "SendBatchCall", "SendBatchResult", "batch_input"]

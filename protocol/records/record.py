"""Records inside a v2 batch: the ``Record`` tuple, and decoding an uncompressed records blob into them.

The record layout and the decoding itself are in the codec (``codec.py``: the compiled ``codec_c/`` or
``pure_codec.py``). A whole batch (decompressed, LogAppendTime applied) is decoded by ``batch.py``'s
``decode_batch``, which builds on this module.
"""

from __future__ import annotations

from typing import NamedTuple

from . import codec


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def decode_records(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0) -> list[Record]:
    """Decode ``count`` records from an uncompressed records blob (tests, tools)."""
    return codec.decode_records(data, count, base_offset, base_timestamp, None, Record)

"""The cleaner's key -> latest offset map, bounded by memory (Kafka's OffsetMap / SkimpyOffsetMap).

Kafka keeps an MD5 of each key and its offset in a fixed byte buffer (24 bytes an entry) and stops
filling it at ``log.cleaner.io.buffer.load.factor`` of its slots; a dirty section with more keys is
cleaned in several passes. Here the table is a dict keyed by a proxy of the key: the key itself when
it is at most 16 bytes (exact, and no hashing), else its 16-byte MD5 (a proxy, as Kafka's, with the
same negligible chance of two keys sharing one). A dict entry with such a proxy and an int offset
costs about 128 bytes of memory, so the map has ``memory // 128`` slots: the configured buffer bounds
the real memory, at the price of fewer keys per pass than Kafka fits in the same bytes.
"""

from __future__ import annotations

from hashlib import md5

BYTES_PER_ENTRY = 128  # measured: a 16-byte bytes key (49), an int offset (32), the dict's share (~45)
MAX_RAW_KEY = 16


def key_proxy(key: bytes) -> bytes:
    """What the map stores for ``key``: the key itself if short, else its MD5."""
    return key if len(key) <= MAX_RAW_KEY else md5(key).digest()


class OffsetMap:
    __slots__ = ("memory", "slots", "_map", "latest_offset")

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.slots = memory // BYTES_PER_ENTRY
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1  # the last offset mapped, or the end of the segments read (offset gaps)

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots if self.slots else 0.0

    def put(self, key: bytes, offset: int) -> None:
        if len(self._map) >= self.slots and key_proxy(key) not in self._map:
            raise OverflowError("attempt to add a new entry to a full offset map")
        self._map[key if len(key) <= MAX_RAW_KEY else md5(key).digest()] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset mapped for ``key``, -1 when it is not in the map."""
        return self._map.get(key if len(key) <= MAX_RAW_KEY else md5(key).digest(), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def clear(self) -> None:
        self._map = {}
        self.latest_offset = -1

    @property
    def table(self) -> dict[bytes, int]:
        """The dict itself, for the cleaner's per-record loops (they inline ``key_proxy``)."""
        return self._map

"""The cleaner's offset map: latest offset per key, bounded by memory, long keys by their MD5."""

import hashlib

import pytest

from odradek.broker.log.cleaner.offset_map import BYTES_PER_ENTRY, OffsetMap, key_proxy


def test_put_keeps_the_latest_offset_of_each_key_and_tracks_the_last_offset_put():
    m = OffsetMap(100 * BYTES_PER_ENTRY)
    m.put(b"a", 3)
    m.put(b"b", 4)
    m.put(b"a", 7)
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c")) == (7, 4, -1)
    assert m.size == 2 and m.latest_offset == 7
    m.update_latest_offset(20)  # a gap at the end of a segment
    assert m.latest_offset == 20


def test_slots_come_from_the_memory_and_a_full_map_refuses_new_keys_only():
    m = OffsetMap(3 * BYTES_PER_ENTRY + BYTES_PER_ENTRY // 2)
    assert m.slots == 3
    for i in range(3):
        m.put(b"k%d" % i, i)
    assert m.utilization == 1.0
    m.put(b"k1", 10)  # an existing key still updates
    with pytest.raises(OverflowError):
        m.put(b"k3", 11)
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"k1")) == (0, -1, -1)


def test_short_keys_are_their_own_proxy_long_keys_their_md5():
    assert key_proxy(b"x" * 16) == b"x" * 16
    long_key = b"y" * 17
    assert key_proxy(long_key) == hashlib.md5(long_key).digest()
    m = OffsetMap(10 * BYTES_PER_ENTRY)
    m.put(long_key, 5)
    m.put(b"y" * 18, 6)
    assert (m.get(long_key), m.get(b"y" * 18)) == (5, 6)

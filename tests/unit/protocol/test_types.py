"""Wire primitives: unsigned varints and tagged-field sections."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol import types
from odradek.protocol.errors import ProtocolError


@pytest.mark.parametrize("value,encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), ((1 << 32) - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_uvarint_known_encodings(value, encoded):
    assert types.uvarint(value) == encoded
    assert types.read_uvarint(memoryview(encoded + b"tail"), 0) == (value, len(encoded))


@given(st.integers(0, (1 << 32) - 1), st.binary(max_size=4))
def test_uvarint_round_trip(value, prefix):
    data = memoryview(prefix + types.uvarint(value))
    assert types.read_uvarint(data, len(prefix)) == (value, len(data))


def test_uvarint_out_of_range_is_refused():
    for value in (-1, 1 << 32):
        with pytest.raises(ValueError):
            types.uvarint(value)


@pytest.mark.parametrize("garbage", [b"", b"\x80", b"\xff\xff", b"\xff\xff\xff\xff"])
def test_truncated_uvarint(garbage):
    with pytest.raises(types.TruncatedError):
        types.read_uvarint(memoryview(garbage), 0)


def test_overlong_uvarint():
    with pytest.raises(ProtocolError, match="longer than 5 bytes"):
        types.read_uvarint(memoryview(b"\xff\xff\xff\xff\xff\x01"), 0)


def test_tag_section_round_trip():
    parts = []
    types.write_tag_section([(0, b"a"), (3, b""), (200, b"x" * 300)], parts.append)
    data = memoryview(b"".join(parts))
    found, pos = types.read_unknown_tag_section(data, 0)
    assert found == {0: b"a", 3: b"", 200: b"x" * 300} and pos == len(data)
    assert types.read_unknown_tag_section(memoryview(b"\x00"), 0) == (None, 1)


def test_tag_section_past_the_frame():
    with pytest.raises(types.TruncatedError):
        types.read_unknown_tag_section(memoryview(b"\x01\x00\x05ab"), 0)


def test_uuid_from_bytes_keeps_the_zero_uuid_shared():
    assert types.uuid_from_bytes(bytes(16)) is types.ZERO_UUID
    assert types.uuid_from_bytes(b"\x01" * 16).bytes == b"\x01" * 16

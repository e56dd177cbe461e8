"""FrameSplitter and the frame helpers."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.errors import FrameTooLargeError, ProtocolError
from odradek.protocol.framing import FrameSplitter, frame, frame_parts, size_prefix

PAYLOADS = [b"", b"a", b"hello", bytes(range(256)) * 3, b"\x00\x00\x00\x05"]


def stream_of(payloads: list[bytes]) -> bytes:
    return b"".join(frame(p) for p in payloads)


def test_frame_helpers_prefix_big_endian_length():
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame([b"ab", bytearray(b"c"), memoryview(b"de")]) == b"\x00\x00\x00\x05abcde"
    assert frame(memoryview(b"xyz")) == b"\x00\x00\x00\x03xyz"
    assert frame([]) == b"\x00\x00\x00\x00"
    assert size_prefix(258) == b"\x00\x00\x01\x02"
    parts = frame_parts([b"ab", b"cde"])
    assert parts[0] == b"\x00\x00\x00\x05" and parts[1:] == [b"ab", b"cde"]


def test_one_whole_frame_per_chunk_is_sliced_not_copied():
    chunk = frame(b"payload")
    frames = FrameSplitter().feed(chunk)
    assert len(frames) == 1
    assert isinstance(frames[0], memoryview)
    assert frames[0].obj is chunk  # a view on the caller's chunk, not a copy
    assert bytes(frames[0]) == b"payload"


def test_many_frames_in_one_chunk():
    splitter = FrameSplitter()
    frames = splitter.feed(stream_of(PAYLOADS))
    assert [bytes(f) for f in frames] == PAYLOADS
    assert splitter.buffered == 0


def test_byte_at_a_time():
    splitter = FrameSplitter()
    stream = stream_of(PAYLOADS)
    got = []
    for i in range(len(stream)):
        got.extend(bytes(f) for f in splitter.feed(stream[i:i + 1]))
        # nothing is lost or duplicated on the way
        assert splitter.buffered == len(stream[:i + 1]) - sum(len(p) + 4 for p in got)
    assert got == PAYLOADS


def test_partial_frame_waits_for_more_data_and_reports_its_size():
    splitter = FrameSplitter()
    data = frame(b"0123456789")
    assert splitter.feed(data[:2]) == []
    assert splitter.pending_frame_size is None
    assert splitter.feed(data[2:7]) == []
    assert splitter.pending_frame_size == 10
    assert splitter.buffered == 7
    frames = splitter.feed(data[7:] + frame(b"next")[:3])
    assert [bytes(f) for f in frames] == [b"0123456789"]
    assert [bytes(f) for f in splitter.feed(frame(b"next")[3:])] == [b"next"]


def test_empty_chunk_is_harmless():
    splitter = FrameSplitter()
    assert splitter.feed(b"") == []
    assert splitter.feed(b"\x00\x00") == []
    assert splitter.feed(b"") == []
    assert [bytes(f) for f in splitter.feed(b"\x00\x01Z")] == [b"Z"]


def test_accepts_bytearray_and_memoryview_chunks():
    data = stream_of([b"one", b"two"])
    assert [bytes(f) for f in FrameSplitter().feed(bytearray(data))] == [b"one", b"two"]
    assert [bytes(f) for f in FrameSplitter().feed(memoryview(data))] == [b"one", b"two"]


def test_frame_at_max_size_is_accepted_one_above_is_not():
    assert [bytes(f) for f in FrameSplitter(max_frame_size=5).feed(frame(b"12345"))] == [b"12345"]
    with pytest.raises(FrameTooLargeError):
        FrameSplitter(max_frame_size=5).feed(frame(b"123456"))


def test_oversized_length_is_rejected_before_the_body_arrives():
    splitter = FrameSplitter(max_frame_size=1024)
    with pytest.raises(FrameTooLargeError):
        splitter.feed(struct.pack(">i", 1025))


def test_oversized_length_split_across_chunks():
    splitter = FrameSplitter(max_frame_size=1024)
    prefix = struct.pack(">i", 1 << 30)
    assert splitter.feed(prefix[:3]) == []
    with pytest.raises(FrameTooLargeError):
        splitter.feed(prefix[3:])


def test_negative_length_is_rejected():
    with pytest.raises(FrameTooLargeError) as info:
        FrameSplitter().feed(struct.pack(">i", -1) + b"xxxx")
    assert isinstance(info.value, ProtocolError)


def test_error_after_good_frames_in_the_same_chunk():
    splitter = FrameSplitter(max_frame_size=10)
    with pytest.raises(FrameTooLargeError):
        splitter.feed(frame(b"ok") + struct.pack(">i", 11))


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
)
def test_random_split_points_yield_the_same_frames(payloads, cuts):
    stream = stream_of(payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    splitter = FrameSplitter(max_frame_size=300)
    got = [bytes(f) for chunk in chunks for f in splitter.feed(chunk)]
    assert got == payloads
    assert splitter.buffered == 0


def test_a_large_declared_size_costs_only_what_arrives():
    """A peer that declares 100 MiB and sends a few bytes must not make us allocate 100 MiB."""
    import tracemalloc

    splitter = FrameSplitter()
    tracemalloc.start()
    try:
        assert splitter.feed(struct.pack(">i", 100 * 1024 * 1024) + b"abc") == []
        assert splitter.feed(b"d" * 1000) == []
        allocated = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert allocated < 1 << 20
    assert splitter.pending_frame_size == 100 * 1024 * 1024 and splitter.buffered == 4 + 1003
    payload = bytes(range(256)) * 5000  # over the preallocation limit, fed in uneven chunks
    splitter = FrameSplitter()
    stream = struct.pack(">i", len(payload)) + payload
    frames = []
    for i in range(0, len(stream), 70001):
        frames += splitter.feed(stream[i:i + 70001])
    assert [bytes(f) for f in frames] == [payload]

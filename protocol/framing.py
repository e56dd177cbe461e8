"""Kafka's framing: every request and response is an int32 big-endian size, then that many bytes.

``FrameSplitter`` is sans-IO: the network layer feeds it whatever chunks the socket delivered and
gets back complete frame bodies. Frames that lie wholly inside one chunk are returned as
memoryview slices of that chunk (no copy); a frame that spans chunks is assembled once into a
bytearray sized from its length prefix, so each byte is copied at most once. A frame that declares
more than ``PREALLOCATE_LIMIT`` bytes grows with what actually arrives instead: a peer cannot make us
allocate 100 MiB by sending four bytes. The caller must not mutate a chunk after feeding it while it
still holds frames sliced from it.
"""

from __future__ import annotations

import struct
from typing import Iterable

from .errors import FrameTooLargeError

Buffer = bytes | bytearray | memoryview

SIZE_PREFIX = struct.Struct(">i")
PREFIX_SIZE = SIZE_PREFIX.size
# Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 104_857_600
PREALLOCATE_LIMIT = 1 << 20

_unpack_size = SIZE_PREFIX.unpack_from
_pack_size = SIZE_PREFIX.pack


class FrameSplitter:
    """Split a byte stream into frame bodies (the bytes after each 4-byte size prefix).

    ``feed(chunk)`` returns the list of frames completed by ``chunk``, possibly empty. A negative size,
    or one above ``max_frame_size``, raises FrameTooLargeError; the stream is unusable afterwards
    (Kafka closes such a connection).
    """

    __slots__ = ("max_frame_size", "_head", "_body", "_size", "_filled")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._head = b""  # 0-3 bytes of a size prefix split across chunks
        self._body: bytearray | None = None  # frame being assembled across chunks
        self._size = 0  # its declared size
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes received (size prefix included) that belong to a frame not yet complete."""
        if self._body is not None:
            return PREFIX_SIZE + self._filled
        return len(self._head)

    @property
    def pending_frame_size(self) -> int | None:
        """Size of the frame being assembled, if its prefix has arrived (for back-pressure)."""
        return self._size if self._body is not None else None

    def _check(self, size: int) -> None:
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLargeError(f"frame size {size} is outside 0..{self.max_frame_size}")

    def feed(self, data: Buffer) -> list[memoryview | bytearray]:
        view = data if isinstance(data, memoryview) else memoryview(data)
        end = len(view)
        resuming = self._head or self._body is not None
        if not resuming and end >= PREFIX_SIZE:
            # The commonest case of all: the chunk is exactly one frame.
            size = _unpack_size(view)[0]
            if size == end - PREFIX_SIZE and size <= self.max_frame_size:
                return [view[PREFIX_SIZE:]]
        pos = 0
        frames: list[memoryview | bytearray] = []
        if resuming:
            pos = self._resume(view, frames)
        max_size = self.max_frame_size
        # Whole frames inside this chunk are sliced without copying.
        while end - pos >= PREFIX_SIZE:
            size = _unpack_size(view, pos)[0]
            if size < 0 or size > max_size:
                self._check(size)
            start = pos + PREFIX_SIZE
            stop = start + size
            if stop > end:
                self._start_body(size, view[start:])
                return frames
            frames.append(view[start:stop])
            pos = stop
        if pos < end:
            self._head = bytes(view[pos:])
        return frames

    def _start_body(self, size: int, part: memoryview) -> None:
        self._new_body(size)
        self._append(part)

    def _new_body(self, size: int) -> None:
        self._body = bytearray(size) if size <= PREALLOCATE_LIMIT else bytearray()
        self._size = size
        self._filled = 0

    def _append(self, part: memoryview) -> None:
        body = self._body
        assert body is not None
        if len(body) == self._size:
            body[self._filled:self._filled + len(part)] = part
        else:
            body += part
        self._filled += len(part)

    def _resume(self, view: memoryview, frames: list[memoryview | bytearray]) -> int:
        """Continue a prefix or a body begun by earlier chunks; returns the position reached in view."""
        pos = 0
        if self._head:
            missing = PREFIX_SIZE - len(self._head)
            if len(view) < missing:
                self._head += bytes(view)
                return len(view)
            head = self._head + bytes(view[:missing])
            self._head = b""
            size = _unpack_size(head)[0]
            self._check(size)
            pos = missing
            self._new_body(size)
        body = self._body
        assert body is not None
        take = min(self._size - self._filled, len(view) - pos)
        self._append(view[pos:pos + take])
        pos += take
        if self._filled == self._size:
            frames.append(body)
            self._body = None
            self._filled = 0
        return pos


def size_prefix(size: int) -> bytes:
    """The 4-byte prefix of a frame of ``size`` bytes."""
    return _pack_size(size)


def _nbytes(part: Buffer) -> int:
    return part.nbytes if isinstance(part, memoryview) else len(part)


def payload_size(parts: Iterable[Buffer]) -> int:
    """Total bytes of a frame's parts (a memoryview counts its bytes, not its items)."""
    # Inline type checks: this runs over every part of every response on the hot path.
    return sum([len(p) if type(p) is not memoryview else p.nbytes for p in parts])


def frame(payload_parts: Buffer | Iterable[Buffer]) -> bytes:
    """One frame (size prefix + payload) as bytes, from a payload or a sequence of its parts."""
    if isinstance(payload_parts, (bytes, bytearray, memoryview)):
        return _pack_size(_nbytes(payload_parts)) + payload_parts
    parts = list(payload_parts)
    return b"".join([_pack_size(payload_size(parts)), *parts])


def frame_parts(payload_parts: Iterable[Buffer]) -> list[Buffer]:
    """The prefix followed by the parts, uncopied: for ``transport.writelines``."""
    framed: list[Buffer] = [b""]  # the prefix's place; it counts 0 bytes while the size is summed
    framed.extend(payload_parts)
    framed[0] = _pack_size(payload_size(framed))
    return framed

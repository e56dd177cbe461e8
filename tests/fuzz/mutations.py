"""Mutations of a valid request frame, each drawn from a seeded ``random.Random``.

Byte-level mutations (bit flips, interesting integers written over the bytes, truncation, extension,
a lying size prefix, another version's header on the same body) exercise the decoders; a structural
mutation (one field of the decoded request set to an extreme value, then encoded properly) exercises
the handlers' validation, which a byte-level change rarely reaches intact.
"""

from __future__ import annotations

import random
import struct
from typing import Any, Callable, Iterator

from odradek.protocol.header import encode_request
from odradek.protocol.schema import Field, Struct

SIZE = struct.Struct(">i")
MAX_STRUCTURED_FRAME = 1 << 20
MAX_ELEMENTS = 100_000
MAX_COPIES = 10_000

INTS = {
    "int8": (-128, -1, 0, 1, 127),
    "int16": (-32768, -2, -1, 0, 1, 32767),
    "uint16": (0, 1, 65535),
    "int32": (-2**31, -2**31 + 1, -1000, -2, -1, 0, 1, 2, 1000, 2**31 - 2, 2**31 - 1),
    "uint32": (0, 1, 2**32 - 1),
    "int64": (-2**63, -2**31 - 1, -3, -2, -1, 0, 1, 2**31, 2**62, 2**63 - 1),
}
_STOMPS = [struct.pack(">i", v) for v in INTS["int32"]] + [struct.pack(">h", v) for v in INTS["int16"]] + \
    [struct.pack(">q", v) for v in (-1, 2**63 - 1, -2**63)] + [b"\xff", b"\x00", b"\x7f", b"\x80"]


def frame(header_and_body: bytes) -> bytes:
    return SIZE.pack(len(header_and_body)) + header_and_body


def bit_flips(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def stomp(rng: random.Random, data: bytes) -> bytes:
    """An extreme integer (or byte) written over the bytes at a random position past the api key."""
    out = bytearray(data)
    value = rng.choice(_STOMPS)
    at = rng.randrange(2, max(3, len(out) - len(value) + 1))
    out[at:at + len(value)] = value
    return bytes(out[:len(data)]) if len(out) > len(data) else bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(len(data))]


def extend(rng: random.Random, data: bytes) -> bytes:
    return data + bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))


def splice(rng: random.Random, data: bytes) -> bytes:
    """A run of bytes repeated or removed somewhere in the middle."""
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randint(1, 16))
    return data[:b] + data[a:b] * rng.randint(1, 8) + data[b:] if rng.random() < 0.5 else data[:a] + data[b:]


BYTE_MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [bit_flips, stomp, stomp, truncate, extend, splice]


def mutate_bytes(rng: random.Random, header_and_body: bytes) -> bytes:
    """One to three byte-level mutations; the result is framed with its true size, except sometimes."""
    data = header_and_body
    for _ in range(rng.randint(1, 3)):
        if data:
            data = rng.choice(BYTE_MUTATIONS)(rng, data)
    if rng.random() < 0.03:  # a size prefix that lies: larger, negative, or beyond any limit
        size = rng.choice((len(data) + rng.randint(1, 1000), -1, -2**31, 2**31 - 1, 200 * 1024 * 1024))
        return SIZE.pack(size) + data
    return frame(data)


def other_version(rng: random.Random, header_and_body: bytes, versions: tuple[int, int]) -> bytes:
    """The same body under another version number of the same api (a layout it does not have)."""
    lo, hi = versions
    out = bytearray(header_and_body)
    out[2:4] = struct.pack(">h", rng.randint(lo, hi + 1))
    return frame(bytes(out))


# -- structural ----------------------------------------------------------------------------------------


def _slots(obj: Any, fields: tuple[Field, ...], version: int, seen: set[int] | None = None
           ) -> Iterator[tuple[Any, Field]]:
    """(struct, field) for every field present at ``version``, nested ones included; an entry copied many
    times (the same object) is visited once."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for f in fields:
        if not f.present_in(version):
            continue
        yield obj, f
        value = getattr(obj, f.name)
        if f.struct_name is not None and value is not None:
            for item in (value if f.is_array else [value]):
                if isinstance(item, Struct):
                    yield from _slots(item, f.fields, version, seen)  # type: ignore[arg-type]


def extreme_value(rng: random.Random, f: Field, current: Any, version: int) -> Any:
    if f.is_array:
        if current is None or rng.random() < 0.3:
            return [] if current is None or not f.nullable_in(version) or rng.random() < 0.5 else None
        if not current:
            return current
        # Many copies of the same entry, at most MAX_COPIES in all: copies of copies of copies would take
        # this process's memory and, building them, its event loop (the bystander's too) for seconds.
        times = rng.choice((2, 3, 50, 1000))
        return current * max(1, min(times, MAX_COPIES // len(current)))
    if f.struct_name is not None:
        return None if f.nullable_in(version) else current
    if f.type in INTS:
        return rng.choice(INTS[f.type])
    if f.type == "string":
        return rng.choice(("", "x" * rng.choice((249, 250, 256, 4096, 32767)), "..", "a/b", "\u00e9\u4e2d",
                           "__consumer_offsets", "\x00", None if f.nullable_in(version) else ""))
    if f.type in ("bytes", "records"):
        return rng.choice((b"", b"\x00" * 61, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200))),
                           None if f.nullable_in(version) else b""))
    if f.type == "bool":
        return not current
    if f.type == "float64":
        return rng.choice((float("nan"), float("inf"), -1.0, 1e308))
    return current


def mutate_structure(rng: random.Random, message: Any, request: Any, version: int, correlation_id: int
                     ) -> bytes | None:
    """``request`` (a copy) with one to three fields set to extreme values, encoded; None if it cannot be."""
    from odradek.protocol.header import decode_request
    original = encode_request(request, version, correlation_id, "odradek-fuzz")
    _, copy = decode_request(memoryview(original)[4:])
    for _ in range(rng.randint(1, 3)):
        slots = list(_slots(copy, message.fields, version))
        if not slots:
            return None
        owner, f = rng.choice(slots)
        setattr(owner, f.name, extreme_value(rng, f, getattr(owner, f.name), version))
    if _elements(copy, MAX_ELEMENTS) > MAX_ELEMENTS:
        return None  # copies of copies: too big to build (see MAX_STRUCTURED_FRAME)
    try:
        built = encode_request(copy, version, correlation_id, rng.choice(("odradek-fuzz", "", None)))
    except Exception:
        return None  # a value the encoder refuses (null where not nullable, out of range): not sendable
    # Copies of copies can reach socket.request.max.bytes: a legal request the broker must decode (and
    # spend seconds and hundreds of MiB on, as Kafka would); not what this fuzzer looks for.
    return built if len(built) <= MAX_STRUCTURED_FRAME else None


def _elements(obj: Any, budget: int) -> int:
    """How many structs and array items ``obj`` holds, counting no further than just past ``budget``."""
    count = 0
    stack = [obj]
    while stack and count <= budget:
        item = stack.pop()
        if isinstance(item, list):
            count += len(item)
            stack.extend(item)
        elif isinstance(item, Struct):
            count += 1
            stack.extend(getattr(item, name) for name in item._fields)
    return count

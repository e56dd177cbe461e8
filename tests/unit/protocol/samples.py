"""Random but valid instances of any declared message at any version, for round-trip tests."""

from __future__ import annotations

import random
import uuid
from typing import Any

from odradek.protocol.schema import Field, Message

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}
_TEXT = "abcdefghijklmnopqrstuvwxyz-_.0123456789ÄöüßΩ漢字"


def primitive(type_name: str, rng: random.Random) -> Any:
    if type_name in _INT_RANGES:
        lo, hi = _INT_RANGES[type_name]
        return rng.choice((lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi)))
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "float64":
        return rng.choice((0.0, 1.5, -2.25, rng.uniform(-1e9, 1e9)))
    if type_name == "string":
        return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 12)))
    if type_name in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 40))
    if type_name == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(type_name)


def field_value(f: Field, version: int, rng: random.Random, depth: int = 0) -> Any:
    if f.nullable_in(version) and rng.random() < 0.2:
        return None
    if f.is_array:
        count = rng.randint(0, 3 if depth < 3 else 1)
        if f.struct_name is not None:
            return [struct_value(f.fields, f.cls, version, rng, depth + 1) for _ in range(count)]
        return [primitive(f.element, rng) for _ in range(count)]
    if f.struct_name is not None:
        return struct_value(f.fields, f.cls, version, rng, depth + 1)
    return primitive(f.type, rng)


def struct_value(fields, cls, version: int, rng: random.Random, depth: int = 0) -> Any:
    values = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if f.tagged_in(version) and rng.random() < 0.5:
            continue  # leave some tagged fields at their default (then they are not sent)
        values[f.name] = field_value(f, version, rng, depth)
    return cls(**values)


def sample(message: Message, version: int, seed: int = 0) -> Any:
    return struct_value(message.fields, message.cls, version, random.Random(f"{message.name}:{version}:{seed}"))


def all_versions(messages) -> list[tuple[Message, int]]:
    return [(m, v) for m in messages for v in range(m.min_version, m.max_version + 1)]

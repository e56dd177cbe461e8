"""One declared field of a Kafka message (``Field``), its version ranges, and the defaults of primitives.

The vocabulary that ``schema.py`` (the data classes) and ``compiler.py`` (the per-version codecs) both
read; it imports neither of them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Iterable

ZERO_UUID = uuid.UUID(int=0)

PRIMITIVES = frozenset(
    ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "uuid", "string", "bytes", "records")
)
_INTEGERS = frozenset(("int8", "int16", "uint16", "int32", "uint32", "int64"))


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``hi`` is None for an open range ("3+")."""

    lo: int
    hi: int | None

    NONE_LO = 1 << 30  # "none": a range that holds no version

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return cls(cls.NONE_LO, -1)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.lo == self.NONE_LO:
            return "none"
        return f"{self.lo}+" if self.hi is None else f"{self.lo}-{self.hi}"


class _Missing:
    """Marks an argument the caller left out (so that None can stay a real value)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class EncodedArray:
    """The elements of a struct array already encoded at the message's version: their bytes, joined, and
    their count. The generated encoders write ``data`` as it is (after the array's length), so a response
    can reuse the encoding of elements that did not change between answers (``Message.element_encoder``).
    ``error_counts``: the error codes in those elements, for what walks a response for them."""

    __slots__ = ("data", "count", "error_counts")

    def __init__(self, data: bytes, count: int, error_counts: dict[int, int] | None = None) -> None:
        self.data = data
        self.count = count
        self.error_counts = error_counts or {}

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"EncodedArray({self.count} elements, {len(self.data)} bytes)"


class Field:
    """One field of a message or struct, as declared."""

    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default",
                 "ignorable", "fields", "struct_name", "element", "is_array", "cls")

    def __init__(self, name: str, type: str, versions: str = "0+", *, nullable: str | None = None,
                 tag: int | None = None, tagged: str | None = None, default: Any = MISSING,
                 ignorable: bool = False, fields: Iterable["Field"] | None = None) -> None:
        self.name = name
        self.type = type
        self.versions = Versions.parse(versions)
        self.nullable = Versions.parse(nullable)
        self.tag = tag
        self.tagged = Versions.parse(tagged)
        self.ignorable = ignorable
        self.is_array = type.startswith("[]")
        self.element = type[2:] if self.is_array else type
        self.fields = tuple(fields) if fields is not None else None
        self.struct_name = None if self.element in PRIMITIVES else self.element
        if self.struct_name is not None and self.fields is None:
            raise ValueError(f"field {name}: struct type {self.element} needs fields=")
        if (tag is None) != (tagged is None):
            raise ValueError(f"field {name}: tag and tagged go together")
        self.default = default
        self.cls: type | None = None  # the data class of a struct-typed field, set by Message

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged

    def default_value(self) -> Any:
        """The value a field holds when a version does not carry it (a fresh object each call)."""
        default = self.default
        if self.is_array:
            return None if default is None else []
        if self.struct_name is not None:
            return None if default is None else self.cls()  # type: ignore[misc]
        if default is not MISSING:
            return default
        return primitive_default(self.type)

    def default_literal(self) -> str:
        """Python source that evaluates to the default (for the generated code)."""
        if self.is_array:
            return "None" if self.default is None else "[]"
        if self.struct_name is not None:
            return "None" if self.default is None else f"_S_{self.struct_name}()"
        value = self.default_value()
        if isinstance(value, uuid.UUID):
            return "_ZERO_UUID" if value == ZERO_UUID else f"_UUID({str(value)!r})"
        return repr(value)

    def is_mutable_default(self) -> bool:
        return self.is_array or (self.struct_name is not None and self.default is not None)


def primitive_default(type_name: str) -> Any:
    if type_name in _INTEGERS:
        return 0
    return {
        "bool": False, "float64": 0.0, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID,
    }[type_name]

"""The declarative form in which every Kafka message is written down.

A message is a tree of fields. Each field has a name (snake_case), a type, the versions in which it
exists, the versions in which it may be null, and optionally the versions in which it travels as a
tagged field (with its tag number). Types are written the way Kafka's message definitions write them:

    primitives   bool int8 int16 uint16 int32 uint32 int64 float64 uuid string bytes records
    arrays       "[]int32", "[]string", "[]TopicData" (with ``fields=``)
    structs      "LeaderIdAndEpoch" (with ``fields=``)

``Message(...)`` turns a declaration into data classes (one per struct, shared by all versions, like
Kafka's generated Java) and hands the per-version codecs to ``compiler`` on first use.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import ProtocolError

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


class Struct:
    """Base of every generated data class: equality, repr and dict conversion from ``_fields``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields + ("unknown_tagged_fields",))

    __hash__ = None  # type: ignore[assignment]  # mutable value objects

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (nested structs become dicts too); handy in tests and tools."""
        return {f: _plain(getattr(self, f)) for f in self._fields}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def make_struct_class(qualname: str, fields: tuple[Field, ...], namespace: dict[str, Any]) -> type:
    """Build the data class of one struct: slots, an __init__ with keyword defaults."""
    names = tuple(f.name for f in fields)
    params, body = [], []
    for f in fields:
        if f.is_mutable_default():
            params.append(f"{f.name}=_MISSING")
            body.append(f"    self.{f.name} = {f.default_literal()} if {f.name} is _MISSING else {f.name}")
        else:
            params.append(f"{f.name}={f.default_literal()}")
            body.append(f"    self.{f.name} = {f.name}")
    params.append("unknown_tagged_fields=None")
    body.append("    self.unknown_tagged_fields = unknown_tagged_fields")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    scope = namespace  # shared, so that defaults can name struct classes made later
    exec(compile(source, f"<odradek.protocol {qualname}.__init__>", "exec"), scope)
    short = qualname.rsplit(".", 1)[-1]
    cls = type(short, (Struct,), {
        "__slots__": names + ("unknown_tagged_fields",),
        "__init__": scope["__init__"],
        "__qualname__": qualname,
        "__module__": "odradek.protocol.messages",
        "_fields": names,
    })
    return cls


def _nest(parent: type, fields: tuple[Field, ...]) -> None:
    for f in fields:
        if f.cls is not None:
            setattr(parent, f.struct_name, f.cls)  # type: ignore[arg-type]
            _nest(f.cls, f.fields)  # type: ignore[arg-type]


def walk_structs(fields: tuple[Field, ...]) -> Iterable[Field]:
    """Every struct-typed field in a field tree, depth first (children before parents)."""
    for f in fields:
        if f.fields is not None:
            yield from walk_structs(f.fields)
            yield f


class Message:
    """One request or response: its declaration, its data class and its per-version codecs.

    Codecs are compiled on first use of a version and then cached, so importing the protocol package
    stays cheap for tools that speak three APIs; ``compile_all()`` compiles every version up front.
    """

    def __init__(self, name: str, *, api_key: int, kind: str, valid: str, flexible: str = "none",
                 fields: Iterable[Field]) -> None:
        if kind not in ("request", "response"):
            raise ValueError(f"{name}: kind must be request or response")
        self.name = name
        self.api_key = api_key
        self.kind = kind
        self.valid = Versions.parse(valid)
        self.flexible = Versions.parse(flexible)
        self.fields = tuple(fields)
        self._decoders: dict[int, Any] = {}
        self._encoders: dict[int, Any] = {}
        self.cls = self._make_classes()

    @property
    def min_version(self) -> int:
        return self.valid.lo

    @property
    def max_version(self) -> int:
        return self.valid.hi  # type: ignore[return-value]

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def _make_classes(self) -> type:
        namespace: dict[str, Any] = {"_MISSING": MISSING, "_ZERO_UUID": ZERO_UUID, "_UUID": uuid.UUID}
        made: dict[str, type] = {}
        for f in walk_structs(self.fields):
            name = f.struct_name
            existing = made.get(name)  # type: ignore[arg-type]
            if existing is not None:
                if existing._fields != tuple(x.name for x in f.fields):  # type: ignore[union-attr]
                    raise ValueError(f"{self.name}: two different structs named {name}")
                f.cls = existing
                continue
            f.cls = made[name] = make_struct_class(f"{self.name}.{name}", f.fields, namespace)  # type: ignore
            namespace[f"_S_{name}"] = f.cls
        top = make_struct_class(self.name, self.fields, namespace)
        for name, cls in made.items():  # every struct reachable from the message class...
            setattr(top, name, cls)
        _nest(top, self.fields)  # ...and from its parent, as in ProduceRequest.TopicProduceData.PartitionProduceData
        spec = self
        top.MESSAGE = spec
        top.API_KEY = self.api_key
        top.decode = classmethod(lambda cls, buf, version: spec.decode(buf, version))
        top.encode = lambda obj, version: spec.encode(obj, version)
        return top

    # --- codecs ---------------------------------------------------------------------------------

    def _check_version(self, version: int) -> None:
        if version not in self.valid:
            from .errors import UnsupportedApiVersionError
            raise UnsupportedApiVersionError(self.api_key, version)

    def decoder(self, version: int):
        decoder = self._decoders.get(version)
        if decoder is None:
            self._check_version(version)
            from .compiler import compile_decoder
            decoder = self._decoders[version] = compile_decoder(
                self.fields, self.cls, f"{self.name} v{version}", version, self.is_flexible(version))
        return decoder

    def encoder(self, version: int):
        encoder = self._encoders.get(version)
        if encoder is None:
            self._check_version(version)
            from .compiler import compile_encoder
            encoder = self._encoders[version] = compile_encoder(
                self.fields, f"{self.name} v{version}", version, self.is_flexible(version))
        return encoder

    def decode_from(self, data: memoryview, pos: int, version: int) -> tuple[Any, int]:
        """Decode a message starting at ``pos`` of ``data``; return it and the position after it."""
        decoder = self._decoders.get(version) or self.decoder(version)
        try:
            return decoder(data, pos)
        except ProtocolError:
            raise
        except (IndexError, struct.error, ValueError, OverflowError) as exc:
            # Short reads (struct.error/IndexError) and invalid UTF-8 (ValueError) in the body.
            raise ProtocolError(f"{self.name} v{version}: malformed body ({exc})") from None

    def decode(self, buf: Any, version: int) -> Any:
        data = buf if type(buf) is memoryview else memoryview(buf)
        return self.decode_from(data, 0, version)[0]

    def encode_into(self, message: Any, version: int, append) -> None:
        """Append the encoded parts of ``message`` (bytes and record views) with ``append``."""
        encoder = self._encoders.get(version) or self.encoder(version)
        try:
            encoder(message, append)
        except ProtocolError:
            raise
        except (struct.error, AttributeError, TypeError) as exc:
            raise ValueError(f"cannot encode {self.name} v{version}: {exc}") from None

    def encode(self, message: Any, version: int) -> bytes:
        parts: list[Any] = []
        self.encode_into(message, version, parts.append)
        return b"".join(parts)

    def compile_all(self) -> None:
        for version in range(self.valid.lo, self.valid.hi + 1):  # type: ignore[operator]
            self.decoder(version)
            self.encoder(version)

    def __repr__(self) -> str:
        return f"<Message {self.name} key={self.api_key} v{self.valid}>"

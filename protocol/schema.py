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
from typing import Any, Callable, Iterable

from .errors import ProtocolError
# The field declarations live in fields.py, below both this module and the compiler that reads them.
from .fields import MISSING, ZERO_UUID, Field, Versions  # Field: re-exported, messages declare with it


class Struct:
    """Base of every generated data class: equality, repr and dict conversion from ``_fields``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    # the struct-typed fields (a struct or an array of structs) with an ``error_code`` somewhere below
    _error_nested: tuple[str, ...] = ()

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


def _holds_error_code(cls: type) -> bool:
    return "error_code" in cls._fields or bool(cls._error_nested)  # type: ignore[attr-defined]


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
        "_error_nested": tuple(f.name for f in fields if f.cls is not None and _holds_error_code(f.cls)),
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
        self._element_encoders: dict[tuple[str, int], Callable[[Any], bytes]] = {}
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

    def element_encoder(self, field_name: str, version: int) -> Callable[[Any], bytes]:
        """``encode(element) -> bytes`` for one element of the message's top-level struct array
        ``field_name`` at ``version``: the parts of an ``EncodedArray`` for that field."""
        key = (field_name, version)
        encoder = self._element_encoders.get(key)
        if encoder is None:
            self._check_version(version)
            field = next((f for f in self.fields if f.name == field_name and f.is_array and f.fields), None)
            if field is None:
                raise ValueError(f"{self.name} has no struct array {field_name}")
            from .compiler import compile_encoder
            compiled = compile_encoder(field.fields, f"{self.name}.{field.struct_name} v{version}", version,
                                       self.is_flexible(version))

            def encoder(element: Any) -> bytes:
                parts: list[Any] = []
                compiled(element, parts.append)
                return b"".join(parts)
            self._element_encoders[key] = encoder
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

"""Compiles one declared message at one version into a specialised decoder and encoder.

The generated code is plain Python over ``struct``: consecutive fixed-width fields become one
precompiled ``Struct`` call, varint lengths take an inline one-byte fast path, nested structs and
arrays are unrolled into the same function (no call per field), and ``records`` fields come out as
``memoryview`` slices of the frame (never copied). A struct array given as an ``EncodedArray`` (its
elements encoded ahead, see ``Message.element_encoder``) is written as its bytes.

    decoder(data: memoryview, pos: int) -> (message, pos)
    encoder(message, append) -> None          # appends bytes-like parts

A decoder raises ``ProtocolError`` itself for null/negative lengths it cannot accept and counts past
the frame; the caller (``Message.decode``) turns the remaining low-level failures (short reads,
invalid UTF-8) into ``ProtocolError`` too.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

from . import types
from .errors import ProtocolError, UnsupportedVersionError
from .fields import MISSING, ZERO_UUID, EncodedArray, Field

# Arrays of fixed-width numbers (replica lists, partition ids) are read and written in one call,
# through Structs prebuilt for the usual small counts.
_TABLE_SIZE = 64


def _count_table(fmt: str, method: str) -> list[Callable[..., Any]]:
    return [getattr(struct.Struct(f">{count}{fmt}"), method) for count in range(_TABLE_SIZE)]


_ARRAY_FAST_FORMATS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H",
                       "uint32": "I", "float64": "d"}


class _Source:
    """Accumulates generated lines and the constants they refer to."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.namespace = namespace
        self._counter = 0
        self._consts: dict[Any, str] = {}

    def var(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def const(self, key: Any, value: Any, prefix: str) -> str:
        name = self._consts.get(key)
        if name is None:
            name = self.var(prefix)
            self._consts[key] = name
            self.namespace[name] = value
        return name

    def unpacker(self, fmt: str) -> tuple[str, int]:
        st = struct.Struct(">" + fmt)
        return self.const(("u", fmt), st.unpack_from, "_u"), st.size

    def packer(self, fmt: str) -> str:
        return self.const(("p", fmt), struct.Struct(">" + fmt).pack, "_p")


def _base_namespace(fields: tuple[Field, ...]) -> dict[str, Any]:
    """Helpers the generated code calls, plus ``_S_<Struct>`` for every struct class (defaults)."""
    namespace = {f"_S_{f.struct_name}": f.cls for f in _struct_fields(fields)}
    namespace.update({
        "_uvt": types.read_uvarint_tail, "_uv": types.uvarint, "_uuid": types.uuid_from_bytes,
        "_wtags": types.write_tag_section, "_ProtocolError": ProtocolError,
        "_Truncated": types.TruncatedError, "_Unsupported": UnsupportedVersionError,
        "_ZERO_UUID": ZERO_UUID, "_UUID": uuid.UUID, "_MISSING": MISSING, "_spack": struct.pack,
        "_Struct": struct.Struct, "_rutags": types.read_unknown_tag_section, "_Encoded": EncodedArray,
    })
    return namespace


def _emit_uvarint(src: _Source, depth: int, target: str) -> None:
    src.emit(depth, f"{target} = data[pos]")
    src.emit(depth, "pos += 1")
    src.emit(depth, f"if {target} > 127: {target}, pos = _uvt(data, pos, {target})")


# ============================================================================ decoding ==========


class _DecoderBuilder:
    def __init__(self, src: _Source, where: str, version: int, flexible: bool) -> None:
        self.src = src
        self.where = where  # "ProduceRequest v9", for error messages
        self.version = version
        self.flexible = flexible

    def struct_expr(self, fields: tuple[Field, ...], cls_name: str, depth: int) -> str:
        """Emit the decoding of one struct's fields; return the expression constructing it."""
        src, version, flexible = self.src, self.version, self.flexible
        values: dict[str, str] = {}
        run: list[tuple[str, str, str]] = []  # (struct format, type, variable)

        def flush() -> None:
            if not run:
                return
            unpack, size = src.unpacker("".join(fmt for fmt, _, _ in run))
            src.emit(depth, f"{', '.join(v for _, _, v in run)}, = {unpack}(data, pos)")
            src.emit(depth, f"pos += {size}")
            for _, type_name, v in run:
                if type_name == "uuid":
                    src.emit(depth, f"{v} = _uuid({v})")
            run.clear()

        for f in fields:
            if not f.present_in(version) or (flexible and f.tagged_in(version)):
                continue
            var = values[f.name] = src.var("v")
            if not f.is_array and f.type in types.FIXED_FORMATS:
                run.append((types.FIXED_FORMATS[f.type], f.type, var))
                continue
            prefix = self.length_format(f)
            if prefix is not None and run:
                # Read the length prefix together with the fixed fields before it: one call fewer.
                length = src.var("ln")
                run.append((prefix, "length", length))
                flush()
                self.value(f, depth, var, length)
            else:
                flush()
                self.value(f, depth, var)
        flush()

        unknown = "None"
        if flexible:
            unknown = self.tag_section(fields, depth, values)
        args = [values.get(f.name) or f.default_literal() for f in fields]
        return f"{cls_name}({', '.join(args + [unknown])})"

    def tag_section(self, fields: tuple[Field, ...], depth: int, values: dict[str, str]) -> str:
        src = self.src
        tagged = [f for f in fields if f.present_in(self.version) and f.tagged_in(self.version)]
        for f in tagged:
            var = values[f.name] = src.var("t")
            src.emit(depth, f"{var} = {f.default_literal()}")
        unknown, count, tag, size, end = (src.var(p) for p in ("utf", "nt", "tg", "sz", "te"))
        src.emit(depth, f"{unknown} = None")
        src.emit(depth, "if data[pos] == 0:")  # the usual case: no tagged fields at all
        src.emit(depth + 1, "pos += 1")
        if not tagged:
            src.emit(depth, f"else: {unknown}, pos = _rutags(data, pos)")
            return unknown
        src.emit(depth, "else:")
        _emit_uvarint(src, depth + 1, count)
        src.emit(depth + 1, f"for _ in range({count}):")
        inner = depth + 2
        _emit_uvarint(src, inner, tag)
        _emit_uvarint(src, inner, size)
        src.emit(inner, f"{end} = pos + {size}")
        src.emit(inner, f"if {end} > n: raise _Truncated('{self.where}: tagged field {{}} runs past the frame'.format({tag}))")
        keyword = "if"
        for f in tagged:
            src.emit(inner, f"{keyword} {tag} == {f.tag}:")
            self.value(f, inner + 1, values[f.name])
            keyword = "elif"
        src.emit(inner, "else:")
        src.emit(inner + 1, f"if {unknown} is None: {unknown} = {{}}")
        src.emit(inner + 1, f"{unknown}[{tag}] = bytes(data[pos:{end}])")
        src.emit(inner, f"pos = {end}")
        return unknown

    def length_format(self, f: Field) -> str | None:
        """The struct format of the fixed-size length that starts a field's encoding, if any."""
        if self.flexible or (f.struct_name is not None and not f.is_array):
            return None
        return "h" if f.type == "string" else "i"

    def value(self, f: Field, depth: int, target: str, length: str | None = None) -> None:
        nullable = f.nullable_in(self.version)
        if f.is_array:
            self.array(f, nullable, depth, target, length)
        elif f.struct_name is not None:
            cls = self.src.const(("cls", id(f.cls)), f.cls, "_C")
            if nullable:
                marker = self.src.var("m")
                unpack, _ = self.src.unpacker("b")
                self.src.emit(depth, f"{marker}, = {unpack}(data, pos)")
                self.src.emit(depth, "pos += 1")
                self.src.emit(depth, f"if {marker} < 0: {target} = None")
                self.src.emit(depth, "else:")
                depth += 1
            expr = self.struct_expr(f.fields, cls, depth)  # type: ignore[arg-type]
            self.src.emit(depth, f"{target} = {expr}")
        else:
            self.primitive(f.type, f.name, nullable, depth, target, length)

    def length(self, kind: str, name: str, nullable: bool, depth: int, target: str,
               already_read: bool = False) -> None:
        """Read a length/count into ``target`` (unless already read); -1 means null. Emits the null check."""
        src = self.src
        if already_read:
            pass
        elif self.flexible:
            _emit_uvarint(src, depth, target)
            src.emit(depth, f"{target} -= 1")
        else:
            unpack, size = src.unpacker("h" if kind == "string" else "i")
            src.emit(depth, f"{target}, = {unpack}(data, pos)")
            src.emit(depth, f"pos += {size}")
        if not nullable:
            src.emit(depth, f"if {target} < 0: raise _ProtocolError('{self.where}: non-nullable {name} has length {{}}'.format({target}))")
        elif not self.flexible:
            src.emit(depth, f"if {target} < -1: raise _ProtocolError('{self.where}: {name} has negative length {{}}'.format({target}))")

    def primitive(self, type_name: str, name: str, nullable: bool, depth: int, target: str,
                  length: str | None = None) -> None:
        src = self.src
        fixed = types.FIXED_FORMATS.get(type_name)
        if fixed is not None:
            unpack, size = src.unpacker(fixed)
            src.emit(depth, f"{target}, = {unpack}(data, pos)")
            src.emit(depth, f"pos += {size}")
            if type_name == "uuid":
                src.emit(depth, f"{target} = _uuid({target})")
            return
        already_read = length is not None
        length = length or src.var("ln")
        end = src.var("e")
        self.length(type_name, name, nullable, depth, length, already_read)
        if nullable:
            src.emit(depth, f"if {length} < 0: {target} = None")
            src.emit(depth, "else:")
            depth += 1
        src.emit(depth, f"{end} = pos + {length}")
        src.emit(depth, f"if {end} > n: raise _Truncated('{self.where}: {name} runs past the end of the frame')")
        if type_name == "string":
            src.emit(depth, f"{target} = data[pos:{end}].tobytes().decode()")
        elif type_name == "records":
            src.emit(depth, f"{target} = data[pos:{end}]")  # zero-copy view of the frame
        else:
            src.emit(depth, f"{target} = bytes(data[pos:{end}])")
        src.emit(depth, f"pos = {end}")

    def array(self, f: Field, nullable: bool, depth: int, target: str, count: str | None = None) -> None:
        src = self.src
        already_read = count is not None
        count = count or src.var("c")
        self.length("array", f.name, nullable, depth, count, already_read)
        if nullable:
            src.emit(depth, f"if {count} < 0: {target} = None")
            src.emit(depth, "else:")
            depth += 1
        # Every element takes at least one byte: a larger count is garbage (as Kafka checks it).
        src.emit(depth, f"if {count} > n - pos: raise _Truncated('{self.where}: {f.name} has {{}} elements, more than the frame holds'.format({count}))")
        fast = _ARRAY_FAST_FORMATS.get(f.element)
        if fast is not None:
            size = struct.calcsize(fast)
            table = src.const(("au", fast), _count_table(fast, "unpack_from"), "_au")
            src.emit(depth, f"{target} = list(({table}[{count}] if {count} < {_TABLE_SIZE} else _Struct('>%d{fast}' % {count}).unpack_from)(data, pos))")
            src.emit(depth, f"pos += {size} * {count}")
            return
        src.emit(depth, f"{target} = []")
        src.emit(depth, f"for _ in range({count}):")
        element = src.var("x")
        if f.struct_name is not None:
            cls = src.const(("cls", id(f.cls)), f.cls, "_C")
            expr = self.struct_expr(f.fields, cls, depth + 1)  # type: ignore[arg-type]
            src.emit(depth + 1, f"{target}.append({expr})")
        else:
            self.primitive(f.element, f.name, False, depth + 1, element)
            src.emit(depth + 1, f"{target}.append({element})")


def compile_decoder(fields: tuple[Field, ...], cls: type, where: str, version: int,
                    flexible: bool) -> Callable[[memoryview, int], tuple[Any, int]]:
    namespace = _base_namespace(fields)
    src = _Source(namespace)
    builder = _DecoderBuilder(src, where, version, flexible)
    top = src.const(("cls", id(cls)), cls, "_C")
    src.emit(1, "n = len(data)")
    expr = builder.struct_expr(fields, top, 1)
    src.emit(1, f"return {expr}, pos")
    code = "def decode(data, pos):\n" + "\n".join(src.lines) + "\n"
    exec(compile(code, f"<odradek.protocol decode {where}>", "exec"), namespace)
    decoder = namespace["decode"]
    decoder.source = code
    return decoder


# ============================================================================ encoding ==========

class _EncoderBuilder:
    def __init__(self, src: _Source, where: str, version: int, flexible: bool) -> None:
        self.src = src
        self.where = where
        self.version = version
        self.flexible = flexible

    def struct(self, fields: tuple[Field, ...], obj: str, depth: int, out: str) -> None:
        src, version, flexible = self.src, self.version, self.flexible
        run: list[str] = []
        formats: list[str] = []

        def flush() -> None:
            if run:
                src.emit(depth, f"{out}({src.packer(''.join(formats))}({', '.join(run)}))")
                run.clear()
                formats.clear()

        for f in fields:
            expr = f"{obj}.{f.name}"
            if not f.present_in(version):
                if not f.ignorable:
                    self.absent_check(f, expr, depth)
                continue
            if flexible and f.tagged_in(version):
                continue
            if not f.is_array and f.type in types.FIXED_FORMATS:
                run.append(f"{expr}.bytes" if f.type == "uuid" else expr)
                formats.append(types.FIXED_FORMATS[f.type])
            else:
                flush()
                self.value(f, expr, depth, out)
        flush()
        if flexible:
            self.tag_section(fields, obj, depth, out)

    def absent_check(self, f: Field, expr: str, depth: int) -> None:
        """Kafka refuses to drop a non-default value of a field the version does not carry."""
        condition = self.non_default(f, expr)
        message = f"{self.where} cannot carry a non-default {f.name}"
        self.src.emit(depth, f"if {condition}: raise _Unsupported({message!r})")

    @staticmethod
    def non_default(f: Field, expr: str) -> str:
        if f.is_array:
            return f"{expr} is not None" if f.default is None else f"{expr}"
        if f.struct_name is not None:
            if f.default is None:
                return f"{expr} is not None"
            simple = [x for x in f.fields if not x.is_array and x.struct_name is None]  # type: ignore[union-attr]
            if len(simple) == len(f.fields):  # type: ignore[arg-type]
                # Compare field by field rather than build a default instance per message.
                checks = " or ".join(f"{expr}.{x.name} != {x.default_literal()}" for x in simple)
                return f"{expr} is not None and ({checks} or {expr}.unknown_tagged_fields)"
            return f"{expr} is not None and {expr} != _S_{f.struct_name}()"
        return f"{expr} != {f.default_literal()}"

    def tag_section(self, fields: tuple[Field, ...], obj: str, depth: int, out: str) -> None:
        src = self.src
        tagged = sorted((f for f in fields if f.present_in(self.version) and f.tagged_in(self.version)),
                        key=lambda f: f.tag)  # type: ignore[arg-type, return-value]
        if not tagged:
            src.emit(depth, f"if {obj}.unknown_tagged_fields: _wtags(sorted({obj}.unknown_tagged_fields.items()), {out})")
            src.emit(depth, f"else: {out}(b'\\x00')")
            return
        found = src.var("tl")
        src.emit(depth, f"{found} = []")
        for f in tagged:
            expr = f"{obj}.{f.name}"
            src.emit(depth, f"if {self.non_default(f, expr)}:")
            parts = src.var("sub")
            src.emit(depth + 1, f"{parts} = []")
            self.value(f, expr, depth + 1, f"{parts}.append")
            src.emit(depth + 1, f"{found}.append(({f.tag}, b''.join({parts})))")
        src.emit(depth, f"if {obj}.unknown_tagged_fields:")
        src.emit(depth + 1, f"{found}.extend({obj}.unknown_tagged_fields.items())")
        src.emit(depth + 1, f"{found}.sort()")
        src.emit(depth, f"_wtags({found}, {out})")

    def value(self, f: Field, expr: str, depth: int, out: str) -> None:
        src = self.src
        nullable = f.nullable_in(self.version)
        holder = src.var("o")
        src.emit(depth, f"{holder} = {expr}")
        if f.is_array:
            self.array(f, holder, nullable, depth, out)
        elif f.struct_name is not None:
            if nullable:
                src.emit(depth, f"if {holder} is None: {out}(b'\\xff')")
                src.emit(depth, "else:")
                depth += 1
                src.emit(depth, f"{out}(b'\\x01')")
            else:
                self.refuse_null(holder, f.name, depth)
            self.struct(f.fields, holder, depth, out)  # type: ignore[arg-type]
        else:
            self.primitive(f.type, f.name, holder, nullable, depth, out)

    def refuse_null(self, holder: str, name: str, depth: int) -> None:
        message = f"{self.where}: {name} is not nullable in this version"
        self.src.emit(depth, f"if {holder} is None: raise _Unsupported({message!r})")

    def length(self, kind: str, value: str, depth: int, out: str) -> None:
        if self.flexible:
            self.src.emit(depth, f"{out}(_uv({value} + 1))")
        else:
            self.src.emit(depth, f"{out}({self.src.packer('h' if kind == 'string' else 'i')}({value}))")

    def null_marker(self, kind: str) -> str:
        if self.flexible:
            return "b'\\x00'"
        return "b'\\xff\\xff'" if kind == "string" else "b'\\xff\\xff\\xff\\xff'"

    def primitive(self, type_name: str, name: str, holder: str, nullable: bool, depth: int, out: str) -> None:
        src = self.src
        fixed = types.FIXED_FORMATS.get(type_name)
        if fixed is not None:
            value = f"{holder}.bytes" if type_name == "uuid" else holder
            src.emit(depth, f"{out}({src.packer(fixed)}({value}))")
            return
        if nullable:
            src.emit(depth, f"if {holder} is None: {out}({self.null_marker(type_name)})")
            src.emit(depth, "else:")
            depth += 1
        else:
            self.refuse_null(holder, name, depth)
        if type_name == "string":
            encoded = src.var("b")
            src.emit(depth, f"{encoded} = {holder}.encode('utf-8')")
            self.length("string", f"len({encoded})", depth, out)
            src.emit(depth, f"{out}({encoded})")
        else:
            self.length("bytes", f"len({holder})", depth, out)
            src.emit(depth, f"{out}({holder})")

    def array(self, f: Field, holder: str, nullable: bool, depth: int, out: str) -> None:
        src = self.src
        if nullable:
            src.emit(depth, f"if {holder} is None: {out}({self.null_marker('array')})")
            src.emit(depth, "else:")
            depth += 1
        else:
            self.refuse_null(holder, f.name, depth)
        self.length("array", f"len({holder})", depth, out)
        fast = _ARRAY_FAST_FORMATS.get(f.element)
        if fast is not None:
            table = src.const(("ap", fast), _count_table(fast, "pack"), "_ap")
            count = src.var("n")
            src.emit(depth, f"{count} = len({holder})")
            src.emit(depth, f"if {count}: {out}(({table}[{count}] if {count} < {_TABLE_SIZE} else _Struct('>%d{fast}' % {count}).pack)(*{holder}))")
            return
        element = src.var("el")
        if f.struct_name is None:
            src.emit(depth, f"for {element} in {holder}:")
            self.primitive(f.element, f.name, element, False, depth + 1, out)
            return
        src.emit(depth, f"if type({holder}) is _Encoded: {out}({holder}.data)")  # see EncodedArray
        src.emit(depth, "else:")
        src.emit(depth + 1, f"for {element} in {holder}:")
        self.refuse_null(element, f.name, depth + 2)
        self.struct(f.fields, element, depth + 2, out)  # type: ignore[arg-type]


def compile_encoder(fields: tuple[Field, ...], where: str, version: int,
                    flexible: bool) -> Callable[[Any, Callable[[Any], None]], None]:
    namespace = _base_namespace(fields)
    src = _Source(namespace)
    _EncoderBuilder(src, where, version, flexible).struct(fields, "msg", 1, "out")
    code = "def encode(msg, out):\n" + "\n".join(src.lines or ["    pass"]) + "\n"
    exec(compile(code, f"<odradek.protocol encode {where}>", "exec"), namespace)
    encoder = namespace["encode"]
    encoder.source = code
    return encoder


def _struct_fields(fields: tuple[Field, ...]):
    for f in fields:
        if f.fields is not None:
            yield f
            yield from _struct_fields(f.fields)

"""Translation between our protocol objects and kafka-python 3.x's, for the codec cross-checks.

kafka-python 3.x (``kafka.protocol``) declares every message from Kafka 4.x's JSON schemas, with
snake_case names like ours. The differences this module bridges:

- a few fields are renamed or retyped by kafka-python's ``json_patch`` hooks: the authorized-operations
  int32s become ``bitfield`` (a ``set`` of bit numbers, ``None`` for INT32_MIN) and two of them are
  renamed to ``authorized_operations`` (``RENAMES`` below);
- a tagged struct field that is absent decodes as ``None`` in kafka-python and as the struct's default
  instance in ours (Kafka's Java does the latter);
- bytes may come back as ``memoryview`` (ours, records) or ``bytearray`` (kafka-python's encoder).

``plain_ours`` and ``plain_kp`` both produce a plain dict in our names and representation, holding the
fields present in the given version, so the two sides can be compared with ``==``.
"""

from __future__ import annotations

import importlib
import io
import uuid
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.old.api import Request as OldRequest, Response as OldResponse
from kafka.protocol.old import types as old_types
from kafka.protocol.schemas.fields.codecs import BitField

from odradek.protocol.schema import Field, Message

_KP_PACKAGES = ("kafka.protocol.admin", "kafka.protocol.consumer", "kafka.protocol.producer",
                "kafka.protocol.metadata", "kafka.protocol.sasl")
_KP_OLD_MODULES = ("add_offsets_to_txn", "add_partitions_to_txn", "admin", "api_versions", "commit",
                   "end_txn", "fetch", "find_coordinator", "group", "init_producer_id", "list_offsets",
                   "metadata", "offset_for_leader_epoch", "produce", "sasl_authenticate",
                   "sasl_handshake", "txn_offset_commit")

# (message name, dotted path of our field names) -> kafka-python's name for the last component.
RENAMES: dict[tuple[str, str], str] = {
    ("MetadataResponse", "cluster_authorized_operations"): "authorized_operations",
    ("MetadataResponse", "topics.topic_authorized_operations"): "authorized_operations",
    ("DescribeClusterResponse", "cluster_authorized_operations"): "authorized_operations",
    # We keep Kafka 2.8's names where Kafka 4.x (kafka-python's schemas) renamed fields for v4+.
    ("AddPartitionsToTxnRequest", "transactional_id"): "v3_and_below_transactional_id",
    ("AddPartitionsToTxnRequest", "producer_id"): "v3_and_below_producer_id",
    ("AddPartitionsToTxnRequest", "producer_epoch"): "v3_and_below_producer_epoch",
    ("AddPartitionsToTxnRequest", "topics"): "v3_and_below_topics",
    ("AddPartitionsToTxnResponse", "results"): "results_by_topic_v3_and_below",
    ("AddPartitionsToTxnResponse", "results.results"): "results_by_partition",
    ("AddPartitionsToTxnResponse", "results.results.error_code"): "partition_error_code",
}

# Tagged fields that later Kafka releases added to versions Kafka 2.8 already had; we declare
# 2.8's layouts, so only kafka-python (Kafka 4.x schemas) has them.
NEWER_THAN_2_8 = {
    ("ApiVersionsResponse", "zk_migration_ready"),  # Kafka 3.4
}

INT32_MIN = -(1 << 31)


def _load_kp_messages() -> dict[str, type]:
    found: dict[str, type] = {}
    for package in _KP_PACKAGES:
        module = importlib.import_module(package)
        for attr in dir(module):
            obj = getattr(module, attr)
            if (isinstance(obj, type) and issubclass(obj, ApiMessage) and obj is not ApiMessage
                    and getattr(obj, "_class_version", None) is None):
                found[obj.name] = obj
    return found


def _load_kp_old() -> dict[tuple[str, int], type]:
    found: dict[tuple[str, int], type] = {}
    for name in _KP_OLD_MODULES:
        module = importlib.import_module(f"kafka.protocol.old.{name}")
        for attr in dir(module):
            obj = getattr(module, attr)
            if (isinstance(obj, type) and issubclass(obj, (OldRequest, OldResponse))
                    and "_v" in attr and isinstance(getattr(obj, "API_VERSION", None), int)):
                base, _, version = attr.rpartition("_v")
                if version.isdigit() and int(version) == obj.API_VERSION:
                    found[(base, obj.API_VERSION)] = obj
    return found


KP_MESSAGES: dict[str, type] = _load_kp_messages()
KP_OLD: dict[tuple[str, int], type] = _load_kp_old()


def kp_class(message: Message) -> type | None:
    return KP_MESSAGES.get(message.name)


def kp_json_min_version(kp_cls: type) -> int:
    """The lowest version in kafka-python's JSON (its ApiMessage pretends 0 anyway)."""
    return int(kp_cls._json["validVersions"].split("-")[0].rstrip("+"))


# --- our side -------------------------------------------------------------------------------------

def _norm(value: Any) -> Any:
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def plain_ours(obj: Any, fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """Our object as a plain dict of the fields present in ``version``."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        value = getattr(obj, f.name)
        if value is None:
            out[f.name] = None
        elif f.fields is not None:
            if f.is_array:
                out[f.name] = [plain_ours(x, f.fields, version) for x in value]
            else:
                out[f.name] = plain_ours(value, f.fields, version)
        elif f.is_array:
            out[f.name] = [_norm(x) for x in value]
        else:
            out[f.name] = _norm(value)
    return out


def _default_plain(f: Field, version: int) -> Any:
    value = f.default_value()
    if value is None or f.fields is None or f.is_array:
        return value
    return plain_ours(value, f.fields, version)


# --- kafka-python's side --------------------------------------------------------------------------

def _kp_field_map(kp_struct: Any) -> dict[str, Any]:
    return kp_struct.fields  # StructField: name -> field; StructArrayField: the element's map


def _kp_name(message: Message, path: str, name: str) -> str:
    return RENAMES.get((message.name, f"{path}{name}"), name)


def _is_bitfield(kp_field: Any) -> bool:
    return getattr(kp_field, "_type", None) is BitField


def _int_to_bits(value: int) -> set[int] | None:
    bits = BitField.from_32_bit_field(value & 0xFFFFFFFF)
    return None if bits == {31} else bits


def _bits_to_int(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    value = BitField.to_32_bit_field(bits)
    return value - (1 << 32) if value & 0x80000000 else value


def _kp_element(kp_field: Any) -> Any:
    return kp_field.array_of if kp_field.is_struct_array() else kp_field


def plain_kp(kobj: Any, message: Message, version: int, fields: tuple[Field, ...] | None = None,
             kp_struct: Any = None, path: str = "") -> dict[str, Any]:
    """A kafka-python object as a plain dict in our names and representation.

    Fields kafka-python has in ``version`` but we lack come out as ``"kp-only:<name>"`` keys, so
    that a comparison with ``plain_ours`` shows them.
    """
    if fields is None:
        fields, kp_struct = message.fields, type(kobj)._struct
    kp_fields = _kp_field_map(kp_struct)
    out: dict[str, Any] = {}
    used = set()
    for f in fields:
        if not f.present_in(version):
            continue
        name = _kp_name(message, path, f.name)
        kf = kp_fields.get(name)
        if kf is None:
            out[f.name] = "<missing in kafka-python>"
            continue
        used.add(name)
        value = getattr(kobj, name)
        if f.fields is not None:
            if value is None:
                # An absent tagged struct: kafka-python says None, we say "the default struct".
                out[f.name] = _default_plain(f, version) if f.tagged_in(version) else None
            elif f.is_array:
                out[f.name] = [plain_kp(x, message, version, f.fields, _kp_element(kf), f"{path}{f.name}.")
                               for x in value]
            else:
                out[f.name] = plain_kp(value, message, version, f.fields, kf, f"{path}{f.name}.")
        elif _is_bitfield(kf):
            out[f.name] = _bits_to_int(value)
        elif f.is_array and value is not None:
            out[f.name] = [_norm(x) for x in value]
        else:
            out[f.name] = _norm(value)
    for name, kf in kp_fields.items():
        if name not in used and kf.for_version_q(version):
            value = getattr(kobj, name)
            if kf.tagged_field_q(version) and value == kf.default:
                # A tagged field newer than Kafka 2.8 (ApiVersionsResponse zk_migration_ready, 3.4):
                # at its default it is not on the wire, so the two sides agree.
                continue
            out[f"kp-only:{name}"] = value
    return out


def build_kp(kp_cls: type, message: Message, plain: dict[str, Any], version: int) -> Any:
    """The kafka-python message equal to ``plain`` (a dict from ``plain_ours``), at ``version``."""
    kwargs = _kp_kwargs(message, message.fields, kp_cls._struct, plain, version, "")
    return kp_cls(version=version, **kwargs)


def _kp_kwargs(message: Message, fields: tuple[Field, ...], kp_struct: Any, plain: dict[str, Any],
               version: int, path: str) -> dict[str, Any]:
    kp_fields = _kp_field_map(kp_struct)
    kwargs: dict[str, Any] = {}
    for f in fields:
        if f.name not in plain:
            continue
        name = _kp_name(message, path, f.name)
        kf = kp_fields.get(name)
        if kf is None:
            raise KeyError(f"{message.name} v{version}: kafka-python has no field {path}{name}")
        value = plain[f.name]
        if f.fields is not None and value is not None:
            if f.tagged_in(version) and not f.is_array and value == _default_plain(f, version):
                continue  # a tagged struct at its default is not sent; kafka-python spells it None
            element = _kp_element(kf)
            sub = f"{path}{f.name}."
            if f.is_array:
                value = [element.data_class(**_kp_kwargs(message, f.fields, element, x, version, sub))
                         for x in value]
            else:
                value = element.data_class(**_kp_kwargs(message, f.fields, element, value, version, sub))
        elif _is_bitfield(kf):
            value = _int_to_bits(value)
        kwargs[name] = value
    return kwargs


def kp_encode(kobj: Any, version: int | None, **kwargs: Any) -> bytes:
    """kafka-python's encoding as bytes (its encoder returns a bytearray)."""
    return bytes(kobj.encode(version=version, **kwargs))


# --- kafka-python's older hand-written Struct classes (kafka.protocol.old) -------------------------

def old_class(message: Message, version: int) -> type | None:
    return KP_OLD.get((message.name, version))


def old_decode(old_cls: type, data: bytes) -> tuple[Any, int]:
    """Decode with an old Struct class; return it and the number of bytes it consumed."""
    buf = io.BytesIO(data)
    obj = old_cls.decode(buf)
    return obj, buf.tell()


def flatten_ours(obj: Any, fields: tuple[Field, ...], version: int, flexible: bool) -> list[Any]:
    """The untagged values in wire order (array lengths as markers), for positional comparison."""
    out: list[Any] = []
    for f in fields:
        if not f.present_in(version) or (flexible and f.tagged_in(version)):
            continue
        value = getattr(obj, f.name)
        if f.is_array:
            out.append(("array", None if value is None else len(value)))
            for x in value or ():
                out.extend(flatten_ours(x, f.fields, version, flexible) if f.fields is not None
                           else [_flat_value(x)])
        elif f.fields is not None:
            out.extend(flatten_ours(value, f.fields, version, flexible))
        else:
            out.append(_flat_value(value))
    return out


def _flat_value(value: Any) -> Any:
    value = _norm(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def flatten_old(obj: Any, old_cls: type) -> list[Any]:
    schema = old_cls.SCHEMA
    return _flatten_old_schema([getattr(obj, n) for n in schema.names], schema)


def _flatten_old_schema(values: Any, schema: Any) -> list[Any]:
    out: list[Any] = []
    for value, kind in zip(values, schema.fields):
        out.extend(_flatten_old_value(value, kind))
    return out


def _flatten_old_value(value: Any, kind: Any) -> list[Any]:
    if kind is old_types.TaggedFields:
        return []
    if isinstance(kind, old_types.Schema):
        return _flatten_old_schema(value, kind)
    if isinstance(kind, old_types.Array):
        out: list[Any] = [("array", None if value is None else len(value))]
        for x in value or ():
            out.extend(_flatten_old_value(x, kind.array_of))
        return out
    if kind is old_types.BitField:
        return [_bits_to_int(value)]
    if kind is old_types.UUID:
        return [(value or uuid.UUID(int=0)).bytes if isinstance(value, uuid.UUID) or value is None
                else uuid.UUID(value).bytes]
    return [_norm(value)]


# --- declarations ---------------------------------------------------------------------------------

def _same_default(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, uuid.UUID) and theirs is None:
        return ours == uuid.UUID(int=0)  # kafka-python spells the zero UUID None (same wire bytes)
    return ours == theirs


def declaration_differences(message: Message, kp_cls: type, version: int) -> list[str]:
    """What differs, at ``version``, between our declaration and kafka-python's JSON, as far as it
    reaches the wire: presence, primitive type, array-ness, nullability, tags, and the defaults of
    tagged fields (a tagged field is sent only when it differs from its default)."""
    out: list[str] = []
    _declaration_walk(message, message.fields, kp_cls._struct, version, "", out)
    return out


def _declaration_walk(message: Message, fields: tuple[Field, ...], kp_struct: Any, version: int,
                      path: str, out: list[str]) -> None:
    kp_fields = _kp_field_map(kp_struct)
    seen = set()
    for f in fields:
        if not f.present_in(version):
            continue
        where = f"{path}{f.name}"
        name = _kp_name(message, path, f.name)
        kf = kp_fields.get(name)
        if kf is None or not kf.for_version_q(version):
            out.append(f"{where}: only ours has it")
            continue
        seen.add(name)
        if f.is_array != (kf.is_array() or kf.is_struct_array()):
            out.append(f"{where}: array {f.is_array} vs {not f.is_array}")
        if f.fields is None:
            kp_type = kf._type_str[2:] if kf._type_str.startswith("[]") else kf._type_str
            if kp_type != f.element and not (_is_bitfield(kf) and f.type == "int32"):
                out.append(f"{where}: type {f.type} vs {kf._type_str}")
        elif not (kf.is_struct() or kf.is_struct_array()):
            out.append(f"{where}: struct vs {kf._type_str}")
        if f.nullable_in(version) != kf.nullable_for_version_q(version):
            out.append(f"{where}: nullable {f.nullable_in(version)} vs {kf.nullable_for_version_q(version)}")
        ours_tag = f.tag if f.tagged_in(version) else None
        kp_tag = kf.tag if kf.tagged_field_q(version) else None
        if ours_tag != kp_tag:
            out.append(f"{where}: tag {ours_tag} vs {kp_tag}")
        elif ours_tag is not None and f.fields is None and not _is_bitfield(kf):
            if not _same_default(f.default_value(), kf.default):
                out.append(f"{where}: tagged default {f.default_value()!r} vs {kf.default!r}")
        if f.fields is not None and (kf.is_struct() or kf.is_struct_array()):
            _declaration_walk(message, f.fields, _kp_element(kf), version, f"{where}.", out)
    for name, kf in kp_fields.items():
        if name not in seen and kf.for_version_q(version) and (message.name, f"{path}{name}") not in NEWER_THAN_2_8:
            out.append(f"{path}{name}: only kafka-python has it")


def null_everything_nullable(message: Message, plain: dict[str, Any], kp_cls: type, version: int) -> dict[str, Any]:
    """``plain`` with every untagged field that kafka-python says is nullable at ``version`` set to None."""
    return _nullify(message, message.fields, kp_cls._struct, plain, version, "")


def _nullify(message: Message, fields: tuple[Field, ...], kp_struct: Any, plain: dict[str, Any],
             version: int, path: str) -> dict[str, Any]:
    kp_fields = _kp_field_map(kp_struct)
    out = dict(plain)
    for f in fields:
        if f.name not in plain:
            continue
        kf = kp_fields.get(_kp_name(message, path, f.name))
        if kf is None:
            continue
        if kf.nullable_for_version_q(version) and not kf.tagged_field_q(version):
            out[f.name] = None
        elif f.fields is not None and plain[f.name] is not None:
            sub = f"{path}{f.name}."
            element = _kp_element(kf)
            if f.is_array:
                out[f.name] = [_nullify(message, f.fields, element, x, version, sub) for x in plain[f.name]]
            else:
                out[f.name] = _nullify(message, f.fields, element, plain[f.name], version, sub)
    return out

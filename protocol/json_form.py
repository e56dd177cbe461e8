"""A message in Kafka's JSON form: what Kafka's generated ``<Message>JsonConverter.write(msg, version,
serializeRecords=false)`` gives, the form of the broker's request log (KIP-673).

Field names are the definitions' names in lowerCamelCase (``partition_index`` -> ``partitionIndex``); only
the fields the version carries appear, and a tagged field only when it differs from its default. Bytes are
base64, uuids Kafka's ``Uuid.toString`` (URL-safe base64 without padding), and a ``records`` field is
replaced by ``<name>SizeInBytes`` (the records themselves are not worth logging), or null when null.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any, Iterable

from .fields import Field


def message_json(body: Any, version: int) -> dict[str, Any]:
    """``body`` (a data class of ``protocol.messages``) at ``version``, as a JSON-ready dict."""
    return _struct(body, type(body).MESSAGE.fields, version)


def camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


def _struct(obj: Any, fields: Iterable[Field], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        value = getattr(obj, f.name)
        if f.tagged_in(version) and value == f.default_value():
            continue
        if f.type == "records":
            if value is None:
                out[camel_case(f.name)] = None
            else:
                out[camel_case(f.name) + "SizeInBytes"] = value.nbytes if type(value) is memoryview else len(value)
            continue
        out[camel_case(f.name)] = _value(f, value, version)
    return out


def _value(f: Field, value: Any, version: int) -> Any:
    if value is None:
        return None
    if f.is_array:
        if f.struct_name is not None:
            return [_struct(item, f.fields, version) for item in value]  # type: ignore[arg-type]
        return [_primitive(f.element, item) for item in value]
    if f.struct_name is not None:
        return _struct(value, f.fields, version)  # type: ignore[arg-type]
    return _primitive(f.type, value)


def _primitive(type_name: str, value: Any) -> Any:
    if type_name == "bytes":
        return base64.b64encode(bytes(value)).decode("ascii")
    if type_name == "uuid":
        raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return value

"""The client side of the registry, for code that encodes or decodes records (the Spark source and sink):
Confluent's wire format and a small caching REST client (standard library only, so Spark workers need
nothing more).

Wire format: magic byte 0, the schema id (4 bytes, big-endian), then for Protobuf the message indexes (a
zig-zag varint count and as many indexes, or a single 0 for the file's first message), then the payload.
"""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

MAGIC = 0
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class WireFormatError(ValueError):
    pass


def frame(schema_id: int, payload: bytes, message_indexes: list[int] | None = None) -> bytes:
    head = struct.pack(">bI", MAGIC, schema_id)
    if message_indexes is None:
        return head + payload
    if message_indexes == [0]:
        return head + b"\x00" + payload
    return head + b"".join(_zigzag_varint(n) for n in [len(message_indexes), *message_indexes]) + payload


def unframe(data: bytes, protobuf: bool = False) -> tuple[int, list[int], memoryview]:
    """(schema id, message indexes ([] unless ``protobuf``), payload)."""
    if len(data) < 5 or data[0] != MAGIC:
        raise WireFormatError("Unknown magic byte: not in Confluent's wire format")
    schema_id = struct.unpack_from(">I", data, 1)[0]
    view = memoryview(data)[5:]
    if not protobuf:
        return schema_id, [], view
    count, used = _read_zigzag_varint(view, 0)
    indexes = []
    for _ in range(count):
        index, used = _read_zigzag_varint(view, used)
        indexes.append(index)
    return schema_id, indexes or [0], view[used:]


def _zigzag_varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_zigzag_varint(view: memoryview, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if at >= len(view):
            raise WireFormatError("truncated message indexes")
        byte = view[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at


class RegistryError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"schema registry answered {status}: {body}")
        self.status = status
        self.code = body.get("error_code") if isinstance(body, dict) else None


class RegistryClient:
    """Schemas by id (cached: an id never changes its schema) and subjects' versions."""

    def __init__(self, url: str, basic_auth: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._auth = "Basic " + base64.b64encode(basic_auth.encode()).decode() if basic_auth else None
        self._by_id: dict[tuple[int, str | None], dict[str, Any]] = {}

    def _call(self, path: str, method: str = "GET", body: Any = None) -> Any:
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        if self._auth:
            request.add_header("Authorization", self._auth)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = text
            raise RegistryError(error.code, parsed) from None

    def schema_by_id(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        key = (schema_id, fmt)
        found = self._by_id.get(key)
        if found is None:
            query = f"?format={fmt}" if fmt else ""
            found = self._by_id[key] = self._call(f"/schemas/ids/{schema_id}{query}")
        return found

    def version(self, subject: str, version: str | int = "latest", fmt: str | None = None) -> dict[str, Any]:
        query = f"?format={fmt}" if fmt else ""
        return self._call(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}{query}")

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: list[dict[str, Any]] | None = None) -> int:
        body: dict[str, Any] = {"schema": schema, "schemaType": schema_type}
        if references:
            body["references"] = references
        return self._call(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions", "POST", body)["id"]

"""Request and response headers, and whole request/response frames.

Request header v0: api_key int16, api_version int16, correlation_id int32.
v1 adds client_id (nullable, always an int16-length string, even in v2); v2 adds a tagged-field
section. Response header v0 is the correlation id; v1 adds a tagged-field section.

``decode_request`` is what a broker's processor calls on each frame body; ``encode_request`` and
``decode_response`` are the client side. Bodies are handed to the compiled codecs of ``messages``.
"""

from __future__ import annotations

import struct
from typing import Any

from . import framing, types
from .api_keys import request_header_version, response_header_version
from .errors import ProtocolError, UnknownApiKeyError, UnsupportedApiVersionError
from .messages import REQUESTS, RESPONSES

_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_INT16 = types.INT16
_INT32 = types.INT32


class RequestHeader:
    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "unknown_tagged_fields")

    def __init__(self, api_key: int, api_version: int, correlation_id: int,
                 client_id: str | None = None, unknown_tagged_fields: dict[int, bytes] | None = None) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.unknown_tagged_fields = unknown_tagged_fields

    @property
    def header_version(self) -> int:
        return request_header_version(self.api_key, self.api_version)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestHeader):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __repr__(self) -> str:
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


class _RequestInfo:
    """What the header decoder needs per api key, precomputed (this is the broker's hot path)."""

    __slots__ = ("message", "min_version", "max_version", "first_flexible")

    def __init__(self, message: Any) -> None:
        self.message = message
        self.min_version = message.min_version
        self.max_version = message.max_version
        self.first_flexible = message.flexible.lo


_REQUEST_INFO = {key: _RequestInfo(message) for key, message in REQUESTS.items()}
_CONTROLLED_SHUTDOWN = 7


def decode_request_header(data: memoryview) -> tuple[RequestHeader, int]:
    """Decode the header at the start of a request frame body; return it and the body's offset.

    Raises ``UnknownApiKeyError`` for a key we do not speak and ``UnsupportedApiVersionError`` for a
    version outside the message's range, both carrying the correlation id (all a broker needs to
    answer ApiVersions with error 35).
    """
    if len(data) < 8:
        raise types.TruncatedError(f"request header needs 8 bytes, frame has {len(data)}")
    api_key, api_version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(data, 0)
    info = _REQUEST_INFO.get(api_key)
    if info is None:
        raise UnknownApiKeyError(api_key, correlation_id)
    if not info.min_version <= api_version <= info.max_version:
        raise UnsupportedApiVersionError(api_key, api_version, correlation_id)
    if api_version == 0 and api_key == _CONTROLLED_SHUTDOWN:
        return RequestHeader(api_key, api_version, correlation_id), 8  # header v0: no client id
    if len(data) < 10:
        raise types.TruncatedError("request header ends inside client_id")
    (length,) = _INT16.unpack_from(data, 8)
    pos = 10
    client_id = None
    if length >= 0:
        pos += length
        if pos > len(data):
            raise types.TruncatedError("client_id runs past the end of the frame")
        try:
            client_id = data[10:pos].tobytes().decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"client_id is not valid UTF-8 ({exc})") from None
    elif length < -1:
        raise ProtocolError(f"client_id has negative length {length}")
    tags = None
    if api_version >= info.first_flexible:  # header v2
        if pos < len(data) and data[pos] == 0:
            pos += 1
        else:
            tags, pos = types.read_unknown_tag_section(data, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, tags), pos


def decode_request(frame: Any) -> tuple[RequestHeader, Any]:
    """Decode one request frame body (without its length prefix) into (header, body)."""
    data = frame if type(frame) is memoryview else memoryview(frame)
    header, pos = decode_request_header(data)
    body, _ = _REQUEST_INFO[header.api_key].message.decode_from(data, pos, header.api_version)
    return header, body


def encode_request(body: Any, api_version: int, correlation_id: int, client_id: str | None,
                   *, framed: bool = True) -> bytes:
    """Encode a request (header + body), with the 4-byte length prefix unless ``framed=False``."""
    message = body.MESSAGE
    if message.kind != "request":
        raise ValueError(f"{message.name} is not a request")
    parts: list[Any] = [_KEY_VERSION_CORRELATION.pack(message.api_key, api_version, correlation_id)]
    header_version = request_header_version(message.api_key, api_version)
    if header_version >= 1:
        if client_id is None:
            parts.append(b"\xff\xff")
        else:
            encoded = client_id.encode("utf-8")
            parts.append(_INT16.pack(len(encoded)))
            parts.append(encoded)
    if header_version >= 2:
        parts.append(b"\x00")
    message.encode_into(body, api_version, parts.append)
    return framing.frame(parts) if framed else b"".join(parts)


def encode_response_parts(body: Any, api_version: int, correlation_id: int) -> list[Any]:
    """A response frame (length prefix, header, body) as a list of bytes-like parts.

    Record data stays a view into the log until the transport writes it (``writelines``).
    """
    message = body.MESSAGE
    if message.kind != "response":
        raise ValueError(f"{message.name} is not a response")
    parts: list[Any] = [b"", _INT32.pack(correlation_id)]  # parts[0]: the size prefix, set last
    if response_header_version(message.api_key, api_version) >= 1:
        parts.append(b"\x00")
    message.encode_into(body, api_version, parts.append)
    parts[0] = framing.size_prefix(framing.payload_size(parts))
    return parts


def encode_response(body: Any, api_version: int, correlation_id: int) -> bytes:
    """A whole response frame, length prefix included."""
    return b"".join(encode_response_parts(body, api_version, correlation_id))


def decode_response(frame: Any, api_key: int, api_version: int) -> tuple[int, Any]:
    """Decode one response frame body (without its length prefix) into (correlation_id, body)."""
    data = frame if type(frame) is memoryview else memoryview(frame)
    if len(data) < 4:
        raise types.TruncatedError("response header needs 4 bytes")
    (correlation_id,) = _INT32.unpack_from(data, 0)
    pos = 4
    if response_header_version(api_key, api_version) >= 1:
        _, pos = types.read_unknown_tag_section(data, pos)
    message = RESPONSES.get(api_key)
    if message is None:
        raise UnknownApiKeyError(api_key, correlation_id)
    body, _ = message.decode_from(data, pos, api_version)
    return correlation_id, body

"""Walkers over a response body's structs: set every ``error_code``, clip over-long ``error_message``s.

Kept in the protocol layer so that both the request switchboard (broker/kafka_apis.py) and the SASL
authenticator (broker/security), which answers before any handler runs, build error bodies alike.
"""

from __future__ import annotations

from typing import Any

from .schema import Struct


def set_error_codes(obj: Any, code: int) -> Any:
    """Set every ``error_code`` field found in ``obj`` and the structs nested in it; returns obj."""
    if isinstance(obj, Struct):
        for name in obj._fields:
            value = getattr(obj, name)
            if name == "error_code":
                setattr(obj, name, code)
            elif isinstance(value, (list, Struct)):
                set_error_codes(value, code)
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, Struct):
                set_error_codes(item, code)
    return obj


MAX_ERROR_MESSAGE = 1024


def clip_error_messages(obj: Any, limit: int = MAX_ERROR_MESSAGE) -> bool:
    """Shorten every ``error_message`` over ``limit`` characters in ``obj`` and its nested structs; True if
    one was. Messages quote what the client sent (a 32,767-character topic name), and a string field has
    an int16 length on the wire."""
    clipped = False
    if isinstance(obj, Struct):
        for name in obj._fields:
            value = getattr(obj, name)
            if name == "error_message" and isinstance(value, str) and len(value) > limit:
                setattr(obj, name, value[:limit - 3] + "...")
                clipped = True
            elif isinstance(value, (list, Struct)):
                clipped |= clip_error_messages(value, limit)
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, Struct):
                clipped |= clip_error_messages(item, limit)
    return clipped

"""Java ``.properties`` text (``java.util.Properties.load``): the broker's server.properties and the tools'
client config files (--producer.config, --command-config, ...) are read by this one parser."""

from __future__ import annotations

import re

_WS = " \t\f"


def parse_properties(text: str) -> list[tuple[str, str, int]]:
    """Parse Java .properties text into (key, value, line number) triples, in file order.

    Supports `#`/`!` comment lines, `key=value`, `key: value` and `key value` separators, logical lines
    continued with a trailing backslash (leading blanks of the continuation are dropped), and the escapes
    `\\t \\n \\r \\f \\uXXXX` (any other escaped character stands for itself, e.g. `\\=` or `\\:` in a key).
    """
    lines = re.split(r"\r\n|\r|\n", text)
    out: list[tuple[str, str, int]] = []
    i = 0
    while i < len(lines):
        lineno = i + 1
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(_WS)
            i += 1
        j = 0
        while j < len(line):
            c = line[j]
            if c == "\\":
                j += 2
                continue
            if c in "=:" or c in _WS:
                break
            j += 1
        key, rest = line[:j], line[j:].lstrip(_WS)
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(_WS)
        out.append((_unescape(key), _unescape(rest), lineno))
    return out


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(s):
            break
        n = s[i + 1]
        if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2:i + 6]):
            out.append(chr(int(s[i + 2:i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(n, n))
        i += 2
    return "".join(out)

"""JAAS configuration text, as Kafka's ``sasl.jaas.config`` values hold it.

    org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="s" user_alice="a";

One login module, its control flag, then ``name=value`` options (a value quoted with double quotes, where
backslash escapes the next character, or bare up to the next blank or ';'), ending with ';'. Kafka's
JaasConfig refuses anything but exactly one module in ``sasl.jaas.config``; so do we.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["JaasConfig", "JaasError", "parse_jaas", "PLAIN_MODULE", "SCRAM_MODULE", "client_jaas"]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;]))', re.S)


class JaasError(ValueError):
    """Not a JAAS login module entry (the message says what is wrong, never the passwords)."""


@dataclass(frozen=True)
class JaasConfig:
    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict, repr=False)  # holds passwords: never in a repr

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")

    def plain_users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>="<password>"`` options: the users a PLAIN listener accepts."""
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_") and len(k) > 5}


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JaasError(f"unexpected character at position {pos}")
        pos = m.end()
        if m.group("quoted") is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", m.group("quoted")[1:-1], flags=re.S)))
        elif m.group("word") is not None:
            out.append(("word", m.group("word")))
        else:
            out.append((m.group("punct"), m.group("punct")))
    return out


def parse_jaas(text: str) -> JaasConfig:
    """Parse one ``sasl.jaas.config`` value; ``JaasError`` if it is not exactly one login module."""
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise JaasError("expected '<LoginModule class> <flag> [name=value ...];'")
    module, flag = tokens[0][1], tokens[1][1].lower()
    if flag not in _FLAGS:
        raise JaasError(f"invalid control flag {tokens[1][1]!r} (expected one of {', '.join(_FLAGS)})")
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i][0] != ";":
        if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" or \
                tokens[i + 2][0] not in ("word", "value"):
            raise JaasError("expected name=value options")
        options[tokens[i][1]] = tokens[i + 2][1]
        i += 3
    if i >= len(tokens):
        raise JaasError("expected ';' at the end of the login module")
    if i + 1 != len(tokens):
        raise JaasError("expected exactly one login module")
    return JaasConfig(module, flag, options)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def client_jaas(mechanism: str, username: str, password: str) -> str:
    """The sasl.jaas.config a Kafka client would use for ``mechanism`` (for generated client properties)."""
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    return f"{module} required username={_quote(username)} password={_quote(password)};"

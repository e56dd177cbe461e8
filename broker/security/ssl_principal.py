"""The principal of a mutual-TLS connection: the client certificate's subject, as Kafka names it.

Kafka's DefaultKafkaPrincipalBuilder takes ``X500Principal.getName()`` (RFC 2253: the most specific RDN
first, keywords only for CN, C, L, ST, O, OU, STREET, DC and UID, other attributes as
``<oid>=#<hex of the DER value>``) and passes it through ``ssl.principal.mapping.rules``
(SslPrincipalMapper): ``DEFAULT`` keeps the name, ``RULE:<regex>/<replacement>/[LU]`` rewrites a name
the regex matches whole; the first rule that applies wins, and a name no rule applies to fails the
connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID

__all__ = ["distinguished_name", "SslPrincipalMapper", "NoMatchingRule"]

_KEYWORDS = {NameOID.COMMON_NAME: "CN", NameOID.COUNTRY_NAME: "C", NameOID.LOCALITY_NAME: "L",
             NameOID.STATE_OR_PROVINCE_NAME: "ST", NameOID.ORGANIZATION_NAME: "O",
             NameOID.ORGANIZATIONAL_UNIT_NAME: "OU", NameOID.STREET_ADDRESS: "STREET",
             NameOID.DOMAIN_COMPONENT: "DC", NameOID.USER_ID: "UID"}
_ENCODINGS = {30: "utf-16-be", 28: "utf-32-be"}  # BMPString, UniversalString; the rest are UTF-8/ASCII


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_value(attribute: x509.NameAttribute) -> str:
    tag = attribute._type.value  # the ASN.1 string type the certificate used
    raw = str(attribute.value).encode(_ENCODINGS.get(tag, "utf-8"))
    length = bytes([len(raw)]) if len(raw) < 128 else bytes([0x80 | len(len(raw).to_bytes(4, "big").lstrip(b"\0"))]) \
        + len(raw).to_bytes(4, "big").lstrip(b"\0")
    return "#" + (bytes([tag]) + length + raw).hex()


def distinguished_name(der_certificate: bytes) -> str:
    """The subject of a DER certificate in Java's ``X500Principal.getName()`` (RFC 2253) form."""
    subject = x509.load_der_x509_certificate(der_certificate).subject
    rdns = []
    for rdn in reversed(list(subject.rdns)):
        parts = []
        for attribute in rdn:
            keyword = _KEYWORDS.get(attribute.oid)
            if keyword is None:
                parts.append(f"{attribute.oid.dotted_string}={_der_value(attribute)}")
            else:
                parts.append(f"{keyword}={_escape(str(attribute.value))}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


class NoMatchingRule(ValueError):
    """No ssl.principal.mapping.rules rule applies to the name (the connection fails)."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(self.replacement, name)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(rf"\s*({_RULE})\s*(?:,\s*|$)")


def _java_replacement(replacement: str, groups: int) -> str:
    """Java's replaceAll replacement ($n, \\x) -> Python's (\\g<n>); a $n past the last group stays literal
    (Kafka's escapeLiteralBackReferences)."""
    out, i = [], 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            digits = replacement[i + 1:j]
            n = int(digits)
            while n > groups and n >= 10:  # Java takes the longest group number that exists
                n //= 10
                j -= 1
            out.append(f"\\g<{n}>" if n <= groups else "$" + str(n))
            i = j
        else:
            out.append(c.replace("\\", "\\\\"))
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    def __init__(self, rules: str | None = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text = (rules if rules is not None else "DEFAULT").strip()
        for m in _SPLITTER.finditer(text):
            rule = m.group(1)
            if not rule:
                continue
            parsed = re.match(_RULE, rule)  # Kafka: lookingAt, and the whole rule must be consumed
            if parsed is None or parsed.end() != len(rule):
                raise ValueError(f"Invalid rule: {rule}")
            if parsed.group(1) is not None:  # DEFAULT
                self.rules.append(_Rule(None))
            elif parsed.group(2) is not None:
                try:
                    pattern = re.compile(parsed.group(2))
                except re.error as exc:
                    raise ValueError(f"Invalid rule: {rule} ({exc})") from None
                self.rules.append(_Rule(pattern, _java_replacement(parsed.group(3), pattern.groups),
                                        parsed.group(4)))
            if m.end() >= len(text):
                break

    def name(self, distinguished: str) -> str:
        for rule in self.rules:
            result = rule.apply(distinguished)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {distinguished}, rules {self.rules}")

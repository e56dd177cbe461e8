"""Kafka's principal: "<type>:<name>", e.g. ``User:alice``; an unauthenticated connection is User:ANONYMOUS."""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "KafkaPrincipal":
        """``User:alice`` -> KafkaPrincipal("User", "alice"); the name may itself contain ':' (Kafka splits once)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"expected a principal as <type>:<name> (e.g. User:alice), got {text!r}")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")

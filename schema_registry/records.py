"""The records of the `_schemas` topic, in Confluent Schema Registry's JSON formats, so a registry of either kind
can read the other's topic.

Keys (``keytype`` says which; ``magic`` 1 for SCHEMA, 0 for the others):
  SCHEMA {"keytype","subject","version","magic"} -> {"subject","version","id","schemaType"?,"references"?,
         "schema","deleted"}; a null value (tombstone) is a permanent delete of that version.
  CONFIG {"keytype","subject" (null: global),"magic"} -> {"compatibilityLevel"}; null: the setting removed.
  MODE   {"keytype","subject" (null: global),"magic"} -> {"mode"}; null: removed.
  DELETE_SUBJECT {"keytype","subject","magic"} -> {"subject","version"}: every version up to ``version`` is
         soft-deleted.
  NOOP   {"keytype","magic"} -> null: written by a new writer to find the end of the topic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP = \
    "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT", "NOOP"
AVRO = "AVRO"


def _dumps(obj: dict[str, Any] | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


@dataclass(frozen=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = AVRO
    references: tuple[tuple[str, str, int], ...] = ()  # (name, subject, version)
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != AVRO:
            value["schemaType"] = self.schema_type
        if self.references:
            value["references"] = references_json(self.references)
        value["schema"] = self.schema
        value["deleted"] = self.deleted
        return value

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> "SchemaValue":
        return cls(value["subject"], int(value["version"]), int(value["id"]), value["schema"],
                   value.get("schemaType") or AVRO, parse_references(value.get("references")),
                   bool(value.get("deleted", False)))


def references_json(references: tuple[tuple[str, str, int], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "subject": s, "version": v} for n, s, v in references]


def parse_references(items: Any) -> tuple[tuple[str, str, int], ...]:
    """The ``references`` list of a request or record; raises ValueError when malformed."""
    if not items:
        return ()
    if not isinstance(items, list):
        raise ValueError("references must be a list")
    try:
        return tuple((str(r["name"]), str(r["subject"]), int(r["version"])) for r in items)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"bad reference: {exc}") from None


@dataclass(frozen=True)
class Record:
    """One `_schemas` record, decoded: ``key`` and ``value`` as JSON objects (``value`` None: tombstone)."""

    key: dict[str, Any]
    value: dict[str, Any] | None = field(default=None)

    @property
    def keytype(self) -> str:
        return self.key.get("keytype", "")

    @property
    def identity(self) -> tuple:
        """What the key names, whatever its bytes: Kafka compacts by exact key bytes, so a later write of the
        same thing must reuse the bytes first read (older registries wrote the fields in another order)."""
        return (self.keytype, self.key.get("subject"), self.key.get("version") if self.keytype == SCHEMA else None)

    def encode(self) -> tuple[bytes, bytes | None]:
        return _dumps(self.key) or b"", _dumps(self.value)

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> "Record | None":
        """None for a record that is not ours to read (no key, not JSON)."""
        if not key:
            return None
        try:
            parsed_key = json.loads(key)
            parsed_value = json.loads(value) if value is not None else None
        except ValueError:
            return None
        return cls(parsed_key, parsed_value) if isinstance(parsed_key, dict) else None


def schema_record(value: SchemaValue) -> Record:
    return Record({"keytype": SCHEMA, "subject": value.subject, "version": value.version, "magic": 1},
                  value.to_json())


def schema_tombstone(subject: str, version: int) -> Record:
    return Record({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1}, None)


def config_record(subject: str | None, level: str | None) -> Record:
    return Record({"keytype": CONFIG, "subject": subject, "magic": 0},
                  None if level is None else {"compatibilityLevel": level})


def mode_record(subject: str | None, mode: str | None) -> Record:
    return Record({"keytype": MODE, "subject": subject, "magic": 0}, None if mode is None else {"mode": mode})


def delete_subject_record(subject: str, version: int) -> Record:
    return Record({"keytype": DELETE_SUBJECT, "subject": subject, "magic": 0},
                  {"subject": subject, "version": version})


def delete_subject_tombstone(subject: str) -> Record:
    return Record({"keytype": DELETE_SUBJECT, "subject": subject, "magic": 0}, None)


def noop_record() -> Record:
    return Record({"keytype": NOOP, "magic": 0}, None)

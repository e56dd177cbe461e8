"""The registry's data as the `_schemas` records build it: every process applies the same records in the same
order, so every process holds the same state; only the writer decides what the next records are."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from .records import CONFIG, DELETE_SUBJECT, MODE, SCHEMA, Record, SchemaValue

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


@dataclass(frozen=True)
class SchemaContent:
    """What an id names: one schema, whatever subjects it is registered under."""

    schema_type: str
    schema: str
    references: tuple[tuple[str, str, int], ...]


class RegistryState:
    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, SchemaValue]] = {}
        self.contents: dict[int, SchemaContent] = {}
        self._ids: dict[SchemaContent, int] = {}  # the same schema keeps its id under every subject
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}

    # -- applying records ------------------------------------------------------------------------------
    def apply(self, record: Record) -> None:
        key, value = record.key, record.value
        kind = record.keytype
        if kind == SCHEMA:
            self._apply_schema(key, value)
        elif kind == CONFIG:
            self._set(self.configs, key.get("subject"), value and value.get("compatibilityLevel"))
        elif kind == MODE:
            self._set(self.modes, key.get("subject"), value and value.get("mode"))
        elif kind == DELETE_SUBJECT and value is not None:
            subject, upto = value["subject"], int(value["version"])
            versions = self.subjects.get(subject, {})
            for number, schema in list(versions.items()):
                if number <= upto:
                    versions[number] = replace(schema, deleted=True)

    @staticmethod
    def _set(table: dict[str | None, str], subject: str | None, setting: str | None) -> None:
        if setting is None:
            table.pop(subject, None)
        else:
            table[subject] = setting

    def _apply_schema(self, key: dict, value: dict | None) -> None:
        subject, version = key["subject"], int(key["version"])
        if value is None:  # permanent delete
            versions = self.subjects.get(subject, {})
            gone = versions.pop(version, None)
            if not versions:
                self.subjects.pop(subject, None)
            if gone is not None and not any(v.id == gone.id for v in self.all_versions()):
                content = self.contents.pop(gone.id, None)
                if content is not None:
                    self._ids.pop(content, None)
            return
        schema = SchemaValue.from_json(value)
        self.subjects.setdefault(subject, {})[version] = schema
        content = SchemaContent(schema.schema_type, schema.schema, schema.references)
        self.contents.setdefault(schema.id, content)
        self._ids.setdefault(content, schema.id)
        self.max_id = max(self.max_id, schema.id)

    # -- reading -----------------------------------------------------------------------------------------
    def all_versions(self) -> Iterator[SchemaValue]:
        for versions in self.subjects.values():
            yield from versions.values()

    def versions(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        """The subject's versions in order; soft-deleted ones only when ``deleted``."""
        found = self.subjects.get(subject, {})
        return [found[n] for n in sorted(found) if deleted or not found[n].deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def latest(self, subject: str, deleted: bool = False) -> SchemaValue | None:
        versions = self.versions(subject, deleted)
        return versions[-1] if versions else None

    def next_version(self, subject: str) -> int:
        return max(self.subjects.get(subject, {0: None}), default=0) + 1  # continues after deleted versions

    def compatibility(self, subject: str | None) -> str:
        return self.configs.get(subject) or self.configs.get(None) or DEFAULT_COMPATIBILITY

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or DEFAULT_MODE

    def id_for(self, content: SchemaContent) -> int | None:
        return self._ids.get(content)

    def versions_with_id(self, schema_id: int, deleted: bool = False) -> list[SchemaValue]:
        return sorted((v for v in self.all_versions() if v.id == schema_id and (deleted or not v.deleted)),
                      key=lambda v: (v.subject, v.version))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas whose references name this subject and version."""
        return sorted({v.id for v in self.all_versions()
                       if not v.deleted and any(s == subject and n == version for _, s, n in v.references)})

"""What each REST call does, on the replicated state: reads answer from ``RegistryState``; writes check the
request against it, then hand the resulting `_schemas` records to ``append`` (the writer's store, which returns
once they are applied). Writes run one at a time (``write_lock``), so an id or version is decided on a state
that already holds every earlier write."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Awaitable, Callable

from . import errors
from .formats import SCHEMA_TYPES, InvalidSchema, ParsedSchema, parse_schema
from .records import (AVRO, Record, SchemaValue, config_record, delete_subject_record, delete_subject_tombstone,
                      mode_record, parse_references, references_json, schema_record, schema_tombstone)
from .state import RegistryState, SchemaContent

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "IMPORT")
_MAX_VERSION = 2**31 - 1

Append = Callable[[list[Record]], Awaitable[None]]


def schema_json(value: SchemaValue | SchemaContent, schema: str | None = None) -> dict[str, Any]:
    """A schema as the API shows it: ``schemaType`` and ``references`` only when not AVRO / not empty."""
    body: dict[str, Any] = {}
    if isinstance(value, SchemaValue):
        body.update(subject=value.subject, version=value.version, id=value.id)
    if value.schema_type != AVRO:
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = references_json(value.references)
    body["schema"] = value.schema if schema is None else schema
    return body


def parse_version(text: str) -> int | None:
    """A version in a path: a number in [1, 2^31-1], or "latest" / -1 (None); else 42202."""
    if text == "latest" or text == "-1":
        return None
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if not 1 <= number <= _MAX_VERSION:
        raise errors.invalid_version(text)
    return number


def _level(body: Any, key: str = "compatibility") -> str:
    level = body.get(key) if isinstance(body, dict) else None
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise errors.invalid_compatibility_level()
    return level.upper()


class SchemaService:
    def __init__(self, state: RegistryState, append: Append) -> None:
        self.state = state
        self.append = append
        self.write_lock = asyncio.Lock()
        self._parsed: OrderedDict[tuple, ParsedSchema] = OrderedDict()  # recent parses, by content

    # -- parsing -------------------------------------------------------------------------------------------
    def _dependencies(self, references: tuple[tuple[str, str, int], ...], seen: frozenset = frozenset()
                      ) -> list[tuple[str, str]]:
        """The referenced schemas, each after its own references (a reference version -1 is the latest)."""
        found: list[tuple[str, str]] = []
        for name, subject, version in references:
            target = (self.state.latest(subject) if version == -1
                      else self.state.subjects.get(subject, {}).get(version))
            if target is None or (subject, target.version) in seen:
                raise errors.invalid_schema(f"reference {name} to subject {subject} version {version} not found")
            found += self._dependencies(target.references, seen | {(subject, target.version)})
            found.append((name, target.schema))
        return found

    def parse(self, schema_type: str, schema: str, references: tuple[tuple[str, str, int], ...]) -> ParsedSchema:
        key = (schema_type, schema, references)
        parsed = self._parsed.get(key)
        if parsed is None:
            try:
                parsed = parse_schema(schema_type, schema, self._dependencies(references))
            except InvalidSchema as exc:
                raise errors.invalid_schema(str(exc)) from None
            self._parsed[key] = parsed
            if len(self._parsed) > 4096:
                self._parsed.popitem(last=False)
        return parsed

    def _stored(self, value: SchemaValue) -> ParsedSchema:
        return self.parse(value.schema_type, value.schema, value.references)

    def _request_schema(self, body: Any) -> tuple[str, ParsedSchema, tuple[tuple[str, str, int], ...]]:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise errors.invalid_schema("the request has no schema")
        schema_type = (body.get("schemaType") or AVRO).upper()
        if schema_type not in SCHEMA_TYPES:
            raise errors.invalid_schema(f"unknown schema type {schema_type}")
        try:
            references = parse_references(body.get("references"))
        except ValueError as exc:
            raise errors.invalid_schema(str(exc)) from None
        return schema_type, self.parse(schema_type, body["schema"], references), references

    # -- subjects and versions -------------------------------------------------------------------------------
    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return [s for s in self.state.subject_names(deleted) if s.startswith(prefix)]

    def _existing(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        versions = self.state.versions(subject, deleted)
        if not versions:
            raise errors.subject_not_found(subject)
        return versions

    def version_numbers(self, subject: str, deleted: bool = False) -> list[int]:
        return [v.version for v in self._existing(subject, deleted)]

    def get_version(self, subject: str, version_text: str, deleted: bool = False) -> SchemaValue:
        number = parse_version(version_text)
        versions = self._existing(subject, deleted)
        if number is None:
            return versions[-1]
        for value in versions:
            if value.version == number:
                return value
        raise errors.version_not_found(number)

    def lookup(self, subject: str, body: Any, deleted: bool = False) -> dict[str, Any]:
        versions = self._existing(subject, True)
        schema_type, parsed, references = self._request_schema(body)
        wanted = SchemaContent(schema_type, parsed.canonical, references)
        for value in reversed(versions):
            if (deleted or not value.deleted) and \
                    SchemaContent(value.schema_type, value.schema, value.references) == wanted:
                return schema_json(value)
        raise errors.schema_not_found()

    def _check_writable(self, subject: str | None) -> None:
        if self.state.mode(subject) == "READONLY":
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    def compatibility_errors(self, subject: str, parsed: ParsedSchema, against: list[SchemaValue],
                             level: str) -> list[str]:
        if level == "NONE" or not against:
            return []
        if not level.endswith("_TRANSITIVE"):
            against = against[-1:]
        found: list[str] = []
        for previous in reversed(against):
            old = self._stored(previous)
            if level.startswith(("BACKWARD", "FULL")):
                found += parsed.reader_errors(old)
            if level.startswith(("FORWARD", "FULL")):
                found += old.reader_errors(parsed)
        return found

    async def register(self, subject: str, body: Any) -> dict[str, Any]:
        async with self.write_lock:
            self._check_writable(subject)
            schema_type, parsed, references = self._request_schema(body)
            content = SchemaContent(schema_type, parsed.canonical, references)
            importing = self.state.mode(subject) == "IMPORT"
            wanted_id, wanted_version = body.get("id"), body.get("version")
            if wanted_id is not None and not importing:
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
            live = self.state.versions(subject)
            for value in live:
                if SchemaContent(value.schema_type, value.schema, value.references) == content:
                    if wanted_id is not None and wanted_id != value.id:
                        raise errors.id_does_not_match(f"Schema already registered with id {value.id} "
                                                       f"instead of input id {wanted_id}")
                    return {"id": value.id}
            if not importing:
                problems = self.compatibility_errors(subject, parsed, live, self.state.compatibility(subject))
                if problems:
                    raise errors.incompatible_schema(subject, problems)
            schema_id = self.state.id_for(content)
            if wanted_id is not None:
                known = self.state.contents.get(int(wanted_id))
                if known is not None and known != content:
                    raise errors.id_does_not_match(f"Schema id {wanted_id} already names another schema")
                schema_id = int(wanted_id)
            elif schema_id is None:
                schema_id = self.state.max_id + 1
            version = int(wanted_version) if importing and wanted_version else self.state.next_version(subject)
            value = SchemaValue(subject, version, schema_id, parsed.canonical, schema_type, references)
            await self.append([schema_record(value)])
            return {"id": schema_id}

    async def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        async with self.write_lock:
            self._check_writable(subject)
            explicit = parse_version(version_text) is not None  # "latest" is the latest live version
            value = self.get_version(subject, version_text, deleted=permanent or explicit)
            if permanent and not value.deleted:
                raise errors.version_not_soft_deleted(subject, value.version)
            if not permanent and value.deleted:
                raise errors.version_soft_deleted(subject, value.version)
            if self.state.referenced_by(subject, value.version):
                raise errors.reference_exists(f"One or more references exist to the schema "
                                              f"{{subject={subject}, version={value.version}}}")
            record = schema_tombstone(subject, value.version) if permanent else \
                schema_record(replace(value, deleted=True))
            await self.append([record])
            return value.version

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        async with self.write_lock:
            self._check_writable(subject)
            every = self.state.versions(subject, deleted=True)
            live = [v for v in every if not v.deleted]
            if not every:
                raise errors.subject_not_found(subject)
            if permanent and live:
                raise errors.subject_not_soft_deleted(subject)
            if not permanent and not live:
                raise errors.subject_soft_deleted(subject)
            for value in live if not permanent else every:
                if self.state.referenced_by(subject, value.version):
                    raise errors.reference_exists(f"One or more references exist to the schema "
                                                  f"{{subject={subject}, version={value.version}}}")
            if permanent:
                records = [schema_tombstone(subject, v.version) for v in every]
                records += [delete_subject_tombstone(subject), config_record(subject, None), mode_record(subject, None)]
                await self.append(records)
                return [v.version for v in every]
            await self.append([delete_subject_record(subject, live[-1].version)])
            return [v.version for v in live]

    def referenced_by(self, subject: str, version_text: str) -> list[int]:
        value = self.get_version(subject, version_text)
        return self.state.referenced_by(subject, value.version)

    # -- schemas by id -------------------------------------------------------------------------------------
    def content(self, schema_id: int) -> SchemaContent:
        content = self.state.contents.get(schema_id)
        if content is None:
            raise errors.schema_not_found(schema_id)
        return content

    def schema_by_id(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        content = self.content(schema_id)
        return schema_json(content, self.formatted(content, fmt))

    def formatted(self, content: SchemaContent, fmt: str | None) -> str:
        if fmt == "serialized" and content.schema_type == "PROTOBUF":
            return self.parse(content.schema_type, content.schema, content.references).serialized()  # type: ignore
        return content.schema

    def subjects_of(self, schema_id: int, deleted: bool = False) -> list[str]:
        self.content(schema_id)
        return sorted({v.subject for v in self.state.versions_with_id(schema_id, deleted)})

    def versions_of(self, schema_id: int, deleted: bool = False) -> list[dict[str, Any]]:
        self.content(schema_id)
        return [{"subject": v.subject, "version": v.version} for v in self.state.versions_with_id(schema_id, deleted)]

    # -- compatibility checks ------------------------------------------------------------------------------
    def check(self, subject: str, version_text: str | None, body: Any, verbose: bool) -> dict[str, Any]:
        number = parse_version(version_text) if version_text is not None else None
        _, parsed, _ = self._request_schema(body)
        live = self.state.versions(subject)
        level = self.state.compatibility(subject)
        if number is not None:
            if not live:
                raise errors.subject_not_found(subject)
            against = [self.get_version(subject, str(number))]
            level = level.replace("_TRANSITIVE", "")
        else:
            against = live if version_text is None or level.endswith("_TRANSITIVE") else live[-1:]
        problems = self.compatibility_errors(subject, parsed, against, level)
        answer: dict[str, Any] = {"is_compatible": not problems}
        if verbose:
            answer["messages"] = problems
        return answer

    # -- config and mode -------------------------------------------------------------------------------------
    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, str]:
        if subject is None or subject in self.state.configs or default_to_global:
            return {"compatibilityLevel": self.state.compatibility(subject)}
        raise errors.subject_compatibility_not_configured(subject)

    async def set_config(self, subject: str | None, body: Any) -> dict[str, str]:
        level = _level(body)
        async with self.write_lock:
            await self.append([config_record(subject, level)])
        return {"compatibility": level}

    async def delete_config(self, subject: str | None) -> dict[str, str]:
        async with self.write_lock:
            if subject is not None and not self.state.versions(subject, deleted=True) \
                    and subject not in self.state.configs:
                raise errors.subject_not_found(subject)
            previous = self.state.compatibility(subject)
            await self.append([config_record(subject, None)])
        return {"compatibilityLevel": previous}

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, str]:
        if subject is None or subject in self.state.modes or default_to_global:
            return {"mode": self.state.mode(subject)}
        raise errors.subject_mode_not_configured(subject)

    async def set_mode(self, subject: str | None, body: Any, force: bool = False) -> dict[str, str]:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode()
        mode = mode.upper()
        async with self.write_lock:
            if mode == "IMPORT" and not force and (self.state.versions(subject) if subject
                                                   else self.state.subject_names()):
                raise errors.operation_not_permitted("Cannot import since found existing subjects")
            await self.append([mode_record(subject, mode)])
        return {"mode": mode}

    async def delete_mode(self, subject: str) -> dict[str, str]:
        async with self.write_lock:
            previous = self.state.mode(subject)
            await self.append([mode_record(subject, None)])
        return {"mode": previous}

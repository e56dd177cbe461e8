"""JSON Schema: checked as a schema by the ``jsonschema`` package (its draft's meta-schema); compatibility is
ours, following the rules Confluent documents for JSON Schema, written as "can a reader schema accept every
document the writer schema accepts":

- types: the reader's set must cover the writer's (``integer`` is within ``number``); no type accepts all;
- objects: a property only the reader has is refused when the writer's content model is open (the writer may
  have sent it with any type) unless the reader's schema for it accepts anything; a property only the writer has
  is fine while the reader's content model is open, and needs the reader's ``additionalProperties`` schema to
  accept it otherwise; a newly required property is refused unless it has a default; closing an open content
  model is refused;
- arrays, strings, numbers: a limit added or tightened (maxItems, minItems, uniqueItems, maxLength, minLength,
  pattern, maximum, minimum, exclusive limits, multipleOf) is refused; ``items`` are compared;
- enums: the reader's values must include the writer's; ``oneOf``/``anyOf``: every writer alternative must be
  read by one of the reader's;
- ``$ref``: local pointers and the references' schemas (by reference name or ``$id``) are followed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from . import Dependencies, InvalidSchema

_ANY: dict[str, Any] = {}
_LOWER_LIMITS = ("minLength", "minItems", "minimum", "exclusiveMinimum", "minProperties")
_UPPER_LIMITS = ("maxLength", "maxItems", "maximum", "exclusiveMaximum", "maxProperties")


@dataclass(frozen=True)
class JsonSchema:
    schema_type = "JSON"
    canonical: str
    root: Any
    external: dict[str, Any] = field(default_factory=dict)  # reference name or $id -> schema

    def reader_errors(self, writer: Any) -> list[str]:
        if not isinstance(writer, JsonSchema):
            return ["Incompatible because of different schema type"]
        errors: list[str] = []
        _Compare(writer, self, errors).compare(writer.root, self.root, "#/", set())
        return errors


class _Compare:
    def __init__(self, writer: JsonSchema, reader: JsonSchema, errors: list[str]) -> None:
        self.writer, self.reader, self.errors = writer, reader, errors

    def fail(self, path: str, what: str) -> None:
        self.errors.append(f"{what} at {path}")

    def compare(self, w: Any, r: Any, path: str, seen: set[tuple[int, int]]) -> None:
        w, r = _resolve(self.writer, w), _resolve(self.reader, r)
        if (id(w), id(r)) in seen:
            return  # a recursive schema: this pair is being compared already
        seen = seen | {(id(w), id(r))}
        if r is True or r == _ANY:
            return
        if r is False:
            if w is not False:
                self.fail(path, "reader accepts nothing")
            return
        if w is True or w == _ANY:
            self.fail(path, "reader is narrower than an unconstrained writer")
            return
        if w is False:
            return
        for combiner in ("oneOf", "anyOf"):
            if combiner in w or combiner in r:
                self._combined(w, r, combiner, path, seen)
                return
        self._types(w, r, path)
        self._limits(w, r, path)
        if "enum" in r and not all(value in r["enum"] for value in w.get("enum", [object()])):
            self.fail(path, "enum narrowed")
        if "const" in r and w.get("const", object()) != r["const"]:
            self.fail(path, "const changed")
        if _has_type(w, "object") or "properties" in w or "properties" in r:
            self._object(w, r, path, seen)
        if "items" in w or "items" in r:
            wi, ri = w.get("items", True), r.get("items", True)
            if isinstance(wi, dict) or isinstance(ri, dict) or isinstance(wi, bool) or isinstance(ri, bool):
                self.compare(wi, ri, path + "items/", seen)

    def _combined(self, w: dict, r: dict, combiner: str, path: str, seen: set) -> None:
        writer_options = w.get(combiner) or w.get("oneOf") or w.get("anyOf") or [w]
        reader_options = r.get(combiner) or r.get("oneOf") or r.get("anyOf") or [r]
        for index, option in enumerate(writer_options):
            if not any(self._reads(option, candidate, seen) for candidate in reader_options):
                self.fail(f"{path}{combiner}/{index}", "writer alternative not read by any reader alternative")

    def _reads(self, w: Any, r: Any, seen: set) -> bool:
        errors: list[str] = []
        _Compare(self.writer, self.reader, errors).compare(w, r, "#/", seen)
        return not errors

    def _types(self, w: dict, r: dict, path: str) -> None:
        if "type" not in r:
            return
        reader_types = set(_types(r))
        if "number" in reader_types:
            reader_types.add("integer")
        writer_types = set(_types(w)) if "type" in w else {"<any>"}
        if not writer_types <= reader_types:
            self.fail(path, f"type narrowed from {sorted(writer_types)} to {sorted(set(_types(r)))}")

    def _limits(self, w: dict, r: dict, path: str) -> None:
        for name in _LOWER_LIMITS:
            if name in r and (name not in w or _number(w[name]) < _number(r[name])):
                self.fail(path, f"{name} added or increased")
        for name in _UPPER_LIMITS:
            if name in r and (name not in w or _number(w[name]) > _number(r[name])):
                self.fail(path, f"{name} added or decreased")
        if r.get("uniqueItems") and not w.get("uniqueItems"):
            self.fail(path, "uniqueItems added")
        for name in ("pattern", "multipleOf", "format"):
            if name in r and w.get(name) != r[name] and not (name == "multipleOf" and name in w
                                                                and w[name] % r[name] == 0):
                self.fail(path, f"{name} added or changed")

    def _object(self, w: dict, r: dict, path: str, seen: set) -> None:
        wp, rp = w.get("properties", {}), r.get("properties", {})
        w_extra, r_extra = w.get("additionalProperties", True), r.get("additionalProperties", True)
        writer_open = w_extra is not False and not w.get("patternProperties")
        for name in sorted(set(wp) | set(rp)):
            where = f"{path}properties/{name}/"
            if name in wp and name in rp:
                self.compare(wp[name], rp[name], where, seen)
            elif name in rp:  # added in the reader
                if writer_open:
                    self.compare(w_extra, rp[name], where, seen)
            elif r_extra is False:  # removed by a closed reader
                self.fail(where, "property removed from a closed content model")
            else:
                self.compare(wp[name], r_extra, where, seen)
        if r_extra is not True and w_extra is True:
            self.fail(path, "additionalProperties narrowed")
        elif isinstance(w_extra, dict) and isinstance(r_extra, dict):
            self.compare(w_extra, r_extra, path + "additionalProperties/", seen)
        for name in set(r.get("required", [])) - set(w.get("required", [])):
            if "default" not in _resolve(self.reader, rp.get(name, {})):
                self.fail(f"{path}required/{name}", "required property added")


def _types(schema: dict) -> list[str]:
    declared = schema.get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def _has_type(schema: Any, name: str) -> bool:
    return isinstance(schema, dict) and name in _types(schema)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _resolve(owner: JsonSchema, schema: Any, depth: int = 0) -> Any:
    """Follow ``$ref`` (a local JSON pointer, or a reference's name or ``$id`` with an optional pointer)."""
    while isinstance(schema, dict) and "$ref" in schema and depth < 64:
        target, _, pointer = schema["$ref"].partition("#")
        base = owner.external.get(target) if target else owner.root
        if base is None:
            return schema
        schema = base
        for part in filter(None, pointer.split("/")):
            schema = schema.get(part.replace("~1", "/").replace("~0", "~"), _ANY) if isinstance(schema, dict) \
                else _ANY
        depth += 1
    return schema


def parse(schema: str, dependencies: Dependencies = ()) -> JsonSchema:
    external: dict[str, Any] = {}
    try:
        for name, text in dependencies:
            loaded = json.loads(text)
            external[name] = loaded
            if isinstance(loaded, dict) and isinstance(loaded.get("$id"), str):
                external[loaded["$id"]] = loaded
        root = json.loads(schema)
        if not isinstance(root, (dict, bool)):
            raise InvalidSchema("a JSON schema is an object or a boolean")
        jsonschema.validators.validator_for(root, default=jsonschema.Draft7Validator).check_schema(root)
    except (ValueError, jsonschema.exceptions.SchemaError) as exc:
        raise InvalidSchema(str(exc).splitlines()[0]) from None
    return JsonSchema(json.dumps(root, separators=(",", ":")), root, external)

"""Avro: parsed by the Apache ``avro`` package, whose ReaderWriterCompatibilityChecker implements the
specification's schema resolution (promotions, defaults, unions, enums, aliases by full name)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from . import Dependencies, InvalidSchema


@dataclass(frozen=True)
class AvroSchema:
    schema_type = "AVRO"
    canonical: str
    parsed: avro.schema.Schema

    def reader_errors(self, writer: Any) -> list[str]:
        if not isinstance(writer, AvroSchema):
            return ["Incompatible because of different schema type"]
        result = ReaderWriterCompatibilityChecker().get_compatibility(self.parsed, writer.parsed)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = sorted(str(k.name) for k in result.incompatibilities)
        return [f"{', '.join(kinds)}: {', '.join(sorted(map(str, result.messages)))} at "
                f"{', '.join(sorted(result.locations))}"]


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()  # a bare primitive name such as string


def parse(schema: str, dependencies: Dependencies = ()) -> AvroSchema:
    names = avro.name.Names()
    try:
        for _, text in dependencies:  # named types defined by the references, then used by name
            avro.schema.make_avsc_object(_load(text), names)
        data = _load(schema)
        parsed = avro.schema.make_avsc_object(data, names)
    except (avro.errors.AvroException, TypeError, KeyError, AttributeError, ValueError) as exc:
        raise InvalidSchema(str(exc)) from None
    return AvroSchema(json.dumps(data, separators=(",", ":")), parsed)

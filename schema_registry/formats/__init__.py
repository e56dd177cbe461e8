"""The schema formats: each parses a schema (with the schemas it references) and says whether a reader schema
reads what a writer schema wrote, by that format's rules as Confluent's registry applies them."""

from __future__ import annotations

from typing import Protocol, Sequence


class InvalidSchema(ValueError):
    """The schema text is not a valid schema of its type (answered 42201)."""


class ParsedSchema(Protocol):
    schema_type: str
    canonical: str  # the form stored and compared: the same schema written twice has one id

    def reader_errors(self, writer: "ParsedSchema") -> list[str]:
        """Why data written with ``writer`` cannot be read with this schema; empty when it can."""


# (reference name, schema text) in dependency order: a schema's own references come before it
Dependencies = Sequence[tuple[str, str]]

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


def parse_schema(schema_type: str, schema: str, dependencies: Dependencies = ()) -> ParsedSchema:
    if schema_type == "AVRO":
        from .avro_format import parse
    elif schema_type == "JSON":
        from .json_format import parse
    elif schema_type == "PROTOBUF":
        from .protobuf_format import parse
    else:
        raise InvalidSchema(f"unknown schema type {schema_type}")
    return parse(schema, dependencies)

"""Confluent Schema Registry's error answers: HTTP status, ``error_code`` and message, as its REST API sends them."""

from __future__ import annotations

from typing import Any


class RestError(Exception):
    """An error answer: ``{"error_code": code, "message": message}`` with HTTP ``status``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RestError:
    return RestError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: Any) -> RestError:
    return RestError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RestError:
    return RestError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RestError:
    return RestError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RestError:
    return RestError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(404, 40406,
                     f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(404, 40407,
                     f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted")


def subject_compatibility_not_configured(subject: str) -> RestError:
    return RestError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_configured(subject: str) -> RestError:
    return RestError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible_schema(subject: str, messages: list[str]) -> RestError:
    return RestError(409, 409, f"Schema being registered is incompatible with an earlier schema for subject "
                               f"\"{subject}\", details: [{', '.join(messages)}]")


def invalid_schema(detail: str) -> RestError:
    return RestError(422, 42201, f"Invalid schema: {detail}")


def invalid_version(version: str) -> RestError:
    return RestError(422, 42202, f"The specified version '{version}' is not a valid version id. "
                                 "Allowed values are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility_level() -> RestError:
    return RestError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                 "backward_transitive, forward_transitive, and full_transitive")


def invalid_mode() -> RestError:
    return RestError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, and IMPORT.")


def operation_not_permitted(message: str) -> RestError:
    return RestError(422, 42205, message)


def reference_exists(message: str) -> RestError:
    return RestError(422, 42206, message)


def id_does_not_match(message: str) -> RestError:
    return RestError(422, 42207, message)


def unprocessable(message: str) -> RestError:
    """A request body that is not the JSON the endpoint takes (Confluent answers 422 with code 422)."""
    return RestError(422, 422, message)


def store_error(message: str) -> RestError:
    return RestError(500, 50001, f"Error while storing: {message}")


def operation_timeout(message: str) -> RestError:
    return RestError(500, 50002, message)


def forwarding_failed(message: str) -> RestError:
    return RestError(500, 50003, f"Error while forwarding the request to the writer: {message}")


def unknown_writer() -> RestError:
    return RestError(500, 50004, "Unknown leader: no registry process is the writer yet")


def not_found() -> RestError:
    return RestError(404, 404, "HTTP 404 Not Found")

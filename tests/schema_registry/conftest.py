"""A schema registry process on the module's single-broker cluster, and a small HTTP helper for its API."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from odradek.tools.local_schema_registry import LocalSchemaRegistry

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def start_registry(bootstrap: str, log_path, *extra_args: str) -> LocalSchemaRegistry:
    return LocalSchemaRegistry(bootstrap, log_path, extra_args=["--session-timeout-ms", "6000", *extra_args]).start()


@pytest.fixture(scope="module")
def registry(single_broker_cluster, tmp_path_factory):
    process = start_registry(single_broker_cluster.bootstrap_servers,
                             tmp_path_factory.mktemp("schema-registry") / "registry.log")
    try:
        yield process
    finally:
        process.stop()


def call(url: str, method: str = "GET", body: Any = None, auth: str | None = None) -> tuple[int, Any, str]:
    """(HTTP status, decoded JSON body, content type) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": CONTENT_TYPE})
    if auth is not None:
        import base64
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            status, text, kind = answer.status, answer.read().decode(), answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        status, text, kind = error.code, error.read().decode(), error.headers.get("Content-Type", "")
    try:
        return status, json.loads(text), kind
    except ValueError:
        return status, text, kind

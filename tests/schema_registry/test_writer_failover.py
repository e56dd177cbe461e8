"""Two registry processes on one `_schemas` topic: writes through either, the writer killed between writes, ids
still unique and nothing lost; a registry started later rebuilds everything from the topic; basic auth."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import call, start_registry


def schema(n: int) -> dict:
    return {"schema": json.dumps({"type": "record", "name": f"R{n}", "fields": [{"name": "f", "type": "int"}]},
                                 separators=(",", ":"))}


def register(url: str, subject: str, body: dict, timeout: float = 90.0) -> int:
    """Register, retrying while the writer is being replaced (5xx answers); a retried write that had landed
    gets its id back, since registering the same schema again is idempotent."""
    deadline = time.monotonic() + timeout
    while True:
        status, answer, _ = call(f"{url}/subjects/{subject}/versions", "POST", body)
        if status == 200:
            return answer["id"]
        assert status >= 500 and time.monotonic() < deadline, (status, answer)


@pytest.fixture(scope="module")
def pair(single_broker_cluster, tmp_path_factory):
    logs = tmp_path_factory.mktemp("registries")
    started = [start_registry(single_broker_cluster.bootstrap_servers, logs / f"registry-{i}.log") for i in range(2)]
    try:
        yield started
    finally:
        for process in started:
            process.stop()


def writer_of(processes) -> object:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for process in processes:
            if call(f"{process.url}/odradek/writer")[1]["is_writer"]:
                return process
    raise AssertionError("no registry became the writer")


def test_writes_through_either_survive_the_writer_being_killed(pair, single_broker_cluster, tmp_path):
    ids = {}
    for n in range(6):  # alternate: one process writes, the other forwards to it
        ids[f"fo-{n}"] = register(pair[n % 2].url, f"fo-{n}", schema(n))
    writer = writer_of(pair)
    survivor = pair[1] if writer is pair[0] else pair[0]
    writer.kill()
    for n in range(6, 12):
        ids[f"fo-{n}"] = register(survivor.url, f"fo-{n}", schema(n))
    assert call(f"{survivor.url}/odradek/writer")[1]["is_writer"]
    assert len(set(ids.values())) == len(ids), f"an id was handed out twice: {ids}"
    assert sorted(call(f"{survivor.url}/subjects")[1]) == sorted(ids)
    for subject, schema_id in ids.items():
        assert call(f"{survivor.url}/subjects/{subject}/versions/1")[1]["id"] == schema_id

    # a registry started now reads the whole history from _schemas
    late = start_registry(single_broker_cluster.bootstrap_servers, tmp_path / "late.log")
    try:
        assert sorted(call(f"{late.url}/subjects")[1]) == sorted(ids)
        for subject, schema_id in ids.items():
            assert call(f"{late.url}/subjects/{subject}/versions/latest")[1]["id"] == schema_id
        survivor.stop()  # the late one becomes the writer; its first id follows every earlier one
        fresh = register(late.url, "fo-after", schema(99))
        assert fresh > max(ids.values())
    finally:
        late.stop()


def test_basic_auth(single_broker_cluster, tmp_path):
    guarded = start_registry(single_broker_cluster.bootstrap_servers, tmp_path / "auth.log",
                             "--basic-auth", "admin:s3cret")
    try:
        status, body, _ = call(f"{guarded.url}/subjects")
        assert (status, body["error_code"]) == (401, 401)
        assert call(f"{guarded.url}/subjects", auth="admin:wrong")[0] == 401
        assert call(f"{guarded.url}/subjects", auth="admin:s3cret")[0] == 200
    finally:
        guarded.stop()

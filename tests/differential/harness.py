"""The machinery of the differential tests: one ``Side`` per broker (Kafka 2.8.2, Odradek) that sends requests
built from plain dicts and records each decoded response in Kafka's JSON form, and the comparison of two such
records field by field, minus what legitimately differs between two clusters.

A scenario is ``async def scenario(side: Side)``: it sends requests with ``side.call(label, api_key, version,
{...})``; the same scenario runs against both brokers, and the two transcripts must match.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from odradek.clients.connection import BrokerConnection
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
from odradek.protocol.json_form import message_json
from odradek.protocol.messages import REQUESTS
from odradek.protocol.records.batch import decode_batch, iter_batches

ACCEPTED_FILE = Path(__file__).resolve().parent / "ACCEPTED.md"

# Fields whose values depend on the cluster, not on behaviour: ids made at random, addresses, clocks.
CLUSTER_FIELDS = frozenset({
    "throttleTimeMs", "clusterId", "topicId", "host", "port", "sessionId", "logDir",
})
MAGIC_OFFSET = 16  # of a batch (or a legacy message): base offset, length, leader epoch or crc, then magic
# The fields that name an element of an array, in the order they sort it.
IDENTITY_FIELDS = ("resourceType", "resourceName", "name", "topic", "topicName", "partitionIndex", "partition",
                   "index", "partitionId", "nodeId", "brokerId", "producerId", "apiKey", "groupId", "memberId", "groupInstanceId", "key",
                   "entityType", "entityName", "user", "mechanism", "principal", "operation")
# Human-readable texts: compared for presence (null, empty or some text), not wording (see ACCEPTED.md).
TEXT_FIELDS = frozenset({"errorMessage", "documentation"})
# Record timestamps that a broker took from its clock (a transaction marker's, found by ListOffsets, the last
# one of a producer in DescribeProducers): the scenarios' own records carry fixed timestamps (scenarios_data.TS),
# years before any test runs.
CLOCK_FIELDS = frozenset({"timestamp", "lastTimestamp"})
CLOCK_WINDOW_MS = 86_400_000
UUID_IN_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def build(api_key: int, spec: dict[str, Any]) -> Any:
    """A request of ``api_key`` from a plain dict (nested structs as dicts, arrays of structs as lists)."""
    message = REQUESTS[api_key]
    return _build(message.cls, message.fields, spec)


def _build(cls: type, fields: Iterable[Any], spec: dict[str, Any]) -> Any:
    by_name = {f.name: f for f in fields}
    kwargs = {}
    for name, value in spec.items():
        f = by_name[name]  # KeyError: a typo in a scenario
        if f.cls is not None and value is not None:
            value = [_build(f.cls, f.fields, item) for item in value] if f.is_array else _build(f.cls, f.fields, value)
        kwargs[name] = value
    return cls(**kwargs)


@dataclass
class Entry:
    label: str
    api_key: int
    version: int
    answer: Any  # the response in JSON form, or a string naming what happened instead ("<closed>", ...)
    seconds: float = 0.0


@dataclass
class Side:
    """One broker under test, reached at ``host:port``; ``transcript`` collects every answer."""
    name: str
    host: str
    port: int
    transcript: list[Entry] = field(default_factory=list)
    connections: list[BrokerConnection] = field(default_factory=list)
    _conn: BrokerConnection | None = None

    async def connection(self, fresh: bool = False) -> BrokerConnection:
        if fresh or self._conn is None or self._conn.closed:
            self._conn = await BrokerConnection.connect(self.host, self.port, client_id="differential")
            self.connections.append(self._conn)
        return self._conn

    async def call(self, label: str, api_key: int, version: int, spec: dict[str, Any] | Any, *,
                   timeout: float = 30.0, record: bool = True) -> Any:
        """Send one request; record its answer in the transcript; return the decoded response (None when the
        connection closed or no answer came)."""
        request = build(api_key, spec) if isinstance(spec, dict) else spec
        conn = await self.connection()
        started = time.monotonic()
        try:
            response = await conn.send(request, version=version, timeout=timeout)
        except (ConnectionError, TimeoutError) as exc:
            response, answer = None, f"<{type(exc).__name__}>"
        else:
            answer = None if response is None else message_json(response, version)
            if response is not None and api_key == 1:
                answer = _with_fetched_records(response, answer)
        if record:
            self.transcript.append(Entry(label, api_key, version, answer, time.monotonic() - started))
        return response

    async def close(self) -> None:
        for conn in self.connections:
            await conn.close()


def _with_fetched_records(response: Any, answer: dict[str, Any]) -> dict[str, Any]:
    """Fetch answers carry record batches: compare what they hold (offsets, keys, values, control flags)."""
    for topic, topic_json in zip(response.responses, answer.get("responses", [])):
        for partition, partition_json in zip(topic.partitions, topic_json["partitions"]):
            partition_json.pop("recordsSizeInBytes", None)
            records = partition.records
            partition_json["fetched"] = _batches(bytes(records)) if records else []
    return answer


def _batches(data: bytes) -> Any:
    """v2 batches decoded (header facts and records); a legacy (v0/v1, down-converted) message set as bytes."""
    if len(data) > MAGIC_OFFSET and data[MAGIC_OFFSET] != 2:
        return {"legacy": data.hex()}
    return [{"base": batch.base_offset, "control": batch.is_control, "txn": batch.is_transactional,
             "epoch": batch.producer_epoch, "records": [[r.offset, r.timestamp, r.key, r.value, r.headers]
                                                        for r in decode_batch(batch)]}
            for batch in iter_batches(data)]


# ------------------------------------------------------------------------------------------------------------
# Comparison

def normalise(value: Any) -> Any:
    """Blank what differs between two clusters by nature (CLUSTER_FIELDS, uuids inside strings) and put
    arrays of structs in one order: Kafka answers from hash maps, so their order means nothing."""
    if isinstance(value, dict):
        return {k: ("<cluster>" if k in CLUSTER_FIELDS else "<text>" if k in TEXT_FIELDS and v else
                    "<clock>" if k in CLOCK_FIELDS and _from_a_clock(v) else normalise(v))
                for k, v in value.items()}
    if isinstance(value, list):
        items = [normalise(v) for v in value]
        if items and all(isinstance(v, dict) for v in items):
            items.sort(key=_identity)
        return items
    if isinstance(value, str):
        return UUID_IN_TEXT.sub("<uuid>", value)
    return value


def _from_a_clock(value: Any) -> bool:
    return isinstance(value, int) and abs(value - time.time() * 1000) < CLOCK_WINDOW_MS


def _identity(item: dict[str, Any]) -> str:
    """What names an element of an array (a topic, a partition, a resource, ...), for sorting."""
    return json.dumps([item.get(k) for k in IDENTITY_FIELDS], default=repr)


def differences(kafka: Any, odradek: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, Kafka's value, ours) for every leaf where the two answers differ."""
    if isinstance(kafka, dict) and isinstance(odradek, dict):
        out = []
        for k in list(kafka) + [k for k in odradek if k not in kafka]:
            out += differences(kafka.get(k, "<absent>"), odradek.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(kafka, list) and isinstance(odradek, list) and len(kafka) == len(odradek):
        out = []
        for i, (a, b) in enumerate(zip(kafka, odradek)):
            named = next((a[k] for k in ("name", "topic", "groupId", "resourceName") if isinstance(a, dict)
                          and isinstance(a.get(k), str)), None)
            out += differences(a, b, f"{path}[{i}]" if named is None else f"{path}[{i}:{named}]")
        return out
    return [] if kafka == odradek else [(path or ".", kafka, odradek)]


@dataclass(frozen=True)
class Accepted:
    api: str          # the request name (ProduceRequest ...) or *
    path: re.Pattern  # matched against "<label> <path>"
    reason: str


def load_accepted(path: Path = ACCEPTED_FILE) -> list[Accepted]:
    """The table rows of ACCEPTED.md: | api | label and field (a regex) | reason |."""
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not line.startswith("|") or cells[0] in ("api", "") or set(cells[0]) <= {"-", ":"}:
            continue
        rows.append(Accepted(cells[0], re.compile(cells[1].strip("`")), cells[2]))
    return rows


def compare(kafka: list[Entry], odradek: list[Entry], accepted: list[Accepted]) -> list[str]:
    """One line per unexplained difference between two transcripts of the same scenario."""
    problems = []
    if [(e.label, e.api_key, e.version) for e in kafka] != [(e.label, e.api_key, e.version) for e in odradek]:
        return [f"the scenario took different paths: {[e.label for e in kafka]} vs {[e.label for e in odradek]}"]
    for a, b in zip(kafka, odradek):
        api = REQUESTS[a.api_key].name
        for where, theirs, ours in differences(normalise(a.answer), normalise(b.answer)):
            subject = f"{a.label} {where}"
            if any(x.api in (api, "*") and x.path.search(subject) for x in accepted):
                continue
            problems.append(f"{api} v{a.version} [{subject}]: Kafka {theirs!r}, Odradek {ours!r}")
    return problems


Scenario = Callable[[Side], Awaitable[None]]


async def run_both(scenario: Scenario, kafka: Side, odradek: Side) -> None:
    """The scenario against both brokers at once (they are independent clusters)."""
    try:
        await asyncio.gather(scenario(kafka), scenario(odradek))
    finally:
        await kafka.close()
        await odradek.close()


def versions(api_key: int) -> range:
    """Every version of ``api_key`` we advertise."""
    low, high = KAFKA_2_8_VERSIONS[api_key]
    return range(low, high + 1)


"""The protocol fuzzer: mutated requests against a real broker, and the invariants it must keep.

``Fuzzer.run(seconds)`` sends frames derived from (seed, index) over a few connections at once, each
frame a mutation of a valid request (``corpus.py``, ``mutations.py``) of an api and version the broker
advertises. Meanwhile a well-behaved client (``Bystander``) produces with acks=-1 and fetches back on
a topic of its own. After every round it checks that:
- the broker process is alive and answers ApiVersions on a new connection;
- no traceback reached the broker's log (every exception is handled where it belongs);
- every response it got decodes as the response of the request's api and version, with its
  correlation id;
- the broker's RSS stays within a bound of its size after warming up;
and, at the end, that the bystander saw no error and every record it wrote is there, in order.

A traceback is pinned on a frame by replaying the round's frames one at a time, then the frame is
minimised (bytes cut from the end, then bytes zeroed, while the same traceback comes back). Findings
carry the seed, the frame's index and its bytes in hex, ready for ``regressions.py``.

Frames that would be legitimate orders rather than bad input are not sent (``admissible``): controller
requests with a current controller epoch, a controlled shutdown or AlterIsr of the live broker, anything naming the
bystander's topic, broker-wide config changes, and more than a small budget of topic creations (Kafka
would obey all of these; they need authorization, not validation).
"""

from __future__ import annotations

import asyncio
import random
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import decode_request, decode_response, encode_request
from odradek.protocol.messages import REQUESTS, ApiVersionsRequest
from odradek.protocol.schema import Struct

from . import mutations
from .corpus import Context, examples

TRACEBACK = "Traceback (most recent call last)"
_CONTROLLER_APIS = (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA)
_NAME_FIELDS = {"topic", "name", "topic_name", "resource_name", "topics", "topic_names", "key"}
_CREATES = (ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS)


@dataclass
class Finding:
    kind: str  # traceback | bad-response | broker-down | rss | bystander
    detail: str
    index: int | None = None
    api_key: int | None = None
    version: int | None = None
    frame: bytes | None = None

    def describe(self, seed: int) -> str:
        where = "" if self.index is None else \
            f" (seed {seed}, frame {self.index}, api {self.api_key} v{self.version}, frame hex {self.frame.hex()})"
        return f"[{self.kind}]{where}\n{self.detail}"


@dataclass
class Stats:
    sent: int = 0
    skipped: int = 0
    answered: int = 0
    closed: int = 0
    timed_out: int = 0
    per_api: dict[int, int] = field(default_factory=dict)
    rss_start_kib: int = 0
    rss_max_kib: int = 0


class BrokerUnderTest:
    """The broker process: its port, pid and log file."""

    def __init__(self, port: int, pid: int, log_path: Path) -> None:
        self.port = port
        self.pid = pid
        self.log_path = log_path
        self._log_offset = log_path.stat().st_size

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists()

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def new_log(self) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(self._log_offset)
            data = f.read()
        self._log_offset += len(data)
        return data.decode("utf-8", "replace")

    async def answers_api_versions(self, timeout: float = 10.0) -> bool:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), timeout)
        except (OSError, asyncio.TimeoutError):
            return False
        try:
            writer.write(encode_request(ApiVersionsRequest(), 0, 1, "fuzz-check"))
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), timeout))[0]
            _, body = decode_response(await asyncio.wait_for(reader.readexactly(size), timeout), 18, 0)
            return body.error_code == 0
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            return False
        finally:
            writer.close()


def signature(log_text: str) -> str:
    """Where the last traceback in ``log_text`` was raised, and what: "file:line in fn: ErrorType"."""
    tail = log_text[log_text.rfind(TRACEBACK):]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tail)
    error = ""
    for line in tail.splitlines()[1:]:
        if line and not line.startswith((" ", "\t")):
            error = line.split(":", 1)[0]
            break
    if not frames:
        return error or "unknown"
    path, line, fn = frames[-1]
    return f"{Path(path).name}:{line} in {fn}: {error}"


class Bystander:
    """A well-behaved client: produce one record (acks=-1) then read it back, over and over."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.produced = 0
        self.errors: list[str] = []

    async def run(self, stop: asyncio.Event) -> None:
        async with SimpleClient(self.bootstrap, retries=0, request_timeout=30.0) as client:
            while not stop.is_set():
                try:
                    await self._round(client)
                except Exception as exc:  # noqa: BLE001 - any failure is a finding
                    self.errors.append(f"{time.strftime('%H:%M:%S')} {type(exc).__name__}: {exc}")
                    return

    async def _round(self, client: SimpleClient) -> None:
        value = b"%d" % self.produced
        result = await client.produce(self.topic, 0, [(None, value)], acks=-1)
        if result.error_code or result.base_offset != self.produced:
            raise AssertionError(f"produce of record {self.produced} answered {result}")
        fetched = await client.fetch(self.topic, 0, self.produced, max_wait_ms=100)
        if fetched.error_code or [r.value for r in fetched.records][:1] != [value]:
            raise AssertionError(f"fetch of record {self.produced} answered {fetched}")
        self.produced += 1

    async def verify(self) -> None:
        async with SimpleClient(self.bootstrap, retries=0) as client:
            values: list[bytes] = []
            while len(values) < self.produced:
                fetched = await client.fetch(self.topic, 0, len(values))
                if fetched.error_code or not fetched.records:
                    raise AssertionError(f"reading back at {len(values)}: {fetched}")
                values += [r.value for r in fetched.records]
            expected = [b"%d" % i for i in range(self.produced)]
            if values != expected:
                raise AssertionError(f"the log holds {len(values)} records, not the {self.produced} written in "
                                     "order")


class Fuzzer:
    def __init__(self, broker: BrokerUnderTest, seed: int, ctx: Context, protected: set[str],
                 versions: dict[int, tuple[int, int]], live_broker_ids: set[int], *, workers: int = 6,
                 reply_timeout: float = 0.3, rss_bound_kib: int = 256 * 1024, creation_budget: int = 25) -> None:
        self.broker = broker
        self.seed = seed
        self.protected = protected
        self.versions = versions
        self.live_broker_ids = live_broker_ids
        self.workers = workers
        self.reply_timeout = reply_timeout
        self.rss_bound_kib = rss_bound_kib
        self.creation_budget = creation_budget
        self.seeds = examples(ctx, versions)
        self.fuzz_topic = ctx.topic
        self.stats = Stats()
        self.findings: list[Finding] = []
        self._signatures: set[str] = set()
        self._next = 0
        self._round: list[tuple[int, int, int, bytes]] = []

    # -- frames ----------------------------------------------------------------------------------

    def frame(self, index: int) -> tuple[int, int, bytes]:
        """(api key, version, framed bytes) of frame ``index``: the same for the same seed, always."""
        rng = random.Random(f"{self.seed}/{index}")
        api_key, version, request = rng.choice(self.seeds)
        correlation_id = index & 0x7FFFFFFF
        choice = rng.random()
        if choice < 0.45:
            built = mutations.mutate_structure(rng, REQUESTS[api_key], request, version, correlation_id)
            if built is not None:
                return api_key, version, built
        valid = encode_request(request, version, correlation_id, "odradek-fuzz")[4:]
        if choice > 0.92:
            return api_key, version, mutations.other_version(rng, valid, self.versions[api_key])
        return api_key, version, mutations.mutate_bytes(rng, valid)

    def admissible(self, framed: bytes) -> bool:
        """False for frames that decode into a legitimate order (see the module doc)."""
        try:
            header, body = decode_request(memoryview(framed)[4:])
        except Exception:  # noqa: BLE001 - the broker cannot decode it either: bad input, send it
            return True
        key = header.api_key
        if self.protected & set(_names(body)):
            return False
        if key in _CONTROLLER_APIS:
            return body.controller_epoch <= 0
        if key in (ApiKey.CONTROLLED_SHUTDOWN, ApiKey.ALTER_ISR):
            return body.broker_id not in self.live_broker_ids
        if key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
            return all(r.resource_type == 2 for r in body.resources)
        if key == ApiKey.ALTER_CLIENT_QUOTAS:
            return body.validate_only  # a quota on everyone (the default entity) would throttle the bystander
        if key == ApiKey.DELETE_TOPICS:
            return self.fuzz_topic not in _names(body)  # the other frames need it
        creates = (key in _CREATES and not body.validate_only) or \
            (key == ApiKey.METADATA and body.allow_auto_topic_creation and body.topics)
        if key == ApiKey.CREATE_TOPICS and creates:
            if sum(max(t.num_partitions, 1) for t in body.topics) > 8 or \
                    any(len(t.assignments) > 8 for t in body.topics):
                return False
        if key == ApiKey.CREATE_PARTITIONS and creates:
            if any(t.count > 8 for t in body.topics):
                return False
        if creates:
            if self.creation_budget <= 0:
                return False
            self.creation_budget -= 1
        return True

    # -- sending ---------------------------------------------------------------------------------

    async def _send(self, framed: bytes, conn: list[Any]) -> None:
        """Send on the worker's connection (opened on demand); read the answer, the close, or time out."""
        if conn[0] is None:
            conn[0] = await asyncio.open_connection("127.0.0.1", self.broker.port)
        reader, writer = conn[0]
        expected = _expected_response(framed)
        try:
            writer.write(framed)
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), self.reply_timeout))[0]
            data = await asyncio.wait_for(reader.readexactly(size), 5.0)
        except asyncio.TimeoutError:
            self.stats.timed_out += 1
            self._drop(conn)
            return
        except (OSError, asyncio.IncompleteReadError):
            self.stats.closed += 1
            self._drop(conn)
            return
        self.stats.answered += 1
        problem = _check_response(data, expected)
        if problem:
            self._record(Finding("bad-response", problem), problem)

    @staticmethod
    def _drop(conn: list[Any]) -> None:
        if conn[0] is not None:
            conn[0][1].close()
            conn[0] = None

    async def _worker(self, deadline: float) -> None:
        conn: list[Any] = [None]
        try:
            while time.monotonic() < deadline and not self._paused.is_set():
                index = self._next
                self._next += 1
                api_key, version, framed = self.frame(index)
                if not self.admissible(framed):
                    self.stats.skipped += 1
                    continue
                self.stats.sent += 1
                self.stats.per_api[api_key] = self.stats.per_api.get(api_key, 0) + 1
                self._round.append((index, api_key, version, framed))
                await self._send(framed, conn)
        finally:
            self._drop(conn)

    async def run(self, seconds: float, round_seconds: float = 1.0, warm_up_rounds: int = 3) -> None:
        deadline = time.monotonic() + seconds
        self._paused = asyncio.Event()
        rounds = 0
        while time.monotonic() < deadline:
            self._round = []
            round_end = min(deadline, time.monotonic() + round_seconds)
            await asyncio.gather(*(self._worker(round_end) for _ in range(self.workers)))
            rounds += 1
            if rounds == warm_up_rounds:
                self.stats.rss_start_kib = self.broker.rss_kib()
            if not await self._check_round():
                return

    async def _check_round(self) -> bool:
        """The invariants after a round; False when the broker is gone (nothing more to learn)."""
        if not self.broker.alive() or not await self.broker.answers_api_versions():
            self._record(Finding("broker-down", "the broker died or stopped answering; last frames: " +
                                 ", ".join(str(i) for i, *_ in self._round[-10:])), "down")
            return False
        rss = self.broker.rss_kib()
        self.stats.rss_max_kib = max(self.stats.rss_max_kib, rss)
        if self.stats.rss_start_kib and rss - self.stats.rss_start_kib > self.rss_bound_kib:
            largest = sorted(self._round, key=lambda sent: -len(sent[3]))[:3]
            self._record(Finding("rss", f"RSS grew from {self.stats.rss_start_kib} KiB to {rss} KiB; the largest "
                                 "frames of the round (index, api, version, bytes): " +
                                 ", ".join(f"({i}, {a}, {v}, {len(f)})" for i, a, v, f in largest)), "rss")
        text = self.broker.new_log()
        if TRACEBACK in text:
            await self._pin_tracebacks(text)
        return True

    # -- attribution and minimisation ------------------------------------------------------------

    async def _replay(self, framed: bytes) -> str:
        """Send one frame on a new connection, wait for its answer or the close, return the new log."""
        self.broker.new_log()
        conn: list[Any] = [None]
        try:
            await self._send(framed, conn)
        finally:
            self._drop(conn)
        await asyncio.sleep(0.05)  # an exception in a task the request started may log a little later
        return self.broker.new_log()

    async def _pin_tracebacks(self, text: str) -> None:
        wanted = signature(text)
        if wanted in self._signatures:
            return
        for index, api_key, version, framed in list(self._round):
            log = await self._replay(framed)
            if TRACEBACK in log and signature(log) == wanted:
                minimal = await self._minimise(framed, wanted)
                self._record(Finding("traceback", _last_traceback(log), index, api_key, version, minimal),
                             wanted)
                return
        self._record(Finding("traceback", "(no single frame of the round reproduces it)\n" +
                             _last_traceback(text)), wanted)

    async def _minimise(self, framed: bytes, wanted: str, budget_s: float = 20.0) -> bytes:
        """Remove runs of bytes (halving their length), then zero single bytes, while it still fails."""
        deadline = time.monotonic() + budget_s
        body = framed[4:]

        async def reproduces(candidate: bytes) -> bool:
            log = await self._replay(mutations.frame(candidate))
            return TRACEBACK in log and signature(log) == wanted

        run = len(body) // 2
        while run and time.monotonic() < deadline:
            at = 8  # keep api key, version and correlation id
            while at + run <= len(body) and time.monotonic() < deadline:
                if await reproduces(body[:at] + body[at + run:]):
                    body = body[:at] + body[at + run:]
                else:
                    at += run
            run //= 2
        for i in range(8, len(body)):
            if time.monotonic() > deadline:
                break
            if body[i] and await reproduces(body[:i] + b"\0" + body[i + 1:]):
                body = body[:i] + b"\0" + body[i + 1:]
        return mutations.frame(body)

    def _record(self, finding: Finding, key: str) -> None:
        if key in self._signatures:
            return
        self._signatures.add(key)
        self.findings.append(finding)


def _names(obj: Any) -> list[str]:
    """Every string held by a name-like field anywhere in a request."""
    out: list[str] = []
    if isinstance(obj, list):
        for item in obj:
            out += _names(item)
    elif isinstance(obj, Struct):
        for name in obj._fields:
            value = getattr(obj, name)
            if isinstance(value, str) and name in _NAME_FIELDS:
                out.append(value)
            elif isinstance(value, list) and name in _NAME_FIELDS:
                out += [v for v in value if isinstance(v, str)] + _names(value)
            elif isinstance(value, (list, Struct)):
                out += _names(value)
    return out


def _expected_response(framed: bytes) -> tuple[int, int, int] | None:
    """(api key, version, correlation id) the broker answers as, or None if it decodes nothing."""
    try:
        header, _ = decode_request(memoryview(framed)[4:])
    except Exception:  # noqa: BLE001
        # ApiVersions at an unsupported version is still answered (a v0 body).
        if len(framed) >= 12 and struct.unpack(">h", framed[4:6])[0] == ApiKey.API_VERSIONS:
            return ApiKey.API_VERSIONS, 0, struct.unpack(">i", framed[8:12])[0]
        return None
    return header.api_key, header.api_version, header.correlation_id


def _check_response(data: bytes, expected: tuple[int, int, int] | None) -> str:
    if expected is None:
        return f"an answer to a frame that does not decode: {data[:64].hex()}"
    api_key, version, correlation_id = expected
    try:
        got, _ = decode_response(data, api_key, version)
    except Exception as exc:  # noqa: BLE001
        return f"the answer to api {api_key} v{version} does not decode ({exc}): {data[:64].hex()}"
    if got != correlation_id:
        return f"the answer to api {api_key} v{version} carries correlation id {got}, not {correlation_id}"
    return ""


def _last_traceback(text: str) -> str:
    start = text.rfind(TRACEBACK)
    head = text.rfind("\n", 0, max(0, start - 1))
    return text[head + 1:][:4000]

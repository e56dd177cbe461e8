"""Which registry process writes: the members of one group (protocol type "sr", Confluent's Kafka-based leader
election runs the same way) each publish their URL in JoinGroup; the group's leader names the writer in
SyncGroup (the current writer while it is still a member, so a process joining does not move it; else itself)
and every member learns the writer's URL from its assignment.

A member stops counting itself the writer as soon as a rebalance starts and until the next assignment names
it again; a process that becomes the writer reads `_schemas` to the end (``on_writer``) before it takes a
write, so the ids it hands out follow every id its predecessors wrote."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

from ..clients.group.offsets import CoordinatorLink
from ..clients.simple_client import SimpleClient
from ..protocol.messages import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "sr"
PROTOCOL_NAME = "v0"
MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 79, 25, 22, 27
COORDINATOR_ERRORS = {14, 15, 16}


class WriterElection:
    def __init__(self, client: SimpleClient, group_id: str, url: str, on_writer: Callable[[], Awaitable[None]],
                 session_timeout_ms: int = 10000, heartbeat_interval_ms: int = 1000) -> None:
        self.link = CoordinatorLink(client, group_id)
        self.url = url
        self.on_writer = on_writer
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000.0
        self.member_id = ""
        self.generation = -1
        self.writer_url: str | None = None
        self.is_writer = False
        self.changed = asyncio.Event()  # set whenever writer_url / is_writer change
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="writer-election")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.member_id and self.link.known:
            member_id = self.member_id

            def leave(version: int) -> Any:
                if version < 3:
                    return LeaveGroupRequest(group_id=self.link.group_id, member_id=member_id)
                return LeaveGroupRequest(group_id=self.link.group_id, members=[
                    LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=None)])
            leave.api_key = LeaveGroupRequest.API_KEY  # type: ignore[attr-defined]
            try:
                await self.link.send(leave, timeout=5.0)
            except Exception as exc:  # the session timeout removes us instead
                log.info("LeaveGroup failed: %s", exc)

    async def wait_for_writer(self, timeout: float) -> None:
        """Return once some process is the writer (or after ``timeout`` seconds): a write arriving during an
        election waits for it rather than failing."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.is_writer and self.writer_url is None and loop.time() < deadline:
            try:
                async with asyncio.timeout(deadline - loop.time()):  # not wait_for: DESIGN.md, "Deadlines"
                    await self.changed.wait()
            except TimeoutError:
                return

    def _set(self, writer_url: str | None, is_writer: bool) -> None:
        if (writer_url, is_writer) != (self.writer_url, self.is_writer):
            log.info("writer is now %s%s", writer_url, " (this process)" if is_writer else "")
        self.writer_url, self.is_writer = writer_url, is_writer
        self.changed.set()
        self.changed = asyncio.Event()

    async def _run(self) -> None:
        while True:
            try:
                await self._member_round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("writer election: %s; retrying", exc)
                self.link.mark_unknown()
                self._set(self.writer_url, False)
                await asyncio.sleep(0.5)

    async def _member_round(self) -> None:
        """Join, sync, then heartbeat until the group rebalances."""
        await self.link.find()
        joined = await self.link.send(JoinGroupRequest(
            group_id=self.link.group_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.session_timeout_ms, member_id=self.member_id, group_instance_id=None,
            protocol_type=PROTOCOL_TYPE, protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                name=PROTOCOL_NAME, metadata=json.dumps({"url": self.url}).encode())]),
            timeout=self.session_timeout_ms / 1000.0 + 10.0)
        if joined.error_code in (MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.member_id = joined.member_id if joined.error_code == MEMBER_ID_REQUIRED else ""
            return
        self._check(joined.error_code, "JoinGroup")
        self.member_id, self.generation = joined.member_id, joined.generation_id
        assignments = []
        if joined.leader == joined.member_id:
            urls = [json.loads(m.metadata).get("url") for m in joined.members]
            writer = self.writer_url if self.writer_url in urls else self.url
            assignment = json.dumps({"writer": writer}).encode()
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.member_id, assignment=assignment)
                           for m in joined.members]
        synced = await self.link.send(SyncGroupRequest(
            group_id=self.link.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=None, protocol_type=PROTOCOL_TYPE, protocol_name=PROTOCOL_NAME,
            assignments=assignments))
        if synced.error_code in (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            if synced.error_code != REBALANCE_IN_PROGRESS:
                self.member_id = ""
            self._set(self.writer_url, False)
            return
        self._check(synced.error_code, "SyncGroup")
        writer = json.loads(synced.assignment).get("writer") if synced.assignment else None
        if writer == self.url:
            await self.on_writer()  # caught up before any write is taken
        self._set(writer, writer == self.url)
        await self._heartbeat_until_rebalance()

    async def _heartbeat_until_rebalance(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            answer = await self.link.send(HeartbeatRequest(
                group_id=self.link.group_id, generation_id=self.generation, member_id=self.member_id,
                group_instance_id=None))
            if answer.error_code == REBALANCE_IN_PROGRESS:
                self._set(self.writer_url, False)
                return
            if answer.error_code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                self.member_id = ""
                self._set(self.writer_url, False)
                return
            self._check(answer.error_code, "Heartbeat")

    def _check(self, code: int, what: str) -> None:
        if code in COORDINATOR_ERRORS:
            self.link.mark_unknown()
        if code:
            raise RuntimeError(f"{what} for group {self.link.group_id}: error {code}")

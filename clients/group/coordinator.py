"""ConsumerCoordinator: our consumer as a member of a group (the eager "consumer" protocol of Kafka 2.8).

One task runs the membership, as aiokafka does, mirroring Java's AbstractCoordinator/ConsumerCoordinator:

- **join**: FindCoordinator (key type 0), then JoinGroup with protocol type "consumer" and one protocol
  per assignor in ``partition_assignment_strategy`` order (subscription v1 metadata), rebalance timeout
  = max_poll_interval_ms. MEMBER_ID_REQUIRED is answered by rejoining at once with the given member
  id (KIP-394). The leader decodes every member's subscription, looks up the partition counts and runs
  the assignor the coordinator selected; everyone then SyncGroups and takes its assignment.
- **before a rejoin** (eager: Java's onJoinPrepare) the member gives up its whole assignment: it commits
  the consumed positions when auto-commit is on, drops the partitions (so ``getmany`` can no longer
  return their records) and calls ``on_partitions_revoked``. As in Java, where a rebalance only happens
  inside ``poll()``, this waits until the application is in (or comes back to) ``getmany``: records it
  was handed before are processed and committed by it with the generation that owned them.
- **heartbeats** every heartbeat_interval_ms: REBALANCE_IN_PROGRESS rejoins; UNKNOWN_MEMBER_ID and
  ILLEGAL_GENERATION reset the member and rejoin; coordinator errors rediscover the coordinator;
  FENCED_INSTANCE_ID is fatal (raised by the next ``getmany``). A member whose application has not
  polled for max_poll_interval_ms leaves the group, as Java's heartbeat thread does.
- **auto-commit** every auto_commit_interval_ms of the positions the application has consumed.
- **metadata** every metadata_max_age_ms: a changed partition count of a watched topic (the leader
  watches the whole group's topics) or a changed set of topics matching the pattern rejoins.
- **close**: auto-commit, ``on_partitions_revoked`` and LeaveGroup, except for static members
  (group_instance_id), which keep their place until their session times out, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Iterable, Protocol

from ...protocol.consumer_protocol import Subscription, decode_assignment, decode_subscription, encode_assignment, \
    encode_subscription
from ...protocol.errors import KafkaError, ProtocolError, for_code
from ...protocol.messages import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from ..simple_client import SimpleClient, _Retry
from ..types import OffsetAndMetadata, TopicPartition
from .assignors import MemberSubscription, PartitionAssignor, resolve_assignors
from .listener import call_listener
from .offsets import (ILLEGAL_GENERATION, NO_GENERATION, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, CommitFailedError,
                      CoordinatorLink, Generation, commit_offsets)

log = logging.getLogger(__name__)

MEMBER_ID_REQUIRED = 79
CONSUMER_PROTOCOL_TYPE = "consumer"
# Errors after which retrying cannot help: raised to the application (Java's JoinGroupResponseHandler).
_FATAL_JOIN_ERRORS = frozenset({23, 24, 26, 30, 35, 81, 82})  # INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID,
# INVALID_SESSION_TIMEOUT, GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION, GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID
FENCED_INSTANCE_ID = 82


class GroupHost(Protocol):
    """What the coordinator needs from its consumer."""

    def _assign_partitions(self, partitions: Iterable[TopicPartition]) -> None: ...
    def _stop_handing_out(self) -> None: ...
    def _consumed_positions(self) -> dict[TopicPartition, OffsetAndMetadata]: ...
    def _group_failed(self, error: BaseException) -> None: ...


class ConsumerCoordinator:
    def __init__(self, client: SimpleClient, config: dict[str, Any], host: GroupHost) -> None:
        self.client = client
        self.config = config
        self.host = host
        self.link = CoordinatorLink(client, config["group_id"])
        self.assignors: list[PartitionAssignor] = resolve_assignors(config["partition_assignment_strategy"])
        self.instance_id: str | None = config["group_instance_id"]
        self.generation: Generation = NO_GENERATION
        self.leader = False
        self.listener: Any = None
        self.topics: set[str] = set()  # this member's subscription (the pattern's matches for a pattern)
        self.pattern: re.Pattern[str] | None = None
        self.assignment: set[TopicPartition] = set()
        self.auto_commit = bool(config["enable_auto_commit"])
        self._group_topics: set[str] = set()  # the leader's view of everyone's subscription
        self._snapshot: dict[str, int] = {}  # partition counts the last assignment was computed from
        self._rejoin_needed = True
        self._joining = False
        self._revoked_for_join = False
        self._wake = asyncio.Event()
        self._polls_active = 0
        self._polled = asyncio.Event()
        self._last_poll = 0.0
        self._poll_timed_out = False  # left the group for not polling: rejoin at the next poll
        self._closing = False
        self._tasks: list[asyncio.Task] = []
        self._backoff = config["retry_backoff_ms"] / 1000.0

    # -- the consumer's side ----------------------------------------------------------------------
    def start(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None,
              listener: Any = None) -> None:
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.topics = set(topics)
        self.listener = listener
        self.request_rejoin()
        if not self._tasks:
            loop = asyncio.get_running_loop()
            self._last_poll = loop.time()
            self._tasks = [loop.create_task(self._run(), name="odradek-group"),
                           loop.create_task(self._heartbeat_loop(), name="odradek-heartbeat")]
            if self.auto_commit:
                self._tasks.append(loop.create_task(self._auto_commit_loop(), name="odradek-auto-commit"))

    def poll_started(self) -> None:
        self._polls_active += 1
        self._last_poll = asyncio.get_running_loop().time()
        self._polled.set()

    def poll_finished(self) -> None:
        self._polls_active -= 1
        self._last_poll = asyncio.get_running_loop().time()

    def request_rejoin(self) -> None:
        self._rejoin_needed = True
        self._wake.set()

    async def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata | int]) -> None:
        """OffsetCommit with this member's generation; a stale one raises CommitFailedError and rejoins."""
        generation = self.generation
        if generation.generation_id < 0:
            # Kafka: no valid generation while (re)joining, so the commit cannot be fenced correctly.
            raise CommitFailedError("the member is rebalancing: no generation to commit with",
                                    code=REBALANCE_IN_PROGRESS)
        try:
            await commit_offsets(self.link, offsets, generation, self.instance_id)
        except CommitFailedError as exc:
            if exc.code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) and self.generation is generation:
                self._reset_generation()
            self.request_rejoin()
            raise

    async def close(self, autocommit: bool = True) -> None:
        """Stop the membership: auto-commit, revoke and LeaveGroup (dynamic members only)."""
        if self._closing:
            return
        self._closing = True
        was_joining = self._joining
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if was_joining:
            await self.link.drop_connection()
        if self.generation.generation_id >= 0 and autocommit and self.auto_commit:
            await self._commit_consumed("close")
        if self.instance_id is None:  # Java's maybeLeaveGroup: dynamic members only
            if self.assignment:
                await self._give_up_assignment(lost=self.generation.generation_id < 0, commit=False)
            await self._leave_group("the consumer is closing")
        self._reset_generation()

    # -- membership loop --------------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        max_age = self.config["metadata_max_age_ms"] / 1000.0
        next_metadata_check = loop.time() + max_age
        while not self._closing:
            try:
                if self.pattern is not None and self._rejoin_needed:
                    await self._match_pattern()
                if self._rejoin_needed or self.generation.generation_id < 0:
                    await self._join()
                    next_metadata_check = loop.time() + self._metadata_interval(max_age)
                    continue
                self._wake.clear()
                try:
                    async with asyncio.timeout(max(next_metadata_check - loop.time(), 0)):
                        await self._wake.wait()
                except TimeoutError:
                    await self._check_metadata()
                    next_metadata_check = loop.time() + self._metadata_interval(max_age)
            except asyncio.CancelledError:
                raise
            except _FatalGroupError as exc:
                log.error("group %s: %s", self.link.group_id, exc.error)
                self.host._group_failed(exc.error)
                return
            except (OSError, KafkaError, _Retry) as exc:
                log.info("group %s: %s; retrying", self.link.group_id, exc)
                await asyncio.sleep(self._backoff)

    async def _join(self) -> None:
        """One attempt to (re)join: revoke (once per rebalance), JoinGroup, assignment, SyncGroup."""
        if not self._revoked_for_join:
            if self.assignment or self._poll_timed_out:
                await self._wait_for_poll()
                self._poll_timed_out = False
                await self._give_up_assignment(lost=self.generation.generation_id < 0, commit=self.auto_commit)
            self._revoked_for_join = True
        await self._find_coordinator()
        self._joining = True
        try:
            joined = await self._join_group()
            if joined is None:
                return  # retry at once (MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID)
            assignment = await self._sync_group(joined)
        finally:
            self._joining = False
        if assignment is None:
            return
        self._rejoin_needed = False
        self._revoked_for_join = False
        await self._take_assignment(assignment)

    async def _find_coordinator(self) -> None:
        while not self.link.known:
            try:
                await self.link.find()
            except (_Retry, OSError) as exc:
                log.debug("group %s: FindCoordinator: %s", self.link.group_id, exc)
                await asyncio.sleep(self._backoff)

    def _metadata_bytes(self, assignor: PartitionAssignor) -> bytes:
        return encode_subscription(sorted(self.topics), assignor.subscription_user_data(self.topics), owned={})

    async def _join_group(self) -> Any:
        request = JoinGroupRequest(
            group_id=self.link.group_id, session_timeout_ms=self.config["session_timeout_ms"],
            rebalance_timeout_ms=self.config["max_poll_interval_ms"], member_id=self.generation.member_id,
            group_instance_id=self.instance_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=a.name, metadata=self._metadata_bytes(a))
                       for a in self.assignors])
        # The coordinator holds a JoinGroup for up to the rebalance timeout (Java: + 5 s).
        timeout = max(self.client.request_timeout, self.config["max_poll_interval_ms"] / 1000.0 + 5.0)
        response = await self.link.send(request, timeout=timeout)
        code = response.error_code
        if code == MEMBER_ID_REQUIRED:
            self.generation = Generation(-1, response.member_id, None)
            return None
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._reset_generation()
            return None
        self._check_common(code, "JoinGroup")
        self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
        self.leader = response.leader == response.member_id
        return response

    async def _sync_group(self, joined: Any) -> dict[str, list[int]] | None:
        assignments = []
        if self.leader:
            computed = await self._assign(joined)
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(a))
                           for m, a in computed.items()]
        generation = self.generation
        request = SyncGroupRequest(group_id=self.link.group_id, generation_id=generation.generation_id,
                                   member_id=generation.member_id, group_instance_id=self.instance_id,
                                   protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=generation.protocol,
                                   assignments=assignments)
        response = await self.link.send(request)
        code = response.error_code
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._reset_generation()
            return None
        if code == REBALANCE_IN_PROGRESS:
            return None  # rejoin with the same member id
        self._check_common(code, "SyncGroup")
        try:
            return decode_assignment(response.assignment).partitions
        except ProtocolError as exc:
            raise _FatalGroupError(exc) from None

    def _check_common(self, code: int, what: str) -> None:
        if not code:
            return
        if code in _FATAL_JOIN_ERRORS:
            raise _FatalGroupError(for_code(code)(f"{what} for group {self.link.group_id}"))
        self.link.check_code(code)  # coordinator moved: rediscover (raises _Retry)
        raise _Retry(code, False)

    async def _assign(self, joined: Any) -> dict[str, dict[str, list[int]]]:
        """The leader's work: every member's subscription, the partition counts, the selected assignor."""
        assignor = next((a for a in self.assignors if a.name == joined.protocol_name), None)
        if assignor is None:
            raise _FatalGroupError(KafkaError(f"the coordinator selected protocol {joined.protocol_name!r}, "
                                              f"which this member did not offer"))
        members = []
        for member in joined.members:
            try:
                subscription = decode_subscription(member.metadata)
            except ProtocolError as exc:
                log.warning("group %s: member %s sent unreadable metadata (%s); it gets nothing",
                            self.link.group_id, member.member_id, exc)
                subscription = Subscription(0, [])
            members.append(MemberSubscription(member.member_id, member.group_instance_id, subscription))
        self._group_topics = {t for m in members for t in m.subscription.topics}
        counts = await self._partition_counts(self._group_topics)
        partitions_per_topic = {t: n for t, n in counts.items() if n > 0}
        result = assignor.assign(partitions_per_topic, members)
        log.info("group %s generation %d: leader assigned with %s: %s", self.link.group_id,
                 self.generation.generation_id, assignor.name, result)
        return result

    async def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        names = sorted(topics)
        if not names:
            return {}
        metadata = await self.client.metadata(names)
        return {t: len(metadata.partitions_for(t)) for t in names}

    async def _take_assignment(self, partitions: dict[str, list[int]]) -> None:
        assigned = {TopicPartition(t, p) for t, ps in partitions.items() for p in ps}
        assignor = next((a for a in self.assignors if a.name == self.generation.protocol), None)
        if assignor is not None:
            assignor.on_assignment(partitions, self.generation.generation_id)
        watched = (self._group_topics if self.leader else set()) | self.topics
        try:
            self._snapshot = await self._partition_counts(watched)
        except (OSError, KafkaError, _Retry) as exc:  # the next check compares with the cached picture
            log.debug("group %s: metadata after the assignment: %s", self.link.group_id, exc)
            self._snapshot = {t: len(self.client.cluster.partitions_for(t)) for t in watched}
        # No await between taking the partitions and telling the listener: a close() that cancels this task
        # finds either no assignment or one the listener was told about, never one it was not.
        self.assignment = assigned
        self.host._assign_partitions(assigned)
        log.info("group %s generation %d: member %s assigned %s", self.link.group_id,
                 self.generation.generation_id, self.generation.member_id, sorted(assigned))
        await call_listener(self.listener, "on_partitions_assigned", assigned)

    async def _give_up_assignment(self, *, lost: bool, commit: bool) -> None:
        """Eager revocation: commit (unless the generation is lost), drop the partitions, tell the listener."""
        self.host._stop_handing_out()
        if commit and not lost:
            await self._commit_consumed("revocation")
        # Java calls the listener before clearing the assignment, so it can still commit positions
        await call_listener(self.listener, "on_partitions_revoked", set(self.assignment))
        self.assignment = set()
        self.host._assign_partitions(())

    async def _wait_for_poll(self) -> None:
        """Wait until the application is in getmany (Java rebalances only inside poll). Heartbeats go on
        meanwhile; after max_poll_interval_ms the heartbeat loop leaves the group, as Java's does."""
        self._polled.clear()
        if self._polls_active:
            return
        await self._polled.wait()

    async def _commit_consumed(self, why: str) -> None:
        positions = self.host._consumed_positions()
        if not positions:
            return
        try:
            await self.commit(positions)
        except (OSError, KafkaError) as exc:
            log.warning("group %s: auto-commit at %s failed: %s", self.link.group_id, why, exc)

    def _reset_generation(self) -> None:
        self.generation = NO_GENERATION
        self.leader = False
        self._rejoin_needed = True

    async def _leave_group(self, reason: str) -> None:
        member_id = self.generation.member_id
        if not member_id or not self.link.known:
            return
        log.info("group %s: member %s leaves (%s)", self.link.group_id, member_id, reason)
        try:
            response = await self.link.send(_LeaveGroup(self.link.group_id, member_id))
            codes = [response.error_code] + [m.error_code for m in response.members]
            code = next((c for c in codes if c), 0)
            if code:
                raise for_code(code)(f"LeaveGroup of member {member_id}")
        except (OSError, KafkaError) as exc:  # the session timeout removes us, later
            log.warning("group %s: LeaveGroup failed: %s", self.link.group_id, exc)

    # -- background duties ------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        interval = self.config["heartbeat_interval_ms"] / 1000.0
        max_poll_interval = self.config["max_poll_interval_ms"] / 1000.0
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            generation = self.generation
            if self._joining or generation.generation_id < 0:
                continue
            if not self._polls_active and loop.time() - self._last_poll > max_poll_interval:
                # Java's heartbeat thread: the application stopped polling, so give its partitions up.
                await self._leave_group("no poll within max_poll_interval_ms")
                self._reset_generation()
                self._poll_timed_out = True
                self._wake.set()
                continue
            try:
                response = await self.link.send(HeartbeatRequest(
                    group_id=self.link.group_id, generation_id=generation.generation_id,
                    member_id=generation.member_id, group_instance_id=self.instance_id))
                self._on_heartbeat(response.error_code, generation)
            except (OSError, _Retry, KafkaError) as exc:
                log.debug("group %s: heartbeat failed: %s", self.link.group_id, exc)

    def _on_heartbeat(self, code: int, generation: Generation) -> None:
        if not code or generation is not self.generation:
            return
        if code == REBALANCE_IN_PROGRESS:
            log.info("group %s: rebalance in progress; rejoining", self.link.group_id)
            self.request_rejoin()
        elif code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            log.info("group %s: heartbeat error %d; resetting member %s and rejoining", self.link.group_id, code,
                     generation.member_id)
            self._reset_generation()
            self._wake.set()
        elif code == FENCED_INSTANCE_ID:
            self.host._group_failed(for_code(code)(f"group.instance.id {self.instance_id} was fenced"))
            self._reset_generation()
        else:
            self.link.check_code(code)  # coordinator errors: rediscover
            log.info("group %s: heartbeat error %d", self.link.group_id, code)

    async def _auto_commit_loop(self) -> None:
        interval = self.config["auto_commit_interval_ms"] / 1000.0
        while True:
            await asyncio.sleep(interval)
            if self.generation.generation_id >= 0 and not self._joining and not self._rejoin_needed:
                await self._commit_consumed("interval")

    async def _match_pattern(self) -> None:
        metadata = await self.client.metadata(None)
        assert self.pattern is not None
        matched = {t for t, info in metadata.topics.items()
                   if self.pattern.fullmatch(t) and not (info.is_internal and self.config["exclude_internal_topics"])}
        if matched != self.topics:
            log.info("group %s: pattern now matches %s", self.link.group_id, sorted(matched))
            self.topics = matched
            self.request_rejoin()

    def _metadata_interval(self, max_age: float) -> float:
        """Java refreshes metadata after retry_backoff_ms while a subscribed topic is unknown (so a topic
        created later is consumed at once), else every metadata_max_age_ms."""
        if any(count == 0 for count in self._snapshot.values()):
            return self._backoff
        return max_age

    async def _check_metadata(self) -> None:
        """Rejoin when the partition counts of watched topics or the pattern's matches changed."""
        if self.pattern is not None:
            await self._match_pattern()
        watched = (self._group_topics if self.leader else set()) | self.topics
        counts = await self._partition_counts(watched)
        if counts != self._snapshot:
            log.info("group %s: partition counts changed (%s -> %s); rejoining", self.link.group_id,
                     self._snapshot, counts)
            self.request_rejoin()


class _LeaveGroup:
    """Builds LeaveGroup for the version the coordinator speaks (Java's LeaveGroupRequest.Builder): v0-2
    name the member in the top-level member_id, v3+ in members[]."""

    api_key = LeaveGroupRequest.API_KEY

    def __init__(self, group_id: str, member_id: str) -> None:
        self.group_id, self.member_id = group_id, member_id

    def __call__(self, version: int) -> Any:
        if version < 3:
            return LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id)
        return LeaveGroupRequest(group_id=self.group_id, members=[
            LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None)])


class _FatalGroupError(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error

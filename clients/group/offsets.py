"""The group's coordinator broker and the committed offsets kept there.

``CoordinatorLink`` finds the coordinator (FindCoordinator, key type 0) and talks to it on a connection
of its own, as Kafka's Java client does (node id Integer.MAX_VALUE - id): the broker serves one request
per connection at a time, and a JoinGroup held for a whole rebalance must not stall fetches from the
same broker. ``commit_offsets`` / ``fetch_committed`` are OffsetCommit / OffsetFetch with Kafka's
client-side error handling: coordinator errors rediscover and retry; a commit whose generation is
stale fails with ``CommitFailedError`` (kafka-python's name) and the member must rejoin.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable

from ...protocol.errors import for_code
from ...protocol.messages import FindCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest
from ..simple_client import SimpleClient, _Retry, _raise_code
from ..producer.transaction_manager import CommitFailedError as _TransactionalCommitFailedError
from ..types import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

COORDINATOR_ERRORS = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
STALE_MEMBER_ERRORS = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS})


class CommitFailedError(_TransactionalCommitFailedError):
    """The commit was rejected because the group rebalanced: the partitions may belong to another member
    now. The consumer rejoins; the application should not assume its offsets were stored. (A subclass of
    the transactional producer's class of the same name, so ``odradek.clients.CommitFailedError`` catches
    both: they are Java's one CommitFailedException.)"""

    name = "COMMIT_FAILED"
    message = ("Commit cannot be completed since the group has already rebalanced and assigned the "
               "partitions to another member")

    def __init__(self, *args: object, code: int = REBALANCE_IN_PROGRESS) -> None:
        super().__init__(*args)
        self.code = code


@dataclass(frozen=True)
class Generation:
    """What a member commits and heartbeats with; (-1, "") outside a group (simple-consumer commits)."""

    generation_id: int = -1
    member_id: str = ""
    protocol: str | None = None


NO_GENERATION = Generation()


class CoordinatorLink:
    def __init__(self, client: SimpleClient, group_id: str) -> None:
        self.client = client
        self.group_id = group_id
        self.node_id: int | None = None
        self._address: tuple[str, int] | None = None

    @property
    def known(self) -> bool:
        return self.node_id is not None

    def mark_unknown(self) -> None:
        if self.node_id is not None:
            log.info("group %s: coordinator %s marked unknown", self.group_id, self.node_id)
        self.node_id = None

    async def drop_connection(self) -> None:
        """Close the coordinator connection, e.g. with a JoinGroup the broker may hold for minutes in flight
        (it serves one request per connection at a time, so a LeaveGroup would wait behind it)."""
        if self.node_id is None:
            return
        conn = self.client._connections.pop(("coordinator", self.node_id), None)
        if conn is not None:
            await conn.close()

    async def find(self) -> int:
        """The coordinator's node id (FindCoordinator on any broker when not known); ``_Retry`` on errors."""
        if self.node_id is not None:
            return self.node_id
        conn = await self.client._any_connection()
        found = await conn.send(FindCoordinatorRequest(key=self.group_id, key_type=0),
                                timeout=self.client.request_timeout)
        if found.error_code:
            raise _Retry(found.error_code, True, retriable=for_code(found.error_code).retriable)
        self.node_id, self._address = found.node_id, (found.host, found.port)
        return found.node_id

    async def send(self, request: Any, timeout: float | None = None) -> Any:
        """One attempt at the coordinator; a connection failure forgets the coordinator and is raised.
        ``request`` may be a function of the negotiated version that builds the request (for messages
        whose fields differ between versions, as Java's request builders do)."""
        node_id = await self.find()
        assert self._address is not None
        try:
            conn = await self.client._connect(("coordinator", node_id), *self._address)
            version = None
            if callable(request):
                version = conn.version_for(request.api_key)
                request = request(version)
            return await conn.send(request, version=version, timeout=timeout or self.client.request_timeout)
        except OSError:
            self.mark_unknown()
            raise

    def check_code(self, code: int) -> None:
        """Coordinator moved or loading: forget it and retry (``_Retry``)."""
        if code in COORDINATOR_ERRORS:
            if code != 14:  # still loading: the same broker stays the coordinator
                self.mark_unknown()
            raise _Retry(code, False)

    async def with_retries(self, attempt: Any) -> Any:
        return await self.client._with_retries(attempt, _raise_code, topics=[])


async def commit_offsets(link: CoordinatorLink, offsets: dict[TopicPartition, OffsetAndMetadata | int],
                         generation: Generation = NO_GENERATION, group_instance_id: str | None = None) -> None:
    """OffsetCommit; generation -1 and no member id for a consumer outside a group (Kafka's simple consumer)."""
    by_topic: dict[str, list[Any]] = {}
    for tp, meta in offsets.items():
        meta = OffsetAndMetadata(meta) if isinstance(meta, int) else meta
        by_topic.setdefault(tp[0], []).append(OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=tp[1], committed_offset=meta.offset, committed_leader_epoch=meta.leader_epoch,
            committed_metadata=meta.metadata, commit_timestamp=-1))
    if not by_topic:
        return
    request = OffsetCommitRequest(
        group_id=link.group_id, generation_id_or_member_epoch=generation.generation_id,
        member_id=generation.member_id, group_instance_id=group_instance_id, retention_time_ms=-1,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])

    async def attempt() -> None:
        response = await link.send(request)
        for topic in response.topics:
            for p in topic.partitions:
                _check_commit_code(link, p.error_code)

    await link.with_retries(attempt)


def _check_commit_code(link: CoordinatorLink, code: int) -> None:
    if not code:
        return
    link.check_code(code)
    if code in STALE_MEMBER_ERRORS:
        raise CommitFailedError(code=code)
    raise for_code(code)("OffsetCommit")


async def fetch_committed(link: CoordinatorLink, partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The group's committed offsets; None for a partition without one."""
    wanted = [TopicPartition(*tp) for tp in partitions]
    by_topic: dict[str, list[int]] = {}
    for tp in wanted:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = OffsetFetchRequest(group_id=link.group_id, require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()])

    async def attempt() -> Any:
        response = await link.send(request)
        codes = [response.error_code] + [p.error_code for t in response.topics for p in t.partitions]
        for code in codes:
            if code:
                link.check_code(code)
                raise for_code(code)("OffsetFetch")
        return response

    response = await link.with_retries(attempt)
    result: dict[TopicPartition, OffsetAndMetadata | None] = {tp: None for tp in wanted}
    for topic in response.topics:
        for p in topic.partitions:
            if p.committed_offset >= 0:
                result[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", p.committed_leader_epoch)
    return result

"""MetadataCache: what this broker knows of the cluster, as the controller last told it.

Filled only by UpdateMetadata requests (Kafka's ZK-mode design): live brokers with their endpoints
per listener, the controller id, and every partition's leader, epoch, replicas and ISR. Metadata
requests are answered from here, so every broker gives the same answer once the controller's update
has reached it. Readers see a consistent snapshot because an update swaps whole dicts.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

# UpdateMetadata marks partitions of a topic being deleted with this leader (Kafka's LeaderDuringDelete).
LEADER_DURING_DELETE = -2
NO_LEADER = -1
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True)
class BrokerEndpoint:
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True)
class CachedBroker:
    id: int
    rack: str | None
    endpoints: dict[str, BrokerEndpoint]  # listener name -> endpoint


@dataclass
class CachedPartition:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    offline_replicas: list[int] = field(default_factory=list)
    zk_version: int = 0
    controller_epoch: int = 0


class MetadataCache:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self.cluster_id: str | None = None
        self.brokers: dict[int, CachedBroker] = {}
        self.partitions: dict[str, dict[int, CachedPartition]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._changed = asyncio.Event()

    # -- updates ----------------------------------------------------------------------------------

    def update(self, request: Any, version: int) -> list[tuple[str, int]]:
        """Apply an UpdateMetadata request; returns the partitions it deleted."""
        brokers = {}
        for b in request.live_brokers:
            if version == 0:
                endpoints = {"PLAINTEXT": BrokerEndpoint(b.v0_host, b.v0_port, 0)}
            else:
                endpoints = {}
                for e in b.endpoints:
                    # Before v3 the listener name is the security protocol's name (Kafka does the same).
                    name = e.listener if version >= 3 else _PROTOCOL_NAMES.get(e.security_protocol, "PLAINTEXT")
                    endpoints[name] = BrokerEndpoint(e.host, e.port, e.security_protocol)
            brokers[b.id] = CachedBroker(b.id, b.rack, endpoints)
        # Copy on write, per topic: an update naming a few partitions does not copy the whole cluster.
        partitions = dict(self.partitions)
        copied: set[str] = set()

        def writable(topic: str) -> dict[int, CachedPartition]:
            if topic not in copied:
                copied.add(topic)
                partitions[topic] = dict(partitions.get(topic, {}))
            return partitions[topic]

        topic_ids = dict(self.topic_ids)
        deleted: list[tuple[str, int]] = []
        for topic, topic_id, state in _partition_states(request, version):
            if topic_id is not None and topic_id.int:
                topic_ids[topic] = topic_id
            if state.leader == LEADER_DURING_DELETE:
                if topic not in partitions:
                    continue
                parts = writable(topic)
                if parts.pop(state.partition_index, None) is not None:
                    deleted.append((topic, state.partition_index))
                if not parts:
                    del partitions[topic]
                    copied.discard(topic)
                    topic_ids.pop(topic, None)
                continue
            writable(topic)[state.partition_index] = CachedPartition(
                topic, state.partition_index, state.leader, state.leader_epoch, list(state.isr),
                list(state.replicas), list(getattr(state, "offline_replicas", None) or []),
                state.zk_version, state.controller_epoch)
        self.brokers = brokers
        self.partitions = partitions
        self.topic_ids = topic_ids
        self.controller_id = request.controller_id if request.controller_id >= 0 else None
        self._changed.set()
        self._changed = asyncio.Event()
        return deleted

    async def wait_for_change(self, timeout: float) -> bool:
        """Wait for the next update; False on timeout."""
        event = self._changed
        try:  # asyncio.timeout, not wait_for: DESIGN.md, "Deadlines"
            async with asyncio.timeout(timeout):
                await event.wait()
            return True
        except TimeoutError:
            return False

    async def wait_until(self, topics: Iterable[str], ready: Callable[[str], bool], timeout_ms: int) -> list[str]:
        """Wait, update by update, until ``ready(topic)`` holds for every topic or ``timeout_ms`` passes
        (admin requests waiting for the controller's effect); returns the topics still not ready."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        pending = [t for t in topics if not ready(t)]
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not await self.wait_for_change(remaining):
                break
            pending = [t for t in pending if not ready(t)]
        return pending

    # -- queries ----------------------------------------------------------------------------------

    def alive_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def endpoint(self, broker_id: int, listener: str) -> BrokerEndpoint | None:
        broker = self.brokers.get(broker_id)
        return broker.endpoints.get(listener) if broker else None

    def contains_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def all_topics(self) -> list[str]:
        return sorted(self.partitions)

    def partition(self, topic: str, partition: int) -> CachedPartition | None:
        parts = self.partitions.get(topic)
        return parts.get(partition) if parts else None

    def topic_partitions(self, topic: str) -> dict[int, CachedPartition]:
        return self.partitions.get(topic, {})

    def num_partitions(self, topic: str) -> int | None:
        parts = self.partitions.get(topic)
        return len(parts) if parts is not None else None

    def has_all_leaders(self, topic: str) -> bool:
        """The topic is known and every partition has a live leader (CreateTopics waits for this)."""
        parts = self.partitions.get(topic)
        return bool(parts) and all(p.leader >= 0 and p.leader in self.brokers for p in parts.values())

    def partitions_led_by(self, broker_id: int) -> Iterable[CachedPartition]:
        for parts in self.partitions.values():
            for p in parts.values():
                if p.leader == broker_id:
                    yield p


_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _partition_states(request: Any, version: int):
    """(topic, topic_id, state) for every partition state, whatever the request version's layout."""
    if version < 5:
        for state in request.ungrouped_partition_states:
            yield state.topic_name, None, state
    else:
        for topic_state in request.topic_states:
            topic_id = getattr(topic_state, "topic_id", None) if version >= 7 else None
            for state in topic_state.partition_states:
                yield topic_state.topic_name, topic_id, state

"""The cluster as the console last saw it, and the changes it saw: the Controller page's event list.

The console is an admin client, not a broker: it cannot read the controller's state-change log. It polls
Metadata (every ``interval_s``) and records what changed between two answers: brokers joining and leaving,
the controller moving, topics created and deleted, leaders changing, partitions going offline and back,
ISR shrinking and expanding. Brokers once seen and now missing from the metadata are shown as not alive.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from ..clients.simple_client import SimpleClient
from .periodic import Periodic

MAX_EVENTS = 1000


class ClusterWatch(Periodic):
    def __init__(self, client: SimpleClient, interval_s: float = 2.0) -> None:
        super().__init__(interval_s)
        self.client = client
        self.events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self.known_brokers: dict[int, dict[str, Any]] = {}  # every broker ever seen: id -> address, rack
        self.live_brokers: set[int] = set()
        self.controller_id = -1
        self.partitions: dict[tuple[str, int], tuple[int, tuple[int, ...]]] = {}  # -> (leader, isr)
        self._seen_once = False
        self.latest: Any = None  # the last Metadata answer of a poll, and when it came
        self.latest_time = 0.0

    async def run_once(self) -> None:
        response = await self.client.metadata_response(None)
        self.observe(response)
        self.latest, self.latest_time = response, time.monotonic()

    def recent(self) -> Any:
        """The last Metadata answer if it is at most two polls old, else None (the Overview asks afresh)."""
        if self.latest is not None and time.monotonic() - self.latest_time <= 2 * self.interval_s:
            return self.latest
        return None

    def _event(self, kind: str, text: str, **fields: Any) -> None:
        if self._seen_once:
            self.events.append({"time": time.time(), "kind": kind, "text": text, **fields})

    def observe(self, response: Any) -> None:
        """Compare a Metadata answer with the previous one and record what changed."""
        brokers = {b.node_id: {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                   for b in response.brokers}
        for node_id in sorted(brokers.keys() - self.live_brokers):
            self._event("broker", f"broker {node_id} joined ({brokers[node_id]['host']}:{brokers[node_id]['port']})",
                        broker=node_id)
        for node_id in sorted(self.live_brokers - brokers.keys()):
            self._event("broker", f"broker {node_id} left the cluster", broker=node_id)
        self.known_brokers.update(brokers)
        self.live_brokers = set(brokers)
        if response.controller_id != self.controller_id:
            self._event("controller", f"controller is now broker {response.controller_id} "
                                      f"(was {self.controller_id})", broker=response.controller_id)
            self.controller_id = response.controller_id
        partitions: dict[tuple[str, int], tuple[int, tuple[int, ...]]] = {}
        for topic in response.topics:
            for p in topic.partitions:
                partitions[(topic.name, p.partition_index)] = (p.leader_id, tuple(sorted(p.isr_nodes)))
        old_topics = {t for t, _ in self.partitions}
        new_topics = {t for t, _ in partitions}
        for name in sorted(new_topics - old_topics):
            self._event("topic", f"topic {name} created", topic=name)
        for name in sorted(old_topics - new_topics):
            self._event("topic", f"topic {name} deleted", topic=name)
        for key, (leader, isr) in partitions.items():
            before = self.partitions.get(key)
            if before is None:
                continue
            self._partition_changes(key, before, (leader, isr))
        self.partitions = partitions
        self._seen_once = True

    def _partition_changes(self, key: tuple[str, int], before: tuple[int, tuple[int, ...]],
                           after: tuple[int, tuple[int, ...]]) -> None:
        name = f"{key[0]}-{key[1]}"
        (old_leader, old_isr), (leader, isr) = before, after
        if leader != old_leader:
            if leader < 0:
                self._event("offline", f"{name} is offline (leader {old_leader} gone)", topic=key[0],
                            partition=key[1])
            elif old_leader < 0:
                self._event("leader", f"{name} is back online, leader {leader}", topic=key[0], partition=key[1])
            else:
                self._event("leader", f"{name} leader {old_leader} -> {leader}", topic=key[0], partition=key[1])
        if set(isr) < set(old_isr):
            self._event("isr", f"{name} ISR shrank {list(old_isr)} -> {list(isr)}", topic=key[0], partition=key[1])
        elif set(isr) > set(old_isr):
            self._event("isr", f"{name} ISR expanded {list(old_isr)} -> {list(isr)}", topic=key[0],
                        partition=key[1])

    def brokers(self) -> list[dict[str, Any]]:
        return [{**info, "alive": node_id in self.live_brokers, "controller": node_id == self.controller_id}
                for node_id, info in sorted(self.known_brokers.items())]

"""Follower fetching (KIP-392): which replica a consumer should read a partition from.

A consumer sending Fetch v11+ says its ``client.rack`` (``rack_id``). The leader, when the broker has a
``replica.selector.class``, asks the selector for the partition's preferred read replica and, if that is
another broker, answers the partition with no records and ``preferred_read_replica`` set; the consumer then
fetches from that broker, which serves it up to its own high watermark. Kafka 2.8's rules
(ReplicaManager.findPreferredReadReplica):

- only for consumers (a follower's replication fetch is never redirected) and only on the leader;
- candidates are the leader and the followers whose last known log end offset is at or above the fetch
  offset and whose log start offset is at or below it (in the ISR or not), with an endpoint on the listener
  the request came in on;
- RackAwareReplicaSelector: no client rack, or the leader in the client's rack, or no candidate in it:
  the leader; otherwise the most caught-up candidate in the client's rack (highest log end offset, then
  the shortest time since it was last caught up);
- the leader is never sent as preferred_read_replica (the consumer keeps fetching from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from .config_keys import RACK_AWARE_REPLICA_SELECTOR

if TYPE_CHECKING:
    from .metadata_cache import MetadataCache
    from .partition import Partition


@dataclass(frozen=True)
class ClientMetadata:
    """What a Fetch v11+ consumer tells about itself (Kafka's DefaultClientMetadata, the parts used)."""
    rack_id: str
    listener: str


@dataclass(frozen=True)
class ReplicaView:
    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int


# (client, candidates (the leader among them), leader) -> the replica to read from
Selector = Callable[[ClientMetadata, Sequence[ReplicaView], ReplicaView], ReplicaView]


def rack_aware_select(client: ClientMetadata, replicas: Sequence[ReplicaView], leader: ReplicaView) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select."""
    if not client.rack_id:
        return leader
    same_rack = [r for r in replicas if r.rack == client.rack_id]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms))


def preferred_read_replica(selector: Selector, partition: "Partition", metadata_cache: "MetadataCache",
                           client: ClientMetadata, fetch_offset: int, now_ms: int) -> int | None:
    """The broker a consumer should fetch ``partition`` from instead of this leader, or None (read here)."""
    if not partition.is_leader:
        return None

    def view(broker_id: int, log_end_offset: int, since_caught_up_ms: int) -> ReplicaView | None:
        broker = metadata_cache.brokers.get(broker_id)
        if broker is None or client.listener not in broker.endpoints:
            return None
        return ReplicaView(broker_id, broker.rack, log_end_offset, since_caught_up_ms)

    leader = view(partition.local_broker_id, partition.log_end_offset, 0)
    followers = [view(b, state.log_end_offset, now_ms - state.last_caught_up_ms)
                 for b, state in partition.replica_states.items()
                 if state.log_end_offset >= fetch_offset and state.log_start_offset <= fetch_offset]
    candidates = [r for r in followers if r is not None]
    if leader is None:  # cannot happen for a request on our own listener; Kafka would then not redirect
        return None
    selected = selector(client, [*candidates, leader], leader)
    return None if selected == leader else selected.broker_id


SELECTORS: dict[str, Selector] = {RACK_AWARE_REPLICA_SELECTOR: rack_aware_select}


def replica_selector(class_name: str | None) -> Selector | None:
    """The selector ``replica.selector.class`` names (the config validator admits only these), or None."""
    return SELECTORS[class_name] if class_name else None

"""ControllerContext: the active controller's in-memory view of the cluster (Kafka's ControllerContext).

Built from ZooKeeper when a broker becomes controller, then kept current by the controller's events;
only the controller's event task touches it, so it needs no locks. It holds the live brokers with
their broker epochs (the czxid of /brokers/ids/<id>), each topic's id and replica assignment, each
partition's leadership with the znode version it was read or written at, and the topics queued for
deletion.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterable

from .zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's full replica set with the replicas a reassignment adds and removes (Kafka's
    ControllerContext.ReplicaAssignment): during a reassignment ``replicas`` is RS = TRS + ORS."""
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> list[int]:
        return [r for r in self.replicas if r not in self.removing]

    @property
    def origin_replicas(self) -> list[int]:
        return [r for r in self.replicas if r not in self.adding]

    def reassign_to(self, target: list[int]) -> "ReplicaAssignment":
        """Kafka's reassignTo: RS = target + the origin replicas not in it, from the original replicas."""
        origin = self.origin_replicas
        full = list(dict.fromkeys(list(target) + origin))
        return ReplicaAssignment(tuple(full), tuple(r for r in full if r not in origin),
                                 tuple(r for r in full if r not in target))

    def revert(self) -> "ReplicaAssignment":
        """Kafka's revertReassignment: back to the original replicas."""
        return ReplicaAssignment(tuple(self.origin_replicas))


@dataclass
class PartitionLeadership:
    """A partition's state znode as last read or written: the next write is conditional on ``zk_version``."""
    state: LeaderIsrAndControllerEpoch
    zk_version: int


class ControllerContext:
    def __init__(self) -> None:
        self.epoch = 0               # the controller epoch we hold (0 before the first election)
        self.epoch_zk_version = -1   # /controller_epoch's znode version: fences our ZooKeeper writes
        self.live_brokers: dict[int, BrokerInfo] = {}
        self.broker_epochs: dict[int, int] = {}
        self.shutting_down_broker_ids: set[int] = set()
        # replicas a live broker answered KAFKA_STORAGE_ERROR for: their log dir is offline (KIP-112)
        self.replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.assignments: dict[str, dict[int, list[int]]] = {}
        self.leaderships: dict[TopicPartition, PartitionLeadership] = {}
        self.topics_to_be_deleted: set[str] = set()
        # reassignments in progress: partition -> (adding replicas, removing replicas); assignments hold RS
        self.reassigning: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def reset(self) -> None:
        """Forget everything but the epoch (on resignation)."""
        epoch, version = self.epoch, self.epoch_zk_version
        self.__init__()
        self.epoch, self.epoch_zk_version = epoch, version

    # --- brokers ---------------------------------------------------------------------------------------
    def add_live_broker(self, info: BrokerInfo, broker_epoch: int) -> None:
        self.live_brokers[info.broker_id] = info
        self.broker_epochs[info.broker_id] = broker_epoch
        self.replicas_on_offline_dirs.pop(info.broker_id, None)  # (re)started: its dirs are asked again

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.live_brokers.pop(broker_id, None)
            self.broker_epochs.pop(broker_id, None)
            self.shutting_down_broker_ids.discard(broker_id)
            self.replicas_on_offline_dirs.pop(broker_id, None)

    @property
    def live_broker_ids(self) -> set[int]:
        """Live brokers, including those shutting down (Kafka's liveOrShuttingDownBrokerIds)."""
        return set(self.live_brokers)

    def is_replica_online(self, broker_id: int, partition: TopicPartition | None = None,
                          include_shutting_down: bool = False) -> bool:
        """A replica is online when its broker is live, its log dir is not offline (given a partition) and,
        unless asked, its broker is not shutting down (Kafka's isReplicaOnline)."""
        if broker_id not in self.live_brokers:
            return False
        if partition is not None and partition in self.replicas_on_offline_dirs.get(broker_id, ()):
            return False
        return include_shutting_down or broker_id not in self.shutting_down_broker_ids

    def brokers_with_offline_replica(self, partition: TopicPartition) -> set[int]:
        """Live brokers whose replica of ``partition`` sits in an offline log dir: never its leader."""
        return {b for b, partitions in self.replicas_on_offline_dirs.items() if partition in partitions}

    def topic_name(self, topic_id: "uuid.UUID") -> str | None:
        return next((name for name, known in self.topic_ids.items() if known == topic_id), None)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.partitions_with_leaders() if self.leaderships[tp].state.leader == broker_id]

    def broker_epoch(self, broker_id: int) -> int:
        return self.broker_epochs.get(broker_id, -1)

    # --- topics and assignments ------------------------------------------------------------------------
    @property
    def all_topics(self) -> set[str]:
        return set(self.assignments)

    def add_topic(self, topic: str, assignment: TopicAssignment) -> None:
        self.assignments[topic] = {p: list(r) for p, r in assignment.partitions.items()}
        for p in assignment.partitions:
            adding = tuple(assignment.adding_replicas.get(p, ()))
            removing = tuple(assignment.removing_replicas.get(p, ()))
            if adding or removing:
                self.reassigning[(topic, p)] = (adding, removing)
        if assignment.topic_id is not None:
            self.topic_ids[topic] = assignment.topic_id

    def add_partitions(self, topic: str, partitions: dict[int, list[int]]) -> None:
        """New partitions of an existing topic (their leadership comes with their first election)."""
        self.assignments.setdefault(topic, {}).update({p: list(r) for p, r in partitions.items()})

    def remove_topic(self, topic: str) -> None:
        for partition in self.assignments.pop(topic, {}):
            self.leaderships.pop((topic, partition), None)
            self.reassigning.pop((topic, partition), None)
        self.topic_ids.pop(topic, None)
        self.topics_to_be_deleted.discard(topic)

    def replicas(self, partition: TopicPartition) -> list[int]:
        topic, index = partition
        return self.assignments.get(topic, {}).get(index, [])

    def full_assignment(self, partition: TopicPartition) -> ReplicaAssignment:
        adding, removing = self.reassigning.get(partition, ((), ()))
        return ReplicaAssignment(tuple(self.replicas(partition)), adding, removing)

    def set_full_assignment(self, partition: TopicPartition, assignment: ReplicaAssignment) -> None:
        topic, index = partition
        self.assignments.setdefault(topic, {})[index] = list(assignment.replicas)
        if assignment.is_being_reassigned:
            self.reassigning[partition] = (assignment.adding, assignment.removing)
        else:
            self.reassigning.pop(partition, None)

    def partitions_being_reassigned(self) -> list[TopicPartition]:
        return sorted(self.reassigning)

    def is_topic_being_reassigned(self, topic: str) -> bool:
        return any(tp[0] == topic for tp in self.reassigning)

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [tp for topic in sorted(self.assignments) for tp in self.partitions_for_topic(topic)]

    def partitions_on_brokers(self, broker_ids: Iterable[int]) -> list[TopicPartition]:
        """Partitions with a replica on any of the brokers."""
        wanted = set(broker_ids)
        return [tp for tp in self.all_partitions() if wanted.intersection(self.replicas(tp))]

    # --- leadership ------------------------------------------------------------------------------------
    def put_leadership(self, partition: TopicPartition, state: LeaderIsrAndControllerEpoch, zk_version: int) -> None:
        self.leaderships[partition] = PartitionLeadership(state, zk_version)

    def leadership(self, partition: TopicPartition) -> PartitionLeadership | None:
        return self.leaderships.get(partition)

    def partitions_with_leaders(self) -> list[TopicPartition]:
        """Partitions that have a state znode (whatever their leader)."""
        return [tp for tp in self.all_partitions() if tp in self.leaderships]

    def partitions_needing_election(self) -> list[TopicPartition]:
        """New partitions (no state yet) and offline ones (leader not live), outside topics being deleted:
        what Kafka's triggerOnlinePartitionStateChange tries to bring online."""
        out = []
        for tp in self.all_partitions():
            if tp[0] in self.topics_to_be_deleted:
                continue
            leadership = self.leaderships.get(tp)
            if leadership is None or not self.is_replica_online(leadership.state.leader, tp):
                out.append(tp)
        return out

    def partitions_with_replicas_in_isr_of(self, broker_ids: Iterable[int]) -> list[TopicPartition]:
        """Partitions led by, or with an ISR member among, the brokers."""
        wanted = set(broker_ids)
        out = []
        for tp in self.partitions_with_leaders():
            state = self.leaderships[tp].state
            if state.leader in wanted or wanted.intersection(state.isr):
                out.append(tp)
        return out

    # --- deletion --------------------------------------------------------------------------------------
    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(t for t in topics if t in self.assignments)

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

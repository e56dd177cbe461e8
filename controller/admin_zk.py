"""AdminZkClient: topic creation and deletion requests, written to ZooKeeper for the controller to act on.

What a broker's CreateTopics, DeleteTopics and Metadata auto-creation call (Kafka's ZkAdminManager +
AdminZkClient). Creating a topic only validates and writes ``/config/topics/<t>`` and
``/brokers/topics/<t>``; the controller sees the new child of /brokers/topics, creates the partition
states and tells the brokers. Adding partitions only rewrites ``/brokers/topics/<t>`` (the controller watches it). Deleting only
writes ``/admin/delete_topics/<t>``.

Synchronous (ZooKeeper round trips): the broker runs these in an executor. Errors are
``odradek.protocol.errors`` classes, ready to be answered as they are.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any, Mapping, Sequence

# The topic-level config table is the broker's; it is a leaf module (no broker machinery comes with it).
from ..protocol.errors import (InvalidConfigError, InvalidPartitionsError,
                               InvalidReplicaAssignmentError, InvalidRequestError, InvalidTopicError,
                               ReassignmentInProgressError, TopicAlreadyExistsError, TopicDeletionDisabledError,
                               UnknownTopicOrPartitionError)
from .replica_assignment import (
    RackAwareMode, assign_replicas_to_brokers, check_fits_in_a_znode, racks_for_assignment, validate_replica_assignment,
)
from .zk_client import KafkaZkClient, TopicExistsError
from .zk_data import DeleteTopicsZNode, TopicAssignment

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
NO_NUM_PARTITIONS = -1       # CreateTopics: "use the broker's num.partitions"
NO_REPLICATION_FACTOR = -1   # CreateTopics: "use the broker's default.replication.factor"


def validate_topic_name(topic: str) -> None:
    """Kafka's Topic.validate: InvalidTopicError with Kafka's messages."""
    if not topic:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
                                f"characters, topic name: {topic}")
    if not _LEGAL_TOPIC_NAME.fullmatch(topic):
        raise InvalidTopicError(f'Topic name "{topic}" is illegal, it contains a character other than '
                                "ASCII alphanumerics, '.', '_' and '-'")


def _is_legal_topic_name(topic: str) -> bool:
    try:
        validate_topic_name(topic)
    except InvalidTopicError:
        return False
    return True


def topics_collide(a: str, b: str) -> bool:
    """'.' and '_' map to the same metric names, so ``a.b`` and ``a_b`` cannot both exist."""
    return a.replace(".", "_") == b.replace(".", "_")


class AdminZkClient:
    def __init__(self, zk: KafkaZkClient, config: Any) -> None:
        self.zk = zk
        self.config = config

    # --- creation --------------------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int | None, replication_factor: int | None,
                     configs: Mapping[str, str | None] | None = None,
                     replica_assignment: Mapping[int, Sequence[int]] | None = None,
                     validate_only: bool = False) -> dict[int, list[int]]:
        """Validate and (unless ``validate_only``) create a topic; returns its replica assignment.

        ``partitions`` / ``replication_factor`` of -1 or None mean the broker defaults (num.partitions,
        default.replication.factor); with a ``replica_assignment`` both must be unset, as in Kafka.
        """
        configs = dict(configs or {})
        # Kafka 2.8's order (ZkAdminManager.createTopics, then validateTopicCreate): an existing topic, null
        # configs, counts beside an assignment, the assignment itself, and only then the name
        if _is_legal_topic_name(topic) and self.zk.topic_exists(topic):  # an illegal name cannot exist
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        null_configs = [k for k, v in configs.items() if v is None]
        if null_configs:
            raise InvalidRequestError(f"Null value not supported for topic configs : {','.join(null_configs)}")
        partitions = NO_NUM_PARTITIONS if partitions is None else partitions
        replication_factor = NO_REPLICATION_FACTOR if replication_factor is None else replication_factor
        if replica_assignment:
            if partitions != NO_NUM_PARTITIONS or replication_factor != NO_REPLICATION_FACTOR:
                raise InvalidRequestError("Both numPartitions or replicationFactor and replicasAssignments were "
                                          "set. Both cannot be used at the same time.")
            assignment = {int(p): [int(b) for b in r] for p, r in replica_assignment.items()}
        else:
            if partitions == NO_NUM_PARTITIONS:
                partitions = self.config.get("num.partitions")
            if replication_factor == NO_REPLICATION_FACTOR:
                replication_factor = self.config.get("default.replication.factor")
            live = self.zk.get_all_brokers()
            # as Kafka's ZkAdminManager: the brokers' racks as they are (some without one: refused)
            assignment = assign_replicas_to_brokers(sorted(live), partitions, replication_factor,
                                                    racks={b: info.rack for b, info in live.items()})
        validate_topic_name(topic)
        self._check_topic_is_new(topic)
        validate_replica_assignment(assignment)
        errors = self.config.validate_topic_overrides(configs)
        if errors:
            raise InvalidConfigError(errors[0])
        if validate_only:
            return assignment
        try:
            self.zk.create_topic_assignment(topic, TopicAssignment(assignment, uuid.uuid4()),
                                            {k: str(v) for k, v in configs.items()})
        except TopicExistsError as e:
            raise TopicAlreadyExistsError(str(e)) from None
        log.info("Creating topic %s with configuration %s and initial partition assignment %s",
                 topic, configs, assignment)
        return assignment

    def _check_topic_is_new(self, topic: str) -> None:
        """Kafka's validateTopicCreate: not marked for deletion, not existing, no '.'/'_' collision."""
        if self.zk.get_data(DeleteTopicsZNode.topic_path(topic))[1] is not None:
            raise TopicAlreadyExistsError(f"Topic '{topic}' is marked for deletion.")
        if self.zk.topic_exists(topic):
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        if "." in topic or "_" in topic:
            existing = self.zk.get_all_topics()
            if topic in existing:
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
            colliding = [t for t in existing if topics_collide(topic, t)]
            if colliding:
                raise InvalidTopicError(f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}")

    # --- new partitions --------------------------------------------------------------------------------
    def add_partitions(self, topic: str, new_count: int,
                       replica_assignment: Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None = None,
                       validate_only: bool = False) -> dict[int, list[int]]:
        """Grow ``topic`` to ``new_count`` partitions; returns the whole new assignment (Kafka's
        AdminZkClient.addPartitions with ZkAdminManager.createPartitions' checks).

        ``replica_assignment`` gives the new partitions' replicas: a list in partition order (as a
        CreatePartitions request does) or a partition -> replicas mapping. Without it the new partitions
        continue the round-robin of the existing ones from the broker of partition 0's first replica.
        """
        if not _is_legal_topic_name(topic):  # no topic has such a name (and it may not even be a znode path)
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        while True:
            if self.zk.get_data(DeleteTopicsZNode.topic_path(topic))[1] is not None:
                raise InvalidTopicError("The topic is queued for deletion.")  # (Kafka's KafkaApis check)
            found = self.zk.get_topic_assignments_with_versions([topic])
            if topic not in found:
                raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
            current, version = found[topic]
            proposed = self._new_partitions(topic, current, new_count, replica_assignment)
            if validate_only:
                return {**current.partitions, **proposed}
            log.info("Creating %d partitions for '%s' with the following replica assignment: %s.", len(proposed),
                     topic, proposed)
            grown = TopicAssignment({**current.partitions, **proposed}, current.topic_id, current.adding_replicas,
                                    current.removing_replicas)
            # Conditional on the version read (Kafka writes unconditionally): two concurrent increases
            # cannot overwrite each other's partitions; the loser validates again against the winner's.
            if self.zk.set_topic_assignment(topic, grown, version) is not None:
                return dict(grown.partitions)

    def _new_partitions(self, topic: str, current: TopicAssignment, new_count: int,
                        replica_assignment: Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None
                        ) -> dict[int, list[int]]:
        existing = current.partitions
        if current.adding_replicas or current.removing_replicas:
            raise ReassignmentInProgressError(f"A partition reassignment is in progress for the topic '{topic}'.")
        if 0 not in existing:
            raise InvalidReplicaAssignmentError(f"Unexpected existing replica assignment for topic '{topic}', "
                                                f"partition id 0 is missing. Assignment: {existing}")
        to_add = new_count - len(existing)
        if to_add <= 0:
            raise InvalidPartitionsError(f"The number of partitions for a topic can only be increased. Topic {topic} "
                                         f"currently has {len(existing)} partitions, {new_count} would not be an "
                                         "increase.")
        replication_factor = len(existing[0])
        check_fits_in_a_znode(new_count, replication_factor)
        registered = self.zk.get_all_brokers()
        live = sorted(registered)
        if replica_assignment is None:
            # Kafka's start index: the first live broker at or above partition 0's preferred replica
            start = next((i for i, b in enumerate(live) if b >= existing[0][0]), 0)
            racks = racks_for_assignment({b: info.rack for b, info in registered.items()}, RackAwareMode.ENFORCED)
            return assign_replicas_to_brokers(live, to_add, replication_factor, fixed_start_index=start,
                                              start_partition_id=len(existing), racks=racks)
        if isinstance(replica_assignment, Mapping):
            proposed = {int(p): [int(b) for b in r] for p, r in replica_assignment.items()}
        else:
            proposed = {len(existing) + i: [int(b) for b in r] for i, r in enumerate(replica_assignment)}
        unknown = sorted({b for r in proposed.values() for b in r} - set(live))
        if unknown:
            raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: "
                                                f"{', '.join(map(str, unknown))}.")
        if len(proposed) != to_add or sorted(proposed) != list(range(len(existing), new_count)):
            raise InvalidReplicaAssignmentError(f"Increasing the number of partitions by {to_add} but "
                                                f"{len(proposed)} assignments provided.")
        for p, replicas in sorted(proposed.items()):
            if not replicas:
                raise InvalidReplicaAssignmentError(f"Cannot have replication factor of 0 for partition id {p}.")
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignmentError("Duplicate brokers not allowed in replica assignment: "
                                                    f"{', '.join(map(str, replicas))} for partition id {p}.")
            if len(replicas) != replication_factor:
                raise InvalidReplicaAssignmentError(
                    f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} "
                    f"while partition {p} has {len(replicas)}.")
        return proposed

    # --- deletion --------------------------------------------------------------------------------------
    def delete_topic(self, topic: str) -> None:
        """Mark a topic for deletion; the controller deletes it. Marking twice is not an error (Kafka)."""
        if not self.config.get("delete.topic.enable"):
            # (A DeleteTopics handler answers v0-v2 requests with INVALID_REQUEST instead, as Kafka does.)
            raise TopicDeletionDisabledError("Topic deletion is disabled.")
        if not _is_legal_topic_name(topic) or not self.zk.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        self.zk.mark_topic_for_deletion([topic])
        log.info("Topic %s is marked for deletion", topic)

"""Replica placement for new topics and partitions: Kafka's AdminUtils.assignReplicasToBrokers without racks.

Two goals (seed 001): spread the replicas evenly over the brokers, and spread the *preferred* leaders
(first replica of each partition) evenly too. Partition p's first replica is broker
``(p + start_index) mod n``; the other replicas follow at a distance of ``1 + (shift + j) mod (n - 1)``,
and ``shift`` grows by one every n partitions so that followers do not always sit next to their leader.
Both ``start_index`` and the initial shift are random unless a fixed start index is given (tests, tools).

Pure functions: nothing here reads ZooKeeper. Errors are Kafka's protocol errors, so a CreateTopics
handler can answer with them as they are.
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from ..protocol.errors import InvalidPartitionsError, InvalidReplicaAssignmentError, InvalidReplicationFactorError

Assignment = dict[int, list[int]]  # partition -> replicas, preferred leader first


# ZooKeeper's jute.maxbuffer default: a topic's assignment is one znode, which ZooKeeper refuses beyond it.
ZNODE_MAX_BYTES = 0xFFFFF


def check_fits_in_a_znode(num_partitions: int, replication_factor: int) -> None:
    """Refuse an assignment whose JSON could not be stored (each entry takes at least ``"p":[b],``), before
    building it: a request asking for 2**31 - 1 partitions would otherwise take the broker's memory and
    minutes (Kafka 2.8 builds it, then ZooKeeper refuses the write)."""
    if num_partitions * (6 + 2 * replication_factor) > ZNODE_MAX_BYTES:
        raise InvalidPartitionsError(
            f"{num_partitions} partitions of {replication_factor} replicas would not fit in the topic's "
            f"ZooKeeper znode ({ZNODE_MAX_BYTES} bytes).")


def assign_replicas_to_brokers(broker_ids: Sequence[int], num_partitions: int, replication_factor: int,
                               fixed_start_index: int = -1, start_partition_id: int = -1,
                               rng: random.Random | None = None) -> Assignment:
    """Place ``num_partitions`` partitions of ``replication_factor`` replicas on ``broker_ids``.

    Brokers are taken in ascending id order (Kafka sorts the broker metadata first).
    ``start_partition_id`` > 0 continues an existing topic (new partitions). Raises
    InvalidPartitionsError / InvalidReplicationFactorError as Kafka does.
    """
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    brokers = sorted(broker_ids)
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    check_fits_in_a_znode(max(0, start_partition_id) + num_partitions, replication_factor)
    n = len(brokers)
    rng = rng or random
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.randrange(n)
    partition_id = max(0, start_partition_id)
    assignment: Assignment = {}
    for _ in range(num_partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start_index) % n
        replicas = [brokers[first]]
        replicas += [brokers[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        assignment[partition_id] = replicas
        partition_id += 1
    return assignment


def _replica_index(first_replica_index: int, shift: int, replica_index: int, n: int) -> int:
    # Never 0 steps away: the follower is always a different broker from the leader.
    return (first_replica_index + 1 + (shift + replica_index) % (n - 1)) % n


def validate_replica_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """A manual assignment (CreateTopics ``assignments``) checked as Kafka's validateTopicCreate does.

    Every partition has the same number of distinct replicas, at least one, and the partitions are
    0..n-1. Brokers are not checked for liveness (Kafka does not either for new topics).
    """
    if not assignment:
        raise InvalidReplicaAssignmentError("The replica assignment is empty.")
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1:
        raise InvalidReplicaAssignmentError("All partitions should have the same number of replicas")
    if sizes == {0}:
        raise InvalidReplicaAssignmentError("Every partition needs at least one replica")
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"Duplicate replica assignment found: {dict(assignment)}")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")

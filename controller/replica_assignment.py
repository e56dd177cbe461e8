"""Replica placement for new topics and partitions: Kafka's AdminUtils.assignReplicasToBrokers.

Two goals (seed 001): spread the replicas evenly over the brokers, and spread the *preferred* leaders
(first replica of each partition) evenly too. Partition p's first replica is broker
``(p + start_index) mod n``; the other replicas follow at a distance of ``1 + (shift + j) mod (n - 1)``,
and ``shift`` grows by one every n partitions so that followers do not always sit next to their leader.
Both ``start_index`` and the initial shift are random unless a fixed start index is given (tests, tools).

With racks (every broker has ``broker.rack``) the same round-robin runs over a *rack-alternated* broker
list (one broker of each rack in turn), the shift is scaled by the number of racks, and a follower is
skipped while its rack already holds a replica and some rack holds none (or while it holds one and some
broker holds none): replicas land on distinct racks whenever racks >= replication factor.

Pure functions: nothing here reads ZooKeeper. Errors are Kafka's protocol errors, so a CreateTopics
handler can answer with them as they are.
"""

from __future__ import annotations

import enum
import random
from typing import Iterator, Mapping, Sequence

from ..protocol.errors import (  # type: ignore[attr-defined]
    InvalidPartitionsError, InvalidReplicaAssignmentError, InvalidReplicationFactorError, UnknownServerError,
)

Assignment = dict[int, list[int]]  # partition -> replicas, preferred leader first


class AdminOperationError(UnknownServerError):  # type: ignore[misc, valid-type]
    """Kafka's AdminOperationException: not an API error, so a broker answers UNKNOWN_SERVER_ERROR."""


class RackAwareMode(enum.Enum):
    """Kafka's RackAwareMode: what to do when only some brokers have a rack."""
    ENFORCED = "enforced"  # refuse
    SAFE = "safe"          # place without racks
    DISABLED = "disabled"  # ignore racks altogether (--disable-rack-aware)


NOT_ALL_RACKS = "Not all brokers have rack information for replica rack aware assignment."
NOT_ALL_RACKS_HINT = ("Not all brokers have rack information. Add --disable-rack-aware in command line to make "
                      "replica assignment without rack information.")


def racks_for_assignment(racks: Mapping[int, str | None], mode: RackAwareMode) -> dict[int, str]:
    """Kafka's getBrokerMetadatas: the racks placement should use (empty: rack-unaware) for brokers given as
    id -> rack (None when the broker has none)."""
    with_rack = {b: r for b, r in racks.items() if r is not None}
    if mode is RackAwareMode.DISABLED or not with_rack:
        return {}
    if len(with_rack) < len(racks):
        if mode is RackAwareMode.ENFORCED:
            raise AdminOperationError(NOT_ALL_RACKS_HINT)
        return {}
    return with_rack


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
                               rng: random.Random | None = None,
                               racks: Mapping[int, str | None] | None = None) -> Assignment:
    """Place ``num_partitions`` partitions of ``replication_factor`` replicas on ``broker_ids``.

    Brokers are taken in ascending id order (Kafka sorts the broker metadata first).
    ``start_partition_id`` > 0 continues an existing topic (new partitions). ``racks`` (broker id -> rack)
    makes the placement rack-aware when any of ``broker_ids`` has a rack; then all must have one
    (AdminOperationError otherwise, as Kafka). Raises InvalidPartitionsError /
    InvalidReplicationFactorError as Kafka does.
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
    rack_of = {b: (racks or {}).get(b) for b in brokers}
    if any(r is not None for r in rack_of.values()):
        if any(r is None for r in rack_of.values()):
            raise AdminOperationError(NOT_ALL_RACKS)
        return _assign_rack_aware({b: r for b, r in rack_of.items() if r is not None}, num_partitions,
                                  replication_factor, fixed_start_index, start_partition_id, rng)
    n = len(brokers)
    assignment: Assignment = {}
    for partition_id, first, shift in _round_robin(n, num_partitions, fixed_start_index, start_partition_id, rng):
        replicas = [brokers[first]]
        replicas += [brokers[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        assignment[partition_id] = replicas
    return assignment


def _round_robin(n: int, num_partitions: int, fixed_start_index: int, start_partition_id: int,
                 rng: random.Random | None) -> Iterator[tuple[int, int, int]]:
    """(partition id, index of its first replica, replica shift) for each new partition, over n brokers."""
    rng_ = rng or random
    start_index = fixed_start_index if fixed_start_index >= 0 else rng_.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else rng_.randrange(n)
    partition_id = max(0, start_partition_id)
    for _ in range(num_partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        yield partition_id, (partition_id + start_index) % n, shift
        partition_id += 1


def _assign_rack_aware(rack_of: Mapping[int, str], num_partitions: int, replication_factor: int,
                       fixed_start_index: int, start_partition_id: int, rng: random.Random | None) -> Assignment:
    arranged = rack_alternated_brokers(rack_of)
    n, num_racks = len(arranged), len(set(rack_of.values()))
    assignment: Assignment = {}
    for partition_id, first, shift in _round_robin(n, num_partitions, fixed_start_index, start_partition_id, rng):
        leader = arranged[first]
        replicas, racks_used, k = [leader], {rack_of[leader]}, 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # a rack (then a broker) is used twice only once every rack (broker) holds a replica
                if (rack not in racks_used or len(racks_used) == num_racks) and \
                        (broker not in replicas or len(replicas) == n):
                    replicas.append(broker)
                    racks_used.add(rack)
                    break
        assignment[partition_id] = replicas
    return assignment


def rack_alternated_brokers(rack_of: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: racks in name order, each rack's brokers in id order, one broker
    of each rack in turn (racks 'a': 0,1 and 'b': 2 give 0, 2, 1)."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(rack_of):
        by_rack.setdefault(rack_of[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max(len(c) for c in columns)
    return [c[i] for i in range(depth) for c in columns if i < len(c)]


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

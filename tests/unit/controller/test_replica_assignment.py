"""Kafka's rack-unaware replica placement: known outputs, spread of leaders and replicas, validation."""

import random
from collections import Counter

import pytest

from odradek.controller.replica_assignment import assign_replicas_to_brokers, validate_replica_assignment
from odradek.protocol.errors import InvalidPartitionsError, InvalidReplicaAssignmentError, InvalidReplicationFactorError


def test_kafka_known_assignment_for_five_brokers_start_index_0():
    # AdminTest.testReplicaAssignment in Kafka: 5 brokers, 10 partitions, RF 3, fixed start index 0
    expected = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0) == expected


def test_broker_ids_are_sorted_and_need_not_be_contiguous():
    assert assign_replicas_to_brokers([30, 10, 20], 3, 2, fixed_start_index=0) == \
        {0: [10, 20], 1: [20, 30], 2: [30, 10]}


def test_start_index_and_shift_follow_the_fixed_index():
    # start index 1: partition 0 starts on broker index 1; shift 1 puts its follower two steps on
    assert assign_replicas_to_brokers([0, 1, 2, 3], 4, 2, fixed_start_index=1) == \
        {0: [1, 3], 1: [2, 0], 2: [3, 1], 3: [0, 2]}


def test_new_partitions_continue_from_start_partition_id():
    whole = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0)
    tail = assign_replicas_to_brokers([0, 1, 2, 3, 4], 5, 3, fixed_start_index=0, start_partition_id=5)
    # the shift restarts from the start index, as in Kafka's addPartitions: only the leaders line up
    assert list(tail) == [5, 6, 7, 8, 9]
    assert [r[0] for r in tail.values()] == [whole[p][0] for p in range(5, 10)]


@pytest.mark.parametrize("brokers,partitions,rf", [(3, 6, 3), (5, 50, 3), (4, 12, 2), (6, 60, 3), (1, 4, 1)])
def test_preferred_leaders_and_replicas_are_spread_evenly(brokers, partitions, rf):
    rng = random.Random(brokers * 1000 + partitions)
    assignment = assign_replicas_to_brokers(list(range(brokers)), partitions, rf, rng=rng)
    assert sorted(assignment) == list(range(partitions))
    assert all(len(set(r)) == rf for r in assignment.values())
    leaders = Counter(r[0] for r in assignment.values())
    replicas = Counter(b for r in assignment.values() for b in r)
    assert max(leaders.values()) - min(leaders.values()) <= 1 and len(leaders) == brokers
    assert max(replicas.values()) - min(replicas.values()) <= 1


def test_random_start_differs_between_calls():
    seen = {tuple(assign_replicas_to_brokers([0, 1, 2, 3, 4], 1, 2, rng=random.Random(seed))[0])
            for seed in range(50)}
    assert len(seen) > 5


def test_followers_are_not_always_the_leaders_neighbour():
    # the shift grows every n partitions: partition p and p+n have the same leader, different followers
    a = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 2, fixed_start_index=0)
    assert a[0][0] == a[5][0] and a[0][1] != a[5][1]


def test_invalid_counts_raise_kafka_errors():
    with pytest.raises(InvalidPartitionsError):
        assign_replicas_to_brokers([0, 1], 0, 1)
    with pytest.raises(InvalidReplicationFactorError, match="larger than 0"):
        assign_replicas_to_brokers([0, 1], 3, 0)
    with pytest.raises(InvalidReplicationFactorError, match="Replication factor: 3 larger than available brokers: 2."):
        assign_replicas_to_brokers([0, 1], 3, 3)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers([], 1, 1)


def test_manual_assignment_validation():
    validate_replica_assignment({0: [0, 1, 2], 1: [1, 2, 3]})
    with pytest.raises(InvalidReplicaAssignmentError, match="same number of replicas"):
        validate_replica_assignment({0: [0, 1], 1: [0]})
    with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate"):
        validate_replica_assignment({0: [0, 0]})
    with pytest.raises(InvalidReplicaAssignmentError, match="consecutive"):
        validate_replica_assignment({0: [0], 2: [1]})
    with pytest.raises(InvalidReplicaAssignmentError):
        validate_replica_assignment({0: []})
    with pytest.raises(InvalidReplicaAssignmentError):
        validate_replica_assignment({})

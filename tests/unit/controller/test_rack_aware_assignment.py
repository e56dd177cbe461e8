"""Kafka's rack-aware replica placement: the rack-alternated broker list, Kafka's own expected assignments,
distinct racks per partition, and the errors when only some brokers have a rack."""

import random
from collections import Counter

import pytest

from odradek.controller.replica_assignment import (
    AdminOperationError, RackAwareMode, assign_replicas_to_brokers, rack_alternated_brokers, racks_for_assignment,
)

# the broker -> rack map of Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
KAFKA_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
# the map most of AdminRackAwareTest's other cases use
SIX_IN_THREE = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def place(racks, partitions, rf, **kwargs):
    return assign_replicas_to_brokers(list(racks), partitions, rf, racks=racks, **kwargs)


def test_rack_alternated_list_matches_kafka():
    # expected lists from AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    assert rack_alternated_brokers(KAFKA_RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({b: r for b, r in KAFKA_RACKS.items() if b != 5}) == [0, 3, 1, 4, 2]


def test_kafka_exact_assignment_for_fixed_start_index_and_shift():
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers: 7 partitions, RF 3, fixed
    # start index 0 (so the replica shift starts at 0 and becomes 1 at partition 6, which is not 0,3,1)
    expected = {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2]}
    assert place(KAFKA_RACKS, 7, 3, fixed_start_index=0, start_partition_id=0) == expected


def test_new_partitions_continue_the_rack_aware_round_robin():
    whole = place(KAFKA_RACKS, 7, 3, fixed_start_index=0)
    assert place(KAFKA_RACKS, 1, 3, fixed_start_index=0, start_partition_id=6) == {6: whole[6]}


def racks_per_partition(assignment, racks):
    return {p: {racks[b] for b in replicas} for p, replicas in assignment.items()}


@pytest.mark.parametrize("racks,partitions,rf,start", [
    (SIX_IN_THREE, 6, 3, 2), (SIX_IN_THREE, 6, 3, -1), (SIX_IN_THREE, 13, 3, 0), (SIX_IN_THREE, 12, 2, -1),
    ({0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, -1),
    ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, -1),
    ({0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1", 6: "rack1", 7: "rack2", 8: "rack2",
      9: "rack3", 10: "rack1", 11: "rack3"}, 96, 3, -1),
])
def test_every_partition_on_distinct_racks_when_racks_cover_the_factor(racks, partitions, rf, start):
    # the configurations of Kafka's AdminRackAwareTest (checkReplicaDistribution's rack check)
    assignment = place(racks, partitions, rf, fixed_start_index=start)
    assert sorted(assignment) == list(range(partitions))
    for p, replicas in assignment.items():
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == rf, (p, replicas)


def test_leaders_and_replicas_even_when_racks_are_even():
    # AdminRackAwareTest.testAssignmentWithRackAware: 6 brokers in 3 racks of 2, 6 partitions of 3 replicas
    assignment = place(SIX_IN_THREE, 6, 3, fixed_start_index=2)
    assert Counter(r[0] for r in assignment.values()) == Counter({b: 1 for b in SIX_IN_THREE})
    assert Counter(b for r in assignment.values() for b in r) == Counter({b: 3 for b in SIX_IN_THREE})


def test_more_replicas_than_racks_uses_every_rack():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for replicas in place(racks, 6, 5, rng=random.Random(7)).values():  # AdminRackAwareTest.testMoreReplicasThanRacks
        assert len(set(replicas)) == 5 and {racks[b] for b in replicas} == {"rack1", "rack2", "rack3"}


def test_skips_brokers_already_holding_a_replica():
    # AdminRackAwareTest.testSkipBrokerWithReplicaAlreadyAssigned: RF 4 over 5 brokers in 3 racks
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    for replicas in place(racks, 6, 4, fixed_start_index=2).values():
        assert len(set(replicas)) == 4


def test_one_rack_still_spreads_leaders():
    racks = {b: "rack1" for b in range(6)}
    assignment = place(racks, 6, 3, rng=random.Random(1))
    assert sorted(r[0] for r in assignment.values()) == list(range(6))


def test_no_racks_is_the_rack_unaware_placement():
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0, racks={b: None for b in range(5)}) \
        == assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0)


def test_some_brokers_without_a_rack_is_refused():
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information for replica rack aware"):
        assign_replicas_to_brokers([0, 1, 2], 3, 2, racks={0: "a", 1: "b"})


def test_rack_aware_modes():
    mixed = {0: "a", 1: None, 2: "b"}
    with pytest.raises(AdminOperationError, match="Add --disable-rack-aware in command line"):
        racks_for_assignment(mixed, RackAwareMode.ENFORCED)
    assert racks_for_assignment(mixed, RackAwareMode.SAFE) == {}
    assert racks_for_assignment({0: "a", 1: "b"}, RackAwareMode.DISABLED) == {}
    assert racks_for_assignment({0: "a", 1: "b"}, RackAwareMode.ENFORCED) == {0: "a", 1: "b"}
    assert racks_for_assignment({0: None, 1: None}, RackAwareMode.ENFORCED) == {}

"""The pure leader-election functions (Kafka's PartitionLeaderElectionAlgorithms and state changes)."""

from odradek.controller import leader_election as le
from odradek.controller.zk_data import LeaderIsrAndControllerEpoch as S


def test_offline_leader_is_first_live_isr_replica_in_assignment_order():
    assert le.offline_partition_leader([1, 2, 3], [3, 2], {1, 2, 3}, False) == 2
    assert le.offline_partition_leader([1, 2, 3], [1, 2, 3], {2, 3}, False) == 2
    assert le.offline_partition_leader([1, 2, 3], [1], {2, 3}, False) is None


def test_unclean_election_takes_any_live_replica_only_when_enabled():
    assert le.offline_partition_leader([1, 2, 3], [1], {3, 2}, True) == 2
    assert le.offline_partition_leader([1, 2, 3], [1], {3, 2}, False) is None
    assert le.offline_partition_leader([1, 2, 3], [1], set(), True) is None
    # a clean choice still wins over an unclean one
    assert le.offline_partition_leader([1, 2, 3], [3], {2, 3}, True) == 3


def test_other_strategies():
    assert le.preferred_replica_leader([1, 2], [1, 2], {1, 2}) == 1
    assert le.preferred_replica_leader([1, 2], [2], {1, 2}) is None
    assert le.preferred_replica_leader([1, 2], [1, 2], {2}) is None
    assert le.preferred_replica_leader([], [1], {1}) is None
    assert le.reassign_partition_leader([4, 5], [5, 1], {4, 5}) == 5
    assert le.controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == 2
    assert le.controlled_shutdown_leader([1, 2], [1, 2], {1, 2}, {1, 2}) is None


def test_initial_state_of_a_new_partition():
    assert le.initial_state([3, 1, 2], {1, 2, 3}, 7) == S(3, 0, [3, 1, 2], 7)
    assert le.initial_state([3, 1, 2], {1, 2}, 7) == S(1, 0, [1, 2], 7)
    assert le.initial_state([3], {1, 2}, 7) is None


def test_offline_election_state_keeps_live_isr_or_isolates_an_unclean_leader():
    state = S(1, 4, [1, 2, 3], 1)
    assert le.offline_election_state(state, [1, 2, 3], {2, 3}, False, 2) == S(2, 5, [2, 3], 2)
    lagging = S(1, 4, [1], 1)
    assert le.offline_election_state(lagging, [1, 2, 3], {2, 3}, False, 2) is None
    assert le.offline_election_state(lagging, [1, 2, 3], {2, 3}, True, 2) == S(2, 5, [2], 2)


def test_removing_replicas_never_empties_the_isr():
    assert le.remove_replicas_from_isr(S(1, 0, [1, 2, 3], 1), [3], 2) == S(1, 1, [1, 2], 2)
    assert le.remove_replicas_from_isr(S(1, 0, [1, 2], 1), [1], 2) == S(-1, 1, [2], 2)
    assert le.remove_replicas_from_isr(S(1, 0, [1, 2], 1), [1, 2], 2) == S(-1, 1, [2], 2)
    assert le.remove_replicas_from_isr(S(1, 0, [1], 1), [1], 2) == S(-1, 1, [1], 2)
    assert le.remove_replicas_from_isr(S(1, 0, [1, 2], 1), [3], 2) is None


def test_state_after_broker_failure():
    # leader died, another ISR member is live: clean election
    assert le.state_after_broker_failure(S(1, 3, [1, 2], 1), [1, 2, 3], {2, 3}, False, 5) == S(2, 4, [2], 5)
    # leader died, nobody eligible: leader -1, the last ISR member is kept (Kafka)
    assert le.state_after_broker_failure(S(1, 3, [1], 1), [1, 2], {2}, False, 5) == S(-1, 4, [1], 5)
    assert le.state_after_broker_failure(S(1, 3, [1, 3], 1), [1, 2, 3], {2}, False, 5) == S(-1, 4, [3], 5)
    # ... unless unclean election is on
    assert le.state_after_broker_failure(S(1, 3, [1], 1), [1, 2], {2}, True, 5) == S(2, 4, [2], 5)
    # a follower died: it leaves the ISR, the leader stays
    assert le.state_after_broker_failure(S(1, 3, [1, 2, 3], 1), [1, 2, 3], {1, 2}, False, 5) == S(1, 4, [1, 2], 5)
    # nothing to do
    assert le.state_after_broker_failure(S(1, 3, [1, 2], 1), [1, 2, 3], {1, 2}, False, 5) is None
    assert le.state_after_broker_failure(S(-1, 3, [1], 1), [1, 2], {2}, False, 5) is None


def test_controlled_shutdown_state_moves_leader_and_drops_shutting_down_brokers_from_isr():
    state = S(1, 3, [1, 2, 3], 1)
    assert le.controlled_shutdown_state(state, [1, 2, 3], {1, 2, 3}, {1}, 7) == S(2, 4, [2, 3], 7)
    assert le.controlled_shutdown_state(state, [1, 2, 3], {1, 3}, {1}, 7) == S(3, 4, [2, 3], 7)
    assert le.controlled_shutdown_state(S(1, 3, [1], 1), [1, 2], {1, 2}, {1}, 7) is None


def test_preferred_and_reassign_states_keep_the_isr():
    assert le.preferred_election_state(S(2, 3, [2, 1], 1), [1, 2], {1, 2}, 7) == S(1, 4, [2, 1], 7)
    assert le.preferred_election_state(S(1, 3, [1, 2], 1), [1, 2], {1, 2}, 7) is None  # already leads
    assert le.preferred_election_state(S(2, 3, [2], 1), [1, 2], {1, 2}, 7) is None     # not in the ISR
    assert le.reassign_election_state(S(1, 3, [1, 3], 1), [3, 4], {1, 3, 4}, 7) == S(3, 4, [1, 3], 7)
    assert le.reassign_election_state(S(1, 3, [1], 1), [3, 4], {1, 3, 4}, 7) is None

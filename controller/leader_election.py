"""Leader election as pure functions (Kafka's PartitionLeaderElectionAlgorithms and the state changes
the partition and replica state machines make with them).

Each ``*_leader`` function picks a leader from the assignment order, so that the preferred replica
(the first) wins whenever it is eligible; None means nobody is. The ``*_state`` functions turn a
partition's current state into the next one to write to ZooKeeper (leader epoch + 1, the writing
controller's epoch), or None when nothing changes.
"""

from __future__ import annotations

from typing import AbstractSet, Iterable, Sequence

from .zk_data import LeaderIsrAndControllerEpoch

NO_LEADER = -1              # LeaderAndIsr.NoLeader: the partition is offline
LEADER_DURING_DELETE = -2   # LeaderAndIsr.LeaderDuringDelete: UpdateMetadata's mark for a topic being deleted
NO_EPOCH = -1               # LeaderAndIsr.NoEpoch
EPOCH_DURING_DELETE = -2    # LeaderAndIsr.EpochDuringDelete: StopReplica's leader epoch for a deleted topic
INITIAL_LEADER_EPOCH = 0


# --- choosing a leader -------------------------------------------------------------------------------

def offline_partition_leader(assignment: Sequence[int], isr: Sequence[int], live: AbstractSet[int],
                             unclean_leader_election: bool) -> int | None:
    """First live replica of the assignment that is in the ISR; with unclean election, any live replica."""
    leader = next((r for r in assignment if r in live and r in isr), None)
    if leader is None and unclean_leader_election:
        leader = next((r for r in assignment if r in live), None)
    return leader


def reassign_partition_leader(reassignment: Sequence[int], isr: Sequence[int], live: AbstractSet[int]) -> int | None:
    """First live replica of the target assignment that is in the ISR."""
    return next((r for r in reassignment if r in live and r in isr), None)


def preferred_replica_leader(assignment: Sequence[int], isr: Sequence[int], live: AbstractSet[int]) -> int | None:
    """The preferred (first) replica, only if it is live and in the ISR."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_leader(assignment: Sequence[int], isr: Sequence[int], live: AbstractSet[int],
                               shutting_down: AbstractSet[int]) -> int | None:
    """First live ISR replica of the assignment that is not shutting down."""
    return next((r for r in assignment if r in live and r in isr and r not in shutting_down), None)


# --- the next state of a partition -------------------------------------------------------------------

def initial_state(assignment: Sequence[int], live: AbstractSet[int],
                  controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """A new partition: leader = first live replica, ISR = the live replicas; None if none is live."""
    live_replicas = [r for r in assignment if r in live]
    if not live_replicas:
        return None
    return LeaderIsrAndControllerEpoch(live_replicas[0], INITIAL_LEADER_EPOCH, live_replicas, controller_epoch)


def offline_election_state(state: LeaderIsrAndControllerEpoch, assignment: Sequence[int], live: AbstractSet[int],
                           unclean_leader_election: bool,
                           controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """Kafka's leaderForOffline: a new leader from the ISR (ISR keeps its live members), or after an
    unclean election a leader alone in its ISR; None when no replica is eligible."""
    leader = offline_partition_leader(assignment, state.isr, live, unclean_leader_election)
    if leader is None:
        return None
    isr = [r for r in state.isr if r in live] if leader in state.isr else [leader]
    return LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, isr, controller_epoch)


def remove_replicas_from_isr(state: LeaderIsrAndControllerEpoch, replicas: Iterable[int],
                             controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """Kafka's OfflineReplica transition, one replica after the other: each leaves the ISR unless it is
    the last member (the ISR is never empty, so the last in-sync replica is remembered), and a removed
    leader leaves the partition leaderless. None when neither leader nor ISR changes."""
    leader, isr = state.leader, list(state.isr)
    for replica in replicas:
        if len(isr) > 1:
            isr = [r for r in isr if r != replica]
        if replica == leader:
            leader = NO_LEADER
    if leader == state.leader and isr == state.isr:
        return None  # (Kafka would rewrite it with a new epoch; nothing would change but the epoch)
    return LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, isr, controller_epoch)


def state_after_broker_failure(state: LeaderIsrAndControllerEpoch, assignment: Sequence[int],
                               live: AbstractSet[int], unclean_leader_election: bool,
                               controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """What Kafka's onReplicasBecomeOffline writes for a partition once some brokers are gone.

    A partition whose leader died gets an offline election; if nobody is eligible, its dead replicas
    leave the ISR (keeping the last one) and the leader becomes -1. A partition whose leader lives
    loses its dead followers from the ISR. None when the partition is unaffected.
    """
    dead = [r for r in state.isr if r not in live]
    if state.leader in live:
        return remove_replicas_from_isr(state, dead, controller_epoch) if dead else None
    elected = offline_election_state(state, assignment, live, unclean_leader_election, controller_epoch)
    if elected is not None:
        return elected
    dead_replicas = ([state.leader] if state.leader not in (NO_LEADER, *dead) else []) + dead
    return remove_replicas_from_isr(state, dead_replicas, controller_epoch)


def controlled_shutdown_state(state: LeaderIsrAndControllerEpoch, assignment: Sequence[int], live: AbstractSet[int],
                              shutting_down: AbstractSet[int],
                              controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """Kafka's leaderForControlledShutdown: a leader from the live ISR that is not shutting down, and the
    shutting-down brokers leave the ISR; None when no other replica can lead (the broker keeps leading)."""
    leader = controlled_shutdown_leader(assignment, state.isr, live, shutting_down)
    if leader is None:
        return None
    isr = [r for r in state.isr if r not in shutting_down]
    return LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, isr, controller_epoch)


def preferred_election_state(state: LeaderIsrAndControllerEpoch, assignment: Sequence[int], live: AbstractSet[int],
                             controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """Kafka's leaderForPreferredReplica: the preferred replica leads, the ISR is unchanged; None when it
    cannot lead or already does."""
    leader = preferred_replica_leader(assignment, state.isr, live)
    if leader is None or leader == state.leader:
        return None
    return LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, list(state.isr), controller_epoch)


def reassign_election_state(state: LeaderIsrAndControllerEpoch, target: Sequence[int], live: AbstractSet[int],
                            controller_epoch: int) -> LeaderIsrAndControllerEpoch | None:
    """Kafka's leaderForReassign: a live ISR member of the target assignment leads, the ISR is unchanged."""
    leader = reassign_partition_leader(target, state.isr, live)
    if leader is None:
        return None
    return LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, list(state.isr), controller_epoch)

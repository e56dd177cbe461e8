"""Partition: one replicated partition as seen from this broker (Kafka's cluster/Partition).

It holds the local log, who leads at which leader epoch, the replica set and the ISR, and what the
leader knows of each follower (log end offset, last caught-up time). The controller drives it
through ``make_leader`` / ``make_follower`` (LeaderAndIsr); the replica manager appends and reads
through it; follower fetches move the high watermark (the smallest log end offset in the ISR) and
may expand the ISR, the periodic lag check shrinks it. ISR changes are only *proposed* here: the
ISR manager writes them to ZooKeeper and calls ``apply_isr`` once the write succeeded, as Kafka's
ZooKeeper-mode leader changes its ISR only after the conditional write. While a change is pending, the
high watermark counts the "maximal" ISR (Kafka 2.8, KIP-497): a replica being added already counts, since
ZooKeeper may list it and the controller elect it before the leader hears back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..protocol.errors import (  # type: ignore[attr-defined]
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from .log import Log, LogAppendInfo
from .log.cleaner.record_filter import require_keys
from .log.log_types import FetchDataInfo

NO_EPOCH = -1


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class ReplicaState:
    """What the leader knows of one follower, filled by its fetches (Kafka's cluster/Replica)."""
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_end_offset: int = 0
    last_fetch_ms: int = 0
    log_start_offset: int = -1  # as the follower's last fetch said (DeleteRecords waits on it)
    # its parked fetch was answered early because it did not hold this partition yet (ReplicaManager)
    woken_unfetched: bool = False

    def update_fetch_state(self, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        """Kafka's Replica.updateFetchState: a fetch from the leader's log end makes the follower
        caught up now; a fetch reaching the leader's end at the previous fetch, caught up then."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_end_offset = leader_end_offset
        self.last_fetch_ms = now_ms


class Partition:
    def __init__(self, topic: str, partition: int, local_broker_id: int, log: Log,
                 clock: Callable[[], int] = monotonic_ms, follower_fetch_ms: dict[int, int] | None = None) -> None:
        self.topic = topic
        # replica id -> when that follower last fetched from this broker (the replica manager's)
        self.follower_fetch_ms = follower_fetch_ms if follower_fetch_ms is not None else {}
        self.partition = partition
        self.key = (topic, partition)  # asked several times per request: one tuple, made once
        self.local_broker_id = local_broker_id
        self.log = log
        self.clock = clock
        self.leader_id: int = -1
        self.leader_epoch: int = NO_EPOCH
        self.leader_epoch_start_offset: int = 0
        self.partition_epoch: int = -1  # the state znode's version (Kafka's zkVersion)
        self.controller_epoch: int = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.replica_states: dict[int, ReplicaState] = {}
        self.pending_isr: list[int] | None = None  # the ISR being written to ZooKeeper (one write at a time)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch in the local log (a follower's OffsetForLeaderEpoch and Fetch v12 send it)."""
        return self.log.latest_epoch

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first open transaction's offset, at most the HW."""
        return self.log.last_stable_offset

    @property
    def isr_update_in_flight(self) -> bool:
        return self.pending_isr is not None

    @property
    def maximal_isr(self) -> list[int]:
        """The ISR plus any replica a pending change adds (Kafka's maximalIsr): what the high watermark and
        the min.insync.replicas check after an append count. A pending shrink counts only once written."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config.min_insync_replicas

    # -- LeaderAndIsr -----------------------------------------------------------------------------

    def make_leader(self, state: Any) -> bool:
        """Become (or stay) leader; True if this broker was not the leader before."""
        was_leader = self.is_leader
        self._take_state(state)
        if state.leader_epoch > self.log.latest_epoch:
            # The new epoch starts at our log end: followers truncate to it (Kafka's epoch start offset).
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        self.leader_epoch_start_offset = self.log.log_end_offset
        # Kafka resets what it knew of followers: ISR members count as caught up now, so a new
        # leader does not drop them before they had a chance to fetch; positions are unknown.
        now = self.clock()
        self.replica_states = {r: ReplicaState(last_caught_up_ms=now if r in self.isr else 0,
                                               last_fetch_ms=now)
                               for r in self.replicas if r != self.local_broker_id}
        self.leader_id = self.local_broker_id
        self.maybe_increment_high_watermark()
        return not was_leader

    def make_follower(self, state: Any) -> bool:
        """Follow ``state.leader``; True if the leader changed."""
        previous = self.leader_id
        self._take_state(state)
        self.leader_id = state.leader
        self.replica_states = {}
        return previous != state.leader

    def _take_state(self, state: Any) -> None:
        self.controller_epoch = state.controller_epoch
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch if hasattr(state, "partition_epoch") else state.zk_version
        self.replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None  # a write still running answers to an older epoch

    # -- leader side ------------------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A client's view of the epoch (KIP-320): older is fenced, newer is not known here yet."""
        if current_leader_epoch == NO_EPOCH or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.partition}: epoch {current_leader_epoch} "
                                         f"is older than the current {self.leader_epoch}")
        raise UnknownLeaderEpochError(f"{self.topic}-{self.partition}: epoch {current_leader_epoch} "
                                      f"is newer than the current {self.leader_epoch}")

    def ensure_leader(self, current_leader_epoch: int = NO_EPOCH) -> None:
        self.check_leader_epoch(current_leader_epoch)
        if not self.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.local_broker_id} is not the leader of "
                                           f"{self.topic}-{self.partition} (leader {self.leader_id})")

    def append_records_to_leader(self, records: bytearray, required_acks: int) -> tuple[LogAppendInfo, bool]:
        """Append as leader; returns (info, whether the high watermark moved)."""
        self.ensure_leader()
        min_isr = self.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(f"{self.topic}-{self.partition}: ISR {self.isr} is smaller than "
                                         f"min.insync.replicas {min_isr}")
        if self.log.config.compact_enabled:
            require_keys(records, f"{self.topic}-{self.partition}")
        previous_end = self.log.log_end_offset
        info = self.log.append_as_leader(records, self.leader_epoch)
        self._note_caught_up_followers(previous_end)
        return info, self.maybe_increment_high_watermark()

    def _note_caught_up_followers(self, previous_end: int) -> None:
        """Followers that had everything up to this append were caught up at their latest fetch. A fetch
        session does not read a partition that did not change, so that fetch may not have touched this
        partition's state: without this, a partition idle for longer than replica.lag.time.max.ms would
        count its followers as lagging from its first append on (Kafka's leader sees every partition in
        every follower fetch)."""
        for replica, state in self.replica_states.items():
            if state.log_end_offset == previous_end:
                fetched = self.follower_fetch_ms.get(replica, 0)
                if fetched > state.last_caught_up_ms:
                    state.last_caught_up_ms = fetched

    def maybe_increment_high_watermark(self) -> bool:
        """HW = the smallest log end offset among the (maximal) ISR's members; unknown positions hold it."""
        new_hw = self.log.log_end_offset
        for replica in self.maximal_isr:
            if replica != self.local_broker_id:
                state = self.replica_states.get(replica)
                new_hw = min(new_hw, state.log_end_offset if state else -1)
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def update_follower_position(self, replica_id: int, fetch_offset: int,
                                 leader_end_offset: int | None = None, log_start_offset: int = -1,
                                 previous_fetch_ms: int | None = None) -> bool:
        """A follower fetching from ``fetch_offset`` has everything below it; True if the HW moved.

        ``leader_end_offset`` is the leader's log end offset when the fetch was read (Kafka's
        updateFollowerFetchState). ``previous_fetch_ms``: when the follower's fetch session last fetched;
        the session did not read this partition then if nothing had changed, but the follower was where
        this partition last saw it. Returns False for a replica that is not assigned here."""
        state = self.replica_states.get(replica_id)
        if state is None:
            return False
        if previous_fetch_ms is not None and previous_fetch_ms > state.last_fetch_ms:
            state.last_fetch_ms = previous_fetch_ms
        end = self.log.log_end_offset if leader_end_offset is None else leader_end_offset
        state.update_fetch_state(fetch_offset, end, self.clock())
        if log_start_offset >= 0:
            state.log_start_offset = log_start_offset
        return self.maybe_increment_high_watermark()

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int:
        """Kafka's lowWatermarkIfLeader: the smallest log start offset among this leader and its
        replicas on live brokers; DeleteRecords completes when it reaches the requested offset."""
        low = self.log.log_start_offset
        for replica_id, state in self.replica_states.items():
            if is_alive(replica_id) and state.log_start_offset < low:
                low = state.log_start_offset
        return low

    def knows_replica(self, replica_id: int) -> bool:
        return replica_id in self.replica_states

    # -- ISR changes (proposed here, written to ZooKeeper by the ISR manager) ---------------------

    def isr_to_expand(self, replica_id: int) -> list[int] | None:
        """Kafka's maybeExpandIsr: a follower outside the ISR whose log end offset reached the high
        watermark and the start of this leader epoch joins; returns the new ISR or None."""
        if not self.is_leader or self.isr_update_in_flight or replica_id in self.isr:
            return None
        state = self.replica_states.get(replica_id)
        if state is None or replica_id not in self.replicas:
            return None
        if state.log_end_offset >= self.log.high_watermark and state.log_end_offset >= self.leader_epoch_start_offset:
            return self.isr + [replica_id]
        return None

    def out_of_sync_replicas(self, max_lag_ms: int) -> list[int]:
        """ISR followers not caught up within ``max_lag_ms`` (Kafka's getOutOfSyncReplicas)."""
        now = self.clock()
        leo = self.log.log_end_offset
        stale = []
        for replica in self.isr:
            state = self.replica_states.get(replica)
            if replica == self.local_broker_id or state is None:
                continue
            if state.log_end_offset != leo and now - state.last_caught_up_ms > max_lag_ms:
                stale.append(replica)
        return stale

    def isr_to_shrink(self, max_lag_ms: int) -> list[int] | None:
        """Kafka's maybeShrinkIsr: the ISR without the lagging followers, or None."""
        if not self.is_leader or self.isr_update_in_flight:
            return None
        stale = self.out_of_sync_replicas(max_lag_ms)
        if not stale:
            return None
        return [r for r in self.isr if r not in stale]

    def apply_isr(self, new_isr: list[int], partition_epoch: int) -> bool:
        """The ZooKeeper write of ``new_isr`` succeeded; True if the high watermark moved."""
        self.isr = list(new_isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        return self.is_leader and self.maybe_increment_high_watermark()

    def enough_replicas_after_append(self) -> bool:
        """Kafka's checkEnoughReplicasReachOffset: the (maximal) ISR still meets min.insync.replicas."""
        return len(self.maximal_isr) >= self.min_insync_replicas

    # -- follower side (the replica fetcher) ----------------------------------------------------------

    def append_records_to_follower(self, batches: memoryview) -> None:
        """Batches fetched from the leader, kept with their offsets and epochs (Kafka's
        appendRecordsToFollowerOrFutureReplica)."""
        self.log.append_as_follower(batches)

    def follow_leader_offsets(self, leader_high_watermark: int, leader_log_start_offset: int) -> None:
        """Kafka's processPartitionData after an append: the follower's high watermark is the leader's, never
        past its own log end, and its log start offset follows the leader's (at most up to that HW)."""
        log = self.log
        log.update_high_watermark(min(leader_high_watermark, log.log_end_offset))
        if leader_log_start_offset > log.log_start_offset:
            log.maybe_increment_log_start_offset(min(leader_log_start_offset, log.high_watermark))

    def truncate_to(self, offset: int) -> bool:
        """Remove everything from ``offset`` on (a follower's truncation); True if anything was removed."""
        return self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Restart the local log empty at ``offset`` (a follower behind the leader's log start)."""
        self.log.truncate_fully_and_start_at(offset)

    # -- reads ------------------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, *, committed_only: bool, min_one_batch: bool,
             current_leader_epoch: int = NO_EPOCH, read_committed: bool = False,
             leader_only: bool = True) -> FetchDataInfo:
        """Whole batches from the leader's log; consumers see only what is below the high watermark,
        read_committed ones only what is below the last stable offset. ``leader_only=False`` (the
        debugging consumer) reads a follower's log too."""
        if leader_only:
            self.ensure_leader(current_leader_epoch)
        if read_committed:
            max_offset: int | None = self.log.last_stable_offset
        else:
            max_offset = self.log.high_watermark if committed_only else None
        return self.log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch)

    def diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Kafka's Partition.fetchRecords check (Fetch v12): the follower's last fetched epoch ends
        earlier on the leader than its fetch offset, or is unknown here -> (epoch, end offset)."""
        if last_fetched_epoch < 0:
            return None
        log = self.log
        if last_fetched_epoch == log.leader_epoch_cache.latest_epoch:
            # the common case, every follower fetch of every partition: the follower is on our latest epoch,
            # which ends at our log end (end_offset_for's answer, without its calls)
            end_offset = log.log_end_offset
            return None if end_offset >= fetch_offset else (last_fetched_epoch, end_offset)
        epoch, end_offset = self.end_offset_for_epoch(last_fetched_epoch)
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= requested, its end offset)."""
        return self.log.leader_epoch_cache.end_offset_for(epoch, self.log.log_end_offset)

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={self.isr})")

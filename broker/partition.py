"""Partition: one replicated partition as seen from this broker (Kafka's cluster/Partition).

It holds the local log, who leads at which leader epoch, the replica set and the ISR, and the
follower log end offsets the leader needs to move the high watermark. The controller drives it
through ``make_leader`` / ``make_follower`` (LeaderAndIsr); the replica manager appends and reads
through it. Follower fetching arrives with replication (issue 4); the leader already computes the
high watermark as the smallest log end offset in the ISR, so a single-replica ISR moves it at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol.errors import (  # type: ignore[attr-defined]
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from .log import Log, LogAppendInfo
from .log.log_types import FetchDataInfo

NO_EPOCH = -1


@dataclass
class ReplicaState:
    """What the leader knows of one follower (filled by follower fetches, issue 4)."""
    log_end_offset: int = -1
    last_caught_up_ms: int = 0


class Partition:
    def __init__(self, topic: str, partition: int, local_broker_id: int, log: Log) -> None:
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.log = log
        self.leader_id: int = -1
        self.leader_epoch: int = NO_EPOCH
        self.partition_epoch: int = -1  # the state znode's version (Kafka's zkVersion)
        self.controller_epoch: int = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.replica_states: dict[int, ReplicaState] = {}

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # -- LeaderAndIsr -----------------------------------------------------------------------------

    def make_leader(self, state: Any) -> bool:
        """Become (or stay) leader; True if this broker was not the leader before."""
        was_leader = self.is_leader
        self._take_state(state)
        if state.leader_epoch > self.log.latest_epoch:
            # The new epoch starts at our log end: followers truncate to it (Kafka's epoch start offset).
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        self.replica_states = {r: self.replica_states.get(r, ReplicaState())
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
        min_isr = self.log.config.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(f"{self.topic}-{self.partition}: ISR {self.isr} is smaller than "
                                         f"min.insync.replicas {min_isr}")
        info = self.log.append_as_leader(records, self.leader_epoch)
        return info, self.maybe_increment_high_watermark()

    def maybe_increment_high_watermark(self) -> bool:
        """HW = the smallest log end offset among ISR members whose position is known."""
        new_hw = self.log.log_end_offset
        for replica in self.isr:
            if replica != self.local_broker_id:
                state = self.replica_states.get(replica)
                new_hw = min(new_hw, state.log_end_offset if state else -1)
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def update_follower_position(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetching from ``fetch_offset`` has everything below it; True if the HW moved."""
        state = self.replica_states.get(replica_id)
        if state is None:
            return False
        state.log_end_offset = fetch_offset
        return self.maybe_increment_high_watermark()

    def read(self, fetch_offset: int, max_bytes: int, *, committed_only: bool, min_one_batch: bool,
             current_leader_epoch: int = NO_EPOCH) -> FetchDataInfo:
        """Whole batches from the leader's log; consumers see only what is below the high watermark."""
        self.ensure_leader(current_leader_epoch)
        max_offset = self.log.high_watermark if committed_only else None
        return self.log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= requested, its end offset)."""
        return self.log.leader_epoch_cache.end_offset_for(epoch, self.log.log_end_offset)

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition}, leader={self.leader_id}, "
                f"epoch={self.leader_epoch}, isr={self.isr})")

"""GroupMetadataManager: the groups and committed offsets of the ``__consumer_offsets`` partitions this broker leads.

A group lives in partition ``abs(hashCode(group_id)) % offsets.topic.num.partitions`` (Java's
String.hashCode, as Kafka, so the same group lands in the same partition as on Apache Kafka). When
this broker becomes that partition's leader it reads the partition from its start and rebuilds the
cache (last record per key wins, a null value removes); when it stops leading it drops the groups.
Commits and group changes are appended as records through the replica manager (acks per
offsets.commit.required.acks), and only applied to the cache once the append succeeded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ....protocol.errors import (  # type: ignore[attr-defined]
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidCommitOffsetSizeError,
    NotCoordinatorError,
)
from ....protocol.records import RecordBatchBuilder, iter_batches
from ....protocol.records.control import ControlRecordType, read_control_batch
from ....protocol.records.errors import RecordBatchError
from . import records as fmt
from .group_metadata import DEAD, EMPTY, GroupMetadata
from .records import OffsetAndMetadata

if TYPE_CHECKING:
    from ...config import KafkaConfig
    from ...log import Log
    from ...replica_manager import ReplicaManager

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC = "__consumer_offsets"

# Kafka's mapping of append errors to what a commit or group write answers (GroupMetadataManager).
_NOT_AVAILABLE = {3, 19, 20, 7}      # unknown partition, not enough replicas (after append), timed out
_NOT_COORDINATOR = {6, 56}          # not leader or follower, storage error
_TOO_LARGE = {10, 18, 4}            # message too large, record list too large, invalid fetch size


def java_string_hash(value: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions`` (groups and transactional ids). Utils.abs maps
    Integer.MIN_VALUE to 0 and is otherwise Math.abs, which differs from ``& 0x7fffffff`` for negatives."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def wall_ms() -> int:
    return int(time.time() * 1000)


class GroupMetadataManager:
    def __init__(self, broker_id: int, config: KafkaConfig, replica_manager: ReplicaManager) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.num_partitions: int = config.get("offsets.topic.num.partitions")
        self.required_acks = int(config.get("offsets.commit.required.acks"))
        self.commit_timeout_ms: int = config.get("offsets.commit.timeout.ms")
        self.max_metadata_size: int = config.get("offset.metadata.max.bytes")
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: set[int] = set()
        self.loading: set[int] = set()
        self.load_buffer_size: int = config.get("offsets.load.buffer.size")
        self.retention_ms: int = config.get("offsets.retention.minutes") * 60 * 1000
        self._loads: set[asyncio.Task] = set()
        self.on_group_unloaded: Callable[[GroupMetadata], None] | None = None

    # -- placement --------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return kafka_partition_for(group_id, self.num_partitions)

    def check_coordinator(self, group_id: str) -> None:
        """NOT_COORDINATOR from the wrong broker, COORDINATOR_LOAD_IN_PROGRESS while loading."""
        partition = self.partition_for(group_id)
        if partition in self.loading:
            raise CoordinatorLoadInProgressError(f"__consumer_offsets-{partition} is still loading")
        if partition not in self.owned:
            raise NotCoordinatorError(f"broker {self.broker_id} is not the coordinator of group {group_id}")

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def get_or_create_group(self, group_id: str) -> GroupMetadata:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = GroupMetadata(group_id, current_state_timestamp=wall_ms())
        return group

    def local_groups(self) -> Iterable[GroupMetadata]:
        return list(self.groups.values())

    # -- leadership -------------------------------------------------------------------------------

    def on_leadership_change(self, led: list[tuple[str, int]], not_led: list[tuple[str, int]]) -> None:
        for topic, partition in not_led:
            if topic == GROUP_METADATA_TOPIC:
                self.unload_partition(partition)
        for topic, partition in led:
            if topic == GROUP_METADATA_TOPIC and partition not in self.owned:
                self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """Start loading one partition; until done its groups answer COORDINATOR_LOAD_IN_PROGRESS."""
        found = self.replica_manager.online_partition(GROUP_METADATA_TOPIC, partition)
        if found is None or partition in self.loading:
            return
        self.loading.add(partition)
        task = asyncio.get_running_loop().create_task(self._load(partition, found.log))
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def _load(self, partition: int, log_: Log) -> None:
        """Rebuild the groups of one partition from its log (Kafka's doLoadGroupsAndOffsets)."""
        started = time.monotonic()
        try:
            loaded = await self._read_partition(log_, partition)
        except Exception:
            log.exception("Error loading offsets from __consumer_offsets-%d", partition)
            self.loading.discard(partition)
            return
        if partition not in self.loading:
            return  # unloaded meanwhile: a newer leader owns it now
        self.loading.discard(partition)
        offsets, groups, removed = loaded.offsets, loaded.groups, loaded.removed
        for group_id, record in groups.items():
            group = GroupMetadata.from_record(group_id, record)
            group.offsets = offsets.pop(group_id, {})
            self.groups.setdefault(group_id, group)
        for group_id, group_offsets in offsets.items():
            if group_id not in removed or group_offsets:
                group = self.groups.setdefault(group_id, GroupMetadata(group_id))
                group.offsets.update(group_offsets)
        for (group_id, tp), position in loaded.positions.items():
            group = self.groups.get(group_id)
            if group is not None and tp in group.offsets:
                group.offset_positions[tp] = position
        for producer_id, pending in loaded.pending.items():
            for (group_id, tp), entry in pending.items():
                group = self.groups.setdefault(group_id, GroupMetadata(group_id))
                group.pending_txn_offsets.setdefault(producer_id, {})[tp] = entry
        self.owned.add(partition)
        log.info("Finished loading offsets and group metadata from __consumer_offsets-%d in %d ms (%d groups)",
                 partition, (time.monotonic() - started) * 1000, len(groups))

    async def _read_partition(self, log_: Log, partition: int) -> "_LoadedPartition":
        """Kafka's doLoadGroupsAndOffsets: transactional offsets wait in ``pending`` per producer until the
        producer's COMMIT marker (applied if newer than what is committed) or ABORT marker (dropped)."""
        loaded = _LoadedPartition()
        position, end = log_.log_start_offset, log_.log_end_offset
        while position < end and partition in self.loading:
            data = log_.read(position, self.load_buffer_size, min_one_batch=True).records
            if not data:
                break
            for batch in iter_batches(data):
                position = batch.next_offset
                if batch.is_control:
                    loaded.apply_marker(batch)
                    continue
                txn = loaded.pending.setdefault(batch.producer_id, {}) if batch.is_transactional else None
                for record in batch.records():
                    if txn is not None:
                        self._apply_txn_record(record, batch.base_offset, txn)
                    else:
                        self._apply_record(record, loaded.offsets, loaded.groups, loaded.removed,
                                           loaded.positions, batch.base_offset)
            await asyncio.sleep(0)  # a big partition loads in chunks, between other requests
        return loaded

    @staticmethod
    def _apply_txn_record(record: Any, base_offset: int, pending: dict) -> None:
        if record.key is None:
            return
        try:
            kind, group_id, tp = fmt.parse_key(record.key)
            if kind != "offset":
                return
            if record.value is None:
                pending.pop((group_id, tp), None)
            else:
                pending[(group_id, tp)] = (fmt.parse_offset_value(record.value), base_offset)
        except fmt.BadRecord as exc:
            log.warning("Skipping a record of __consumer_offsets at offset %d: %s", record.offset, exc)

    @staticmethod
    def _apply_record(record: Any, offsets: dict, groups: dict, removed: set, positions: dict | None = None,
                      base_offset: int = -1) -> None:
        if record.key is None:
            return
        try:
            kind, group_id, tp = fmt.parse_key(record.key)
            if kind == "offset":
                group_offsets = offsets.setdefault(group_id, {})
                if record.value is None:
                    group_offsets.pop(tp, None)
                else:
                    group_offsets[tp] = fmt.parse_offset_value(record.value)
                    if positions is not None:
                        positions[(group_id, tp)] = base_offset
            elif record.value is None:
                groups.pop(group_id, None)
                removed.add(group_id)
            else:
                groups[group_id] = fmt.parse_group_value(record.value)
                removed.discard(group_id)
        except fmt.BadRecord as exc:
            log.warning("Skipping a record of __consumer_offsets at offset %d: %s", record.offset, exc)

    def unload_partition(self, partition: int) -> None:
        self.owned.discard(partition)
        self.loading.discard(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            group.state = DEAD
            if self.on_group_unloaded is not None:
                self.on_group_unloaded(group)

    # -- writes -----------------------------------------------------------------------------------

    async def store_offsets(self, group: GroupMetadata,
                            offsets: dict[tuple[str, int], OffsetAndMetadata]) -> dict[tuple[str, int], int]:
        """Append the commits; returns the error code per partition (0 where committed and cached)."""
        errors, valid = self._check_metadata_sizes(offsets)
        if not valid:
            return errors
        code, base_offset = await self._append_offsets(group, valid)
        if code == 0 and self.groups.get(group.group_id) is group:
            group.offsets.update(valid)
            for tp in valid:
                group.offset_positions[tp] = base_offset
        for tp in valid:
            errors[tp] = code
        return errors

    async def store_transactional_offsets(self, group: GroupMetadata, producer_id: int, producer_epoch: int,
                                          offsets: dict[tuple[str, int], OffsetAndMetadata]) -> dict[tuple[str, int], int]:
        """TxnOffsetCommit: append the offsets as a transactional batch of the producer; they stay pending
        (invisible) until the producer's marker lands on this partition (complete_pending_txn_offsets)."""
        errors, valid = self._check_metadata_sizes(offsets)
        if not valid:
            return errors
        code, base_offset = await self._append_offsets(group, valid, producer=(producer_id, producer_epoch))
        if code == 0 and self.groups.get(group.group_id) is group:
            pending = group.pending_txn_offsets.setdefault(producer_id, {})
            for tp, o in valid.items():
                pending[tp] = (o, base_offset)
        for tp in valid:
            errors[tp] = code
        return errors

    def _check_metadata_sizes(self, offsets: dict[tuple[str, int], OffsetAndMetadata]
                              ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], OffsetAndMetadata]]:
        """(OFFSET_METADATA_TOO_LARGE per partition whose metadata exceeds offset.metadata.max.bytes, the
        commits that may be written), as Kafka's validateOffsetMetadataLength splits them."""
        errors: dict[tuple[str, int], int] = {}
        valid = {}
        for tp, o in offsets.items():
            if o.metadata is not None and len(o.metadata) > self.max_metadata_size:
                errors[tp] = 12  # OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = o
        return errors, valid

    async def _append_offsets(self, group: GroupMetadata, valid: dict[tuple[str, int], OffsetAndMetadata],
                              producer: tuple[int, int] | None = None) -> tuple[int, int]:
        """Append the commits as one batch; (error code, base offset), a too-large batch answered
        INVALID_COMMIT_OFFSET_SIZE as Kafka does."""
        entries = [(fmt.offset_key(group.group_id, t, p), fmt.offset_value(o)) for (t, p), o in valid.items()]
        code, base_offset = await self._append_batch(group.group_id, entries, producer=producer)
        if code in _TOO_LARGE:
            code = InvalidCommitOffsetSizeError.code
        return code, base_offset

    def _next_sequence(self, tp: tuple[str, int], producer_id: int, producer_epoch: int) -> int:
        """The sequence the leader's producer state expects next from this producer (Kafka skips the
        check for the coordinator's own appends; our log checks every producer batch, so we continue it)."""
        online = getattr(self.replica_manager, "online_partition", None)
        partition = online(*tp) if online is not None else None
        state = getattr(getattr(partition, "log", None), "producer_state", None)
        entry = state.last_entry(producer_id) if state is not None else None
        if entry is None or entry.epoch != producer_epoch or entry.last_seq < 0:
            return 0
        return (entry.last_seq + 1) & 0x7FFFFFFF

    async def store_group(self, group: GroupMetadata) -> int:
        code = await self._append(group.group_id, [(fmt.group_key(group.group_id), fmt.group_value(group.to_record()))])
        return -1 if code in _TOO_LARGE else code

    async def remove_group(self, group: GroupMetadata) -> int:
        """Tombstones for the group and its offsets (DeleteGroups, and offsets expiring with the group)."""
        entries: list[tuple[bytes, bytes | None]] = [(fmt.offset_key(group.group_id, t, p), None)
                                                     for t, p in group.offsets]
        entries.append((fmt.group_key(group.group_id), None))
        return await self._append(group.group_id, entries)

    async def remove_offsets(self, group: GroupMetadata, partitions: list[tuple[str, int]]) -> int:
        entries = [(fmt.offset_key(group.group_id, t, p), None) for t, p in partitions]
        code = await self._append(group.group_id, entries) if entries else 0
        if code == 0:
            for tp in partitions:
                group.offsets.pop(tp, None)
        return code

    async def _append(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> int:
        return (await self._append_batch(group_id, entries))[0]

    async def _append_batch(self, group_id: str, entries: list[tuple[bytes, bytes | None]],
                            producer: tuple[int, int] | None = None) -> tuple[int, int]:
        """Append one batch (transactional for ``producer`` = (id, epoch)); (error code, base offset)."""
        tp = (GROUP_METADATA_TOPIC, self.partition_for(group_id))
        if producer is None:
            builder = RecordBatchBuilder()
        else:
            builder = RecordBatchBuilder(producer_id=producer[0], producer_epoch=producer[1], is_transactional=True,
                                         base_sequence=self._next_sequence(tp, *producer))
        now = wall_ms()
        for key, value in entries:
            builder.append(now, key, value)
        result = self.replica_manager.append_records(self.required_acks, self.commit_timeout_ms,
                                                     {tp: bytearray(builder.build())})
        if not isinstance(result, dict):  # parked until replicated: a Completion of the results
            result = await result
        code = result[tp].error_code
        if code in _NOT_AVAILABLE:
            return CoordinatorNotAvailableError.code, -1
        if code in _NOT_COORDINATOR:
            return NotCoordinatorError.code, -1
        return code, result[tp].base_offset

    # -- expiration -------------------------------------------------------------------------------

    async def cleanup_expired_offsets(self, now_ms: int | None = None) -> int:
        """The offsets.retention.minutes job: expired offsets go; returns how many."""
        now_ms = wall_ms() if now_ms is None else now_ms
        removed = await self.cleanup_group_metadata(lambda group: self._expired_offsets(group, now_ms), now_ms)
        if removed:
            log.info("Removed %d expired offsets", removed)
        return removed

    async def cleanup_group_metadata(self, doomed_offsets: Callable[[GroupMetadata], list[tuple[str, int]]],
                                     now_ms: int | None = None) -> int:
        """Kafka's cleanupGroupMetadata: tombstones for the offsets ``doomed_offsets`` picks in each group,
        then for every empty group left without offsets (it becomes Dead). Returns the offsets removed."""
        now_ms = wall_ms() if now_ms is None else now_ms
        removed_total = 0
        for group in list(self.groups.values()):
            doomed = doomed_offsets(group)
            if doomed and await self.remove_offsets(group, doomed) == 0:
                removed_total += len(doomed)
            if group.is_in(EMPTY) and not group.has_offsets() and self.groups.get(group.group_id) is group:
                # An empty group without offsets is gone (Kafka: transitions to Dead, tombstone written).
                if await self._append(group.group_id, [(fmt.group_key(group.group_id), None)]) == 0 \
                        and self.groups.get(group.group_id) is group:
                    group.transition_to(DEAD, now_ms)
                    del self.groups[group.group_id]
        return removed_total

    def _expired_offsets(self, group: GroupMetadata, now_ms: int) -> list[tuple[str, int]]:
        """Kafka 2.8's rules: an empty group's offsets expire retention after it became empty; a group
        without a protocol (simple consumers) expires each offset retention after its commit; an explicit
        expire timestamp (OffsetCommit v2-v4 retention) wins. Active groups keep their offsets."""
        if group.protocol_type is not None and group.is_in(EMPTY):
            def base(o: OffsetAndMetadata) -> int:
                return group.current_state_timestamp if group.current_state_timestamp >= 0 else o.commit_timestamp
        elif group.protocol_type is None:
            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp
        else:
            return []
        return [tp for tp, o in group.offsets.items()
                if (o.expire_timestamp is not None and now_ms >= o.expire_timestamp)
                or (o.expire_timestamp is None and now_ms - base(o) >= self.retention_ms)]


class _LoadedPartition:
    """What a load found: committed offsets and their batch offsets, groups, removed groups, and the
    transactional offsets still waiting for a marker (producer id -> (group, partition) -> (offset, batch))."""

    def __init__(self) -> None:
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.positions: dict[tuple[str, tuple[str, int]], int] = {}
        self.groups: dict[str, fmt.GroupRecord] = {}
        self.removed: set[str] = set()
        self.pending: dict[int, dict[tuple[str, tuple[str, int]], tuple[OffsetAndMetadata, int]]] = {}

    def apply_marker(self, batch: Any) -> None:
        pending = self.pending.pop(batch.producer_id, None)
        if not pending:
            return
        try:
            committed = read_control_batch(batch)[0] == ControlRecordType.COMMIT
        except RecordBatchError:
            return
        if not committed:
            return
        for (group_id, tp), (offset, position) in pending.items():
            if self.positions.get((group_id, tp), -1) < position:
                self.offsets.setdefault(group_id, {})[tp] = offset
                self.positions[(group_id, tp)] = position

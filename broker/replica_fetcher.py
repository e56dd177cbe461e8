"""ReplicaFetcherManager: followers fetch from their leaders (Kafka's ReplicaFetcherManager/Thread).

One ReplicaFetcher (an asyncio task with one connection) per source broker; all partitions this
broker follows on that leader go into one Fetch request with ``replica_id`` = our broker id. A
partition added after a leadership change first *truncates*: OffsetForLeaderEpoch asks the leader
where the follower's latest epoch ends there, and the log is cut to min(that end, our log end)
(Kafka's getOffsetTruncationState, KIP-101/279), so no follower keeps records the new leader does
not have. Fetch v12 also answers a diverged follower with ``diverging_epoch``, handled the same way.
Fetched batches keep their offsets and epochs (Log.append_as_follower); the follower's high
watermark is min(the leader's, our log end) and its log start offset follows the leader's.

Everything runs on the broker's event loop, like the rest of the replica manager; the fetcher only
changes a partition whose state it checked after each await (a LeaderAndIsr may have replaced it).

Replication throttling (``broker/replication_quota.py``, Kafka's ReplicaFetcherThread): while the
follower quota is exceeded, throttled partitions that are not caught up are left out of the fetch; if
nothing is left the fetcher waits ``replica.fetch.backoff.ms``, as Kafka's fetcher does when it has no
partition to fetch. Bytes fetched for throttled partitions are recorded against the quota.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..clients.connection import BrokerConnection
from ..controller.channel_manager import inter_broker_connect
from ..protocol.errors import (  # type: ignore[attr-defined]
    FencedLeaderEpochError, FetchSessionIdNotFoundError, InvalidFetchSessionEpochError, KafkaStorageError,
    OffsetOutOfRangeError,
    for_code,
)
from ..protocol.messages import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
from .log.checkpoint_batch import batched_checkpoints
from .log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from .coordinator.group.metadata_manager import java_string_hash
from .fetch_session_handler import FetchSessionHandler
from .log.segment import walk_headers

if TYPE_CHECKING:
    from .config import KafkaConfig
    from .partition import Partition
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

_FetchTopic = FetchRequest.FetchTopic
_FetchPartition = _FetchTopic.FetchPartition
_ForgottenTopic = FetchRequest.ForgottenTopic
_EpochTopic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_EpochPartition = _EpochTopic.OffsetForLeaderPartition
_ListTopic = ListOffsetsRequest.ListOffsetsTopic
_ListPartition = _ListTopic.ListOffsetsPartition
_EARLIEST, _LATEST = -2, -1

Key = tuple[str, int]

# Every so often the fetch parameters of every partition are computed afresh (a log start offset moved by
# our own retention is the one change the fetcher does not see happen), a slice per round: all at once held
# the event loop 20-60 ms every 10 s for a fetcher of 3,333 partitions.
PARAMS_REFRESH_S = 10.0
PARAMS_REFRESH_SLICE = 500
SESSION_ERRORS = frozenset({FetchSessionIdNotFoundError.code, InvalidFetchSessionEpochError.code})


def _fetch_params(partition: "Partition", leader_epoch: int) -> tuple[int, int, int, int]:
    """What a follower's fetch says of a partition: offset, log start offset, leader epoch, last fetched epoch."""
    return partition.log_end_offset, partition.log_start_offset, leader_epoch, partition.latest_epoch


@dataclass
class FetcherSettings:
    """The broker's ``replica.fetch.*`` settings (Kafka's names, milliseconds and bytes)."""
    broker_id: int
    fetch_max_bytes: int = 1048576            # replica.fetch.max.bytes (per partition)
    response_max_bytes: int = 10485760        # replica.fetch.response.max.bytes
    wait_max_ms: int = 500                    # replica.fetch.wait.max.ms
    min_bytes: int = 1                        # replica.fetch.min.bytes
    backoff_ms: int = 1000                    # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30000            # replica.socket.timeout.ms
    connect: Any = BrokerConnection.connect   # with the inter-broker listener's security
    num_fetchers: int = 1                     # num.replica.fetchers: fetchers (and connections) per leader

    @classmethod
    def from_config(cls, config: KafkaConfig, broker_id: int) -> "FetcherSettings":
        return cls(broker_id, config.get("replica.fetch.max.bytes"), config.get("replica.fetch.response.max.bytes"),
                   config.get("replica.fetch.wait.max.ms"), config.get("replica.fetch.min.bytes"),
                   config.get("replica.fetch.backoff.ms"), config.get("replica.socket.timeout.ms"),
                   inter_broker_connect(config), config.get("num.replica.fetchers"))


def fetcher_id_for(key: Key, num_fetchers: int) -> int:
    """Kafka's AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode + partition) % fetchers."""
    if num_fetchers <= 1:
        return 0
    h = (31 * java_string_hash(key[0]) + key[1]) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % num_fetchers


@dataclass(eq=False)
class PartitionFetchState:
    """One followed partition; a new object per LeaderAndIsr, so stale responses are recognised."""
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0  # monotonic seconds; after an error the partition waits a backoff
    lag: int = 0  # leader's high watermark minus our log end at the last fetch (FetcherLagMetrics)
    in_sync: bool = False  # Kafka's isReplicaInSync: a fetch found us at the leader's high watermark
    # (fetch offset, log start offset, leader epoch, last fetched epoch) as last computed: what the
    # fetch session holds for it unless the fetcher marked it changed since
    params: tuple[int, int, int, int] | None = None


def complete_batches(records: Any) -> memoryview | None:
    """The complete batches at the front of ``records`` (a response may end in a partial one)."""
    if not records:
        return None
    view = memoryview(records)
    end = 0
    for header in walk_headers(view):
        end = header.position + header.size
    return view[:end] if end else None


def truncation_offset(partition: "Partition", leader_epoch: int, leader_end_offset: int) -> tuple[int, bool]:
    """Kafka 2.8's AbstractFetcherThread.getOffsetTruncationState: (offset, truncation complete).

    The leader says our epoch (or the largest it knows below it) ends at ``leader_end_offset``."""
    leo = partition.log_end_offset
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return min(partition.high_watermark, leo), True  # the leader knows nothing older: keep the committed part
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end_offset, leo), True
    follower_epoch, follower_end = partition.end_offset_for_epoch(leader_epoch)
    if follower_end == UNDEFINED_EPOCH_OFFSET:
        return min(leader_end_offset, leo), True
    if follower_epoch != leader_epoch:
        # We do not have the leader's epoch: cut to where our older epoch ends, then ask again.
        return min(follower_end, leo), False
    return min(leader_end_offset, follower_end, leo), True


class ReplicaFetcher:
    """Fetches every partition this broker follows on one source broker."""

    def __init__(self, manager: "ReplicaFetcherManager", source_id: int, host: str, port: int,
                 fetcher_id: int = 0) -> None:
        self.manager = manager
        self.settings = manager.settings
        self.source_id = source_id
        self.host, self.port = host, port
        self.fetcher_id = fetcher_id
        self.partitions: dict[Key, PartitionFetchState] = {}
        self._conn: BrokerConnection | None = None
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.session = FetchSessionHandler(self.name)
        self._changed: set[Key] = set()  # partitions whose fetch parameters may have changed since computed
        self._errors: dict[str, list[Key]] = {}  # partition errors of the round, reported together
        # False once a round found every partition ready: later rounds then skip looking at each (thousands)
        self._maybe_blocked = True
        self._no_params: set[Key] = set()  # partitions not fetchable now (_current found none)
        self._wanted: set[Key] | None = None  # the last round's partitions, while they stay every partition
        self._refresh_params_at = 0.0
        self._refresh_pending: list[Key] = []  # partitions whose parameters the next rounds compute afresh

    @property
    def name(self) -> str:
        return f"ReplicaFetcher replicaId={self.settings.broker_id}, leaderId={self.source_id}, fetcherId={self.fetcher_id}"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    def add(self, key: Key, leader_epoch: int) -> None:
        self.partitions[key] = PartitionFetchState(leader_epoch)
        self._changed.add(key)
        self._maybe_blocked = True  # it truncates first
        self._wanted = None
        self._wakeup.set()

    def remove(self, key: Key) -> None:
        if self.partitions.pop(key, None) is not None:
            self._wanted = None

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._conn is not None:
            await self._conn.close()

    # -- the loop ---------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self.partitions:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                conn = await self._connection()
                truncating: list[Key] = []
                ready: Any = self.partitions  # every partition, unless some truncate or back off
                if self._maybe_blocked:
                    now = time.monotonic()
                    truncating = [k for k, s in self.partitions.items() if s.truncating and s.delayed_until <= now]
                    if truncating:
                        await self._checkpointed(self._truncate(conn, truncating))
                        now = time.monotonic()
                    ready = [k for k, s in self.partitions.items() if not s.truncating and s.delayed_until <= now]
                    self._maybe_blocked = len(ready) < len(self.partitions)
                throttled = self.manager.replica_manager.replication_quotas.follower.has_throttled_partitions
                fetching = [k for k in ready if not self._should_throttle(k)] if throttled else ready
                if fetching:
                    await self._checkpointed(self._fetch(conn, fetching))
                elif ready:  # all held back by the follower quota (Kafka backs off fetchBackOffMs)
                    await self._sleep(self.settings.backoff_ms / 1000)
                elif not truncating:  # everything is backing off: sleep until the first is due
                    due = min(s.delayed_until for s in self.partitions.values())
                    await self._sleep(max(0.0, due - time.monotonic()))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost, timeout, or a bad answer: back off and reconnect
                self.session.handle_error()
                log.warning("[%s] error talking to %s:%d: %s; backing off %d ms", self.name, self.host, self.port,
                            exc, self.settings.backoff_ms)
                if self._conn is not None:
                    await self._conn.close()
                    self._conn = None
                await self._sleep(self.settings.backoff_ms / 1000)

    async def _checkpointed(self, work: Any) -> None:
        """Run a truncation or fetch round; the leader epochs it changed are checkpointed together after it."""
        with batched_checkpoints() as checkpoints:
            try:
                await work
            finally:
                self._report_errors()
                await checkpoints.write_concurrently()

    def _should_throttle(self, key: Key) -> bool:
        """Kafka's shouldFollowerThrottle."""
        quotas = self.manager.replica_manager.replication_quotas
        if quotas.should_follower_throttle(key, self.partitions[key].in_sync):
            quotas.follower.throttle_events += 1
            return True
        return False

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake early when partitions are added."""
        self._wakeup.clear()
        try:  # asyncio.timeout, not wait_for: DESIGN.md, "Deadlines"
            async with asyncio.timeout(seconds):
                await self._wakeup.wait()
        except TimeoutError:
            pass

    async def _connection(self) -> BrokerConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await self.settings.connect(
                self.host, self.port, client_id=f"broker-{self.settings.broker_id}-fetcher-{self.fetcher_id}",
                timeout=self.settings.socket_timeout_ms / 1000)
        return self._conn

    def _current(self, key: Key, state: PartitionFetchState) -> "Partition | None":
        """The follower partition, if ``state`` is still the one this fetcher holds for it."""
        if self.partitions.get(key) is not state:
            return None
        partition = self.manager.replica_manager.online_partition(*key)
        if partition is None or partition.is_leader or partition.leader_epoch != state.leader_epoch:
            return None
        return partition

    def _back_off(self, key: Key, state: PartitionFetchState, why: str) -> None:
        self._errors.setdefault(f"{why}; retrying in {self.settings.backoff_ms} ms", []).append(key)
        state.delayed_until = time.monotonic() + self.settings.backoff_ms / 1000
        self._maybe_blocked = True

    def _report_errors(self) -> None:
        """One line per kind of partition error of a round, not one per partition (thousands may be
        created or moved at once)."""
        errors, self._errors = self._errors, {}
        for why, keys in errors.items():
            shown = ", ".join(f"{t}-{p}" for t, p in keys[:10])
            log.info("[%s] %d partitions: %s: %s%s", self.name, len(keys), why, shown,
                     f" and {len(keys) - 10} more" if len(keys) > 10 else "")

    def _timeout(self) -> float:
        return (self.settings.wait_max_ms + self.settings.socket_timeout_ms) / 1000

    # -- truncation -------------------------------------------------------------------------------

    async def _truncate(self, conn: BrokerConnection, keys: list[Key]) -> None:
        states = {k: self.partitions[k] for k in keys}
        asked: dict[Key, int] = {}
        for key, state in states.items():
            partition = self._current(key, state)
            if partition is None:
                continue
            epoch = partition.latest_epoch
            if epoch == UNDEFINED_EPOCH:  # nothing to compare: keep what is committed (Kafka truncates to the HW)
                self._truncate_log(partition, partition.high_watermark)
                state.truncating = False
                self._changed.add(key)
            else:
                asked[key] = epoch
        if not asked:
            return
        by_topic: dict[str, list[Any]] = {}
        for (topic, index), epoch in asked.items():
            by_topic.setdefault(topic, []).append(_EpochPartition(
                partition=index, current_leader_epoch=states[(topic, index)].leader_epoch, leader_epoch=epoch))
        request = OffsetForLeaderEpochRequest(replica_id=self.settings.broker_id, topics=[
            _EpochTopic(topic=t, partitions=ps) for t, ps in by_topic.items()])
        response = await conn.send(request, timeout=self._timeout())
        for topic in response.topics:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition)
                state = states.get(key)
                partition = self._current(key, state) if state is not None else None
                if partition is None:
                    continue
                if answer.error_code:
                    self._on_partition_error(key, state, answer.error_code)
                    continue
                self._truncate_to_leader(partition, state, answer.leader_epoch, answer.end_offset)

    def _truncate_to_leader(self, partition: "Partition", state: PartitionFetchState,
                            leader_epoch: int, leader_end_offset: int) -> None:
        offset, complete = truncation_offset(partition, leader_epoch, leader_end_offset)
        self._truncate_log(partition, offset)
        state.truncating = not complete
        self._maybe_blocked |= state.truncating
        self._changed.add(partition.key)

    def _truncate_log(self, partition: "Partition", offset: int) -> None:
        if partition.truncate_to(offset):
            log.info("[%s] truncated %s-%d to offset %d (leader epoch %d)", self.name, *partition.key, offset,
                     partition.leader_epoch)

    # -- fetching ---------------------------------------------------------------------------------

    async def _fetch(self, conn: BrokerConnection, keys: Iterable[Key]) -> None:
        """One fetch through the session: only partitions whose parameters changed are named (all of them
        in a full request), and only the partitions the leader answers are looked at."""
        s = self.settings
        changed, self._changed = self._changed, set()
        now = time.monotonic()
        # our own retention may move log start offsets unannounced: every partition afresh, a slice per round
        if now >= self._refresh_params_at and not self._refresh_pending:
            self._refresh_pending = list(self.partitions)
            self._refresh_params_at = now + PARAMS_REFRESH_S
        if self._refresh_pending:
            changed.update(self._refresh_pending[-PARAMS_REFRESH_SLICE:])
            del self._refresh_pending[-PARAMS_REFRESH_SLICE:]
        unfetchable = len(self._no_params)
        for key in changed:
            state = self.partitions.get(key)
            if state is not None:
                partition = self._current(key, state)
                state.params = None if partition is None else _fetch_params(partition, state.leader_epoch)
                if state.params is None:
                    self._no_params.add(key)
                else:
                    self._no_params.discard(key)
        if keys is self.partitions and self._wanted is not None and unfetchable == len(self._no_params) == 0:
            wanted, same = self._wanted, True  # every partition, as in the last round: no set to rebuild
        else:
            wanted = (keys.keys() if isinstance(keys, dict) else set(keys)) - self._no_params
            same = False
            self._wanted = wanted if keys is self.partitions and not self._no_params else None
        if not wanted:
            return
        request_data = self.session.build(wanted, lambda key: self.partitions[key].params, changed, same)
        by_topic: dict[str, list[Any]] = {}
        for (topic, index), (fetch_offset, log_start, epoch, last_epoch) in request_data.to_send.items():
            by_topic.setdefault(topic, []).append(_FetchPartition(
                partition=index, current_leader_epoch=epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=last_epoch, log_start_offset=log_start, partition_max_bytes=s.fetch_max_bytes))
        forgotten: dict[str, list[int]] = {}
        for topic, index in request_data.to_forget:
            forgotten.setdefault(topic, []).append(index)
        request = FetchRequest(replica_id=s.broker_id, max_wait_ms=s.wait_max_ms, min_bytes=s.min_bytes,
                               max_bytes=s.response_max_bytes, isolation_level=0,
                               session_id=request_data.session_id, session_epoch=request_data.epoch,
                               topics=[_FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
                               forgotten_topics_data=[_ForgottenTopic(topic=t, partitions=ps)
                                                      for t, ps in forgotten.items()])
        response = await conn.send(request, timeout=self._timeout())
        if response.error_code in SESSION_ERRORS:
            self.session.handle_response(request_data, response.error_code, response.session_id)
            self._changed.update(wanted)
            return
        if response.error_code:
            raise for_code(response.error_code)(f"fetch from broker {self.source_id} failed")
        self.session.handle_response(request_data, 0, response.session_id)
        for topic in response.responses:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition_index)
                state = self.partitions.get(key)
                if state is None or key not in wanted:
                    continue
                self._changed.add(key)
                partition = self._current(key, state)
                if partition is None or state.params is None or partition.log_end_offset != state.params[0]:
                    continue  # replaced or changed while the request was out
                if answer.error_code == OffsetOutOfRangeError.code:
                    await self._handle_out_of_range(conn, key, state)
                elif answer.error_code:
                    self._on_partition_error(key, state, answer.error_code)
                else:
                    try:
                        self._process_partition_data(partition, state, answer)
                    except KafkaStorageError:  # its log dir went offline: the replica manager stops it
                        self._errors.setdefault("log directory offline", []).append(key)
                        self.remove(key)

    def _process_partition_data(self, partition: "Partition", state: PartitionFetchState, answer: Any) -> None:
        diverging = answer.diverging_epoch
        if diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0):
            self._truncate_to_leader(partition, state, diverging.epoch, diverging.end_offset)
            return
        batches = complete_batches(answer.records)
        if batches is not None:
            partition.append_records_to_follower(batches)
            self.manager.replica_manager.topic_stats.record_replication_bytes_in(len(batches))
            follower_quota = self.manager.replica_manager.replication_quotas.follower
            if follower_quota.is_throttled(partition.key):
                follower_quota.record(len(batches))
        state.lag = max(0, answer.high_watermark - partition.log_end_offset)
        state.in_sync = state.lag == 0
        before = (partition.high_watermark, partition.log_start_offset)
        partition.follow_leader_offsets(answer.high_watermark, answer.log_start_offset)
        if (partition.high_watermark, partition.log_start_offset) != before:
            self.manager.replica_manager.follower_offsets_moved(partition.key)  # consumers reading here

    def _on_partition_error(self, key: Key, state: PartitionFetchState, code: int) -> None:
        error = for_code(code)
        if code == FencedLeaderEpochError.code:
            # Our epoch is older than the leader's: a LeaderAndIsr is coming; stop until it arrives.
            self._errors.setdefault("fenced leader epoch; waiting for the controller", []).append(key)
            self.remove(key)
            return
        self._back_off(key, state, f"error {error.__name__}")

    async def _handle_out_of_range(self, conn: BrokerConnection, key: Key, state: PartitionFetchState) -> None:
        """Kafka's handleOutOfRangeError: behind the leader's start, restart the log there; past its
        end (no epochs to compare), truncate to it."""
        latest = await self._list_offset(conn, key, state, _LATEST)
        earliest = await self._list_offset(conn, key, state, _EARLIEST)
        partition = self._current(key, state)
        if partition is None or latest is None or earliest is None:
            return
        if partition.log_end_offset > latest:
            self._truncate_log(partition, latest)
        elif partition.log_end_offset < earliest:
            log.info("[%s] %s-%d: log end %d is below the leader's start %d; restarting the log there",
                     self.name, *key, partition.log_end_offset, earliest)
            partition.truncate_fully_and_start_at(earliest)

    async def _list_offset(self, conn: BrokerConnection, key: Key, state: PartitionFetchState,
                           timestamp: int) -> int | None:
        request = ListOffsetsRequest(replica_id=self.settings.broker_id, isolation_level=0, topics=[
            _ListTopic(name=key[0], partitions=[_ListPartition(
                partition_index=key[1], current_leader_epoch=state.leader_epoch, timestamp=timestamp)])])
        response = await conn.send(request, timeout=self._timeout())
        answer = response.topics[0].partitions[0]
        if answer.error_code:
            self._on_partition_error(key, state, answer.error_code)
            return None
        return answer.offset


class ReplicaFetcherManager:
    """The fetchers of one broker: ``num.replica.fetchers`` per source broker, each partition on the one
    Kafka's hash picks. Each fetcher is a task with its own connection and fetch session, so a leader's
    partitions are split over that many requests in flight at once."""

    def __init__(self, replica_manager: "ReplicaManager", settings: FetcherSettings,
                 listener_name: str | None = None) -> None:
        self.replica_manager = replica_manager
        self.settings = settings
        self.listener_name = listener_name  # inter.broker.listener.name, for endpoints from the metadata cache
        self.fetchers: dict[tuple[int, str, int, int], ReplicaFetcher] = {}  # (leader, host, port, fetcher id)
        self._stopping: set[asyncio.Task] = set()

    def add_partitions(self, targets: Mapping[Key, tuple[int, tuple[str, int], int]]) -> None:
        """key -> (leader id, (host, port), leader epoch): fetch from there, truncating first."""
        self.remove_partitions(targets)
        added: dict[tuple[int, str, int], list[Key]] = {}
        for key, (leader_id, (host, port), epoch) in targets.items():
            source = (leader_id, host, port, fetcher_id_for(key, self.settings.num_fetchers))
            fetcher = self.fetchers.get(source)
            if fetcher is None:
                fetcher = self.fetchers[source] = ReplicaFetcher(self, leader_id, host, port, source[3])
                fetcher.start()
            fetcher.add(key, epoch)
            added.setdefault(source[:3], []).append(key)
        for (leader_id, host, port), keys in added.items():  # one line per leader, not per partition
            log.info("[ReplicaFetcherManager on broker %d] fetching %d partitions from broker %d at %s:%d: %s%s",
                     self.settings.broker_id, len(keys), leader_id, host, port,
                     ", ".join(f"{t}-{p}" for t, p in keys[:10]), " ..." if len(keys) > 10 else "")
            log.debug("fetching from broker %d: %s", leader_id, keys)

    def remove_partitions(self, keys: Iterable[Key]) -> None:
        keys = set(keys)
        for fetcher in self.fetchers.values():
            for key in keys & fetcher.partitions.keys():
                fetcher.remove(key)
        self._shutdown_idle_fetchers()

    def fetched_partitions(self) -> dict[Key, int]:
        """key -> source broker id of every partition being fetched."""
        return {key: f.source_id for f in self.fetchers.values() for key in f.partitions}

    def _shutdown_idle_fetchers(self) -> None:
        for source, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                del self.fetchers[source]
                task = asyncio.get_running_loop().create_task(fetcher.shutdown())
                self._stopping.add(task)
                task.add_done_callback(self._stopping.discard)

    async def shutdown(self) -> None:
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        await asyncio.gather(*(f.shutdown() for f in fetchers), *self._stopping, return_exceptions=True)

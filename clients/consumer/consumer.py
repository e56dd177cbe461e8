"""AIOConsumer: the asyncio consumer, shaped as aiokafka's AIOKafkaConsumer (names as kafka-python's).

    async with AIOConsumer(bootstrap_servers="127.0.0.1:9092", auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("events", 0)])
        batches = await consumer.getmany(timeout_ms=1000)   # {TopicPartition: [ConsumerRecord]}
        columns = await consumer.poll_arrow(timeout_ms=1000)  # {TopicPartition: pyarrow.RecordBatch}
        async for record in consumer: ...

Partitions are assigned by hand (``assign``) or by ``subscribe(topics=..., pattern=..., listener=...)``:
with a group_id the consumer joins the group and takes the partitions the group's leader gives it
(``clients/group/``: JoinGroup/SyncGroup/heartbeats, assignors, auto-commit, rebalance listener);
without one it takes every partition of the topics, as kafka-python does when group_id is None.
Auto-commit applies to group members (subscribe), not to assign() consumers with a group_id.

Fetching follows Kafka's Java Fetcher: one Fetch in flight per leader broker carrying every assigned
partition it leads that is not paused, has a position and has no fetched records still buffered;
so each partition is prefetched once ahead of the application. A partition's "epoch" changes on
seek, reset and reassignment, and a response for an older epoch is dropped. Leader errors and
connection failures mark the metadata stale; the fetch loop refreshes it before the next round.
Positions are found lazily: the committed offset (when a group_id is given) else
auto_offset_reset (earliest/latest; "none" raises ``NoOffsetForPartitionError``).

Fetched batches stay undecoded until the application takes them (``fetch_buffer.py``): getmany/poll
decode them into ConsumerRecords and poll_arrow into one Arrow RecordBatch per partition (Spark's Kafka
schema, no Python object per record), both in the compiled record codec. Each partition has two
positions: ``fetch_position``, where the fetcher goes on, and ``position``, after the last record the
application was given; getmany and poll_arrow move both, iteration hands out a taken chunk one record at
a time and moves ``position`` with each, so a commit never covers a record the application has not seen.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, AsyncIterator, Callable, Iterable

from ...protocol.errors import KafkaError, for_code
from ...protocol.messages import FetchRequest
from ..group.assignors import DEFAULT_STRATEGY, resolve_assignors
from .fetch_buffer import PartitionBuffer, batch_specs
from ..group.coordinator import ConsumerCoordinator
from ..group.offsets import CoordinatorLink, commit_offsets, fetch_committed
from ..security.client_security import SECURITY_DEFAULTS, client_security
from ..simple_client import SimpleClient, parse_bootstrap_servers
from ..types import (
    ConsumerRecord, KafkaConfigurationError, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition, check_configs,
)

log = logging.getLogger(__name__)

OFFSET_OUT_OF_RANGE = 1
EARLIEST, LATEST = -2, -1
# Fetch errors after which the partition's leader must be looked up again (Kafka's Fetcher).
_METADATA_ERRORS = frozenset({3, 5, 6, 9, 56, 74, 75})  # ..., KAFKA_STORAGE_ERROR, FENCED/UNKNOWN_LEADER_EPOCH

DEFAULT_CONFIG: dict[str, Any] = {
    "bootstrap_servers": "localhost",
    "client_id": "odradek-consumer",
    "group_id": None,
    "group_instance_id": None,  # static membership (KIP-345)
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
    "max_poll_interval_ms": 300000,  # also the rebalance timeout of JoinGroup, as in Java
    "partition_assignment_strategy": DEFAULT_STRATEGY,  # names or assignor classes, in preference order
    "auto_commit_interval_ms": 5000,
    "metadata_max_age_ms": 300000,  # pattern and partition-count changes are looked for this often
    "exclude_internal_topics": True,
    "key_deserializer": None,
    "value_deserializer": None,
    "auto_offset_reset": "latest",
    "enable_auto_commit": True,  # kafka-python's default; only group members (subscribe) auto-commit
    "fetch_min_bytes": 1,
    "fetch_max_wait_ms": 500,
    "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1048576,
    "max_poll_records": None,
    "isolation_level": "read_uncommitted",
    "request_timeout_ms": 30000,
    "retry_backoff_ms": 100,
    "connections_max_idle_ms": 540000,
    "consumer_timeout_ms": None,  # iteration of the synchronous Consumer stops after this long idle
    **SECURITY_DEFAULTS,  # security_protocol, ssl_*, sasl_* (kafka-python's names)
}


class NoOffsetForPartitionError(KafkaError):
    """auto_offset_reset='none' and the partition has no position (kafka-python's name)."""


class IllegalStateError(KafkaError):
    """A partition was used that is not assigned (kafka-python's name)."""


class _PartitionState:
    __slots__ = ("position", "fetch_position", "reset", "paused", "epoch", "high_watermark", "log_start_offset",
                 "last_stable_offset", "buffer", "error", "handed")

    def __init__(self, tp: TopicPartition) -> None:
        self.position: int | None = None  # after the last record the application was given
        self.fetch_position: int | None = None  # where fetching goes on (ahead while a chunk is handed out)
        self.reset: int | None = None  # EARLIEST/LATEST when a seek_to_* is pending
        self.paused = False
        self.epoch = 0
        self.high_watermark = -1
        self.log_start_offset = -1
        self.last_stable_offset = -1
        self.buffer = PartitionBuffer(tp.topic, tp.partition)
        self.error: BaseException | None = None  # raised to the application by the next getmany
        self.handed: list[ConsumerRecord] | None = None  # the records an iteration is handing out

    def move(self, position: int | None) -> None:
        """A new position that is not the continuation of the last fetch: drop what is buffered, and what
        an iteration has not handed out yet (clearing the list ends its loop over it)."""
        self.position = self.fetch_position = position
        self.reset = None
        self.epoch += 1
        self.buffer.clear()
        self.error = None
        if self.handed is not None:
            self.handed.clear()
            self.handed = None

    def advance(self, position: int) -> None:
        self.position = self.fetch_position = position


class AIOConsumer:
    def __init__(self, *topics: str, **configs: Any) -> None:
        self.config = check_configs(configs, DEFAULT_CONFIG)
        if self.config["auto_offset_reset"] not in ("earliest", "latest", "none"):
            raise KafkaConfigurationError(f"auto_offset_reset must be earliest, latest or none, "
                                          f"not {self.config['auto_offset_reset']!r}")
        if self.config["isolation_level"] not in ("read_uncommitted", "read_committed"):
            raise KafkaConfigurationError(f"invalid isolation_level {self.config['isolation_level']!r}")
        parse_bootstrap_servers(self.config["bootstrap_servers"])  # fail early on a malformed list
        try:
            resolve_assignors(self.config["partition_assignment_strategy"])
        except ValueError as exc:
            raise KafkaConfigurationError(str(exc)) from None
        if not 0 < self.config["heartbeat_interval_ms"] < self.config["session_timeout_ms"]:
            raise KafkaConfigurationError("heartbeat_interval_ms must be positive and below session_timeout_ms")
        self._isolation = 1 if self.config["isolation_level"] == "read_committed" else 0
        self._client = SimpleClient(self.config["bootstrap_servers"], client_id=self.config["client_id"],
                                    request_timeout=self.config["request_timeout_ms"] / 1000.0,
                                    retry_backoff=self.config["retry_backoff_ms"] / 1000.0,
                                    security=client_security(self.config))
        self._states: dict[TopicPartition, _PartitionState] = {}
        self._handed_out: list[_PartitionState] = []  # partitions of the chunk an iteration is handing out
        self._subscription: list[str] = []
        self._in_flight: dict[int, asyncio.Task] = {}  # leader id -> its one Fetch
        self._wake = asyncio.Event()  # the fetch loop has something new to look at
        self._data = asyncio.Event()  # records (or an error) are buffered for the application
        self._metadata_stale = False
        self._fetch_loop: asyncio.Task | None = None
        self._link = (CoordinatorLink(self._client, self.config["group_id"])
                      if self.config["group_id"] is not None else None)
        self._group: ConsumerCoordinator | None = None  # set while subscribed as a group member
        self._group_error: BaseException | None = None
        self._leaving: asyncio.Task | None = None
        self._closed = False
        self._initial_topics = list(topics)

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect (bootstrap metadata) and start the fetch loop; ``async with`` calls it."""
        if self._fetch_loop is not None:
            return
        await self._client.metadata(topics=self._initial_topics or [])
        if self._initial_topics:
            await self.subscribe(self._initial_topics)
        self._fetch_loop = asyncio.get_running_loop().create_task(self._run_fetch_loop(), name="odradek-fetcher")

    async def stop(self) -> None:
        await self.close()

    async def close(self, autocommit: bool = True) -> None:
        """Leave the group (after the auto-commit when ``autocommit``), stop fetching, close connections."""
        if self._closed:
            return
        if self._group is not None:
            await self._group.close(autocommit)
        if self._leaving is not None:
            await asyncio.gather(self._leaving, return_exceptions=True)
        self._closed = True
        tasks = [t for t in [self._fetch_loop, *self._in_flight.values()] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._client.close()

    async def __aenter__(self) -> "AIOConsumer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def metrics(self) -> dict[str, dict[str, float]]:
        """Java's consumer throttle metrics, ms (NaN without a response in the last minute): ``{"consumer-fetch-
        manager-metrics": {"fetch-throttle-time-avg": ..., "fetch-throttle-time-max": ...}}``."""
        return {"consumer-fetch-manager-metrics": self._client.throttle_time.metrics("fetch-throttle-time")}

    # -- assignment -------------------------------------------------------------------------------
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Take exactly ``partitions`` (kafka-python: manual assignment, no group rebalancing)."""
        if self._group is not None:
            raise IllegalStateError("Subscription to topics, partitions and pattern are mutually exclusive")
        self._assign_partitions(partitions)

    def _assign_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment; partitions no longer assigned lose their buffered records at once."""
        self._settle()
        wanted = {TopicPartition(*tp) for tp in partitions}
        self._states = {tp: self._states.get(tp) or _PartitionState(tp) for tp in sorted(wanted)}
        self._wake.set()

    def _stop_handing_out(self) -> None:
        """Before revocation: no more records of the assigned partitions reach the application (buffers
        dropped, fetches stopped), but their positions stay for the listener's and auto-commit's commits."""
        self._settle()
        for state in self._states.values():
            state.paused = True
            state.buffer.clear()
            state.epoch += 1

    def assignment(self) -> set[TopicPartition]:
        return set(self._states)

    async def subscribe(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None,
                        listener: Any = None) -> None:
        """With a group_id: join the group with ``topics`` (or every topic matching ``pattern``, a regex
        over whole names) and take the partitions the group assigns; ``listener`` gets
        ``on_partitions_revoked``/``on_partitions_assigned`` (sync or async; aiokafka's
        ConsumerRebalanceListener). Without a group_id: every partition of the topics."""
        topics = [topics] if isinstance(topics, str) else list(topics)
        if bool(topics) == (pattern is not None):
            raise ValueError("subscribe needs either topics or a pattern (not both)")
        if pattern is not None and isinstance(pattern, str):
            pattern = re.compile(pattern)
        if self._link is None:
            if listener is not None:
                raise ValueError("a rebalance listener needs a group_id")
            if pattern is not None:
                metadata = await self._client.metadata(None)
                topics = sorted(t for t, info in metadata.topics.items()
                                if pattern.fullmatch(t) and not (info.is_internal and
                                                                 self.config["exclude_internal_topics"]))
            self._subscription = topics
            metadata = await self._client.metadata(self._subscription)
            self._assign_partitions(TopicPartition(t, p) for t in self._subscription for p in metadata.partitions_for(t))
            return
        if self._group is None:
            if self._states:
                raise IllegalStateError("Subscription to topics, partitions and pattern are mutually exclusive")
            self._group = ConsumerCoordinator(self._client, self.config, self)
        self._subscription = topics
        self._group.start(topics, pattern, listener)

    def subscription(self) -> set[str]:
        return set(self._group.topics) if self._group is not None else set(self._subscription)

    def unsubscribe(self) -> None:
        """Stop consuming; a group member leaves its group (in the background; close() waits for it)."""
        self._subscription = []
        if self._group is not None:
            group, self._group = self._group, None
            self._leaving = asyncio.get_running_loop().create_task(group.close())
        self._assign_partitions([])

    def _state(self, tp: TopicPartition) -> _PartitionState:
        state = self._states.get(TopicPartition(*tp))
        if state is None:
            raise IllegalStateError(f"{tp} is not assigned")
        return state

    async def partitions_for_topic(self, topic: str) -> set[int]:
        return set((await self._client.metadata([topic])).partitions_for(topic))

    async def topics(self) -> set[str]:
        return set((await self._client.metadata(None)).topics)

    # -- positions --------------------------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"offset must be >= 0, not {offset}")
        self._settle()
        self._state(partition).move(offset)
        self._wake.set()

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        await self._seek_to(EARLIEST, partitions)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        await self._seek_to(LATEST, partitions)

    async def _seek_to(self, timestamp: int, partitions: tuple[TopicPartition, ...]) -> None:
        self._settle()
        for tp in partitions or tuple(self._states):
            state = self._state(tp)
            state.move(None)
            state.reset = timestamp
        await self._update_positions()

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record the application will get (found first if unknown)."""
        state = self._state(partition)
        if state.fetch_position is None:
            await self._update_positions()
        if state.position is None:
            raise state.error or NoOffsetForPartitionError(f"no position for {partition}")
        return state.position

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark of the last fetch answer (kafka-python), None before one."""
        hw = self._state(partition).high_watermark
        return hw if hw >= 0 else None

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        lso = self._state(partition).last_stable_offset
        return lso if lso >= 0 else None

    def pause(self, *partitions: TopicPartition) -> None:
        self._settle()
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp).paused = False
        self._wake.set()
        if any(self._states[TopicPartition(*tp)].buffer for tp in partitions):
            self._data.set()

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, state in self._states.items() if state.paused}

    async def _update_positions(self) -> None:
        """Give every assigned partition without a position one: committed offset, else the reset policy."""
        missing = [tp for tp, state in self._states.items() if state.fetch_position is None and state.error is None]
        if not missing:
            return
        if self.config["group_id"] is not None:
            pending = [tp for tp in missing if self._states[tp].reset is None]
            committed = await self._fetch_committed(pending) if pending else {}
            for tp, offsets in committed.items():
                if offsets is not None and tp in self._states and self._states[tp].fetch_position is None:
                    self._states[tp].advance(offsets.offset)
        policy = {"earliest": EARLIEST, "latest": LATEST}.get(self.config["auto_offset_reset"])
        to_reset: dict[TopicPartition, int] = {}
        epochs = {tp: self._states[tp].epoch for tp in missing}  # a seek meanwhile wins over this answer
        for tp in missing:
            state = self._states.get(tp)
            if state is None or state.fetch_position is not None:
                continue
            timestamp = state.reset if state.reset is not None else policy
            if timestamp is None:
                state.error = NoOffsetForPartitionError(f"no committed offset for {tp} and auto_offset_reset='none'")
                self._data.set()
            else:
                to_reset[tp] = timestamp
        found = await self._list_offsets(to_reset)
        for tp, (offset, _) in found.items():
            state = self._states.get(tp)
            if state is not None and state.fetch_position is None and state.epoch == epochs[tp]:
                state.advance(offset)
                state.reset = None
        self._wake.set()

    async def _list_offsets(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets for each partition at its leader (SimpleClient retries and refreshes leaders)."""
        tps = list(timestamps)
        answers = await asyncio.gather(*(self._client.list_offsets(tp.topic, tp.partition, timestamps[tp],
                                                                   isolation_level=self._isolation) for tp in tps))
        return dict(zip(tps, answers))

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        found = await self._list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record (read_committed: the last stable offset)."""
        found = await self._list_offsets({TopicPartition(*tp): LATEST for tp in partitions})
        return {tp: offset for tp, (offset, _) in found.items()}

    async def offsets_for_times(self, timestamps: dict[TopicPartition, int]
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one (ms); None when there is none."""
        for tp, timestamp in timestamps.items():
            if timestamp < 0:
                raise ValueError(f"timestamp of {tp} must be >= 0, not {timestamp}")
        found = await self._list_offsets({TopicPartition(*tp): ts for tp, ts in timestamps.items()})
        return {tp: OffsetAndTimestamp(offset, ts) if offset >= 0 else None for tp, (offset, ts) in found.items()}

    # -- the application's side -------------------------------------------------------------------
    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records buffered for the (given or all) assigned partitions, waiting up to ``timeout_ms``
        for some; positions advance past what is returned. A fetch error for a partition raises."""
        return await self._poll(partitions, timeout_ms, max_records, self._take_records)

    async def poll(self, timeout_ms: int = 0, max_records: int | None = None
                   ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """kafka-python's name for getmany."""
        return await self.getmany(timeout_ms=timeout_ms, max_records=max_records)

    async def poll_arrow(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TopicPartition, Any]:
        """getmany's records as one ``pyarrow.RecordBatch`` per partition, in Spark's Kafka source schema
        (key, value, topic, partition, offset, timestamp, timestampType, headers; ``odradek.protocol.records
        .arrow.KAFKA_SCHEMA``), decoded without a Python object per record. Positions advance as getmany's;
        the deserializers do not apply (keys and values stay bytes). Needs pyarrow."""
        return await self._poll((), timeout_ms, max_records, self._take_arrow)

    async def _poll(self, partitions: tuple[TopicPartition, ...], timeout_ms: int, max_records: int | None,
                    take: Callable[[_PartitionState, int], tuple[Any, int]]) -> dict[TopicPartition, Any]:
        self._check_open()
        group = self._group
        if group is None:
            return await self._wait_and_drain(partitions, timeout_ms, max_records, take)
        group.poll_started()  # a rebalance may revoke partitions now (Java rebalances inside poll)
        try:
            return await self._wait_and_drain(partitions, timeout_ms, max_records, take)
        finally:
            group.poll_finished()

    async def _wait_and_drain(self, partitions: tuple[TopicPartition, ...], timeout_ms: int,
                              max_records: int | None, take: Callable) -> dict[TopicPartition, Any]:
        limit = max_records or self.config["max_poll_records"] or 2**31
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000.0
        self._settle()
        while True:
            self._raise_group_error()
            self._data.clear()
            if any(state.fetch_position is None for state in self._states.values()):
                await self._update_positions()
            result = self._drain(partitions, limit, take)
            remaining = deadline - loop.time()
            if result or remaining <= 0:
                return result
            try:
                async with asyncio.timeout(remaining):
                    await self._data.wait()
            except TimeoutError:
                return self._drain(partitions, limit, take)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record (waits as long as it takes)."""
        while True:
            for records in (await self.getmany(*partitions, timeout_ms=1000, max_records=1)).values():
                return records[0]

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            for state, records in await self._take_chunk(1000):
                for record in records:  # ends early if the partition is sought or revoked meanwhile
                    state.position = record.offset + 1
                    yield record

    async def _take_chunk(self, timeout_ms: int) -> list[tuple[_PartitionState, list[ConsumerRecord]]]:
        """For iteration: the buffered records, without moving ``position``; the iterator moves it as it
        hands each record out. Records of the previous chunk not handed out are fetched again."""
        chunk = await self._poll((), timeout_ms, None, self._take_unconsumed)
        handed = [(self._states[tp], records) for tp, records in chunk.items()]
        for state, records in handed:
            state.handed = records
        self._handed_out = [state for state, _ in handed]
        return handed

    def _settle(self) -> None:
        """Close the chunk an iteration was handing out: positions catch up with the fetch positions
        (records skipped after it, such as transaction markers), or go back to the first record not
        handed out (the iteration stopped early), which is then fetched again."""
        for state in self._handed_out:
            records, state.handed = state.handed, None
            if records is None:
                continue  # moved (seek, reset, revocation) meanwhile
            if records and state.position is not None and records[-1].offset >= state.position:
                records.clear()  # the iteration stops handing them out
                state.move(state.position)
            else:
                state.position = state.fetch_position
        self._handed_out = []

    def _take_records(self, state: _PartitionState, limit: int) -> tuple[list[ConsumerRecord], int]:
        records = state.buffer.take_records(limit, self.config["key_deserializer"], self.config["value_deserializer"])
        self._moved_past(state, records[-1].offset + 1 if records else None, True)
        return records, len(records)

    def _take_unconsumed(self, state: _PartitionState, limit: int) -> tuple[list[ConsumerRecord], int]:
        records = state.buffer.take_records(limit, self.config["key_deserializer"], self.config["value_deserializer"])
        self._moved_past(state, records[-1].offset + 1 if records else None, False)
        return records, len(records)

    def _take_arrow(self, state: _PartitionState, limit: int) -> tuple[Any, int]:
        batch = state.buffer.take_arrow(limit)
        self._moved_past(state, batch.column(4)[-1].as_py() + 1 if batch is not None else None, True)
        return batch, 0 if batch is None else batch.num_rows

    @staticmethod
    def _moved_past(state: _PartitionState, next_position: int | None, consumed: bool,
                    drained_to: int | None = None) -> None:
        """Move the fetch position (and ``position`` when the application has the records) past what was
        taken; once the buffer is empty, past the Fetch answer's last batch (transaction markers, or a
        compacted batch's empty end), as Java's Fetcher does."""
        if not state.buffer:
            end = state.buffer.next_offset if drained_to is None else drained_to
            if end > (state.fetch_position or 0):
                next_position = end if next_position is None else max(next_position, end)
        if next_position is None:
            return
        state.fetch_position = next_position
        if consumed:
            state.position = next_position

    def _drain(self, only: tuple[TopicPartition, ...], limit: int, take: Callable) -> dict[TopicPartition, Any]:
        wanted = [TopicPartition(*tp) for tp in only] if only else list(self._states)
        result: dict[TopicPartition, Any] = {}
        woke = False
        for tp in wanted:
            state = self._states.get(tp)
            if state is None or state.paused:
                continue
            if state.error is not None and not state.buffer:
                if result:
                    break  # hand over what we have; the error comes with the next call
                error, state.error = state.error, None
                raise error
            if not state.buffer or limit <= 0:
                continue
            try:
                taken, count = take(state, limit)
            except Exception as exc:  # corrupt records or a failing deserializer: the application sees it
                state.buffer.clear()
                self._wake.set()
                if result:
                    state.error = exc
                    break
                raise
            if count:
                result[tp] = taken
                limit -= count
            woke = woke or not state.buffer
        if woke:
            self._wake.set()  # emptied buffers may be fetched again
        if result:
            # Round-robin across calls, as Kafka's fetcher does: the partitions served go to the back.
            for tp in result:
                self._states[tp] = self._states.pop(tp)
        return result

    def _raise_group_error(self) -> None:
        if self._group_error is not None:
            raise self._group_error

    def _group_failed(self, error: BaseException) -> None:
        """A fatal group error (e.g. FENCED_INSTANCE_ID): the application gets it from getmany."""
        self._group_error = error
        self._data.set()

    def _consumed_positions(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """What auto-commit commits: the position after the last record handed to the application."""
        return {tp: OffsetAndMetadata(s.position) for tp, s in self._states.items() if s.position is not None}

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the consumer is closed")
        if self._fetch_loop is None:
            raise IllegalStateError("the consumer is not started (await start() or use async with)")
        if self._fetch_loop.done() and not self._fetch_loop.cancelled() and self._fetch_loop.exception():
            raise self._fetch_loop.exception()  # type: ignore[misc]

    # -- fetching ---------------------------------------------------------------------------------
    async def _run_fetch_loop(self) -> None:
        backoff = self.config["retry_backoff_ms"] / 1000.0
        while not self._closed:
            self._wake.clear()
            try:
                if self._metadata_stale:
                    self._metadata_stale = False
                    await self._client.metadata(sorted({tp.topic for tp in self._states}))
                if any(s.fetch_position is None and s.error is None for s in self._states.values()):
                    await self._update_positions()
            except (OSError, KafkaError) as exc:
                log.debug("fetcher: metadata or positions failed: %s", exc)
                self._metadata_stale = True
                await asyncio.sleep(backoff)
                continue
            for leader, partitions in self._fetchable().items():
                if leader not in self._in_flight:
                    task = asyncio.get_running_loop().create_task(self._fetch_from(leader, partitions))
                    self._in_flight[leader] = task
            try:
                async with asyncio.timeout(backoff if self._metadata_stale else None):
                    await self._wake.wait()
            except TimeoutError:
                pass

    def _fetchable(self) -> dict[int, list[tuple[TopicPartition, int, int]]]:
        """leader -> [(partition, fetch offset, epoch)] for partitions ready to be fetched."""
        cluster = self._client.cluster
        by_leader: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        for tp, state in self._states.items():
            if state.paused or state.fetch_position is None or state.buffer or state.error is not None:
                continue
            leader = cluster.leader_for(tp.topic, tp.partition)
            if leader is None or leader not in cluster.brokers:
                self._metadata_stale = True
                continue
            by_leader.setdefault(leader, []).append((tp, state.fetch_position, state.epoch))
        return by_leader

    async def _fetch_from(self, leader: int, partitions: list[tuple[TopicPartition, int, int]]) -> None:
        try:
            await self._fetch_once(leader, partitions)
        except asyncio.CancelledError:
            raise
        except (OSError, KafkaError) as exc:
            log.debug("fetch from broker %d failed: %s", leader, exc)
            self._metadata_stale = True
            await asyncio.sleep(self.config["retry_backoff_ms"] / 1000.0)
        finally:
            self._in_flight.pop(leader, None)
            self._wake.set()

    async def _fetch_once(self, leader: int, partitions: list[tuple[TopicPartition, int, int]]) -> None:
        max_partition_bytes = self.config["max_partition_fetch_bytes"]
        topics: dict[str, list[Any]] = {}
        for tp, offset, _ in partitions:
            topics.setdefault(tp.topic, []).append(FetchRequest.FetchTopic.FetchPartition(
                partition=tp.partition, fetch_offset=offset, partition_max_bytes=max_partition_bytes))
        # No fetch session (session_id 0, epoch -1: a full fetch each time), as a sessionless Java client.
        request = FetchRequest(replica_id=-1, max_wait_ms=self.config["fetch_max_wait_ms"],
                               min_bytes=self.config["fetch_min_bytes"], max_bytes=self.config["fetch_max_bytes"],
                               isolation_level=self._isolation, session_id=0, session_epoch=-1,
                               topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])
        conn = await self._client.connection(leader)
        response = await conn.send(request, timeout=self._client._timeout_for(self.config["fetch_max_wait_ms"]))
        if response.error_code:
            raise for_code(response.error_code)("Fetch")
        answers = {(topic.topic, p.partition_index): p for topic in response.responses for p in topic.partitions}
        got_data = False
        for tp, offset, epoch in partitions:
            state = self._states.get(tp)
            answer = answers.get((tp.topic, tp.partition))
            if state is None or answer is None or state.epoch != epoch or state.fetch_position != offset:
                continue  # unassigned, sought or reset while the fetch was out: its answer is stale
            got_data |= self._take(tp, state, offset, answer)
        if got_data:
            self._data.set()

    def _take(self, tp: TopicPartition, state: _PartitionState, offset: int, answer: Any) -> bool:
        """Buffer one partition's answer; True when the application has something new to see."""
        code = answer.error_code
        if code == OFFSET_OUT_OF_RANGE:
            if self.config["auto_offset_reset"] == "none":
                state.error = for_code(code)(f"offset {offset} of {tp} is out of range")
                return True
            log.info("offset %d of %s is out of range; resetting to %s", offset, tp, self.config["auto_offset_reset"])
            state.move(None)
            return False
        if code in _METADATA_ERRORS:
            self._metadata_stale = True
            return False
        if code:
            state.error = for_code(code)(f"fetching {tp} at {offset}")
            return True
        state.high_watermark = answer.high_watermark
        state.log_start_offset = answer.log_start_offset
        state.last_stable_offset = answer.last_stable_offset
        aborted = (answer.aborted_transactions or []) if self._isolation else None
        try:
            specs, after = batch_specs(answer.records, offset, aborted)
        except Exception as exc:  # a corrupt batch: the application sees it
            state.buffer.clear()
            state.error = exc
            return True
        if not specs:
            # Only control batches or aborted transactions: step over them, as Java's Fetcher does
            # (its next fetch offset is the last batch's next offset); else this offset is fetched forever.
            self._moved_past(state, None, state.position == state.fetch_position, after)
            return False
        state.buffer.extend(specs, after)
        return True

    # -- committed offsets ------------------------------------------------------------------------
    def _coordinator_link(self) -> CoordinatorLink:
        if self._link is None:
            raise KafkaConfigurationError("committing and fetching committed offsets need a group_id")
        return self._link

    async def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata | int] | None = None) -> None:
        """Commit ``offsets`` (default: the consumed positions). A group member commits with its
        generation (a stale one raises ``CommitFailedError`` and the member rejoins); otherwise with
        generation -1, as Kafka's simple consumer does."""
        link = self._coordinator_link()
        if offsets is None:
            offsets = dict(self._consumed_positions())
        if self._group is not None:
            await self._group.commit(offsets)
        else:
            await commit_offsets(link, offsets)

    async def committed(self, partition: TopicPartition) -> OffsetAndMetadata | None:
        """The group's committed offset for ``partition``, None when there is none."""
        return (await self._fetch_committed([TopicPartition(*partition)]))[TopicPartition(*partition)]

    async def _fetch_committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await fetch_committed(self._coordinator_link(), partitions)

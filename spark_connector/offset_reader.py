"""KafkaOffsetReader: the driver's view of the topics (Spark's class of that name, over our clients).

It finds the partitions a subscription covers and turns offset specs (earliest, latest, per-partition
JSON, timestamps) into offsets. It drives an ``AIOConsumer`` (no group, never fetching: only its
ListOffsets and metadata calls) on an ``EventLoopThread``, so ``latest`` under read_committed is the last
stable offset as the consumer's ``end_offsets`` gives it. It lives in the driver's planner process and
is never pickled with the reader.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Awaitable, Callable, TypeVar

from ..clients.admin.client import AIOAdmin
from ..clients.consumer.consumer import AIOConsumer
from ..clients.event_loop_thread import EventLoopThread
from ..clients.types import OffsetAndMetadata, TopicPartition
from ..protocol.errors import KafkaError
from .options import EARLIEST, LATEST, OffsetSpec, SourceOptions, security_of

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

Offsets = dict[TopicPartition, int]
T = TypeVar("T")
RETRY_FOR_S = 120.0  # a leader that died is replaced within the brokers' ZooKeeper session timeout


class OffsetOutOfRangeForTimestamp(ValueError):
    pass


class KafkaOffsetReader:
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._thread = EventLoopThread("odradek-spark-offsets")
        params = {k: v for k, v in options.consumer_params.items()
                  if k in ("client_id", "request_timeout_ms", "retry_backoff_ms")}
        params.update(security_of(options.consumer_params))
        self._consumer = AIOConsumer(bootstrap_servers=options.bootstrap_servers, enable_auto_commit=False,
                                     isolation_level="read_committed" if options.read_committed
                                     else "read_uncommitted", **params)
        self._admin: AIOAdmin | None = None
        self._thread.run(self._consumer.start())

    def close(self) -> None:
        async def close() -> None:
            await self._consumer.close(autocommit=False)
            if self._admin is not None:
                await self._admin.close()
        try:
            self._thread.run(close(), timeout=30)
        finally:
            self._thread.stop()

    # -- partitions -------------------------------------------------------------------------------
    def partitions(self) -> set[TopicPartition]:
        """The partitions the subscription covers now (assign: exactly the given ones)."""
        opts = self.options
        if opts.strategy == "assign":
            return {TopicPartition(t, p) for t, p in opts.assigned}
        return self._retrying(self._partitions)

    def _retrying(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on the loop, again after connection and leader errors (a broker died and its
        partitions' leaders are moving) until RETRY_FOR_S passed, as Spark's KafkaOffsetReader retries."""
        deadline = time.monotonic() + RETRY_FOR_S
        delay = 0.2
        while True:
            try:
                return self._thread.run(make(), timeout=RETRY_FOR_S)
            except (OSError, KafkaError) as exc:
                if time.monotonic() + delay > deadline or not _retriable(exc):
                    raise
                log.warning("looking up offsets failed (%s); retrying", exc)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _partitions(self) -> set[TopicPartition]:
        existing = await self._consumer.topics()
        if self.options.strategy == "subscribe":
            topics = [t for t in self.options.topics if t in existing]
        else:  # Java's Pattern.matcher(topic).matches(): the whole name; internal topics excluded
            pattern = re.compile(self.options.pattern)
            topics = sorted(t for t in existing if t not in INTERNAL_TOPICS and pattern.fullmatch(t))
        found: set[TopicPartition] = set()
        for topic in topics:
            found.update(TopicPartition(topic, p) for p in await self._consumer.partitions_for_topic(topic))
        return found

    # -- offsets ----------------------------------------------------------------------------------
    def earliest(self, partitions: set[TopicPartition], drop_missing: bool = False) -> Offsets:
        return self._list(partitions, EARLIEST, drop_missing)

    def latest(self, partitions: set[TopicPartition], drop_missing: bool = False) -> Offsets:
        """The log end offsets (read_committed: the last stable offsets)."""
        return self._list(partitions, LATEST, drop_missing)

    def _list(self, partitions: set[TopicPartition], which: int, drop_missing: bool = False) -> Offsets:
        """``drop_missing``: partitions of a topic deleted meanwhile are left out of the answer (the
        caller reports them as data loss) instead of being retried until RETRY_FOR_S runs out."""
        if not partitions:
            return {}
        call = self._consumer.beginning_offsets if which == EARLIEST else self._consumer.end_offsets
        if not drop_missing:
            return dict(self._retrying(lambda: call(sorted(partitions))))

        async def of_existing() -> Offsets:
            try:
                return dict(await call(sorted(partitions)))
            except KafkaError:
                existing = partitions & await self._partitions()
                if existing == partitions:
                    raise
                log.info("%s vanished while their offsets were looked up", sorted(partitions - existing))
                return dict(await call(sorted(existing))) if existing else {}
        return self._retrying(of_existing)

    def for_timestamps(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset whose timestamp is >= the given one, None where no record is that new."""
        if not timestamps:
            return {}
        found = self._retrying(lambda: self._consumer.offsets_for_times(timestamps))
        return {tp: (answer.offset if answer is not None else None) for tp, answer in found.items()}

    def resolve(self, spec: OffsetSpec, partitions: set[TopicPartition], starting: bool, option: str) -> Offsets:
        """``spec`` as concrete offsets of ``partitions``; -1/-2 in per-partition JSON become the log's
        end/start. Per-partition JSON must name exactly the subscribed partitions (Spark's check)."""
        if spec.kind == "earliest":
            return self.earliest(partitions)
        if spec.kind == "latest":
            return self.latest(partitions)
        if spec.kind == "timestamp":
            return self._from_timestamps({tp: spec.timestamp for tp in partitions}, starting, option)
        given = {TopicPartition(t, p): v for t, parts in spec.offsets.items() for p, v in parts.items()}
        if set(given) != partitions:
            raise ValueError(
                f"If {option} contains specific offsets, you must specify all TopicPartitions.\n"
                f"Use -1 for latest, -2 for earliest.\n"
                f"Specified: {sorted(given)} Assigned: {sorted(partitions)}")
        if spec.kind == "timestamps":
            return self._from_timestamps(given, starting, option)
        resolved = dict(given)
        if any(v == EARLIEST for v in given.values()):
            resolved.update(self.earliest({tp for tp, v in given.items() if v == EARLIEST}))
        if any(v == LATEST for v in given.values()):
            resolved.update(self.latest({tp for tp, v in given.items() if v == LATEST}))
        return resolved

    def _from_timestamps(self, timestamps: dict[TopicPartition, int], starting: bool, option: str) -> Offsets:
        found = self.for_timestamps(timestamps)
        missing = {tp for tp, offset in found.items() if offset is None}
        resolved = {tp: offset for tp, offset in found.items() if offset is not None}
        if missing:
            # Spark: no record at or after the timestamp ends a range at the latest offset; a start
            # fails (startingOffsetsByTimestampStrategy=error, the default) or takes the latest.
            if starting and self.options.by_timestamp_strategy == "error":
                tp = min(missing)
                raise OffsetOutOfRangeForTimestamp(
                    f"No offset matched from request of topic-partition {tp.topic}-{tp.partition} and "
                    f"timestamp {timestamps[tp]} (option '{option}'). Set startingOffsetsByTimestampStrategy "
                    f"to 'latest' to start such partitions at the latest offset.")
            resolved.update(self.latest(missing))
        return resolved

    # -- progress as group offsets ----------------------------------------------------------------
    def commit_group_offsets(self, group_id: str, offsets: Offsets) -> None:
        """Commit ``offsets`` as ``group_id``'s, as Kafka's Admin does, so lag tools see the query's progress."""
        async def commit() -> Any:
            if self._admin is None:
                self._admin = AIOAdmin(self.options.bootstrap_servers, **security_of(self.options.consumer_params))
            return await self._admin.alter_consumer_group_offsets(
                group_id, {tp: OffsetAndMetadata(o) for tp, o in offsets.items()}, raise_errors=False)
        for tp, error in self._thread.run(commit(), timeout=120).items():
            if error is not None:
                log.warning("committing %s of group %s failed: %s", tp, group_id, error)


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, OSError) or getattr(exc, "retriable", False) or "connect" in str(exc).lower()


def offsets_to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """Spark's checkpoint shape: {"topic": {"0": 23}} (JSON object keys are strings)."""
    result: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        result.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return result


def offsets_from_json(data: dict[str, Any]) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}

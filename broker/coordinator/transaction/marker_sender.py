"""TransactionMarkerSender: writes a transaction's COMMIT/ABORT markers to each of its partitions' leaders,
then the transaction's CompleteCommit/CompleteAbort state (Kafka 2.8's TransactionMarkerChannelManager).

One task per transaction: it groups the partitions still without a marker by their leader (from the
metadata cache, which the controller keeps current), hands each leader's share to the TxnMarkerChannel
(marker_channel.py: one queue and one request in flight per destination, so the markers of concurrent
transactions bound for the same broker travel in one WriteTxnMarkers), and retries what failed (leader
moved, not enough replicas, timeouts, a lost connection) with backoff until every partition has its
marker. Partitions of deleted topics are dropped. A fenced coordinator (INVALID_PRODUCER_EPOCH /
TRANSACTION_COORDINATOR_FENCED) or an unloaded ``__transaction_state`` partition stops the task: the new
coordinator resends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ....controller.channel_manager import inter_broker_connect
from .marker_channel import TxnMarkerChannel
from .state_manager import TransactionStateManager
from .trace import trace
from .transaction_metadata import (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NONE, NOT_COORDINATOR,
                                   TransactionMetadata, TxnTransit)

log = logging.getLogger(__name__)

# Kafka's TransactionMarkerRequestCompletionHandler: errors after which the marker is sent again.
RETRIABLE = {3, 6, 19, 20, 7, 56, 15}   # unknown partition, not leader, not enough replicas (after append),
                                        # request timed out, storage error, coordinator not available
FENCED = {47, 52}                       # INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED
DROP = {43}                             # UNSUPPORTED_FOR_MESSAGE_FORMAT: the partition cannot take markers
INITIAL_BACKOFF_S, MAX_BACKOFF_S = 0.05, 1.0
Round = tuple[list[asyncio.Future], set[tuple[str, int]]]  # the leaders' answers, the partitions without a leader


class TransactionMarkerSender:
    def __init__(self, broker_id: int, config: Any, metadata_cache: Any, state: TransactionStateManager,
                 listener_name: str) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.state = state
        self.listener_name = listener_name
        self.channel = TxnMarkerChannel(broker_id, config.get("request.timeout.ms") / 1000,
                                        connect=inter_broker_connect(config))
        self._tasks: dict[str, tuple[int, asyncio.Task]] = {}   # transactional id -> (txn partition, task)
        # The coordinator's hook: the next transaction's Ongoing state that requests held until this completion
        # want (written in the completion's batch), or None.
        self.next_transaction: Callable[[TransactionMetadata, TxnTransit], TxnTransit | None] | None = None

    # -- public -----------------------------------------------------------------------------------

    def add_markers(self, coordinator_epoch: int, commit: bool, metadata: TransactionMetadata,
                    complete: TxnTransit) -> None:
        """Send the markers of a transaction in PrepareCommit/PrepareAbort, then write ``complete``."""
        tid = metadata.transactional_id
        previous = self._tasks.pop(tid, None)
        if previous is not None:
            previous[1].cancel()
        # The first round's requests are written now, before EndTxn is answered: the markers, not the
        # client, are on the path to the next transaction.
        first = self._submit(metadata, coordinator_epoch, commit) \
            if self._still_ours(tid, coordinator_epoch, metadata) else None
        task = asyncio.get_running_loop().create_task(
            self._complete_transaction(coordinator_epoch, commit, metadata, complete, first),
            name=f"txn-markers-{tid}")
        self._tasks[tid] = (self.state.partition_for(tid), task)
        task.add_done_callback(lambda t, tid=tid: self._forget(tid, t))

    def pending(self) -> list[str]:
        return list(self._tasks)

    def remove_for_partition(self, txn_partition: int) -> None:
        """The __transaction_state partition moved away: its transactions' markers are no longer ours."""
        for tid, (partition, task) in list(self._tasks.items()):
            if partition == txn_partition:
                task.cancel()
                del self._tasks[tid]

    async def shutdown(self) -> None:
        tasks = [task for _, task in self._tasks.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        await self.channel.shutdown()

    def _forget(self, tid: str, task: asyncio.Task) -> None:
        if self._tasks.get(tid, (None, None))[1] is task:
            del self._tasks[tid]
        if not task.cancelled() and task.exception() is not None:
            log.error("Sending the markers of transaction %s failed", tid, exc_info=task.exception())

    # -- one transaction --------------------------------------------------------------------------

    def _still_ours(self, tid: str, coordinator_epoch: int, metadata: TransactionMetadata) -> bool:
        code, entry = self.state.get_state(tid)
        return code == NONE and entry is not None and entry.coordinator_epoch == coordinator_epoch \
            and entry.metadata is metadata

    async def _complete_transaction(self, coordinator_epoch: int, commit: bool, metadata: TransactionMetadata,
                                    complete: TxnTransit, first: "Round | None" = None) -> None:
        tid = metadata.transactional_id
        backoff = INITIAL_BACKOFF_S
        sent = first
        while metadata.partitions:
            if sent is None:
                if not self._still_ours(tid, coordinator_epoch, metadata):
                    log.info("Stopped sending the markers of %s: this broker no longer coordinates it at epoch %d",
                             tid, coordinator_epoch)
                    return
                sent = self._submit(metadata, coordinator_epoch, commit)
            answers, unknown_leader = sent
            sent = None
            try:
                outcomes = [self._outcome(metadata, await answer) for answer in answers]
            except asyncio.CancelledError:
                for answer in answers:  # the markers still queued leave the channel's queues
                    answer.cancel()
                raise
            if any(outcome == "fenced" for outcome in outcomes):
                log.info("Stopped sending the markers of %s: a newer coordinator or producer epoch fenced "
                         "coordinator epoch %d", tid, coordinator_epoch)
                return
            if metadata.partitions:
                if unknown_leader:
                    log.debug("Markers of %s wait for leaders of %s", tid, sorted(unknown_leader))
                trace(metadata.producer_id, "markers-retry", backoff_ms=int(backoff * 1000))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        log.debug("All markers of %s written (coordinator epoch %d); writing %s", tid, coordinator_epoch,
                  "CompleteCommit" if commit else "CompleteAbort")
        trace(metadata.producer_id, "markers-written")
        await self._write_complete(metadata, coordinator_epoch, complete)

    def _submit(self, metadata: TransactionMetadata, coordinator_epoch: int, commit: bool) -> "Round":
        """One round: the partitions still without a marker, by leader, handed to the channel (each leader's
        request may leave in this call); the futures of the leaders' answers, and the partitions whose
        leader is unknown."""
        by_broker, unknown_leader = self._group_by_leader(metadata)
        answers = [self.channel.submit(broker, (endpoint.host, endpoint.port), metadata.producer_id,
                                       metadata.producer_epoch, commit, coordinator_epoch, partitions)
                   for broker, (endpoint, partitions) in by_broker.items()]
        return answers, unknown_leader

    def _group_by_leader(self, metadata: TransactionMetadata) -> tuple[dict, set]:
        by_broker: dict[int, tuple[Any, list[tuple[str, int]]]] = {}
        unknown_leader: set[tuple[str, int]] = set()
        cache = self.metadata_cache
        for tp in list(metadata.partitions):
            cached = cache.partition(*tp)
            if cached is None:
                if not cache.contains_topic(tp[0]):
                    # Kafka drops partitions of deleted topics: there is nothing left to mark.
                    log.info("Dropping the marker of %s for %s-%d: the topic is gone",
                             metadata.transactional_id, *tp)
                    metadata.remove_partition(tp)
                else:
                    unknown_leader.add(tp)
                continue
            endpoint = cache.endpoint(cached.leader, self.listener_name) if cached.leader >= 0 else None
            if endpoint is None:
                unknown_leader.add(tp)
                continue
            by_broker.setdefault(cached.leader, (endpoint, []))[1].append(tp)
        return by_broker, unknown_leader

    @staticmethod
    def _outcome(metadata: TransactionMetadata, result: Any) -> str:
        """What one leader's answer means for the transaction ("ok", "retry" or "fenced"); removes the
        partitions that got their marker."""
        if result is None:
            return "retry"  # the request failed as a whole; the channel logged why
        outcome = "ok"
        for topic in result.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if p.error_code == 0 or p.error_code in DROP:
                    if tp in metadata.partitions:
                        metadata.remove_partition(tp)
                elif p.error_code in FENCED:
                    outcome = "fenced"
                elif p.error_code in RETRIABLE:
                    log.debug("Marker of %s for %s-%d got error %d; retrying", metadata.transactional_id, *tp,
                              p.error_code)
                    outcome = "retry" if outcome == "ok" else outcome
                else:  # Kafka treats anything else as a bug (IllegalStateException); we keep retrying
                    log.error("Marker of %s for %s-%d got unexpected error %d; retrying",
                              metadata.transactional_id, *tp, p.error_code)
                    outcome = "retry" if outcome == "ok" else outcome
        return outcome

    async def _write_complete(self, metadata: TransactionMetadata, coordinator_epoch: int, complete: TxnTransit) -> None:
        """Kafka's tryAppendToLog: retry while the log is unavailable; stop when no longer coordinator."""
        tid = metadata.transactional_id
        backoff = INITIAL_BACKOFF_S
        while True:
            follow_up = self.next_transaction(metadata, complete) if self.next_transaction is not None else None
            code = await self.state.append_transaction(tid, coordinator_epoch, complete,
                                                       retry_on_error=lambda c: c == COORDINATOR_NOT_AVAILABLE,
                                                       follow_up=follow_up)
            if code == COORDINATOR_NOT_AVAILABLE:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            if code not in (NONE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS):
                log.error("Unexpected error %d writing the completion of transaction %s", code, tid)
            return

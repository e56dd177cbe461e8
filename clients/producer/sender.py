"""The producer's sender: one task that turns queued batches into Produce requests and settles each batch
(acknowledged, retried or failed), as Kafka 2.8's Java Sender.

Each round (woken by a new or full batch, an answer, a flush, or the next deadline) it
1. does the transaction's work (adds new partitions, or fails every unsent batch once the transaction can
   only be aborted: Java's abortUndrainedBatches);
2. expires batches whose ``delivery_timeout_ms`` has passed, in every state: queued, waiting for a retry,
   behind an earlier batch of their partition, for a leader, an epoch bump or AddPartitionsToTxn, and in
   flight (Java's expiredBatches and getExpiredInflightBatches). The records fail with REQUEST_TIMED_OUT,
   Java's TimeoutException message, naming the error the batch was last retried after;
3. settles the idempotent producer's sequences: resolves partitions whose expired batches' fate is known
   by now, and bumps the epoch once the broken partitions have nothing in flight (sequences.py);
4. drains each partition's first batch if it may go (linger, backoff, in-flight limit, ordering rules,
   leader known) and sends one Produce request per leader.

A batch that expires in flight stays counted as in flight until its request is answered or fails: its
partition sends nothing new meanwhile (a retry waits for the rest of its partition; a new epoch's batch for
the old epoch's), so a late write cannot land after a later batch. Java stops tracking it at expiry; its
records fail at the same moment either way.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import (
    DuplicateSequenceNumberError, KafkaError, OutOfOrderSequenceNumberError, RequestTimedOutError,
    UnknownProducerIdError, UnsupportedVersionError, for_code,
)
from ...protocol.messages import ProduceRequest
from ..errors import KafkaConnectionError
from .batch import _Batch
from .sequences import ProducerSequences
from .record_accumulator import RecordAccumulator
from ..simple_client import SimpleClient
from .transaction_manager import TransactionManager
from ..types import TopicPartition

log = logging.getLogger(__name__)

# Errors after which the partition's leader must be looked up again (Kafka's InvalidMetadataException).
_REFRESH_CODES = frozenset({3, 5, 6})


def describe_error(error: BaseException) -> str:
    """``NOT_ENOUGH_REPLICAS: <the broker's message>`` for a Kafka error, ``TimeoutError: ...`` otherwise."""
    if isinstance(error, KafkaError):
        detail = error.detail
        return f"{error.name}: {detail}" if detail and detail != error.message else error.name
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class Sender:
    def __init__(self, config: dict[str, Any], client: SimpleClient, accumulator: RecordAccumulator,
                 sequences: ProducerSequences | None, txn: TransactionManager | None, topics: set[str]) -> None:
        self.config = config
        self._client = client
        self._accumulator = accumulator
        self._sequences = sequences  # None: not idempotent
        self._txn = txn
        self._topics = topics  # topics the producer waits for or sends to: kept in metadata refreshes
        self._delivery_timeout = config["delivery_timeout_ms"] / 1000
        self.in_flight: dict[TopicPartition, list[_Batch]] = {}
        self._last_errors: dict[TopicPartition, BaseException] = {}  # per partition, since its last success
        self.flushing = 0  # flush() calls waiting: everything queued is sendable now, linger or not
        self.closing = False
        self._wakeup = asyncio.Event()
        self._requests: set[asyncio.Task] = set()
        self._metadata_task: asyncio.Task | None = None
        self._producer_id_task: asyncio.Task | None = None

    def wake(self) -> None:
        self._wakeup.set()

    @staticmethod
    def _time() -> float:
        return asyncio.get_running_loop().time()

    def tasks(self) -> list[asyncio.Task]:
        """The requests and lookups under way (close() cancels them)."""
        return [t for t in (self._metadata_task, self._producer_id_task, *self._requests) if t is not None]

    async def run(self) -> None:
        while True:
            self._wakeup.clear()
            now = self._time()
            if self._txn is not None:
                self._transaction_step()
            next_expiry = self._expire(now)
            if self._sequences is not None and self._txn is None:
                self._resolve_sequences()
                self._maybe_bump_epoch()
            by_node, wake_at = self._drain(now)
            for node, batches in by_node.items():
                task = asyncio.create_task(self._send_batches(node, batches))
                self._requests.add(task)
                task.add_done_callback(self._requests.discard)
            if self.closing and not self._accumulator.incomplete:
                return
            if next_expiry is not None and (wake_at is None or next_expiry < wake_at):
                wake_at = next_expiry
            timeout = None if wake_at is None else max(wake_at - self._time(), 0)
            try:
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    # -- transactions ---------------------------------------------------------------------------------
    def _transaction_step(self) -> None:
        """Add new partitions to the transaction, or, once it can only be aborted (or is being aborted, or
        fenced), fail every unsent batch with the transaction's error (Java's abortUndrainedBatches)."""
        txn = self._txn
        assert txn is not None
        if not txn.drops_unsent:
            txn.maybe_add_partitions(self.wake)
            return
        error = txn.unsent_error()
        for batch in self._accumulator.take_all():
            if batch.fail(error) and batch.sequence is not None and self._sequences is not None:
                self._sequences.mark_broken(batch)  # its sequence was taken (maybe even written)

    # -- expiry ------------------------------------------------------------------------------------
    def _expire(self, now: float) -> float | None:
        """Fail every batch past ``delivery_timeout_ms`` (those in flight first: they are the older); returns
        when the next one will be (loop time)."""
        timeout = self._delivery_timeout
        next_in_flight: float | None = None
        for batches in self.in_flight.values():
            for batch in batches:
                if batch.is_done:
                    continue  # expired already; its request is still out
                expires = batch.created + timeout
                if now >= expires:
                    self._fail(batch, self._expiry_error(batch, now, in_flight=True), fate_unknown=True)
                elif next_in_flight is None or expires < next_in_flight:
                    next_in_flight = expires
        expired, next_expiry = self._accumulator.take_expired(now)
        for batch in expired:
            self._fail(batch, self._expiry_error(batch, now, in_flight=False), fate_unknown=batch.attempts > 0)
        if next_in_flight is not None and (next_expiry is None or next_in_flight < next_expiry):
            return next_in_flight
        return next_expiry

    def _expiry_error(self, batch: _Batch, now: float, in_flight: bool) -> RequestTimedOutError:
        # Java's TimeoutException message, plus what held the batch up (Java's says only the time): the
        # error its last attempt got, else that of its partition's last failed attempt (it waited behind).
        text = (f"Expiring {batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition}:"
                f"{int((now - batch.created) * 1000)} ms has passed since batch creation")
        notes = [f"attempt {batch.attempts} still unanswered"] if in_flight else []
        last_error = batch.last_error or self._last_errors.get(batch.tp)
        if last_error is not None:
            notes.append(f"last error: {describe_error(last_error)}")
        elif not in_flight and self.in_flight.get(batch.tp):
            notes.append(f"queued behind {len(self.in_flight[batch.tp])} unanswered request(s)")
        error = RequestTimedOutError(f"{text} ({'; '.join(notes)})" if notes else text)
        error.__cause__ = last_error
        return error

    def _fail(self, batch: _Batch, error: BaseException, fate_unknown: bool) -> None:
        """The one way a batch fails for good (Java's Sender.failBatch). ``fate_unknown``: it was sent and has
        no definite answer (expired, retries exhausted), so it may be written."""
        if not batch.fail(error):
            return
        sequences = self._sequences
        if sequences is not None and batch.sequence is not None:
            if fate_unknown and self._txn is None:
                sequences.mark_unresolved(batch)
            else:  # refused for good; or a transaction's batch: the abort bumps the epoch (Java's epochBumpRequired)
                sequences.mark_broken(batch)
        if self._txn is not None:
            self._txn.on_batch_error(error)

    # -- idempotent sequences ------------------------------------------------------------------------
    def _resolve_sequences(self) -> None:
        """An unresolved partition is resolved once nothing it sent is outstanding (maybeResolveSequences)."""
        sequences = self._sequences
        assert sequences is not None
        for tp in list(sequences.unresolved):
            queue = self._accumulator.queues.get(tp)
            if not self.in_flight.get(tp) and not (queue and queue[0].sequence is not None):
                sequences.resolve(tp)

    def _maybe_bump_epoch(self) -> None:
        """Kafka 2.8's idempotent epoch bump (KIP-360), once the broken partitions have nothing in flight:
        the same producer id with the next epoch, taken locally; InitProducerId only once the epoch is
        exhausted, in a task of its own so expiry goes on meanwhile. Keeping the id matters: a leader that
        knows the id refuses a new epoch's batch that is not sequence 0, whereas a fresh id is unknown
        everywhere and its first batch is accepted at any sequence (Kafka's rule for lost producer state),
        so after a leader move a later batch of the new id could be written before an earlier one."""
        sequences = self._sequences
        assert sequences is not None
        if not sequences.bump_required or self._producer_id_task is not None:
            return
        if any(self.in_flight.get(tp) for tp in sequences.broken):
            return  # their answers may still break more sequences (Java's drain rule waits for them too)
        if sequences.can_bump_locally:
            sequences.start_new_epoch(sequences.producer_id, sequences.epoch + 1, self._accumulator.queues)
            log.debug("bumped the producer epoch to %d", sequences.epoch)
        else:
            self._producer_id_task = asyncio.create_task(self._new_producer_id(), name="odradek-init-producer-id")

    async def _new_producer_id(self) -> None:
        assert self._sequences is not None
        try:
            producer_id, epoch = await self._client.init_producer_id()
        except (OSError, KafkaError) as exc:
            log.warning("could not get a new producer id: %s", exc)
            await asyncio.sleep(self.config["retry_backoff_ms"] / 1000)
        else:
            self._sequences.start_new_epoch(producer_id, epoch, self._accumulator.queues)
        finally:
            self._producer_id_task = None
            self.wake()

    # -- draining ------------------------------------------------------------------------------------
    def _drain(self, now: float) -> tuple[dict[int, list[_Batch]], float | None]:
        """Take each partition's first batch if it is due and may go; returns batches by leader and when to
        look again (None: only when woken)."""
        c = self.config
        linger = c["linger_ms"] / 1000
        max_in_flight = c["max_in_flight_requests_per_connection"]
        sequences, txn = self._sequences, self._txn
        by_node: dict[int, list[_Batch]] = {}
        wake_at: float | None = None
        missing_leader = False
        for tp, queue in self._accumulator.queues.items():
            if not queue:
                continue
            batch = queue[0]
            in_flight = self.in_flight.get(tp)
            if in_flight is None:
                in_flight = self.in_flight[tp] = []
            if sequences is not None:
                if sequences.bump_required:
                    continue  # nothing is sealed or re-sent until the new epoch is taken
                if batch.sequence is not None:
                    if in_flight:
                        continue  # a retry waits for the rest of its partition to be answered (keeps order)
                elif tp in sequences.unresolved:
                    continue  # no new sequence while an earlier one's fate is unknown (Java's drain rule)
                elif in_flight and any(b.producer != sequences.producer for b in in_flight):
                    continue  # a new epoch's first batch waits for the old epoch's batches (Java's drain rule)
            if txn is not None and not txn.is_send_allowed(tp):
                continue  # its AddPartitionsToTxn is still to be answered
            if batch.retry_at > now:
                wake_at = min(wake_at or batch.retry_at, batch.retry_at)
                continue
            due = batch.created + linger
            if not (batch.full or len(queue) > 1 or self.flushing or self.closing or now >= due):
                wake_at = min(wake_at or due, due)
                continue
            if len(in_flight) >= max_in_flight:
                continue
            leader = self._client.cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                missing_leader = True
                continue
            queue.popleft()
            if batch.data is None:
                if sequences is None:
                    batch.seal(-1, -1, None)
                else:
                    sequences.seal(batch, transactional=txn is not None)
            in_flight.append(batch)
            batch.attempts += 1
            by_node.setdefault(leader, []).append(batch)
        if missing_leader:
            self._refresh_metadata()
        return by_node, wake_at

    def _refresh_metadata(self) -> None:
        if self._metadata_task is not None and not self._metadata_task.done():
            return

        async def refresh() -> None:
            try:
                topics = sorted(self._topics | {tp.topic for tp in self._accumulator.queues})
                await self._client.metadata(topics)
            except (OSError, KafkaError) as exc:
                log.debug("metadata refresh failed: %s", exc)
                await asyncio.sleep(self.config["retry_backoff_ms"] / 1000)
            self.wake()

        self._metadata_task = asyncio.create_task(refresh())

    # -- requests and answers ------------------------------------------------------------------------
    async def _send_batches(self, node: int, batches: list[_Batch]) -> None:
        c = self.config
        try:
            conn = await self._client.connection(node)
            # Batches that expired while the connection was being made are not sent: their records failed.
            for batch in [b for b in batches if b.is_done]:
                self._finish(batch)
                batches.remove(batch)
            if not batches:
                self.wake()
                return
            version = conn.version_for(ApiKey.PRODUCE)
            if version < 3:
                raise UnsupportedVersionError(f"{conn.host}:{conn.port} cannot take v2 record batches")
            by_topic: dict[str, list[Any]] = {}
            for batch in batches:
                by_topic.setdefault(batch.tp.topic, []).append(ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=batch.tp.partition, records=batch.data))
            request = ProduceRequest(transactional_id=c["transactional_id"], acks=c["acks"],
                                     timeout_ms=c["request_timeout_ms"],
                                     topic_data=[ProduceRequest.TopicProduceData(name=name, partition_data=data)
                                                 for name, data in by_topic.items()])
            response = await conn.send(request, version=version, timeout=2 * c["request_timeout_ms"] / 1000)
        except asyncio.CancelledError:
            raise
        except (OSError, KafkaError) as exc:
            retriable = isinstance(exc, OSError) or exc.retriable
            for batch in batches:
                self._on_error(batch, exc, retriable, refresh=True)
            self.wake()
            return
        answers = {}
        if response is not None:
            for topic in response.responses:
                for part in topic.partition_responses:
                    answers[(topic.name, part.index)] = part
        for batch in batches:
            answer = answers.get(batch.tp) if response is not None else None
            if response is None:  # acks=0: no answer, no offset
                self._finish(batch)
                batch.complete(-1, -1, -1)
            elif answer is None:
                self._on_error(batch, KafkaConnectionError(f"the response has no entry for {batch.tp}"), True, True)
            else:
                self._on_answer(batch, answer)
        self.wake()

    def _finish(self, batch: _Batch) -> None:
        in_flight = self.in_flight.get(batch.tp)
        if in_flight and batch in in_flight:
            in_flight.remove(batch)

    def _on_answer(self, batch: _Batch, answer: Any) -> None:
        code = answer.error_code
        sequences = self._sequences
        if code == 0 or code == DuplicateSequenceNumberError.code:  # a duplicate was written before
            self._finish(batch)
            self._last_errors.pop(batch.tp, None)
            if sequences is not None and batch.sequence is not None:
                sequences.acknowledged(batch)
            if not batch.complete(answer.base_offset, answer.log_append_time_ms, answer.log_start_offset):
                log.debug("%s: written at offset %d after its batch had expired", batch.tp, answer.base_offset)
            return
        error = for_code(code)(answer.error_message or f"producing to {batch.tp.topic}-{batch.tp.partition}")
        retriable = error.retriable
        if (code in (OutOfOrderSequenceNumberError.code, UnknownProducerIdError.code) and batch.sequence is not None
                and sequences is not None and not batch.is_done):
            current = batch.producer == sequences.producer
            if self._txn is not None and (not current or sequences.bump_required):
                self._finish(batch)  # sent under an epoch we gave up: resend under the new one
                batch.unseal()
                batch.attempts -= 1
                self._accumulator.reenqueue(batch)
                return
            # An earlier batch of the partition is being retried: this one was refused because of it.
            retriable = current and any(
                other.producer == batch.producer and other.sequence < batch.sequence and not other.is_done
                for other in (*self._accumulator.queues.get(batch.tp, ()), *self.in_flight.get(batch.tp, ())))
            if not retriable and self._txn is None:
                # A real gap (the batch before it failed for good, or was lost), or a refusal under an epoch
                # already given up. Kafka 2.8's idempotent producer retries every OUT_OF_ORDER_SEQUENCE after
                # bumping the epoch (TransactionManager.canRetry); the broker checks sequences before
                # appending, so this batch was not written; the bump re-sequences it and the batches behind
                # it together (re-sequencing only this one could leave an older epoch's batch to follow a
                # newer one, which the leader refuses for good).
                sequences.mark_broken(batch)
                retriable = True
        self._on_error(batch, error, retriable, refresh=code in _REFRESH_CODES)

    def _on_error(self, batch: _Batch, error: BaseException, retriable: bool, refresh: bool) -> None:
        self._finish(batch)
        if refresh:
            self._refresh_metadata()
        if batch.is_done:
            return  # it expired while in flight: its records have their error, its partition is unresolved
        batch.last_error = self._last_errors[batch.tp] = error
        c = self.config
        now = self._time()
        if retriable and batch.attempts <= c["retries"] and now - batch.created < self._delivery_timeout:
            log.debug("retrying %s after %s (attempt %d)", batch.tp, error, batch.attempts)
            batch.retry_at = now + c["retry_backoff_ms"] / 1000
            self._accumulator.reenqueue(batch)
            return
        self._fail(batch, error, fate_unknown=retriable)


__all__ = ["Sender", "describe_error"]

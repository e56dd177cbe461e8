"""Requests held until their transactional id's previous transaction is complete (issue 21; not in Kafka).

Kafka 2.8 answers CONCURRENT_TRANSACTIONS to an AddPartitionsToTxn, AddOffsetsToTxn or InitProducerId that
finds its transactional id in PrepareCommit/PrepareAbort (the markers of the previous transaction are still
being written), and every client then sleeps its retry backoff (20-100 ms) although the completion is
usually written a few milliseconds later. Here such a request waits in a purgatory, watched under its
transactional id, until the id leaves PrepareCommit/PrepareAbort (CompleteCommit/CompleteAbort written, or
the id unloaded) or ``MAX_HOLD_MS`` passes. The coordinator then runs the request again from the start, so
it sees exactly what a client retry arriving at that moment would see: every check (coordinator epoch,
producer id and epoch, fencing, state) is redone, and the request changes nothing before the previous
transaction is complete. A request still blocked when its time runs out gets CONCURRENT_TRANSACTIONS, as in
Kafka.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from ...purgatory import AsyncTimerDriver, DelayedOperation, DelayedOperationPurgatory, Timer

# Long enough for any healthy completion (markers and one replicated write take milliseconds), far below
# every client's request timeout (30 s and up), so a completion stuck on an offline leader still answers
# CONCURRENT_TRANSACTIONS and the client's own retry policy takes over as with Kafka.
MAX_HOLD_MS = 1000


class DelayedTxnCompletion(DelayedOperation):
    """One held request: completes once ``still_completing()`` is false, or expires."""

    __slots__ = ("still_completing", "future")

    def __init__(self, delay_ms: int, still_completing: Callable[[], bool], future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.still_completing = still_completing
        self.future = future

    def try_complete(self) -> bool:
        return False if self.still_completing() else self.force_complete()

    def on_complete(self) -> None:
        # Runs on expiry too: the result says whether the wait is over (False: time ran out).
        if not self.future.done():
            self.future.set_result(not self.still_completing())


class TxnCompletionWaiters:
    """The purgatory of held requests, keyed by transactional id."""

    def __init__(self) -> None:
        # Expired ops stay watched until their id is woken again or a purge: purge after 100 of them.
        self.purgatory = DelayedOperationPurgatory("TxnCompletion", Timer(), purge_interval=100)
        self._driver = AsyncTimerDriver(self.purgatory.timer)
        self.held = 0  # requests that had to wait (for tests and benchmarks)
        self._closed = False

    async def wait(self, transactional_id: str, still_completing: Callable[[], bool], timeout_ms: int) -> bool:
        """Wait until ``still_completing()`` is false after a wake-up (True) or ``timeout_ms`` passed (False)."""
        if self._closed:
            return not still_completing()
        if not self._driver.running:
            self._driver.start()  # on first use: the coordinator may be built outside the event loop
        future = asyncio.get_running_loop().create_future()
        op = DelayedTxnCompletion(max(1, timeout_ms), still_completing, future)
        if self.purgatory.try_complete_else_watch(op, [transactional_id]):
            return True
        self.held += 1
        try:
            return await future
        finally:
            op.force_complete()  # cancelled (the client went away): out of the timer now

    def wake(self, transactional_id: str) -> None:
        """The id's state changed (a transition was written or failed): re-check who waits for it."""
        self.purgatory.check_and_complete(transactional_id)

    def wake_where(self, predicate: Callable[[str], bool]) -> None:
        """Re-check the ids ``predicate`` selects (e.g. those of an unloaded partition)."""
        for transactional_id in self.purgatory.watched_keys():
            if predicate(transactional_id):
                self.purgatory.check_and_complete(transactional_id)

    def shutdown(self) -> None:
        """Release every held request (they re-run and answer from what they find; none is held again), stop
        the timer."""
        self._closed = True
        for transactional_id in self.purgatory.watched_keys():
            watchers = self.purgatory.cancel_for_key(transactional_id)
            for op in watchers:
                op.force_complete()
        self._driver.shutdown()

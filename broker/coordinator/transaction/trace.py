"""A debug trace of each transaction's path through the coordinator and the partition leaders.

Off unless this module's logger is at DEBUG, e.g.
``ODRADEK_LOG_LEVELS=odradek.broker.coordinator.transaction.trace=DEBUG``. Each event is one line

    txn-trace <monotonic ms> pid=<producer id> <event> [key=value ...]

The clock is ``time.monotonic()`` (system-wide on Linux), so the lines of every broker and of a client in
another process can be merged into one timeline per producer id (``benchmarks/bench_transactions.py
--trace`` does that and prints where a transaction's time goes).
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)
PREFIX = "txn-trace"


def tracing() -> bool:
    return log.isEnabledFor(logging.DEBUG)


def trace(producer_id: int, event: str, **details: object) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    extra = "".join(f" {key}={value}" for key, value in details.items())
    log.debug("%s %.3f pid=%d %s%s", PREFIX, time.monotonic() * 1000, producer_id, event, extra)

"""What the workload did and saw, recorded for the checker (Jepsen's history, reduced to what it checks).

Every value a producer sends is unique (``<producer>-<n>``, transactional ones ``tx-<txn>-<i>``), so a value
found anywhere names the one send it came from. A send ends ``ok`` (acknowledged, with its offset when the
client reports one) or ``info`` (indeterminate: a timeout or error after which it may or may not be
written; Jepsen's :info, never counted lost). Transactions end committed, aborted or unknown.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

OK, INFO, PENDING = "ok", "info", "pending"
COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"


@dataclass
class Send:
    producer: str          # "ck" (confluent-kafka idempotent), "od" (ours), "tx" (transactional), "a1" (acks=1)
    value: bytes
    partition: int
    seq: int               # the producer's send number: its values must keep this order in a partition
    invoked: float         # time.time() when handed to the client
    outcome: str = PENDING
    completed: float | None = None
    offset: int | None = None
    error: str | None = None
    txn: int | None = None


@dataclass
class Txn:
    number: int
    values: list[bytes]
    intent: str            # COMMITTED or ABORTED: what the producer asked for
    invoked: float
    outcome: str = UNKNOWN
    completed: float | None = None
    error: str | None = None


@dataclass
class FaultEvent:
    kind: str
    detail: str
    start: float
    healed: float | None = None
    recovered: float | None = None  # every broker back and every partition's ISR full again; None: never


@dataclass
class Read:
    partition: int
    offset: int
    value: bytes
    at: float


@dataclass
class History:
    sends: dict[bytes, Send] = field(default_factory=dict)
    txns: dict[int, Txn] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)  # the concurrent read_committed consumer's polls
    faults: list[FaultEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)    # client-side events worth a line in the report
    stopped: float | None = None                      # when the producers were told to stop
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def invoke(self, producer: str, value: bytes, partition: int, seq: int, txn: int | None = None) -> Send:
        send = Send(producer, value, partition, seq, time.time(), txn=txn)
        with self.lock:
            self.sends[value] = send
        return send

    def complete(self, value: bytes, ok: bool, offset: int | None = None, error: str | None = None) -> None:
        with self.lock:
            send = self.sends[value]
            if send.outcome != PENDING:
                return
            send.outcome = OK if ok else INFO
            send.completed = time.time()
            send.offset = offset if offset is not None and offset >= 0 else None
            send.error = error

    def note(self, text: str) -> None:
        with self.lock:
            self.notes.append(f"{time.strftime('%H:%M:%S')} {text}")

    def pending_to_info(self, why: str) -> None:
        """Sends a client never answered (it was closed or crashed) are indeterminate."""
        with self.lock:
            pending = [s.value for s in self.sends.values() if s.outcome == PENDING]
        for value in pending:
            self.complete(value, False, error=why)

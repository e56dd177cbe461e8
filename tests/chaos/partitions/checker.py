"""The checker: what the workload recorded against what the cluster holds at the end, in the spirit of
Jepsen's queue and list-append checkers (jepsen.tests.kafka).

Inputs: the History (sends with their outcome, transactions, the concurrent read_committed consumer's reads,
the faults), a fresh read_committed consumer's read of every partition at the end, and every replica's log
read from disk with the leader's high watermark. Anomalies, each listed with examples:

- lost: acknowledged (an ``ok`` idempotent send, or a value of a committed transaction) but not in the final
  read; an ``info`` send is never lost (it may or may not have been written);
- duplicated: a value twice in the final read (``same epoch`` when both copies carry one producer id and
  epoch, which only a broker that missed a retry can do; otherwise a client re-send under a new epoch);
- reordered: within one producer's values in one partition, the final read's order differs from the send
  order (first copies only);
- phantom: a value read or stored that no producer sent;
- inconsistent offsets: the concurrent consumer read a value at an offset where the final read has another
  (it saw data that was later truncated), or a producer was told an offset that holds another value;
- divergent: two replicas' logs differ below the high watermark;
- aborted visible: a value of an aborted transaction (by the client's account or by its marker) read with
  read_committed;
- torn: a committed (or undecided) transaction of which some values are visible and others not.

Per fault, the write unavailability is the longest time any partition went without an acknowledgement, from
the fault until the next one (or the end of the run). All of it is plain data in, a Report out, so
tests/chaos/test_partition_checker.py can feed it histories with known anomalies.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from .history import ABORTED, COMMITTED, INFO, OK, UNKNOWN, FaultEvent, History
from .replica_logs import Entry, log_end

ACKING_PRODUCERS = ("ck", "od", "a1", "aa")  # producers whose own acknowledgements time the unavailability
EXAMPLES = 10


@dataclass
class Observations:
    history: History
    topic: str
    final: dict[int, list[tuple[int, bytes]]]          # partition -> the final read_committed read
    replicas: dict[int, dict[int, list[Entry]]]         # partition -> broker -> its log
    high_watermarks: dict[int, int]                     # partition -> the leader's high watermark


@dataclass
class KindStats:
    runs: int = 0
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    aborted_visible: int = 0
    unavailability: list[float] = field(default_factory=list)
    windows_without_ack: int = 0


@dataclass
class Report:
    attempted: int = 0
    acknowledged: int = 0
    indeterminate: int = 0
    indeterminate_seen: int = 0
    by_producer: dict[str, dict[str, int]] = field(default_factory=dict)
    txn_committed: int = 0
    txn_aborted: int = 0
    txn_unknown: int = 0
    reads: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    duplicated_same_epoch: int = 0
    reordered: list[str] = field(default_factory=list)
    phantom: list[str] = field(default_factory=list)
    inconsistent_offsets: list[str] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)
    aborted_visible: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    lagging_replicas: list[str] = field(default_factory=list)
    faults: list[tuple[FaultEvent, float | None]] = field(default_factory=list)  # with its unavailability
    by_kind: dict[str, KindStats] = field(default_factory=dict)
    lost_values: list[tuple[int, bytes, float]] = field(default_factory=list)  # (partition, value, acked at)
    flagged: dict[str, set[bytes]] = field(default_factory=lambda: defaultdict(set))  # anomaly -> values

    def flag(self, anomaly: str, value: bytes, text: str) -> None:
        getattr(self, anomaly).append(text)
        self.flagged[anomaly].add(value)

    ANOMALIES = ("lost", "duplicated", "reordered", "phantom", "inconsistent_offsets", "divergent",
                 "aborted_visible", "torn")

    def anomalies(self) -> dict[str, list[str]]:
        """The non-empty anomaly lists: a valid run (acks=all, min ISR 2, no unclean election) has none."""
        return {name: getattr(self, name) for name in self.ANOMALIES if getattr(self, name)}

    def summary(self) -> str:
        counts = ", ".join(f"{name} {len(getattr(self, name))}" for name in self.ANOMALIES)
        return (f"attempted {self.attempted}, acknowledged {self.acknowledged}, indeterminate {self.indeterminate} "
                f"({self.indeterminate_seen} seen), transactions committed/aborted/unknown {self.txn_committed}/"
                f"{self.txn_aborted}/{self.txn_unknown}, concurrent reads {self.reads}; {counts}")

    def render(self) -> str:
        producers = "; ".join(f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                              for p, counts in sorted(self.by_producer.items()))
        lines = [self.summary(), "by producer: " + producers]
        if self.by_kind:
            lines.append(f"{'fault kind':<18} {'runs':>4} {'acked':>6} {'lost':>4} {'dup':>4} {'reord':>5} "
                         f"{'abrt-vis':>8} {'unavail median/max s':>21}")
        for kind, s in sorted(self.by_kind.items()):
            unavail = (f"{statistics.median(s.unavailability):.1f}/{max(s.unavailability):.1f}"
                       if s.unavailability else "-")
            if s.windows_without_ack:
                unavail += f" ({s.windows_without_ack} with no ack)"
            lines.append(f"{kind:<18} {s.runs:>4} {s.acknowledged:>6} {s.lost:>4} {s.duplicated:>4} "
                         f"{s.reordered:>5} {s.aborted_visible:>8} {unavail:>21}")
        for name, items in self.anomalies().items():
            lines.append(f"{name} ({len(items)}): " + "; ".join(items[:EXAMPLES]))
        if self.lagging_replicas:
            lines.append("lagging replicas: " + "; ".join(self.lagging_replicas))
        return "\n".join(lines)


def _window_of(faults: list[FaultEvent], at: float) -> str:
    """The kind of the fault whose window (its start until the next fault's) holds ``at``."""
    kind = "before faults"
    for fault in faults:
        if fault.start <= at:
            kind = fault.kind
        else:
            break
    return kind


def check(obs: Observations) -> Report:
    history, report = obs.history, Report()
    sends = history.sends
    faults = sorted(history.faults, key=lambda f: f.start)
    report.reads = len(history.reads)

    # -- what was acknowledged ----------------------------------------------------------------------------------
    txn_values: dict[bytes, int] = {}
    for txn in history.txns.values():
        for v in txn.values:
            txn_values[v] = txn.number
        report.txn_committed += txn.outcome == COMMITTED
        report.txn_aborted += txn.outcome == ABORTED
        report.txn_unknown += txn.outcome == UNKNOWN
    acked: dict[bytes, float] = {}  # value -> when it was acknowledged
    for send in sends.values():
        counts = report.by_producer.setdefault(send.producer, defaultdict(int))
        counts["attempted"] += 1
        if send.txn is not None:
            txn = history.txns[send.txn]
            if txn.outcome == COMMITTED:
                acked[send.value] = txn.completed or send.invoked
                counts["acknowledged"] += 1
        elif send.outcome == OK:
            acked[send.value] = send.completed or send.invoked
            counts["acknowledged"] += 1
        else:
            counts["indeterminate"] += 1
    report.by_producer = {p: dict(c) for p, c in report.by_producer.items()}
    report.attempted = len(sends)
    report.acknowledged = len(acked)

    final_values: dict[bytes, list[tuple[int, int]]] = defaultdict(list)  # value -> [(partition, offset)]
    final_at: dict[int, dict[int, bytes]] = {}
    for p, records in obs.final.items():
        final_at[p] = dict(records)
        for offset, value in records:
            final_values[value].append((p, offset))
    report.indeterminate = sum(1 for s in sends.values() if s.txn is None and s.outcome == INFO)
    report.indeterminate_seen = sum(1 for s in sends.values()
                                    if s.txn is None and s.outcome == INFO and s.value in final_values)

    # -- lost, and offsets the producers were told --------------------------------------------------------------
    for value, when in sorted(acked.items(), key=lambda kv: kv[1]):
        send = sends[value]
        if value not in final_values:
            report.flag("lost", value, f"{value.decode()} (p{send.partition}, acked {_clock(when)}"
                                       f"{'' if send.offset is None else f' at offset {send.offset}'})")
            report.lost_values.append((send.partition, value, when))
        elif send.offset is not None and (send.partition, send.offset) not in final_values[value]:
            report.flag("inconsistent_offsets", value, f"{value.decode()} acked at p{send.partition} offset "
                                                       f"{send.offset}, found at {final_values[value]}")

    # -- duplicates and order -----------------------------------------------------------------------------------
    leader_entries = {p: _reference_log(obs, p) for p in obs.replicas}
    for value, places in final_values.items():
        if len(places) > 1:
            tags = {(e.producer_id, e.producer_epoch) for p, o in places
                    for e in [leader_entries.get(p, {}).get(o)] if e is not None}
            same_epoch = len(tags) == 1
            report.duplicated_same_epoch += same_epoch
            epochs = "same producer epoch" if same_epoch else "different producer epochs"
            report.flag("duplicated", value, f"{value.decode()} at {places} ({epochs})")
    for p, records in obs.final.items():
        last_seq: dict[str, tuple[int, int]] = {}
        seen: set[bytes] = set()
        for offset, value in records:
            send = sends.get(value)
            if send is None or value in seen:
                continue
            seen.add(value)
            previous = last_seq.get(send.producer)
            if previous is not None and send.seq < previous[0]:
                report.flag("reordered", value, f"p{p}: {value.decode()} at offset {offset} after "
                                                f"{send.producer} #{previous[0]} at offset {previous[1]}")
            else:
                last_seq[send.producer] = (send.seq, offset)

    # -- phantoms -----------------------------------------------------------------------------------------------
    phantoms: dict[bytes, str] = {}
    for value, places in final_values.items():
        if value not in sends:
            phantoms[value] = f"final read {places}"
    for read in history.reads:
        if read.value not in sends:
            phantoms.setdefault(read.value, f"concurrent read p{read.partition} offset {read.offset}")
    for p, by_broker in obs.replicas.items():
        for broker, entries in by_broker.items():
            for e in entries:
                if e.value is not None and e.value not in sends:
                    phantoms.setdefault(e.value, f"broker {broker} p{p} offset {e.offset}")
    for value, where in phantoms.items():
        report.flag("phantom", value, f"{value!r} in {where}")

    # -- what the concurrent consumer read must still be there --------------------------------------------------
    for read in history.reads:
        now = final_at.get(read.partition, {}).get(read.offset)
        if now != read.value:
            report.flag("inconsistent_offsets", read.value,
                        f"p{read.partition} offset {read.offset}: read {read.value.decode(errors='replace')} at "
                        f"{_clock(read.at)}, the final read has {now.decode(errors='replace') if now else 'nothing'}")

    # -- replicas -----------------------------------------------------------------------------------------------
    for p, by_broker in sorted(obs.replicas.items()):
        hw = obs.high_watermarks.get(p, 0)
        report.divergent += _divergences(p, by_broker, hw)
        for broker, entries in sorted(by_broker.items()):
            if log_end(entries) < hw:
                report.lagging_replicas.append(f"p{p} broker {broker} ends at {log_end(entries)} < HW {hw}")

    # -- transactions -------------------------------------------------------------------------------------------
    marker_fate = _transaction_fates(leader_entries)
    aborted = {v for v, n in txn_values.items() if history.txns[n].outcome == ABORTED}
    aborted |= {v for v, fate in marker_fate.items() if fate == "ABORT"}
    visible = set(final_values) | {r.value for r in history.reads}
    for value in sorted(aborted & visible):
        why = "client aborted" if history.txns[txn_values[value]].outcome == ABORTED else "ABORT marker"
        report.flag("aborted_visible", value, f"{value.decode()} ({why}, p{sends[value].partition})")
    for txn in history.txns.values():
        if txn.outcome in (COMMITTED, UNKNOWN):
            shown = [v for v in txn.values if v in final_values]
            if 0 < len(shown) < len(txn.values):
                report.flag("torn", txn.values[0],
                            f"txn {txn.number} ({txn.outcome}): {len(shown)} of {len(txn.values)} visible")

    # -- faults -------------------------------------------------------------------------------------------------
    _fault_stats(report, faults, history, acked)
    return report


def _clock(t: float) -> str:
    import time
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def _reference_log(obs: Observations, p: int) -> dict[int, Entry]:
    """offset -> entry of the longest replica log (they agree below the HW, or that is reported)."""
    by_broker = obs.replicas.get(p, {})
    if not by_broker:
        return {}
    longest = max(by_broker.values(), key=log_end)
    return {e.offset: e for e in longest}


def _divergences(p: int, by_broker: dict[int, list[Entry]], hw: int) -> list[str]:
    below = {b: [e for e in entries if e.offset < hw] for b, entries in by_broker.items()}
    if len(below) < 2:
        return []
    brokers = sorted(below)
    reference = brokers[0]
    out = []
    for broker in brokers[1:]:
        a, b = below[reference], below[broker]
        common = min(len(a), len(b))
        first = next((i for i in range(common) if a[i] != b[i]), None)
        if first is not None:
            out.append(f"p{p}: brokers {reference} and {broker} differ at offset {a[first].offset}: "
                       f"{_describe(a[first])} vs {_describe(b[first])}")
    return out


def _describe(e: Entry) -> str:
    what = e.marker or (e.value.decode(errors="replace") if e.value is not None else "null")
    return f"{what} (pid {e.producer_id} epoch {e.producer_epoch}, leader epoch {e.leader_epoch})"


def _transaction_fates(logs: dict[int, dict[int, Entry]]) -> dict[bytes, str]:
    """value -> "COMMIT"/"ABORT" from the marker that closed its transaction in its partition's log."""
    fates: dict[bytes, str] = {}
    for entries in logs.values():
        open_values: dict[int, list[bytes]] = defaultdict(list)
        for offset in sorted(entries):
            e = entries[offset]
            if e.marker is not None:
                for value in open_values.pop(e.producer_id, []):
                    fates[value] = e.marker
            elif e.transactional and e.value is not None:
                open_values[e.producer_id].append(e.value)
    return fates


def _fault_stats(report: Report, faults: list[FaultEvent], history: History, acked: dict[bytes, float]) -> None:
    sends = history.sends
    by_window: dict[str, list[bytes]] = defaultdict(list)
    for value, send in sends.items():
        by_window[_window_of(faults, send.invoked)].append(value)
    flagged = report.flagged
    partitions = sorted({s.partition for s in sends.values()})
    ends = [f.start for f in faults[1:]] + [history.stopped or max((s.completed or s.invoked for s in sends.values()),
                                                                    default=0.0)]
    for fault, end in zip(faults, ends):
        stats = report.by_kind.setdefault(fault.kind, KindStats())
        stats.runs += 1
        unavailable = _unavailability(fault.start, end, sends.values(), partitions)
        report.faults.append((fault, unavailable))
        if unavailable is None:
            stats.windows_without_ack += 1
        else:
            stats.unavailability.append(unavailable)
    for kind, values in by_window.items():
        if kind not in report.by_kind:
            continue
        stats = report.by_kind[kind]
        stats.acknowledged += sum(1 for v in values if v in acked)
        stats.lost += sum(1 for v in values if v in flagged["lost"])
        stats.duplicated += sum(1 for v in values if v in flagged["duplicated"])
        stats.reordered += sum(1 for v in values if v in flagged["reordered"])
        stats.aborted_visible += sum(1 for v in values if v in flagged["aborted_visible"])


def _unavailability(start: float, end: float, sends, partitions: list[int]) -> float | None:
    """The longest time in [start, end] that some partition went without acknowledging a (non-transactional)
    write, by the clients' clocks; None if a partition acknowledged nothing at all in it."""
    acks: dict[int, list[float]] = defaultdict(list)
    for s in sends:
        if s.producer in ACKING_PRODUCERS and s.outcome == OK and s.completed is not None \
                and start <= s.completed <= end:
            acks[s.partition].append(s.completed)
    if any(not acks[p] for p in partitions):
        return None
    worst = 0.0
    for p in partitions:
        edges = [start] + sorted(acks[p]) + [end]
        worst = max(worst, max(b - a for a, b in zip(edges, edges[1:])))
    return worst

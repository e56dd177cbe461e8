"""Where a transaction's time goes, from the brokers' transaction trace (broker/coordinator/transaction/trace.py).

    ODRADEK_LOG_LEVELS=odradek.broker.coordinator.transaction.trace=DEBUG   (in the brokers' environment)
    python benchmarks/txn_trace_breakdown.py broker-0.log broker-1.log broker-2.log

Merges the ``txn-trace`` lines of every broker log (their clock is the machine's monotonic clock) into one
timeline per producer id and cuts it into cycles, one per EndTxn: from an EndTxn's arrival at the coordinator
to the next one's. For a producer that runs transactions back to back, each cycle holds this transaction's
PrepareCommit, markers and completion, and the next transaction's AddPartitionsToTxn and produce. Prints the
median of each step over the cycles (``bench_transactions.py --trace`` runs one-record transactions and calls
this).
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Iterable

_LINE = re.compile(r"txn-trace (?P<t>\d+\.\d+) pid=(?P<pid>-?\d+) (?P<event>\S+)(?P<details>(?: \w+=\S+)*)")

# (label, from event, to event): the steps of a cycle, in the order they happen. An event name may carry the
# state written (state-write:PrepareCommit); "*" matches any state a completion was written with
# (CompleteCommit alone, or with the next transaction's Ongoing state in the same batch).
STEPS = (
    ("EndTxn arrives -> PrepareCommit replicated", "end-txn-received", "state-durable:Prepare*"),
    ("PrepareCommit replicated -> markers sent (coordinator)", "state-durable:Prepare*", "markers-sent"),
    ("PrepareCommit replicated -> EndTxn answered", "state-durable:Prepare*", "end-txn-answered:0"),
    ("markers sent -> leader appends them", "markers-sent", "marker-append"),
    ("marker appended -> replicated (acks=all)", "marker-append", "marker-replicated"),
    ("marker replicated -> coordinator has the answer", "marker-replicated", "markers-answered"),
    ("all markers answered -> completion written", "markers-answered", "state-write:Complete*"),
    ("completion write replicated", "state-write:Complete*", "state-durable:Complete*"),
    ("EndTxn answered -> next AddPartitionsToTxn arrives (client)", "end-txn-answered:0", "add-partitions-received"),
    ("AddPartitionsToTxn held until the completion", "held*", "released*"),
    ("AddPartitionsToTxn arrives -> answered", "add-partitions-received", "add-partitions-answered:0"),
    ("Ongoing write replicated (when not carried by the completion)", "state-write:Ongoing", "state-durable:Ongoing"),
    ("Ongoing appended behind the completion -> durable", "state-write:Ongoing(behind)",
     "state-durable:Ongoing(behind)"),
    ("AddPartitionsToTxn answered -> next EndTxn arrives (produce, client)", "add-partitions-answered:0",
     "next-end-txn-received"),
)


def parse(lines: Iterable[str]) -> dict[int, list[tuple[float, str]]]:
    """producer id -> [(monotonic ms, event name)], sorted; states and error codes are part of the name."""
    events: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for line in lines:
        match = _LINE.search(line)
        if match is None:
            continue
        details = dict(item.split("=", 1) for item in match["details"].split())
        name = match["event"]
        if "state" in details:
            name += ":" + details["state"]
        elif "error" in details and name.endswith("-answered"):
            name += ":" + details["error"]
        events[int(match["pid"])].append((float(match["t"]), name))
    for timeline in events.values():
        timeline.sort()
    return events


def cycles(timeline: list[tuple[float, str]]) -> list[dict[str, float]]:
    """One dict per cycle (event -> time of its first occurrence), from each EndTxn's arrival to the next
    (whose time the cycle keeps as ``next-end-txn-received``)."""
    found: list[dict[str, float]] = []
    current: dict[str, float] | None = None
    for t, name in timeline:
        if name == "end-txn-received":
            if current is not None:
                current["next-end-txn-received"] = t
                found.append(current)
            current = {}
        if current is not None:
            current.setdefault(name, t)
            if name.startswith("add-partitions-answered:") and name != "add-partitions-answered:0":
                current["retries"] = current.get("retries", 0) + 1
    return found


def _time(cycle: dict[str, float], event: str) -> float | None:
    if event.endswith("*"):
        times = [t for name, t in cycle.items() if name.startswith(event[:-1])]
        return min(times) if times else None
    return cycle.get(event)


def breakdown(cycle_list: list[dict[str, float]]) -> list[tuple[str, float, int]]:
    """(step, median ms, cycles that had it) for each step, then the whole cycle."""
    rows = []
    for label, start, end in STEPS:
        spans = [b - a for c in cycle_list
                 if (a := _time(c, start)) is not None and (b := _time(c, end)) is not None and b >= a]
        if spans:
            rows.append((label, statistics.median(spans), len(spans)))
    rows.append(("AddPartitionsToTxn answered with CONCURRENT_TRANSACTIONS (per cycle)",
                 statistics.median(c.get("retries", 0) for c in cycle_list), len(cycle_list)))
    spans = [c["next-end-txn-received"] - c["end-txn-received"] for c in cycle_list]
    if spans:
        rows.append(("cycle: EndTxn arrives -> next EndTxn arrives", statistics.median(spans), len(spans)))
    return rows


def format_breakdown(rows: list[tuple[str, float, int]]) -> str:
    width = max(len(label) for label, _, _ in rows)
    lines = [f"{'step (median over cycles)':{width}}  {'ms':>6}  cycles", f"{'-' * width}  {'-' * 6}  ------"]
    lines += [f"{label:{width}}  {value:6.2f}  {count:6d}" for label, value, count in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    lines = [line for path in argv for line in Path(path).read_text(errors="replace").splitlines()]
    for producer_id, timeline in sorted(parse(lines).items()):
        found = cycles(timeline)
        if producer_id >= 0 and len(found) >= 3:
            print(f"producer id {producer_id}: {len(found)} cycles")
            print(format_breakdown(breakdown(found[1:])))  # the first cycle may start mid-way
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

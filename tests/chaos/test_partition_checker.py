"""The partition checker on made-up histories: each anomaly it claims to find, it finds (and a clean history
has none). Checkers need tests too: RELIABILITY.md notes a Kafka system test whose checks could never run."""

from __future__ import annotations

from tests.chaos.partitions.checker import Observations, check
from tests.chaos.partitions.history import ABORTED, COMMITTED, INFO, OK, UNKNOWN, FaultEvent, History, Read, Send, Txn
from tests.chaos.partitions.replica_logs import Entry

T0 = 1_000_000.0


def send(history: History, producer: str, n: int, partition: int, outcome: str = OK, offset: int | None = None,
         at: float = T0, txn: int | None = None, done: float | None = None) -> bytes:
    value = f"{producer}-{n}".encode() if txn is None else f"tx-{txn}-{n}".encode()
    history.sends[value] = Send(producer, value, partition, n, at, outcome, done or at + 0.01, offset, None, txn)
    return value


def entry(offset: int, value: bytes | None, pid: int = 1, epoch: int = 0, transactional: bool = False,
          marker: str | None = None) -> Entry:
    return Entry(offset, value, pid, epoch, transactional, marker, 0)


def observe(history: History, final: dict[int, list[bytes]], replicas: dict[int, list[Entry]] | None = None,
            hw: dict[int, int] | None = None) -> Observations:
    """``final``: values per partition at offsets 0..n-1; every replica holds ``replicas[p]`` (default: final)."""
    final_read = {p: list(enumerate(values)) for p, values in final.items()}
    logs = replicas or {p: [entry(o, v) for o, v in enumerate(values)] for p, values in final.items()}
    by_broker = {p: {b: list(entries) for b in (0, 1, 2)} for p, entries in logs.items()}
    return Observations(history, "t", final_read, by_broker, hw or {p: len(v) for p, v in logs.items()})


def test_a_clean_history_has_no_anomaly_and_counts_what_was_acknowledged():
    h = History()
    a = [send(h, "ck", n, 0, offset=n) for n in range(3)]
    b = send(h, "od", 0, 0, outcome=INFO)  # indeterminate, and written
    h.txns[0] = Txn(0, [send(h, "tx", 0, 0, txn=0), send(h, "tx", 1, 1, txn=0)], COMMITTED, T0, COMMITTED, T0 + 1)
    h.txns[1] = Txn(1, [send(h, "tx", 0, 1, txn=1)], ABORTED, T0, ABORTED, T0 + 1)
    h.reads.append(Read(0, 1, a[1], T0 + 2))
    final = {0: a + [b, b"tx-0-0"], 1: [b"tx-0-1"]}
    report = check(observe(h, final))
    assert report.anomalies() == {}
    assert (report.attempted, report.acknowledged, report.indeterminate, report.indeterminate_seen) == (7, 5, 1, 1)
    assert (report.txn_committed, report.txn_aborted, report.txn_unknown) == (1, 1, 0)


def test_an_acknowledged_value_missing_is_lost_an_indeterminate_one_is_not():
    h = History()
    kept, gone = send(h, "ck", 0, 0, offset=0), send(h, "ck", 1, 0, offset=1)
    send(h, "od", 0, 0, outcome=INFO)
    report = check(observe(h, {0: [kept]}))
    assert [text.split()[0] for text in report.lost] == ["ck-1"]
    assert report.lost_values[0][:2] == (0, gone)
    assert set(report.anomalies()) == {"lost"}


def test_a_value_at_another_offset_than_acknowledged_is_inconsistent():
    h = History()
    a, b = send(h, "od", 0, 0, offset=0), send(h, "od", 1, 0, offset=5)
    assert len(check(observe(h, {0: [a, b]})).inconsistent_offsets) == 1


def test_duplicates_are_told_apart_by_producer_epoch():
    h = History()
    a, b = send(h, "ck", 0, 0), send(h, "ck", 1, 0)
    same = [entry(0, a), entry(1, b), entry(2, a)]
    report = check(observe(h, {0: [a, b, a]}, {0: same}))
    assert len(report.duplicated) == 1 and report.duplicated_same_epoch == 1
    bumped = [entry(0, a), entry(1, b), entry(2, a, epoch=1)]
    report = check(observe(h, {0: [a, b, a]}, {0: bumped}))
    assert len(report.duplicated) == 1 and report.duplicated_same_epoch == 0
    assert "different producer epochs" in report.duplicated[0]


def test_reordering_within_one_producer_and_partition_is_found_and_other_producers_may_interleave():
    h = History()
    ck = [send(h, "ck", n, 0) for n in range(3)]
    od = [send(h, "od", n, 0) for n in range(2)]
    assert check(observe(h, {0: [ck[0], od[1], ck[1], od[0], ck[2]]})).reordered[0].startswith("p0: od-0")
    assert not check(observe(h, {0: [ck[0], od[0], ck[1], od[1], ck[2]]})).reordered


def test_phantoms_in_the_final_read_the_concurrent_reads_or_a_replica_log():
    h = History()
    a = send(h, "ck", 0, 0)
    h.reads.append(Read(0, 1, b"never-read", T0))
    logs = {0: [entry(0, a), entry(1, b"never-sent"), entry(2, b"never-stored")]}
    report = check(observe(h, {0: [a, b"never-sent"]}, logs))
    assert len(report.phantom) == 3


def test_a_concurrent_read_the_final_read_contradicts_is_inconsistent():
    h = History()
    a, b = send(h, "ck", 0, 0, outcome=INFO), send(h, "ck", 1, 0, outcome=INFO)
    h.reads += [Read(0, 0, a, T0), Read(0, 1, a, T0)]  # offset 1 now holds b: a was read there, then truncated
    report = check(observe(h, {0: [a, b]}))
    assert len(report.inconsistent_offsets) == 1 and "offset 1" in report.inconsistent_offsets[0]


def test_replicas_may_differ_above_the_high_watermark_only():
    h = History()
    a, b, c = (send(h, "ck", n, 0, outcome=INFO) for n in range(3))
    obs = observe(h, {0: [a, b]}, hw={0: 2})
    obs.replicas[0][2] = [entry(0, a), entry(1, b), entry(2, c)]  # ahead: fine
    assert not check(obs).divergent
    obs.replicas[0][1] = [entry(0, a), entry(1, c)]
    divergent = check(obs).divergent
    assert len(divergent) == 1 and "offset 1" in divergent[0]


def test_aborted_values_visible_to_read_committed_by_the_client_or_by_the_marker():
    h = History()
    x = send(h, "tx", 0, 0, txn=0)
    h.txns[0] = Txn(0, [x], ABORTED, T0, ABORTED, T0 + 1)
    report = check(observe(h, {0: [x]}))
    assert len(report.aborted_visible) == 1 and "client aborted" in report.aborted_visible[0]
    # the client thinks it committed, the log's marker says ABORT: the value is lost, and if a reader shows
    # it anyway, also an aborted read
    h = History()
    y = send(h, "tx", 0, 0, txn=0)
    h.txns[0] = Txn(0, [y], COMMITTED, T0, COMMITTED, T0 + 1)
    h.reads.append(Read(0, 0, y, T0 + 2))
    log = {0: [entry(0, y, pid=7, transactional=True), entry(1, None, pid=7, transactional=True, marker="ABORT")]}
    report = check(observe(h, {0: []}, log))
    assert report.lost and "ABORT marker" in report.aborted_visible[0]


def test_a_committed_or_undecided_transaction_partly_visible_is_torn():
    for outcome in (COMMITTED, UNKNOWN):
        h = History()
        values = [send(h, "tx", 0, 0, txn=0), send(h, "tx", 1, 1, txn=0)]
        h.txns[0] = Txn(0, values, COMMITTED, T0, outcome, T0 + 1)
        assert len(check(observe(h, {0: [values[0]], 1: []})).torn) == 1
        assert not check(observe(h, {0: [values[0]], 1: [values[1]]})).torn
    h = History()  # an undecided transaction may also be wholly invisible
    values = [send(h, "tx", 0, 0, txn=0), send(h, "tx", 1, 1, txn=0)]
    h.txns[0] = Txn(0, values, COMMITTED, T0, UNKNOWN, T0 + 1)
    assert check(observe(h, {0: [], 1: []})).anomalies() == {}


def test_unavailability_is_the_longest_gap_between_acknowledgements_after_a_fault():
    h = History()
    # partition 0 acknowledges steadily; partition 1 stalls 4 s after the fault at T0 + 10
    for n in range(40):
        send(h, "ck", 2 * n, 0, at=T0 + n * 0.5, done=T0 + n * 0.5 + 0.1)
    for n, t in enumerate([9.0, 9.5, 10.2, 14.2, 14.7, 19.0]):
        send(h, "od", n, 1, at=T0 + t - 0.1, done=T0 + t)
    h.faults = [FaultEvent("pause", "", T0 + 10), FaultEvent("kill", "", T0 + 15)]
    h.stopped = T0 + 20
    final = {p: [v for v, s in h.sends.items() if s.partition == p] for p in (0, 1)}
    report = check(observe(h, final))
    (pause, pause_s), (kill, kill_s) = report.faults
    assert round(pause_s, 1) == 4.0      # 10.2 -> 14.2
    assert round(kill_s, 1) == 4.0       # 15 -> 19 without an ack on partition 1
    assert report.by_kind["pause"].acknowledged == 13 and report.by_kind["kill"].runs == 1
    h.stopped = T0 + 30
    h.faults = [FaultEvent("pause", "", T0 + 25)]
    assert check(observe(h, final)).faults[0][1] is None  # nothing acknowledged after it: never recovered

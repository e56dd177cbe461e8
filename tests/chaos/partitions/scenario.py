"""One nemesis run on a LabCluster: the workload writes and reads while the faults of a schedule play out one
after the other, then everything heals, the cluster converges, and the checker compares what was acknowledged
and read with what every replica holds. Also the negative control: acks=1 writes to a leader cut from
ZooKeeper and its followers, which the checker must report lost.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from odradek.broker.coordinator.group.metadata_manager import kafka_partition_for
from odradek.clients.connection import BrokerConnection
from odradek.clients.simple_client import SimpleClient, build_batch
from odradek.protocol.messages import ProduceRequest

from .checker import Observations, Report, check
from .history import FaultEvent, History
from .lab_cluster import OVERRIDES, LabCluster, node
from .nemesis import Nemesis
from .replica_logs import log_end, replica_log
from .workload import (CkIdempotentProducer, OurIdempotentProducer, ReadCommittedConsumer, TransactionalProducer,
                       Worker, read_committed_to_end)

INTERNAL_TOPICS = ["__consumer_offsets", "__transaction_state"]
TXN_STATE_PARTITIONS = int(OVERRIDES["transaction.state.log.num.partitions"])


@dataclass
class Settings:
    seed: int
    faults: list[str]
    topic: str = "jepsen"
    partitions: int = 3
    rate: float = 40.0          # sends per second of each idempotent producer
    txn_rate: float = 4.0       # transactions per second
    hold_s: float = 8.0         # how long a network fault lasts (longer than the 4 s ZooKeeper session)
    settle_s: float = 2.0       # writes in a whole cluster between faults
    overlap: bool = False       # the next fault may start before the cluster is whole again (soak)
    random_hold: bool = False   # faults last 1 s to twice hold_s (soak)
    warmup_acks: int = 50       # per producer, before the first fault


@dataclass
class Outcome:
    settings: Settings
    history: History
    report: Report
    problems: list[str] = field(default_factory=list)  # the run itself went wrong (crash, no recovery, ...)

    def schedule_text(self) -> str:
        lines = []
        for fault, unavailable in self.report.faults or [(f, None) for f in self.history.faults]:
            recovered = ("not awaited" if self.settings.overlap and fault.recovered is None
                         else "+" + _since(fault.start, fault.recovered))
            lines.append(f"  {_clock(fault.start)} {fault.kind:<17} {fault.detail}; healed "
                         f"+{_since(fault.start, fault.healed)}, whole again {recovered}, longest time without an "
                         f"acknowledgement {'(none at all)' if unavailable is None else f'{unavailable:.1f} s'}")
        return "\n".join(lines)

    def failure_text(self, lc: LabCluster) -> str:
        """Seed, schedule, report, client notes and the broker logs around the first losses."""
        s = self.settings
        parts = [f"seed {s.seed} ({len(s.faults)} faults); replay: python -m tests.chaos.partitions.soak --seed "
                 f"{s.seed} --faults {len(s.faults)} --hold {s.hold_s:g}{' --overlap' if s.overlap else ''}"
                 f"{' --random-hold' if s.random_hold else ''} (one fault of each kind: "
                 f"ODRADEK_PARTITION_SEED={s.seed} pytest tests/chaos/test_partitions.py)",
                 "schedule:\n" + self.schedule_text(), self.report.render()]
        if self.problems:
            parts.append("run problems: " + "; ".join(self.problems))
        if self.history.notes:
            parts.append("client notes:\n  " + "\n  ".join(self.history.notes[-30:]))
        moments = [at for _, _, at in self.report.lost_values[:2]]
        if not moments and self.report.anomalies():
            moments = [f.start for f in self.history.faults[:1]]
        for at in moments:
            parts.append(lc.log_excerpts(at - 8, at + 8))
        return "\n\n".join(parts)


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def _since(start: float, t: float | None) -> str:
    return "never" if t is None else f"{t - start:.1f} s"


def create_topic(lc: LabCluster, topic: str, partitions: int, configs: dict[str, str]) -> None:
    async def create() -> None:
        async with SimpleClient(lc.bootstrap) as client:
            codes = await client.create_topics({topic: (partitions, 3)}, configs=configs)
            assert codes[topic] in (0, 36), f"CreateTopics {topic}: error {codes[topic]}"
            await client.wait_for_leaders(topic, timeout=60)
    asyncio.run(create())


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _acked(history: History, producer: str, since: float = 0.0) -> int:
    with history.lock:
        return sum(1 for s in history.sends.values() if s.producer == producer and s.outcome == "ok"
                   and s.invoked >= since)


def run(lc: LabCluster, settings: Settings) -> Outcome:
    rng = random.Random(settings.seed)
    topic, partitions = settings.topic, settings.partitions
    create_topic(lc, topic, partitions, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    history = History()
    transactional_id = f"jepsen-tx-{settings.seed}"
    producers: list[Worker] = [
        CkIdempotentProducer(history, settings.rate, lc.bootstrap, topic, partitions),
        OurIdempotentProducer(history, settings.rate, lc.bootstrap, topic, partitions),
        TransactionalProducer(history, settings.txn_rate, lc.bootstrap, topic, partitions,
                              transactional_id, random.Random(rng.random())),
    ]
    reader = ReadCommittedConsumer(history, lc.bootstrap, topic, partitions, f"jepsen-reader-{settings.seed}")
    problems: list[str] = []
    workers = producers + [reader]
    try:
        for w in workers:
            w.start()
        if not _wait(lambda: all(_acked(history, p) >= settings.warmup_acks for p in ("ck", "od")), 90):
            problems.append(f"the producers did not get going: {_acked(history, 'ck')} / {_acked(history, 'od')} "
                            "acknowledged")
        else:
            # aims: the workload's partitions and the transaction coordinator's
            aims = [(topic, p) for p in range(partitions)] + [
                ("__transaction_state", kafka_partition_for(transactional_id, TXN_STATE_PARTITIONS))]
            nemesis = Nemesis(lc, history, aims, rng, settings.hold_s, [topic] + INTERNAL_TOPICS, settings.random_hold)
            for kind in settings.faults:
                event = nemesis.run(kind, wait_recovery=not settings.overlap)
                if event.recovered is None and not settings.overlap:
                    problems.append(f"no recovery within the limit after {kind} ({event.detail})")
                    break
                time.sleep(settings.settle_s)
    finally:
        history.stopped = time.time()
        for w in producers:
            w.stopping.set()  # all at once: each then flushes what it has
        for w in producers:
            w.stop()
        reader.stop(30)
        if lc.lab.drops:  # an exception mid-fault: heal before reading
            lc.lab.heal()
    problems += [f"{w.name} crashed: {w.crash!r}" for w in workers if w.crash is not None]
    observations, converge_problems = observe(lc, history, topic, partitions, f"jepsen-final-{settings.seed}")
    return Outcome(settings, history, check(observations), problems + converge_problems)


def observe(lc: LabCluster, history: History, topic: str, partitions: int, group: str
            ) -> tuple[Observations, list[str]]:
    """Once everything healed: wait for a whole cluster with no transaction open and every replica at the high
    watermark, then read the partitions with read_committed and every replica's log from disk."""
    problems = []
    if lc.wait_healthy([topic] + INTERNAL_TOPICS, 90) is None:
        problems.append("the cluster was not whole (brokers registered, full ISRs) 90 s after the last fault")

    async def offsets() -> dict[int, tuple[int, int]]:
        async with SimpleClient(lc.bootstrap, retries=20) as client:
            return {p: ((await client.list_offsets(topic, p, -1))[0],
                        (await client.list_offsets(topic, p, -1, isolation_level=1))[0]) for p in range(partitions)}

    hws: dict[int, int] = {}

    def settled() -> bool:  # HW == LSO (no open transaction) and every replica's log reaches the HW
        nonlocal hws
        found = asyncio.run(offsets())
        hws = {p: hw for p, (hw, _) in found.items()}
        if any(hw != lso for hw, lso in found.values()):
            return False
        return all(log_end(replica_log(b.log_dirs, topic, p)) >= hws[p] for b in lc.cluster.brokers
                   for p in range(partitions))
    if not _wait(settled, 60):
        problems.append(f"replicas or transactions did not settle within 60 s (high watermarks {hws})")
    final = read_committed_to_end(lc.bootstrap, topic, partitions, group)
    replicas = {p: {b.broker_id: replica_log(b.log_dirs, topic, p) for b in lc.cluster.brokers}
                for p in range(partitions)}
    return Observations(history, topic, final, replicas, hws), problems


# -- the negative control ---------------------------------------------------------------------------------------
class PinnedProducer(Worker):
    """Writes straight to one broker (no metadata: it keeps writing to the old leader), one record per request,
    to partition 0: "a1-<n>" with acks=1, "aa-<n>" with acks=all."""

    def __init__(self, history: History, rate: float, host: str, port: int, topic: str, acks: int) -> None:
        self.name = "a1" if acks == 1 else "aa"
        super().__init__(history, rate)
        self.host, self.port, self.topic, self.acks = host, port, topic, acks
        self.n = 0
        self.loop = asyncio.new_event_loop()
        self.conn: BrokerConnection | None = None

    def step(self) -> None:
        value = f"{self.name}-{self.n}".encode()
        self.history.invoke(self.name, value, 0, self.n)
        self.n += 1
        try:
            offset, error = self.loop.run_until_complete(self._produce(value))
        except Exception as e:
            offset, error = None, repr(e)
            self.conn = None
        self.history.complete(value, error is None, offset, error)

    async def _produce(self, value: bytes) -> tuple[int | None, str | None]:
        if self.conn is None or self.conn.closed:
            self.conn = await BrokerConnection.connect(self.host, self.port, client_id=f"jepsen-{self.name}",
                                                       timeout=3)
        data = ProduceRequest.TopicProduceData
        partition = data.PartitionProduceData(index=0, records=build_batch([(None, value)]))
        request = ProduceRequest(transactional_id=None, acks=self.acks, timeout_ms=3000,
                                 topic_data=[data(name=self.topic, partition_data=[partition])])
        response = await self.conn.send(request, timeout=4)
        answer = response.responses[0].partition_responses[0]
        return (answer.base_offset, None) if answer.error_code == 0 else (None, f"error {answer.error_code}")

    def finish(self) -> None:
        if self.conn is not None:
            self.loop.run_until_complete(self.conn.close())
        self.loop.close()


@dataclass
class ControlOutcome:
    outcome: Outcome
    old_leader: int
    new_leader: int | None
    acked_by_cut_leader: int   # acks=1 writes the old leader acknowledged after the new one was elected
    acks_all_during_cut: int   # acks=all writes sent to the old leader during the cut and acknowledged


def negative_control(lc: LabCluster, seed: int, topic: str = "canary") -> ControlOutcome:
    """acks=1 writes keep going to a leader cut from ZooKeeper and its followers (clients still reach it) until
    a new leader is elected and some more were acknowledged; then the cut heals, the old leader truncates
    to the new leader's log, and every write it acknowledged alone is gone: a loss acks=1 allows and the
    checker must report. acks=all writes sent to the same leader meanwhile (aphyr's 2013 case: a leader cut
    off from the others keeps taking writes) must never be acknowledged."""
    create_topic(lc, topic, 1, {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    history = History()
    old_leader, _, _ = lc.partition_state(topic, 0)
    broker = lc.cluster.brokers[old_leader]
    producers = [PinnedProducer(history, 40, broker.host, broker.port, topic, acks).start() for acks in (1, -1)]
    problems: list[str] = []
    new_leader = elected_at = cut_at = healed_at = None
    try:
        if not _wait(lambda: _acked(history, "a1") >= 20 and _acked(history, "aa") >= 20, 30):
            problems.append("the pinned producers did not get going")
        event = FaultEvent("leader-cut-acks1", f"broker {old_leader} cut from ZooKeeper and the other brokers",
                           time.time())
        history.faults.append(event)
        lc.lab.cut([node(old_leader)], ["zk"] + [node(b) for b in lc.broker_ids if b != old_leader])
        cut_at = time.time()  # every rule in place: from now on no follower reaches the old leader

        def elected() -> bool:
            nonlocal new_leader
            leader = lc.partition_state(topic, 0)[0]
            new_leader = leader if leader != old_leader and leader in lc.broker_ids else None
            return new_leader is not None
        if _wait(elected, 40):
            elected_at = time.time()
            if not _wait(lambda: _acked(history, "a1", since=elected_at) >= 20, 20):
                problems.append("the old leader acknowledged nothing after the election")
        else:
            problems.append("no new leader was elected while the old one was cut off")
        lc.lab.heal()
        event.healed = healed_at = time.time()
        event.recovered = lc.wait_healthy([topic], 90)
    finally:
        history.stopped = time.time()
        for producer in producers:
            producer.stop()
        if lc.lab.drops:
            lc.lab.heal()
    acked_alone = _acked(history, "a1", since=elected_at) if elected_at else 0
    acks_all = sum(1 for s in history.sends.values() if s.producer == "aa" and s.outcome == "ok"
                   and cut_at is not None and cut_at <= s.invoked < (healed_at or float("inf")))
    observations, converge_problems = observe(lc, history, topic, 1, f"canary-final-{seed}")
    outcome = Outcome(Settings(seed, ["leader-cut-acks1"], topic=topic, partitions=1), history,
                      check(observations), problems + converge_problems)
    return ControlOutcome(outcome, old_leader, new_leader, acked_alone, acks_all)

"""Our own idempotent producer under leader moves: every acknowledged record is stored exactly once, in order.

The blocking ``Producer`` (acks=all, idempotence on, the default retries) writes numbered records from a
thread to a 6-partition RF-3 topic (min.insync.replicas 2) on brokers 0-2 while leaders move in every way a
cluster moves them: a leader SIGKILLed and restarted, a preferred election through Admin.elect_leaders, a
leader stopped cleanly (SIGTERM: controlled shutdown) and restarted, a preferred election through the
odradek-leader-election tool, and a reassignment that moves every partition's leadership and data to a
fourth broker. Every 1,501st record (all partitions in turn) is too large for the topic's max.message.bytes:
the leader refuses its batch for good (MESSAGE_TOO_LARGE), so the producer bumps its epoch while batches of
that and other partitions are being retried, the path Kafka's Sender takes after a failed batch. Afterwards:

- every send ended, acknowledged or failed with an error (no future left hanging), and only the oversized
  records failed;
- every acknowledged record is at its acknowledged offset, each partition holds each value once, only values
  that were sent, in send order;
- no replica's log holds a value twice, neither in one producer epoch (a broker that missed a retry) nor
  across epochs (a client that re-sent a written batch under a new epoch or producer id, the librdkafka race
  test_idempotent_leader_moves.py tolerates from confluent-kafka but which our producer must not have).

ODRADEK_OUR_PRODUCER_ROUNDS (default 1) repeats the fault sequence to look for rare failures.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import threading
import time

import pytest

from odradek.clients import Producer
from odradek.clients.admin.client import Admin, ElectionType, NewTopic
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import MessageTooLargeError
from tests.integration.helpers import console_tool, read_all, run, wait_until
from tests.integration.log_inspection import duplicates_on_disk, stored_records

pytestmark = pytest.mark.timeout(600)
WAIT_S = 120.0  # upper bound for the cluster to converge; never a speed assertion
TOPIC, PARTITIONS = "ours", 6
MAX_MESSAGE_BYTES, BATCH_SIZE = 4000, 2000  # full batches stay far below the topic's limit
POISON_EVERY = 1501  # every 1,501st record is oversized (alone in its batch: it is bigger than BATCH_SIZE)
OVERRIDES = {"replica.lag.time.max.ms": "4000", "unclean.leader.election.enable": "false",
             "zookeeper.session.timeout.ms": "6000", "auto.leader.rebalance.enable": "false"}


class RetryCounter(logging.Handler):
    """Counts the producer's "retrying <tp> after <error>" debug lines by error class, to show which
    leader-move errors the run actually exercised."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.by_error: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("retrying") and len(record.args) >= 2:
            self.by_error[type(record.args[1]).__name__] += 1


class OurProducerLoad:
    """Our blocking idempotent producer writing "rec-%08d" (record n to partition n % partitions) from a
    thread until stopped; keeps every send's future and the outcome reported to its callbacks."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                                 batch_size=BATCH_SIZE)
        self.futures: list[tuple[bytes, object]] = []
        self.acked: dict[bytes, tuple[int, int]] = {}  # value -> (partition, offset)
        self.failed: list[tuple[bytes, BaseException]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="our-producer-load")
        self.crash: BaseException | None = None

    def _run(self) -> None:
        n = 0
        try:
            while not self._stop.is_set():
                value = b"rec-%08d" % n
                if n % POISON_EVERY == POISON_EVERY - 1:
                    value += b"-" + b"x" * MAX_MESSAGE_BYTES
                future = self.producer.send(TOPIC, value, partition=n % PARTITIONS)
                future.add_callback(self._acked, value).add_errback(self._failed, value)
                self.futures.append((value, future))
                n += 1
                if n % 50 == 0:
                    time.sleep(0.01)  # about 5,000 records/s at most: leave the brokers CPU on 2 cores
        except BaseException as exc:  # noqa: BLE001 - reported by the test, not lost with the thread
            self.crash = exc

    def _acked(self, value: bytes, metadata) -> None:
        self.acked[value] = (metadata.partition, metadata.offset)

    def _failed(self, value: bytes, error: BaseException) -> None:
        self.failed.append((value, error))

    def __enter__(self) -> "OurProducerLoad":
        self.retries = RetryCounter()
        self._logger = logging.getLogger("odradek.clients.producer.sender")
        self._level = self._logger.level
        self._logger.addHandler(self.retries)
        self._logger.setLevel(logging.DEBUG)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        # flush returns once every batch is answered or has failed (delivery_timeout_ms bounds retries)
        self.producer.flush(180)
        self.producer.close(30)
        self._logger.removeHandler(self.retries)
        self._logger.setLevel(self._level)


def leader_of(zk, partition: int) -> int:
    """The leader in the partition's state znode (the controller's own record)."""
    def known() -> tuple[int] | None:  # a tuple, so that broker 0 counts as found
        leader = zk.get_partition_states([(TOPIC, partition)])[(TOPIC, partition)][0].leader
        return (leader,) if leader >= 0 else None
    return wait_until(known, WAIT_S, f"a leader of {partition}")[0]


def full_isr(zk, assignment: dict[int, list[int]]) -> bool:
    states = zk.get_partition_states([(TOPIC, p) for p in assignment])
    return all(set(assignment[p]) <= set(states[(TOPIC, p)][0].isr) for p in assignment)


def assignment_done(zk, wanted: dict[int, list[int]]) -> bool:
    current = zk.get_topic_assignments([TOPIC])[TOPIC]
    if current.partitions != wanted or current.adding_replicas or current.removing_replicas:
        return False
    return full_isr(zk, wanted)


def elect_preferred(admin: Admin) -> bool:
    results = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    return all(e is None or "ElectionNotNeeded" in type(e).__name__ for e in results.values())


def out_of_order(cluster, partition: int) -> str:
    """The leader's stored batches around the first record stored after a later one (for a failure report)."""
    leader_dirs = [b.log_dirs for b in cluster.brokers]
    for log_dir in leader_dirs:
        records = stored_records(log_dir, TOPIC, partition)
        numbers = [int(value.split(b"-")[1]) for _, value, *_ in records]
        first = next((i for i in range(1, len(numbers)) if numbers[i] < numbers[i - 1]), None)
        if first is not None:
            around = records[max(first - 12, 0):first + 12]
            return f"{log_dir}: (offset, value, pid, epoch, base seq) " + "; ".join(
                f"{o} {v[:12].decode()} {pid} {e} {seq}" for o, v, pid, e, seq in around)
    return "no replica's log shows it"


def copies_of(cluster, partition: int) -> str:
    """The values stored twice in the partition, with producer id, epoch and sequence (for a failure report)."""
    same_epoch, cross_epoch = duplicates_on_disk(cluster, TOPIC, PARTITIONS)
    return "\n".join([line for line in same_epoch + cross_epoch if f"{TOPIC}-{partition} " in line][:10])


def test_our_idempotent_producer_survives_leader_moves(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=4, overrides=OVERRIDES)
    zk = zk_client_factory(cluster.zookeeper_connect)
    on_012 = {p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(PARTITIONS)}
    faults: list[str] = []
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignments=on_012, topic_configs={
            "min.insync.replicas": "2", "max.message.bytes": str(MAX_MESSAGE_BYTES)})], timeout_ms=30000)
        wait_until(lambda: full_isr(zk, on_012), WAIT_S, "the topic's replicas in sync")
        with OurProducerLoad(cluster.bootstrap_servers) as load:
            wait_until(lambda: len(load.acked) > 500, WAIT_S, "the producer to get going")
            assignment = on_012
            for _ in range(int(os.environ.get("ODRADEK_OUR_PRODUCER_ROUNDS", "1"))):
                # 1. SIGKILL the leader of partition 0 and bring it back (it rejoins the ISRs).
                victim = leader_of(zk, 0)
                cluster.kill_broker(victim, signal.SIGKILL)
                faults.append(f"SIGKILL {victim}")
                cluster.start_broker(victim)
                wait_until(lambda: full_isr(zk, assignment), WAIT_S, f"broker {victim} back in the ISRs")
                # 2. Its leaderships come back by a preferred election (Admin.elect_leaders).
                wait_until(lambda: elect_preferred(admin), WAIT_S, "preferred leaders elected (Admin)")
                # 3. SIGTERM the leader of partition 1 (controlled shutdown moves its leaderships), restart.
                stopped = leader_of(zk, 1)
                cluster.stop_broker(stopped)
                faults.append(f"SIGTERM {stopped}")
                cluster.start_broker(stopped)
                wait_until(lambda: full_isr(zk, assignment), WAIT_S, f"broker {stopped} back in the ISRs")
                # 4. Preferred election again, through the tool as an operator runs it.
                #    The controller learns the restarted broker is back in the ISRs up to ~5 s after the znodes
                #    say so (ISR change notifications are batched), so the tool is run until it succeeds.
                wait_until(lambda: console_tool("leader-election", "--bootstrap-server", cluster.bootstrap_servers,
                                                "--election-type", "preferred", "--all-topic-partitions",
                                                check=False).returncode == 0,
                           WAIT_S, "preferred leaders elected (odradek-leader-election)")
                faults.append("odradek-leader-election")
                # 5. Reassignment: each partition's preferred leader gives its place to the other spare broker
                #    of {0..3}, which comes first, so leadership and data move to a replica that had neither.
                spare = lambda replicas: next(b for b in range(4) if b not in replicas)  # noqa: E731
                assignment = {p: [spare(r)] + r[1:] for p, r in assignment.items()}
                admin.alter_partition_reassignments({TopicPartition(TOPIC, p): r for p, r in assignment.items()})
                wait_until(lambda: assignment_done(zk, assignment), WAIT_S, f"the reassignment to {assignment}")
                wait_until(lambda: elect_preferred(admin), WAIT_S, "leaders on the reassigned replicas")
                faults.append(f"reassignment to {assignment}")
            acked = len(load.acked)
            wait_until(lambda: len(load.acked) > acked + 500, WAIT_S, "records acknowledged after the moves")

    assert load.crash is None, f"the producing thread died: {load.crash!r}"
    hanging = [value for value, future in load.futures if not future.done()]
    assert not hanging, f"{len(hanging)} sends neither acknowledged nor failed, e.g. {hanging[:3]}"
    producers = {(pid, epoch) for broker in cluster.brokers for p in range(PARTITIONS)
                 for _, _, pid, epoch, _ in stored_records(broker.log_dirs, TOPIC, p)}
    print(f"sent {len(load.futures)}, acknowledged {len(load.acked)}, failed {len(load.failed)} (oversized), "
          f"(producer id, epoch) pairs in the logs {len(producers)}; "
          f"retries by error {dict(load.retries.by_error)}; faults: {'; '.join(faults)}")
    assert len(load.acked) + len(load.failed) == len(load.futures)
    # With the default retries and delivery_timeout_ms, leader moves are never a reason to give up a record:
    # only the oversized ones fail, with the leader's MESSAGE_TOO_LARGE.
    poison = {value for value, _ in load.futures if len(value) > MAX_MESSAGE_BYTES}
    assert poison and {value for value, _ in load.failed} == poison, \
        f"failed sends other than the oversized ones: {[(v[:12], e) for v, e in load.failed if v not in poison][:3]}"
    assert all(isinstance(error, MessageTooLargeError) for _, error in load.failed), load.failed[:3]

    sent = {value for value, _ in load.futures} - poison
    stored = run(read_all(cluster.bootstrap_servers, TOPIC, PARTITIONS))
    for p, records in stored.items():
        values = [bytes(r.value) for r in records]
        assert len(values) == len(set(values)), f"partition {p} holds a value twice: " + copies_of(cluster, p)
        assert set(values) <= sent, f"partition {p} holds values never sent: {sorted(set(values) - sent)[:3]}"
        numbers = [int(v.split(b"-")[1]) for v in values]
        assert numbers == sorted(numbers), f"partition {p} is not in send order: " + out_of_order(cluster, p)
        assert all(n % PARTITIONS == p for n in numbers), f"partition {p} holds another partition's records"
    at = {(p, r.offset): bytes(r.value) for p, records in stored.items() for r in records}
    lost = [(v, where) for v, where in load.acked.items() if at.get(where) != v]
    assert not lost, f"{len(lost)} acknowledged records missing or moved, e.g. {lost[:3]}"
    same_epoch, cross_epoch = duplicates_on_disk(cluster, TOPIC, PARTITIONS)
    assert not same_epoch, f"{len(same_epoch)} values appended twice in one epoch:\n" + "\n".join(same_epoch[:20])
    assert not cross_epoch, f"{len(cross_epoch)} values re-sent under another producer id or epoch:\n" + \
        "\n".join(cross_epoch[:20])

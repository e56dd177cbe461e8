"""A rolling migration from Apache Kafka 2.8.2 to Odradek, in place: a 3-broker Kafka cluster (default
inter.broker.protocol.version 2.8) under load has each broker stopped (SIGTERM: Kafka's controlled shutdown)
and started again as Odradek with the same broker.id and log.dirs, one at a time, the controller last. Odradek
reads what Kafka left on disk (meta.properties, segments and indexes, leader-epoch-checkpoint, producer
snapshots, the recovery-point / replication-offset / log-start-offset checkpoints, __consumer_offsets and
__transaction_state). The clients are never restarted: an idempotent acks=all producer of sequence-numbered
records, a consumer group member and a transactional producer. Between swaps every partition of every topic
must be fully in sync again, as the README's procedure asks of an operator. Then one broker goes back to
Kafka on the log dirs Odradek wrote (the README's way back) and leads its preferred partitions. Afterwards no
acknowledged record may be missing or present twice, every committed transaction must be readable exactly once
(read_committed) and no aborted one at all. Prints the figures (records acknowledged, lost, duplicated; seconds per swap)."""

from __future__ import annotations

import threading
import time

import pytest

from odradek.clients import Consumer, Producer
from tests.kafka.fixtures import module_kafka_cluster
from tests.kafka.workload import Load, consume_all, elect_preferred, wait_until

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

TOPIC = "migration-load"
TXN_TOPIC = "migration-txn"
GROUP = "migration-readers"
PARTITIONS = 3


@pytest.fixture(scope="module")
def kafka3(zookeeper, tmp_path_factory):
    # internal topics of 3 partitions (not 50): fewer leaderships to move at each swap
    overrides = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3",
                 "min.insync.replicas": "2"}
    yield from module_kafka_cluster(zookeeper, tmp_path_factory.mktemp("migration"), 3, overrides)


class TransactionalLoad:
    """A transactional producer committing transactions of 10 numbered records from a thread. A transaction
    that fails is aborted (the client's own recovery; the producer is never replaced); one whose outcome is
    unknown (the abort failed too) is counted apart and checked neither way."""

    def __init__(self, bootstrap: str):
        self.producer = Producer(bootstrap_servers=bootstrap, transactional_id="migration-txn", acks="all",
                                 retries=1_000_000, delivery_timeout_ms=120_000, request_timeout_ms=10_000,
                                 linger_ms=5)
        self.producer.init_transactions()
        self.committed: set[bytes] = set()
        self.aborted: set[bytes] = set()
        self.unknown: set[bytes] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="txn-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            values = [b"txn-%06d-%02d" % (number, i) for i in range(10)]
            number += 1
            try:
                self.producer.begin_transaction()
                for value in values:
                    self.producer.send(TXN_TOPIC, value, key=value)
                self.producer.commit_transaction()
                self.committed.update(values)
            except Exception as e:
                self.errors.append(repr(e))
                try:
                    self.producer.abort_transaction()
                    self.aborted.update(values)
                except Exception as abort_error:
                    self.errors.append(repr(abort_error))
                    self.unknown.update(values)
                    time.sleep(0.5)  # the client is recovering: do not spin

    def wait_for_more(self, count: int = 50) -> None:
        target = len(self.committed) + count
        wait_until(lambda: len(self.committed) >= target, f"{count} more committed transactional records", 120.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)
        self.producer.close()


class GroupReader:
    """A consumer group member reading TOPIC from a thread (auto commit); counts what it reads."""

    def __init__(self, bootstrap: str):
        self.consumer = Consumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, auto_offset_reset="earliest",
                                 auto_commit_interval_ms=500, session_timeout_ms=10_000)
        self.read = 0
        self.values: set[bytes] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="group-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for records in self.consumer.poll(timeout_ms=200).values():
                    self.read += len(records)
                    self.values.update(r.value for r in records)
            except Exception as e:  # a coordinator moving: the client retries on the next poll
                self.errors.append(repr(e))
                time.sleep(0.2)

    def wait_for_more(self, count: int = 200) -> None:
        target = self.read + count
        wait_until(lambda: self.read >= target, f"the group member reading {count} more records", 120.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def out_of_sync(cluster) -> list[str]:
    """Partitions of every topic (the internal ones too) without a leader or with an ISR short of the replicas:
    what an operator checks between swaps (under-replicated partitions = 0)."""
    with cluster.client(timeout=5.0, retries=1) as client:
        topics = client.metadata_response(None).topics
    return [f"{t.name}-{p.partition_index}" for t in topics for p in t.partitions
            if p.leader_id < 0 or sorted(p.isr_nodes) != sorted(p.replica_nodes)]


def in_sync(cluster, expected_topics: int) -> bool:
    with cluster.client(timeout=5.0, retries=1) as client:
        topics = client.metadata_response(None).topics
    return len(topics) >= expected_topics and not out_of_sync(cluster)


def read_committed(cluster) -> list[bytes]:
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed",
                        auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        from odradek.clients import TopicPartition
        partitions = [TopicPartition(TXN_TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        ends = consumer.end_offsets(partitions)
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in partitions) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
        return values
    finally:
        consumer.close()


def test_rolling_migration_from_kafka_2_8_in_place(kafka3):
    cluster = kafka3
    with cluster.client() as client:
        assert client.create_topics({TOPIC: (PARTITIONS, 3), TXN_TOPIC: (PARTITIONS, 3)}) == {TOPIC: 0, TXN_TOPIC: 0}
    wait_until(lambda: in_sync(cluster, 2), "the topics fully in sync on Kafka")
    load = Load(cluster.bootstrap_servers, TOPIC)
    txn = TransactionalLoad(cluster.bootstrap_servers)
    reader = GroupReader(cluster.bootstrap_servers)
    swaps: list[tuple[int, float, float, float]] = []  # broker, seconds: Kafka stopping, Odradek starting, in sync
    elections: list[float] = []  # seconds each preferred leader election took
    try:
        load.wait_for_more()
        txn.wait_for_more()
        reader.wait_for_more()
        # internal topics exist now (the group and the transaction created them)
        wait_until(lambda: in_sync(cluster, 4), "every topic, internal ones included, fully in sync")
        boss = cluster.metadata().controller_id
        for broker in sorted(cluster.kafka_ids, key=lambda b: b == boss):  # the controller last
            started = time.monotonic()
            cluster.stop_broker(broker)  # SIGTERM: Kafka's controlled shutdown moves its leaderships away
            stopped = time.monotonic()
            cluster.kafka_ids.discard(broker)
            cluster.start_broker(broker)  # Odradek, same broker.id and log.dirs
            registered = time.monotonic()
            wait_until(lambda: in_sync(cluster, 4), f"every partition in sync again after broker {broker}'s swap",
                       120.0)
            swaps.append((broker, stopped - started, registered - stopped, time.monotonic() - registered))
            # give the new broker its preferred leaderships back, so Odradek leads Kafka followers too
            for topic in (TOPIC, TXN_TOPIC):
                elections.append(elect_preferred(cluster, topic, range(PARTITIONS)))
            load.wait_for_more(200)
            txn.wait_for_more(20)
            reader.wait_for_more(100)
        assert not cluster.kafka_ids
        # The way back (README): one broker (not the controller) returns to Kafka 2.8.2 on the log dirs Odradek
        # wrote, and leads its preferred partitions again, so the final reads go through it too.
        back = next(b for b in (0, 1, 2) if b != cluster.metadata().controller_id)
        started = time.monotonic()
        cluster.stop_broker(back)
        cluster.kafka_ids.add(back)
        cluster.start_broker(back, timeout=120.0)
        wait_until(lambda: in_sync(cluster, 4), f"every partition in sync with broker {back} back on Kafka", 120.0)
        way_back = time.monotonic() - started
        for topic in (TOPIC, TXN_TOPIC):
            elections.append(elect_preferred(cluster, topic, range(PARTITIONS)))
        load.wait_for_more(200)
        txn.wait_for_more(20)
        reader.wait_for_more(100)
    finally:
        reader.stop()
        txn.stop()
        load.stop()
    values = consume_all(cluster, TOPIC, range(PARTITIONS))
    lost = load.acked - set(values)
    duplicated = len(values) - len(set(values))
    transactional = read_committed(cluster)
    txn_lost = txn.committed - set(transactional)
    txn_duplicated = len(transactional) - len(set(transactional))
    aborted_seen = txn.aborted & set(transactional)
    swap_figures = ", ".join(f"broker {broker} {stop + start + sync:.1f} ({stop:.1f} + {start:.1f} + {sync:.1f})"
                             for broker, stop, start, sync in swaps)
    print(f"\nrolling migration, Kafka 2.8.2 -> Odradek in place: idempotent producer {load.sent} sent, "
          f"{len(load.acked)} acknowledged, {len(lost)} lost, {duplicated} duplicated; transactional producer "
          f"{len(txn.committed)} records committed, {len(txn_lost)} lost, {txn_duplicated} duplicated, "
          f"{len(txn.aborted)} aborted ({len(aborted_seen)} visible), {len(txn.unknown)} unknown; group member "
          f"read {reader.read} records ({len(reader.values)} distinct); seconds per swap (Kafka stopping + Odradek "
          f"starting + all in sync): {swap_figures}; broker {back} back to Kafka in {way_back:.1f} s; preferred "
          f"elections took (s) {', '.join(f'{e:.2f}' for e in elections)}")
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    assert duplicated == 0, f"{duplicated} records written twice"
    assert not txn_lost, f"{len(txn_lost)} committed transactional records lost, e.g. {sorted(txn_lost)[:5]}"
    assert txn_duplicated == 0 and not aborted_seen
    assert len(load.acked) > 1000 and len(txn.committed) >= 100
    assert reader.values <= set(values)

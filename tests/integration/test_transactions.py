"""The transaction coordinator with real brokers and real clients: confluent-kafka's and kafka-python's
transactional producers commit and abort, read_committed consumers see exactly the committed records,
offsets sent to a transaction land only on commit, a second producer fences the first, and a new
coordinator finishes a transaction its SIGKILLed predecessor prepared."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from kafka import KafkaAdminClient, KafkaConsumer  # noqa: E402
from kafka import TopicPartition as KpTopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from odradek.broker.coordinator.group.metadata_manager import kafka_partition_for  # noqa: E402

SINGLE = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
          "transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
          "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0"}
TRIPLE = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
          "replica.lag.time.max.ms": "5000",
          "group.initial.rebalance.delay.ms": "0"}


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, replication)])
    finally:
        admin.close()


def txn_producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    conf.update(extra)
    producer = Producer(conf)
    producer.init_transactions(60)
    return producer


def read_committed(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 60.0,
                   settle: float = 2.0) -> list[bytes]:
    """Every record a read_committed consumer sees, from the start; waits for ``expected`` records, then
    ``settle`` seconds more for any that should not be there."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout
    settle_until = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
            if len(seen) >= expected and settle_until is None:
                settle_until = time.monotonic() + settle
            if settle_until is not None and time.monotonic() > settle_until:
                break
    finally:
        consumer.close()
    return seen


def test_confluent_commit_and_abort_over_several_partitions(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, SINGLE)
    bootstrap = cluster.bootstrap_servers
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3)
    producer = txn_producer(bootstrap, f"tx-{uuid.uuid4().hex[:8]}")
    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, value=b"committed-%d" % i, partition=i % 3)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, value=b"aborted-%d" % i, partition=i % 3)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"last", partition=1)
    producer.commit_transaction(30)
    seen = read_committed(bootstrap, topic, 3, 31)
    assert sorted(seen) == sorted([b"committed-%d" % i for i in range(30)] + [b"last"])


def test_kafka_python_transactional_producer_commits_and_aborts(odradek_cluster_factory):
    from kafka import KafkaProducer

    cluster = odradek_cluster_factory(1, SINGLE)
    bootstrap = cluster.bootstrap_servers
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, value=b"kp-commit-%d" % i, partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, value=b"kp-abort-%d" % i, partition=i % 2)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    seen = read_committed(bootstrap, topic, 2, 10)
    assert sorted(seen) == sorted(b"kp-commit-%d" % i for i in range(10))


def _committed(bootstrap: str, group: str, topic: str, partition: int) -> int | None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return consumer.committed(KpTopicPartition(topic, partition))
    finally:
        consumer.close(autocommit=False)


def test_offsets_sent_to_a_transaction_are_committed_only_on_commit(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, SINGLE)
    bootstrap = cluster.bootstrap_servers
    source, sink, group = (f"{k}-{uuid.uuid4().hex[:8]}" for k in ("src", "sink", "g"))
    create_topic(bootstrap, source, 1)
    create_topic(bootstrap, sink, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    metadata = consumer.consumer_group_metadata()
    producer = txn_producer(bootstrap, f"tx-{uuid.uuid4().hex[:8]}")
    try:
        producer.begin_transaction()
        producer.produce(sink, value=b"a")
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 5)], metadata, 30)
        producer.abort_transaction(30)
        assert _committed(bootstrap, group, source, 0) is None
        producer.begin_transaction()
        producer.produce(sink, value=b"b")
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 7)], metadata, 30)
        producer.commit_transaction(30)
        deadline = time.monotonic() + 30
        while _committed(bootstrap, group, source, 0) != 7:
            assert time.monotonic() < deadline, "the transaction's offset never became visible"
            time.sleep(0.2)
    finally:
        consumer.close()
    assert read_committed(bootstrap, sink, 1, 1) == [b"b"]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(odradek_cluster_factory):
    cluster = odradek_cluster_factory(1, SINGLE)
    bootstrap = cluster.bootstrap_servers
    topic, tid = f"t-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    zombie = txn_producer(bootstrap, tid)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie")
    zombie.flush(30)
    successor = txn_producer(bootstrap, tid)  # aborts the zombie's open transaction, bumps the epoch
    successor.begin_transaction()
    successor.produce(topic, value=b"successor")
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or "fenced" in error.str().lower(), error
    assert read_committed(bootstrap, topic, 1, 1) == [b"successor"]


def _partition_info(cluster, topic: str, partition: int):
    deadline = time.monotonic() + 60
    while True:
        with cluster.client() as client:
            info = client.metadata(topics=[topic]).topics[topic].partitions.get(partition)
        if info is not None and info.leader >= 0:
            return info
        assert time.monotonic() < deadline, f"{topic}-{partition} has no leader"
        time.sleep(0.5)


def test_a_new_coordinator_finishes_a_commit_prepared_by_a_killed_one(odradek_cluster_factory):
    """The data partition lives only on the one broker outside the transaction's __transaction_state
    partition; it is SIGSTOPped so no marker can be written, the commit is answered once PrepareCommit is
    durable, the coordinator is SIGKILLed, and its successor (the other replica) sends the markers."""
    cluster = odradek_cluster_factory(3, {**TRIPLE, "transaction.state.log.replication.factor": "2",
                                          "transaction.state.log.min.isr": "1"})
    bootstrap = cluster.bootstrap_servers
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    producer = txn_producer(bootstrap, tid, **{"transaction.timeout.ms": 300000})
    state = _partition_info(cluster, "__transaction_state", kafka_partition_for(tid, 3))
    coordinator = state.leader
    (data_broker,) = {0, 1, 2} - set(state.replicas)
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, replica_assignments={0: [data_broker]})])
    finally:
        admin.close()
    _partition_info(cluster, topic, 0)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"survives-%d" % i)
    producer.flush(30)
    cluster.kill_broker(data_broker, signal.SIGSTOP)
    try:
        producer.commit_transaction(60)  # PrepareCommit is durable; the markers wait for the stopped broker
        cluster.kill_broker(coordinator, signal.SIGKILL)
    finally:
        cluster.kill_broker(data_broker, signal.SIGCONT)
    new_state = _partition_info(cluster, "__transaction_state", kafka_partition_for(tid, 3))
    deadline = time.monotonic() + 60
    while new_state.leader in (coordinator, -1):
        assert time.monotonic() < deadline, "no new transaction coordinator"
        time.sleep(0.5)
        new_state = _partition_info(cluster, "__transaction_state", kafka_partition_for(tid, 3))
    seen = read_committed(bootstrap, topic, 1, 5, timeout=120)
    assert sorted(seen) == sorted(b"survives-%d" % i for i in range(5))


ZOMBIE = """
import sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
                     "transaction.timeout.ms": 3000})
producer.init_transactions(60)
producer.begin_transaction()
for i in range(3):
    producer.produce(sys.argv[3], value=b"zombie-%d" % i, partition=0)
producer.flush(30)
print("in-transaction", flush=True)
sys.stdin.read()
"""


def test_a_killed_producers_transaction_is_aborted_on_timeout(odradek_cluster_factory):
    import subprocess
    import sys

    cluster = odradek_cluster_factory(1, {**SINGLE, "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                                          "500"})
    bootstrap = cluster.bootstrap_servers
    topic = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    zombie = subprocess.Popen([sys.executable, "-c", ZOMBIE, bootstrap, f"z-{uuid.uuid4().hex[:8]}", topic],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert zombie.stdout.readline().strip() == b"in-transaction"
    finally:
        zombie.kill()
        zombie.wait()
    producer = txn_producer(bootstrap, f"tx-{uuid.uuid4().hex[:8]}")
    producer.begin_transaction()
    producer.produce(topic, value=b"after", partition=0)
    producer.commit_transaction(30)
    # Only the coordinator's abort (after 3 s) lets the last stable offset pass the zombie's records.
    assert read_committed(bootstrap, topic, 1, 1, timeout=90) == [b"after"]

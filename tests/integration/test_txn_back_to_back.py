"""Transactions back to back (issue 21) on three real brokers (RF 3, min ISR 2), with confluent-kafka,
kafka-python and our producer.

Kafka 2.8 answers CONCURRENT_TRANSACTIONS to the AddPartitionsToTxn / AddOffsetsToTxn that follows a commit
(the previous transaction's markers are still being written) and to an InitProducerId that must first abort
an open transaction; every client then sleeps its retry backoff. Our coordinator holds such a request until
the previous transaction is complete. The brokers' request metrics count every error code answered, so the
tests check that no client was told CONCURRENT_TRANSACTIONS, and that the results are those of Kafka:
every committed record visible to read_committed, the fenced producer fenced, its records aborted.
"""

from __future__ import annotations

import uuid

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402
from kafka import KafkaProducer  # noqa: E402

from odradek.clients.simple_client import SyncSimpleClient  # noqa: E402
from odradek.clients.producer.sync_producer import Producer  # noqa: E402
from odradek.clients.types import TopicPartition as OurTopicPartition  # noqa: E402
from tests.conftest import new_cluster  # noqa: E402
from tests.integration.helpers import wait_until  # noqa: E402
from tests.integration.test_metrics import scrape, value  # noqa: E402

pytestmark = pytest.mark.timeout(300)

TRANSACTIONS = 20
PARTITIONS = 3
OVERRIDES = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
             "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    running = new_cluster(tmp_path_factory.mktemp("txn-back-to-back"), zookeeper, 3, OVERRIDES, metrics_base_port=0)
    try:
        yield running.start()
    finally:
        running.stop(timeout=15.0)


def answered(cluster, request: str, error: str) -> float:
    """How often the cluster's brokers answered ``request`` with ``error`` (per partition for AddPartitionsToTxn)."""
    return sum(value(scrape(url), "kafka_network_requestmetrics_errors_total", request=request, error=error) or 0.0
               for url in cluster.metrics_urls)


def new_topic(cluster) -> str:
    topic = f"b2b-{uuid.uuid4().hex[:8]}"
    with SyncSimpleClient(cluster.bootstrap_servers) as client:
        assert client.create_topics({topic: (PARTITIONS, 3)}, configs={"min.insync.replicas": "2"})[topic] == 0
        client.wait_for_leaders(topic)
    return topic


def read_committed(bootstrap: str, topic: str, expected: int, timeout: float = 60.0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: list[bytes] = []
    try:
        for message in consumer.consume(expected, timeout):
            assert message.error() is None, message.error()
            seen.append(message.value())
        while len(seen) < expected:
            batch = consumer.consume(expected - len(seen), timeout)
            assert batch, f"read_committed saw {len(seen)} of {expected} records"
            seen += [m.value() for m in batch]
    finally:
        consumer.close()
    return seen


def test_back_to_back_transactions_are_never_told_concurrent_transactions(cluster):
    topic = new_topic(cluster)
    bootstrap = cluster.bootstrap_servers
    concurrent_before = {r: answered(cluster, r, "CONCURRENT_TRANSACTIONS")
                         for r in ("AddPartitionsToTxn", "AddOffsetsToTxn")}
    added_before = answered(cluster, "AddPartitionsToTxn", "NONE")

    librdkafka = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                                           "transactional.id": f"b2b-c-{uuid.uuid4().hex[:6]}"})
    librdkafka.init_transactions(30)
    for i in range(TRANSACTIONS):
        librdkafka.begin_transaction()
        librdkafka.produce(topic, b"confluent-%d" % i, partition=i % PARTITIONS)
        librdkafka.commit_transaction(30)

    java_like = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"b2b-k-{uuid.uuid4().hex[:6]}")
    try:
        java_like.init_transactions()
        for i in range(TRANSACTIONS):
            java_like.begin_transaction()
            java_like.send(topic, value=b"kafka-python-%d" % i, partition=i % PARTITIONS)
            java_like.commit_transaction()
    finally:
        java_like.close()

    # Ours also commits group offsets in each transaction: AddOffsetsToTxn waits like AddPartitionsToTxn.
    with Producer(bootstrap_servers=bootstrap, linger_ms=0, transactional_id=f"b2b-o-{uuid.uuid4().hex[:6]}") as ours:
        ours.init_transactions()
        for i in range(TRANSACTIONS):
            ours.begin_transaction()
            ours.send(topic, b"odradek-%d" % i, partition=i % PARTITIONS)
            ours.send_offsets_to_transaction({OurTopicPartition(topic, 0): i + 1}, f"b2b-group-{topic}")
            ours.commit_transaction()

    assert {r: answered(cluster, r, "CONCURRENT_TRANSACTIONS") for r in concurrent_before} == concurrent_before
    assert answered(cluster, "AddPartitionsToTxn", "NONE") - added_before >= 3 * TRANSACTIONS
    for url in cluster.metrics_urls:  # the held requests' purgatory is exported, and empty now
        assert value(scrape(url), "kafka_server_delayedoperationpurgatory_numdelayedoperations",
                     delayedOperation="TxnCompletion") == 0
    expected = {b"%s-%d" % (name, i) for name in (b"confluent", b"kafka-python", b"odradek")
                for i in range(TRANSACTIONS)}
    seen = read_committed(bootstrap, topic, len(expected))
    assert sorted(seen) == sorted(expected)


def test_a_new_producer_is_answered_once_the_open_transaction_it_fences_is_aborted(cluster):
    topic = new_topic(cluster)
    bootstrap = cluster.bootstrap_servers
    transactional_id = f"b2b-fence-{uuid.uuid4().hex[:6]}"
    zombie = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(6):
        zombie.produce(topic, b"zombie-%d" % i, partition=i % PARTITIONS)
    assert zombie.flush(30) == 0  # written, in an open transaction
    concurrent_before = answered(cluster, "InitProducerId", "CONCURRENT_TRANSACTIONS")

    successor = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    successor.init_transactions(30)  # the coordinator aborts the zombie's transaction, then answers
    assert answered(cluster, "InitProducerId", "CONCURRENT_TRANSACTIONS") == concurrent_before
    successor.begin_transaction()
    successor.produce(topic, b"successor", partition=0)
    successor.commit_transaction(30)

    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(30)
    assert fenced.value.args[0].fatal()
    assert read_committed(bootstrap, topic, 1) == [b"successor"]
    with SyncSimpleClient(bootstrap) as client:  # nothing left open: every partition's LSO reaches its end
        wait_until(lambda: all(client.list_offsets(topic, p, -1, isolation_level=1)[0] ==
                               client.list_offsets(topic, p, -1)[0] for p in range(PARTITIONS)),
                   timeout=30, what="the last stable offsets to reach the log ends")

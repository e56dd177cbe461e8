"""The Prometheus endpoint of each broker, scraped on a real 3-broker cluster (real ZooKeeper, real clients).

The key series move as operators expect: records in after producing (confluent-kafka), per-request-type
rates, errors and latency, active controller count summing to 1, consumer-group lag from committed offsets,
and under-replicated partitions after a broker is SIGKILLed.
"""

from __future__ import annotations

import signal
import socket
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_BROKER_OVERRIDES

from odradek.tools.local_cluster import LocalCluster
from tests.integration.helpers import wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("metrics-cluster"), 3, zookeeper=zookeeper, base_port=0,
                           chroot=f"/odradek-{uuid.uuid4().hex}", metrics_base_port=0, replication_defaults=True,
                           broker_overrides=TEST_BROKER_OVERRIDES)
    try:
        yield cluster.start()
    finally:
        cluster.stop(timeout=15.0)


def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def total(cluster: LocalCluster, name: str, **labels: str) -> float:
    """A series summed over the live brokers."""
    out = 0.0
    for broker, url in zip(cluster.brokers, cluster.metrics_urls):
        if broker.alive():
            out += value(scrape(url), name, **labels) or 0.0
    return out


def create_topic(cluster: LocalCluster, partitions: int = 1) -> str:
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)
    return topic


def produce(cluster: LocalCluster, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=f"record-{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def test_every_broker_serves_metrics_and_one_is_the_active_controller(cluster):
    assert len(cluster.metrics_urls) == 3
    per_broker = [scrape(url) for url in cluster.metrics_urls]
    counts = [value(s, "kafka_controller_kafkacontroller_activecontrollercount") for s in per_broker]
    assert sorted(counts) == [0.0, 0.0, 1.0]
    controller = per_broker[counts.index(1.0)]
    assert value(controller, "kafka_controller_kafkacontroller_controllerepoch") >= 1
    assert value(controller, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    for samples in per_broker:  # the process collector and the ZooKeeper session counters are there too
        assert value(samples, "process_cpu_seconds_total") is not None
        assert value(samples, "kafka_server_sessionexpirelistener_zookeeperexpires_total") == 0


def test_messages_in_move_after_producing_and_request_metrics_are_per_api(cluster):
    topic = create_topic(cluster)
    before = total(cluster, "kafka_server_brokertopicmetrics_messagesin_total")
    produce(cluster, topic, 25)
    # only the leader counts messages in (followers count replication bytes)
    wait_until(lambda: total(cluster, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 25,
               what="25 messages in for the topic")
    assert total(cluster, "kafka_server_brokertopicmetrics_messagesin_total") >= before + 25
    assert total(cluster, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) > 25 * len("record-0")
    wait_until(lambda: total(cluster, "kafka_server_brokertopicmetrics_replicationbytesin_total") > 0,
               what="followers to fetch")
    leader = None
    for url in cluster.metrics_urls:
        samples = scrape(url)
        if value(samples, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic):
            leader = samples
    assert leader is not None
    assert value(leader, "kafka_log_log_logendoffset", topic=topic, partition="0") == 25
    assert value(leader, "kafka_log_log_size", topic=topic, partition="0") > 0
    assert value(leader, "kafka_server_replicamanager_leadercount") >= 1
    assert value(leader, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    produce_requests = sum(v for (name, labels), v in leader.items()
                           if name == "kafka_network_requestmetrics_requests_total"
                           and ("request", "Produce") in labels)
    assert produce_requests >= 1
    assert value(leader, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= 1
    assert value(leader, "kafka_network_requestmetrics_totaltimems_count", request="Produce") >= 1
    assert value(leader, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.99") > 0
    assert value(leader, "kafka_network_requestmetrics_localtimems_count", request="Produce") >= 1
    # followers fetch from the leader: recorded as Fetch and as FetchFollower, waiting in the purgatory
    assert value(leader, "kafka_network_requestmetrics_totaltimems_count", request="FetchFollower") >= 1
    assert value(leader, "kafka_network_requestmetrics_totaltimems_count", request="Fetch") >= \
        value(leader, "kafka_network_requestmetrics_totaltimems_count", request="FetchFollower")
    assert value(leader, "kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Fetch") \
        is not None
    assert value(leader, "kafka_network_requestchannel_requestqueuesize") is not None


def test_consumer_group_lag_reflects_uncommitted_records(cluster):
    topic = create_topic(cluster)
    produce(cluster, topic, 10)
    group = f"group-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    finally:
        consumer.close()
    wait_until(lambda: total(cluster, "kafka_consumergroup_current_offset", consumergroup=group, topic=topic,
                             partition="0") == 4, what="the committed offset")
    # the coordinator may be a follower, whose high watermark trails the leader's until its next fetch answer
    wait_until(lambda: total(cluster, "kafka_consumergroup_lag", consumergroup=group, topic=topic,
                             partition="0") == 6, what="the lag of the uncommitted records")
    assert total(cluster, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 6


def test_under_replicated_partitions_after_a_broker_dies(cluster):
    topic = create_topic(cluster, partitions=6)
    produce(cluster, topic, 5)
    assert total(cluster, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    victim = next(i for i, url in enumerate(cluster.metrics_urls)
                  if value(scrape(url), "kafka_controller_kafkacontroller_activecontrollercount") == 0)
    cluster.kill_broker(victim, signal.SIGKILL)
    # the controller takes the dead broker out of every ISR once its ZooKeeper session expires
    wait_until(lambda: total(cluster, "kafka_server_replicamanager_underreplicatedpartitions") >= 6,
               timeout=90, what="under-replicated partitions")
    assert total(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert total(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    # RF 3 with min.insync.replicas 2: two replicas left is at, not under, the minimum
    assert total(cluster, "kafka_server_replicamanager_underminisrpartitioncount") == 0
    assert total(cluster, "kafka_server_replicamanager_atminisrpartitioncount") >= 6


def test_brokers_report_running_and_serve_metrics_only_on_the_address_they_announce(cluster):
    for broker, url in zip(cluster.brokers, cluster.metrics_urls):
        if not broker.alive():  # an earlier test of the module killed it
            continue
        assert value(scrape(url), "kafka_server_kafkaserver_brokerstate") == 3  # Kafka's BrokerState.RUNNING
        announced = [line for line in broker.log_path.read_text().splitlines() if "Prometheus metrics on" in line]
        assert announced and f"Prometheus metrics on {url} (" in announced[-1]
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(OSError):  # bound to 127.0.0.1 only: another loopback address is refused
            socket.create_connection(("127.0.0.2", port), timeout=5).close()

"""One cluster of both: an Apache Kafka 2.8.2 broker and two Odradek brokers on one ZooKeeper chroot, partitions
with replicas on both kinds, controllers of both kinds, leaders failing over both ways, under an idempotent
acks=all load of which no acknowledged record may be lost (or written twice)."""

from __future__ import annotations

import signal
import threading
import time
from typing import Callable

import pytest

from odradek.clients import Producer
from odradek.protocol.messages import ElectLeadersRequest
from tests.kafka.fixtures import module_kafka_cluster

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

KAFKA = 0  # broker 0 is Kafka 2.8.2; 1 and 2 are Odradek
TOPIC = "mixed-load"


@pytest.fixture(scope="module")
def mixed(zookeeper, tmp_path_factory):
    # Kafka at IBP 2.8 asks the controller to change an ISR with AlterIsr (KIP-497), which Odradek's controller
    # does not serve; at 2.6 it writes the ISR to ZooKeeper and notifies /isr_change_notification, as Odradek does
    overrides = {"min.insync.replicas": "2", "inter.broker.protocol.version": "2.6"}
    yield from module_kafka_cluster(zookeeper, tmp_path_factory.mktemp("mixed"), 3, overrides, kafka_ids={KAFKA})


def wait_until(condition: Callable[[], object], what: str, timeout: float = 90.0) -> object:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # a broker that is restarting: ask again
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.2)


def partitions(cluster) -> list:
    with cluster.client(timeout=5.0, retries=1) as client:
        return client.metadata_response([TOPIC]).topics[0].partitions


def fully_replicated(cluster) -> bool:
    parts = partitions(cluster)
    return len(parts) == 3 and all(len(p.isr_nodes) == 3 and p.leader_id >= 0 for p in parts)


def controller(cluster) -> int:
    return cluster.metadata(timeout=5.0).controller_id


class Load:
    """An idempotent acks=all producer sending numbered records from a thread until stopped."""

    def __init__(self, bootstrap: str):
        self.producer = Producer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                                 retries=1_000_000, delivery_timeout_ms=120_000, request_timeout_ms=10_000,
                                 linger_ms=5)
        self.acked: set[bytes] = set()
        self.failed = 0
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mixed-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            futures = []
            for _ in range(50):
                value = b"%08d" % self.sent
                self.sent += 1
                future = self.producer.send(TOPIC, value, key=value)
                future.add_callback(lambda _metadata, v=value: self.acked.add(v))
                future.add_errback(lambda _error: self._failed())
                futures.append(future)
            try:
                futures[-1].get(timeout=150)  # keeps at most one burst in flight
            except Exception:
                pass

    def _failed(self) -> None:
        self.failed += 1

    def wait_for_more(self, count: int = 300) -> None:
        target = len(self.acked) + count
        wait_until(lambda: len(self.acked) >= target, f"{count} more acknowledged records", 120.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(200)
        self.producer.flush(timeout=150)
        self.producer.close()


def consume_all(cluster) -> list[bytes]:
    values = []
    with cluster.client(timeout=10.0) as client:
        for partition in range(3):
            offset = 0
            while True:
                fetched = client.fetch(TOPIC, partition, offset, max_wait_ms=0, max_bytes=1 << 20)
                if not fetched.records:
                    assert offset >= fetched.high_watermark, "the fetch stopped below the high watermark"
                    break
                values += [r.value for r in fetched.records]
                offset = fetched.records[-1].offset + 1
    return values


def elect_preferred(cluster) -> None:
    with cluster.client() as client:
        boss = client.metadata(topics=[]).controller_id
        client.send(boss, ElectLeadersRequest(election_type=0, timeout_ms=30000, topic_partitions=[
            ElectLeadersRequest.TopicPartitions(topic=TOPIC, partitions=[0, 1, 2])]), version=1)


def test_mixed_cluster_keeps_every_acknowledged_record_through_failovers_both_ways(mixed):
    cluster = mixed
    assert sorted(cluster.metadata().brokers) == [0, 1, 2]
    with cluster.client() as client:
        assert client.create_topics({TOPIC: (3, 3)}) == {TOPIC: 0}
    wait_until(lambda: fully_replicated(cluster), "every partition's ISR holds a Kafka and two Odradek brokers")
    load = Load(cluster.bootstrap_servers)
    controllers_seen = {controller(cluster)}
    try:
        load.wait_for_more()
        # Controllers of both kinds: move the controller until each kind has held it, under load.
        for _ in range(6):
            if {KAFKA} & controllers_seen and controllers_seen - {KAFKA}:
                break
            current = controller(cluster)
            cluster.restart_broker(current)
            wait_until(lambda: controller(cluster) >= 0 and fully_replicated(cluster), "a new controller, full ISR")
            controllers_seen.add(controller(cluster))
            load.wait_for_more()
        assert KAFKA in controllers_seen and controllers_seen - {KAFKA}, controllers_seen
        # Kafka's leaders fail over to Odradek (a crash), then come back to Kafka (preferred election).
        led_by_kafka = [p.partition_index for p in partitions(cluster) if p.leader_id == KAFKA]
        cluster.kill_broker(KAFKA, signal.SIGKILL)
        wait_until(lambda: all(p.leader_id in (1, 2) for p in partitions(cluster)), "Odradek leads every partition")
        load.wait_for_more()
        cluster.start_broker(KAFKA)
        wait_until(lambda: fully_replicated(cluster), "Kafka back in every ISR")
        elect_preferred(cluster)
        wait_until(lambda: any(p.leader_id == KAFKA for p in partitions(cluster)), "Kafka leads again")
        assert led_by_kafka == [] or any(p.leader_id == KAFKA for p in partitions(cluster))
        load.wait_for_more()
        # Odradek's leaders fail over to Kafka or the other Odradek (a controlled shutdown).
        cluster.stop_broker(2)
        wait_until(lambda: all(p.leader_id in (0, 1) for p in partitions(cluster)), "broker 2 leads nothing")
        load.wait_for_more()
        cluster.start_broker(2)
        wait_until(lambda: fully_replicated(cluster), "broker 2 back in every ISR")
        load.wait_for_more()
    finally:
        load.stop()
    values = consume_all(cluster)
    lost = load.acked - set(values)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} records written twice"
    assert len(load.acked) > 1500
    print(f"mixed cluster: {load.sent} sent, {len(load.acked)} acknowledged, {load.failed} failed, 0 lost, "
          f"0 duplicated; controllers held by brokers {sorted(controllers_seen)} (0 is Kafka)")

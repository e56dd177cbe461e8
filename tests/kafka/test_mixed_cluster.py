"""One cluster of both: an Apache Kafka 2.8.2 broker and two Odradek brokers on one ZooKeeper chroot, partitions
with replicas on both kinds, controllers of both kinds, leaders failing over both ways, under an idempotent
acks=all load of which no acknowledged record may be lost (or written twice)."""

from __future__ import annotations

import signal

import pytest

from odradek.protocol.errors import NotControllerError, StaleBrokerEpochError  # type: ignore[attr-defined]
from odradek.protocol.messages import AlterIsrRequest
from tests.kafka.fixtures import module_kafka_cluster
from tests.kafka.workload import Load, consume_all, elect_preferred, wait_until

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

KAFKA = 0  # broker 0 is Kafka 2.8.2; 1 and 2 are Odradek
TOPIC = "mixed-load"


@pytest.fixture(scope="module")
def mixed(zookeeper, tmp_path_factory):
    # Kafka at its default IBP 2.8 asks the controller to change an ISR with AlterIsr (KIP-497): Odradek's
    # controller answers it; Odradek's brokers write their ISR changes to ZooKeeper, which Kafka's controller reads
    overrides = {"min.insync.replicas": "2"}
    yield from module_kafka_cluster(zookeeper, tmp_path_factory.mktemp("mixed"), 3, overrides, kafka_ids={KAFKA})


def partitions(cluster) -> list:
    with cluster.client(timeout=5.0, retries=1) as client:
        return client.metadata_response([TOPIC]).topics[0].partitions


def fully_replicated(cluster) -> bool:
    parts = partitions(cluster)
    return len(parts) == 3 and all(len(p.isr_nodes) == 3 and p.leader_id >= 0 for p in parts)


def controller(cluster) -> int:
    return cluster.metadata(timeout=5.0).controller_id


def test_alter_isr_top_level_errors_as_kafka(mixed):
    """AlterIsr to a broker that is not the controller is NOT_CONTROLLER, to the controller from a broker epoch
    it does not know STALE_BROKER_EPOCH; both with no topics (Kafka 2.8's short-circuits). The brokers may be
    of either kind: the answer is the same."""
    boss = controller(mixed)
    request = AlterIsrRequest(broker_id=1, broker_epoch=1, topics=[AlterIsrRequest.TopicData(name="none", partitions=[
        AlterIsrRequest.PartitionData(partition_index=0, leader_epoch=0, new_isr=[1], current_isr_version=0)])])
    with mixed.client() as client:
        for other in {0, 1, 2} - {boss}:  # a Kafka broker and an Odradek one, or two Odradek ones
            refused = client.send(other, request, version=0)
            assert (refused.error_code, refused.topics) == (NotControllerError.code, []), other
        answer = client.send(boss, request, version=0)
        assert (answer.error_code, answer.topics) == (StaleBrokerEpochError.code, [])


def test_mixed_cluster_keeps_every_acknowledged_record_through_failovers_both_ways(mixed):
    cluster = mixed
    assert sorted(cluster.metadata().brokers) == [0, 1, 2]
    with cluster.client() as client:
        assert client.create_topics({TOPIC: (3, 3)}) == {TOPIC: 0}
    wait_until(lambda: fully_replicated(cluster), "every partition's ISR holds a Kafka and two Odradek brokers")
    load = Load(cluster.bootstrap_servers, TOPIC)
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
        elect_preferred(cluster, TOPIC, range(3))
        wait_until(lambda: any(p.leader_id == KAFKA for p in partitions(cluster)), "Kafka leads again")
        assert led_by_kafka == [] or any(p.leader_id == KAFKA for p in partitions(cluster))
        load.wait_for_more()
        # Odradek's leaders fail over to Kafka or the other Odradek (a controlled shutdown of the Odradek broker
        # that is not the controller). Kafka, leading, shrinks and then expands its ISRs with AlterIsr to
        # Odradek's controller (the controller moved to Odradek when Kafka was killed).
        boss = controller(cluster)
        assert boss != KAFKA, "the controller should have moved to Odradek when Kafka was killed"
        other = 3 - boss
        cluster.stop_broker(other)
        wait_until(lambda: all(p.leader_id in (KAFKA, boss) and other not in p.isr_nodes for p in partitions(cluster)),
                   f"broker {other} leads nothing and is out of every ISR")
        load.wait_for_more()
        cluster.start_broker(other)
        wait_until(lambda: fully_replicated(cluster), f"broker {other} back in every ISR")
        load.wait_for_more()
    finally:
        load.stop()
    values = consume_all(cluster, TOPIC, range(3))
    lost = load.acked - set(values)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} records written twice"
    assert len(load.acked) > 1500
    print(f"mixed cluster: {load.sent} sent, {len(load.acked)} acknowledged, {load.failed} failed, 0 lost, "
          f"0 duplicated; controllers held by brokers {sorted(controllers_seen)} (0 is Kafka)")

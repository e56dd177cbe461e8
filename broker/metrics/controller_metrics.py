"""KafkaController gauges and ZooKeeper session counters, read at scrape time.

As in Kafka, the cluster-wide gauges (offline partitions, preferred replica imbalance, global topic and
partition counts) are reported by the active controller only; every other broker reports 0, so summing a
series over the brokers gives the cluster's value (and ActiveControllerCount sums to 1).
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ...controller.partition_state_machine import PartitionState


class ZooKeeperStats:
    """Session events seen by the broker (Kafka's SessionExpireListener meters)."""

    def __init__(self) -> None:
        self.disconnects = 0
        self.expires = 0
        self.sync_connects = 0

    def on_session_event(self, state: str) -> None:
        if state == "disconnected":
            self.disconnects += 1
        elif state == "expired":
            self.expires += 1
        elif state == "connected":
            self.sync_connects += 1


class ControllerCollector:
    def __init__(self, server: Any, zk_stats: ZooKeeperStats) -> None:
        self.server = server
        self.zk_stats = zk_stats

    def collect(self) -> Iterator[Metric]:
        prefix = "kafka_controller_kafkacontroller_"
        controller = getattr(self.server, "controller", None)
        active = controller is not None and controller.is_active
        offline = imbalance = topics = partitions = 0
        epoch = controller.epoch if controller is not None else 0
        if active:
            context = controller.context
            assignments = {t: dict(ps) for t, ps in list(context.assignments.items())}
            deleting = set(context.topics_to_be_deleted)
            topics = len(assignments)
            partitions = sum(len(ps) for ps in assignments.values())
            states = dict(controller.partition_state_machine.states)
            offline = sum(1 for tp, s in states.items() if s is PartitionState.OFFLINE and tp[0] not in deleting)
            for tp, leadership in list(context.leaderships.items()):
                replicas = assignments.get(tp[0], {}).get(tp[1])
                if replicas and tp[0] not in deleting and leadership.state.leader != replicas[0]:
                    imbalance += 1
        yield GaugeMetricFamily(prefix + "activecontrollercount", "1 on the active controller, else 0",
                                value=1 if active else 0)
        yield GaugeMetricFamily(prefix + "controllerepoch", "The controller epoch this broker last held or saw "
                                "as controller (0 before any)", value=epoch)
        yield GaugeMetricFamily(prefix + "offlinepartitionscount", "Partitions without a live leader (active "
                                "controller only)", value=offline)
        yield GaugeMetricFamily(prefix + "preferredreplicaimbalancecount", "Partitions not led by their preferred "
                                "replica (active controller only)", value=imbalance)
        yield GaugeMetricFamily(prefix + "globaltopiccount", "Topics in the cluster (active controller only)",
                                value=topics)
        yield GaugeMetricFamily(prefix + "globalpartitioncount", "Partitions in the cluster (active controller "
                                "only)", value=partitions)
        prefix = "kafka_server_sessionexpirelistener_"
        zk = self.zk_stats
        yield CounterMetricFamily(prefix + "zookeeperdisconnects", "ZooKeeper connection losses",
                                  value=zk.disconnects)
        yield CounterMetricFamily(prefix + "zookeeperexpires", "ZooKeeper session expirations", value=zk.expires)
        yield CounterMetricFamily(prefix + "zookeepersyncconnects", "ZooKeeper (re)connections",
                                  value=zk.sync_connects)

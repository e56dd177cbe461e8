"""ReplicaManager, purgatory, replica fetcher and log gauges, read from the broker's state at scrape time.

Names are what the JMX exporter makes of Kafka's MBeans: ``kafka.server:type=ReplicaManager,...``,
``kafka.server:type=DelayedOperationPurgatory,...``, ``kafka.server:type=ReplicaFetcherManager,name=MaxLag``,
``kafka.server:type=ReplicaAlterLogDirsManager,name=MaxLag``,
``kafka.server:type=FetcherLagMetrics,name=ConsumerLag`` and ``kafka.log:type=Log,...``.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=value)


class ReplicaManagerCollector:
    """``server`` is the KafkaServer (its parts appear during start-up; missing ones report nothing)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        rm = getattr(self.server, "replica_manager", None)
        if rm is None:
            return
        partitions = list(rm.partitions.values())
        leaders = [p for p in partitions if p.is_leader]
        under_replicated = under_min_isr = at_min_isr = 0
        for p in leaders:
            isr = len(p.isr)
            if isr < len(p.replicas):
                under_replicated += 1
            min_isr = p.min_insync_replicas
            if isr < min_isr:
                under_min_isr += 1
            elif isr == min_isr:
                at_min_isr += 1
        prefix = "kafka_server_replicamanager_"
        yield _gauge(prefix + "partitioncount", "Partitions with a replica on this broker", len(partitions))
        yield _gauge(prefix + "leadercount", "Partitions this broker leads", len(leaders))
        yield _gauge(prefix + "underreplicatedpartitions", "Led partitions whose ISR is smaller than the "
                     "replica set", under_replicated)
        yield _gauge(prefix + "underminisrpartitioncount", "Led partitions whose ISR is below "
                     "min.insync.replicas", under_min_isr)
        yield _gauge(prefix + "atminisrpartitioncount", "Led partitions whose ISR is at min.insync.replicas",
                     at_min_isr)
        yield CounterMetricFamily(prefix + "isrshrinks", "ISR shrinks started by this broker as leader",
                                  value=getattr(rm, "isr_shrinks", 0))
        yield CounterMetricFamily(prefix + "isrexpands", "ISR expansions started by this broker as leader",
                                  value=getattr(rm, "isr_expands", 0))
        yield from self._purgatories(rm)
        yield from self._fetcher_lag()
        yield from self._log_dir_moves(rm)
        yield from _log_metrics(partitions)

    def _purgatories(self, rm: Any) -> Iterator[Metric]:
        purgatories = [rm.produce_purgatory, rm.fetch_purgatory, rm.delete_records_purgatory]
        groups = getattr(self.server, "group_coordinator", None)
        if groups is not None:
            purgatories += [groups.heartbeat_purgatory, groups.join_purgatory]
        txn = getattr(self.server, "transaction_coordinator", None)
        if txn is not None:  # requests held until their transaction completes (not in Kafka)
            purgatories.append(txn.completions.purgatory)
        size = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_purgatorysize",
                                 "Watched operations per purgatory (completed ones until purged)",
                                 labels=["delayedOperation"])
        delayed = GaugeMetricFamily("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                                    "Operations waiting in the purgatory's timer", labels=["delayedOperation"])
        for purgatory in purgatories:
            size.add_metric([purgatory.name], purgatory.watched)
            delayed.add_metric([purgatory.name], purgatory.num_delayed)
        yield size
        yield delayed

    def _fetcher_lag(self) -> Iterator[Metric]:
        manager = getattr(self.server, "fetcher_manager", None)
        lag = GaugeMetricFamily("kafka_server_fetcherlagmetrics_consumerlag", "Follower lag behind the leader's "
                                "high watermark at the last fetch, in records",
                                labels=["clientId", "topic", "partition"])
        max_lag = 0
        if manager is not None:
            for fetcher in list(manager.fetchers.values()):
                client_id = f"ReplicaFetcherThread-{fetcher.fetcher_id}-{fetcher.source_id}"
                for (topic, partition), state in list(fetcher.partitions.items()):
                    value = getattr(state, "lag", 0)
                    max_lag = max(max_lag, value)
                    lag.add_metric([client_id, topic, str(partition)], value)
        family = GaugeMetricFamily("kafka_server_replicafetchermanager_maxlag", "Largest follower lag of this "
                                   "broker, in records", labels=["clientId"])
        family.add_metric(["Replica"], max_lag)
        yield family
        yield lag

    @staticmethod
    def _log_dir_moves(rm: Any) -> Iterator[Metric]:
        family = GaugeMetricFamily("kafka_server_replicaalterlogdirsmanager_maxlag", "Largest lag of a replica "
                                   "being moved between this broker's log dirs, in records", labels=["clientId"])
        family.add_metric(["ReplicaAlterLogDirs"], max(rm.log_dir_mover.lags().values(), default=0))
        yield family


def _log_metrics(partitions: list[Any]) -> Iterator[Metric]:
    families = {
        "size": GaugeMetricFamily("kafka_log_log_size", "Bytes in the partition's log segments",
                                  labels=["topic", "partition"]),
        "end": GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=["topic", "partition"]),
        "start": GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset",
                                   labels=["topic", "partition"]),
        "segments": GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of the log",
                                      labels=["topic", "partition"]),
    }
    for p in partitions:
        log_ = p.log
        labels = [p.topic, str(p.partition)]
        families["size"].add_metric(labels, log_.size)
        families["end"].add_metric(labels, log_.log_end_offset)
        families["start"].add_metric(labels, log_.log_start_offset)
        families["segments"].add_metric(labels, log_.num_segments)
    yield from families.values()


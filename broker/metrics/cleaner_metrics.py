"""The log cleaner's gauges under the JMX exporter's names for Kafka's MBeans.

``kafka.log:type=LogCleaner,name=...`` becomes ``kafka_log_logcleaner_<name>`` (max-buffer-utilization-percent,
cleaner-recopy-percent, max-clean-time-secs, max-compaction-delay-secs, DeadThreadCount) and
``kafka.log:type=LogCleanerManager,name=...`` ``kafka_log_logcleanermanager_<name>`` (max-dirty-percent,
time-since-last-run-ms, and per log dir uncleanable-partitions-count and uncleanable-bytes, labelled
``logDirectory``). Nothing is reported while the cleaner is off (log.cleaner.enable=false), as Kafka
registers none of them then.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from ..log.segment import now_ms


class LogCleanerCollector:
    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        cleaner = getattr(getattr(self.server, "log_manager", None), "cleaner", None)
        if cleaner is None:
            return
        prefix = "kafka_log_logcleaner_"
        for name, help_text, value in (
                ("max_buffer_utilization_percent", "Fullest offset map of the last cleanings, percent",
                 cleaner.max_buffer_utilization_percent),
                ("cleaner_recopy_percent", "Bytes written over bytes read by the last cleanings, percent",
                 cleaner.cleaner_recopy_percent),
                ("max_clean_time_secs", "Longest of the last cleanings, seconds", cleaner.max_clean_time_secs),
                ("max_compaction_delay_secs", "How far past max.compaction.lag.ms the last cleanings started",
                 cleaner.max_compaction_delay_secs),
                ("deadthreadcount", "Cleaner threads that died", cleaner.dead_thread_count)):
            yield GaugeMetricFamily(prefix + name, help_text, value=value)
        prefix = "kafka_log_logcleanermanager_"
        yield GaugeMetricFamily(prefix + "max_dirty_percent", "Dirty ratio of the dirtiest compacted log, percent",
                                value=cleaner.max_dirty_percent)
        yield GaugeMetricFamily(prefix + "time_since_last_run_ms", "Time since the cleaner last looked for work",
                                value=cleaner.time_since_last_run_ms)
        manager = cleaner.manager
        count = GaugeMetricFamily(prefix + "uncleanable_partitions_count", "Partitions whose cleaning failed",
                                  labels=["logDirectory"])
        size = GaugeMetricFamily(prefix + "uncleanable_bytes", "Cleanable bytes of the partitions whose cleaning "
                                 "failed", labels=["logDirectory"])
        now = now_ms()
        for directory in manager.log_dirs:
            count.add_metric([directory], len(manager.uncleanable_partitions(directory)))
            size.add_metric([directory], manager.uncleanable_bytes(directory, now))
        yield count
        yield size

"""The console's reading of a broker's Prometheus text: the few series the plots need, counters as rates."""

from __future__ import annotations

from odradek.console.metrics_sampler import BrokerSeries, parse_samples

EXPOSITION = """\
# HELP kafka_server_brokertopicmetrics_bytesin_total Bytes appended to leader logs by producers
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total 1000.0
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 900.0
kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Produce"} 12.5
kafka_network_requestmetrics_totaltimems{quantile="0.5",request="Produce"} 2.0
kafka_network_requestmetrics_totaltimems{quantile="0.99",request="FetchConsumer"} 501.0
kafka_server_replicamanager_underreplicatedpartitions 3.0
kafka_log_log_size{partition="0",topic="orders"} 123.0
"""


def test_only_the_plotted_series_are_read_and_the_all_topics_value_is_taken():
    assert parse_samples(EXPOSITION) == {"bytes_in": 1000.0, "produce_p99_ms": 12.5, "fetch_p99_ms": 501.0,
                                         "under_replicated": 3.0}


def test_counters_become_rates_and_a_restart_gives_no_negative_rate():
    series = BrokerSeries("http://127.0.0.1:7071/metrics", 5.0)
    series.add(100.0, {"bytes_in": 1000.0, "under_replicated": 1.0})
    series.add(105.0, {"bytes_in": 6000.0, "under_replicated": 0.0})
    series.add(110.0, {"bytes_in": 50.0, "under_replicated": 0.0})  # the broker restarted: counters from 0
    assert [point for _, point in series.points] == [
        {"under_replicated": 1.0}, {"bytes_in": 1000.0, "under_replicated": 0.0},
        {"bytes_in": 0.0, "under_replicated": 0.0}]

"""Unit tests of broker/metrics pieces that need no broker: names, error counting, quantiles, topic counters,
log-level parsing. The endpoint itself is scraped on real brokers in tests/integration/test_metrics.py."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from odradek.broker.broker_loggers import TRACE
from odradek.broker.metrics.log_format import parse_levels, setup_logging
from odradek.broker.metrics.request_metrics import (FOLD_EVERY, RequestMetrics, RequestMetricsCollector, Timer,
                                                    count_errors, error_name, request_name)
from odradek.broker.metrics.topic_stats import BrokerTopicMetricsCollector, BrokerTopicStats
from odradek.protocol.messages import RESPONSES
from odradek.protocol.header import RequestHeader


def samples_of(collector) -> dict:
    registry = CollectorRegistry()
    registry.register(collector)
    out = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def test_request_and_error_names_are_kafkas():
    assert request_name(0) == "Produce"
    assert request_name(4) == "LeaderAndIsr"
    assert request_name(18) == "ApiVersions"
    assert error_name(0) == "NONE" and error_name(6) == "NOT_LEADER_OR_FOLLOWER"


def test_count_errors_walks_nested_partitions():
    produce = RESPONSES[0].cls
    topic = produce.TopicProduceResponse
    part = topic.PartitionProduceResponse
    body = produce(responses=[topic(name="t", partition_responses=[part(index=0, error_code=0),
                                                                    part(index=1, error_code=6),
                                                                    part(index=2, error_code=6)])])
    assert count_errors(body, {}) == {0: 1, 6: 2}


def test_timer_quantiles_over_the_last_samples():
    timer = Timer()
    for first in range(1, 2001, 100):  # as requests are folded in: a batch at a time
        timer.update_all([float(ms) for ms in range(first, first + 100)])
    q = dict(timer.quantiles())
    assert timer.count == 2000 and len(timer.samples) == 1028
    assert q["0.50"] < q["0.99"] <= 2000.0 and q["0.50"] > 973  # only the newest 1028 samples count


def test_fetch_counts_as_fetch_and_as_follower_or_consumer():
    metrics = RequestMetrics()
    for replica_id in (1, -1, -1):
        request = SimpleNamespace(header=RequestHeader(1, 12, 5, "c"), body=SimpleNamespace(replica_id=replica_id),
                                  receive_time=10.0, connection_id="conn", listener="PLAINTEXT", size=100,
                                  principal="User:ANONYMOUS", log_entry=None)
        metrics.record(request, 10.001, 10.002, 10.5, 10.501)
    samples = samples_of(RequestMetricsCollector(metrics, lambda: None))
    count = "kafka_network_requestmetrics_totaltimems_count"
    assert samples[(count, frozenset({("request", "Fetch")}))] == 3
    assert samples[(count, frozenset({("request", "FetchFollower")}))] == 1
    assert samples[(count, frozenset({("request", "FetchConsumer")}))] == 2
    remote = samples[("kafka_network_requestmetrics_remotetimems", frozenset({("request", "Fetch"),
                                                                              ("quantile", "0.50")}))]
    assert abs(remote - 498.0) < 0.01
    assert samples[("kafka_network_requestmetrics_requests_total",
                    frozenset({("request", "Fetch"), ("version", "12")}))] == 3


def test_times_held_between_folds_all_reach_the_timers():
    metrics = RequestMetrics()
    n = FOLD_EVERY * 2 + 5  # two folds while recording, the rest at scrape time
    for i in range(n):
        request = SimpleNamespace(header=RequestHeader(0, 9, i, "c"), body=None, receive_time=0.0, log_entry=None)
        metrics.record(request, 0.0, 0.0, 0.0, (i + 1) / 1000.0)  # TotalTimeMs i + 1
    samples = samples_of(RequestMetricsCollector(metrics, lambda: None))
    produce = frozenset({("request", "Produce")})
    assert samples[("kafka_network_requestmetrics_totaltimems_count", produce)] == n
    assert abs(samples[("kafka_network_requestmetrics_totaltimems_sum", produce)] - n * (n + 1) / 2) < 1e-6
    assert samples[("kafka_network_requestmetrics_responsesendtimems_sum", produce)] == samples[
        ("kafka_network_requestmetrics_totaltimems_sum", produce)]  # each value under its own timer
    assert samples[("kafka_network_requestmetrics_localtimems_count", produce)] == n


def test_topic_stats_keep_follower_traffic_apart():
    stats = BrokerTopicStats()
    stats.record_append("a", 3, 300)
    stats.record_failed_produce("a")
    stats.record_bytes_out("a", 50, from_follower=False)
    stats.record_bytes_out("a", 70, from_follower=True)
    samples = samples_of(BrokerTopicMetricsCollector(stats))
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", frozenset({("topic", "a")}))] == 3
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", frozenset())] == 3
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", frozenset({("topic", "a")}))] == 50
    assert samples[("kafka_server_brokertopicmetrics_replicationbytesout_total", frozenset())] == 70
    assert samples[("kafka_server_brokertopicmetrics_failedproducerequests_total", frozenset({("topic", "a")}))] == 1
    assert samples[("kafka_server_brokertopicmetrics_totalproducerequests_total", frozenset({("topic", "a")}))] == 2


def test_log_levels_take_log4j_spellings():
    assert parse_levels("kafka.request.logger=DEBUG, a.b=warn,c=TRACE,bad,d=NOPE") == {
        "kafka.request.logger": logging.DEBUG, "a.b": logging.WARNING, "c": TRACE}
    assert TRACE < logging.DEBUG  # a TRACE logger logs DEBUG lines too


def test_unknown_levels_from_the_environment_are_warned_about_by_name():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.level, list(root.handlers), logging.getLogger("odradek.test.env").level)
    try:
        setup_logging({"ODRADEK_LOG_LEVEL": "LOUD", "KAFKA_LOG4J_LOGGERS": "odradek.test.env=TRACE,x.y=NOPE,bare"},
                      stream)
        assert logging.getLogger("odradek.test.env").level == TRACE and root.level == logging.INFO
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        logging.getLogger("odradek.test.env").setLevel(saved[2])
    text = stream.getvalue()
    assert "KAFKA_LOG4J_LOGGERS: ignoring 'x.y=NOPE'" in text and "KAFKA_LOG4J_LOGGERS: ignoring 'bare'" in text
    assert "Unknown root log level 'LOUD'" in text and "odradek.test.env" not in text

"""odradek-producer-perf-test and odradek-consumer-perf-test run from the shell against a real broker: Kafka's
output lines (regex-checked, figures not judged) and the records really written and read (counted)."""

from __future__ import annotations

import re
import uuid

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from odradek.clients.admin.client import Admin, NewTopic
from tests.integration.test_console_tools import cluster, tool  # noqa: F401  (the module's cluster fixture)

pytestmark = pytest.mark.timeout(300)

NUMBER = r"\d+(?:\.\d+)?"
WINDOW_LINE = re.compile(rf"^(\d+) records sent, ({NUMBER}) records/sec \(({NUMBER}) MB/sec\), ({NUMBER}) ms avg "
                         rf"latency, ({NUMBER}) ms max latency\.$")
TOTAL_LINE = re.compile(rf"^(\d+) records sent, (\d+\.\d{{6}}) records/sec \((\d+\.\d\d) MB/sec\), (\d+\.\d\d) ms avg "
                        rf"latency, (\d+\.\d\d) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, "
                        rf"(\d+) ms 99\.9th\.$")
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
RESULT_LINE = re.compile(rf"^({DATE}), ({DATE}), (\d+\.\d{{4}}), (\d+\.\d{{4}}), (\d+), (\d+\.\d{{4}}), (\d+), (-?\d+), "
                         rf"(\d+\.\d{{4}}), (\d+\.\d{{4}})$")
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
          "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def new_topic(cluster, partitions: int = 3) -> str:
    name = f"perf-{uuid.uuid4().hex[:10]}"
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    return name


def records_in(cluster, topic: str, partitions: int = 3) -> int:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        return sum(consumer.end_offsets(tps).values())
    finally:
        consumer.close()


def test_producer_perf_unthrottled_writes_every_record(cluster):
    topic = new_topic(cluster)
    done = tool("producer-perf-test", "--topic", topic, "--num-records", "20000", "--record-size", "100",
                "--throughput", "-1", "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}",
                "acks=1", "linger.ms=5", "--print-metrics")
    lines = done.stdout.splitlines()
    totals = [TOTAL_LINE.match(line) for line in lines if TOTAL_LINE.match(line)]
    assert len(totals) == 1, done.stdout
    total = totals[0]
    assert int(total.group(1)) == 20000
    p50, p95, p99, p999 = (int(total.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(total.group(5))
    assert all(WINDOW_LINE.match(line) or TOTAL_LINE.match(line) or "producer-metrics" in line or
               line.startswith("Metric Name") or not line for line in lines), done.stdout
    assert "producer-metrics:record-send-total:{client-id=producer-1}" in done.stdout
    assert records_in(cluster, topic) == 20000


def test_producer_perf_throttled_prints_windows_and_reads_a_payload_file(cluster, tmp_path):
    topic = new_topic(cluster, partitions=1)
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha|beta|gamma")
    # 6,000 records at 1,000/s take six seconds at least: one 5 s window line comes before the total
    done = tool("producer-perf-test", "--topic", topic, "--num-records", "6000", "--payload-file", str(payloads),
                "--payload-delimiter", "|", "--throughput", "1000",
                "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}")
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 3"]
    windows = [WINDOW_LINE.match(line) for line in lines if WINDOW_LINE.match(line)]
    assert windows and TOTAL_LINE.match(lines[-1]), done.stdout
    assert sum(int(w.group(1)) for w in windows) <= 6000 and int(TOTAL_LINE.match(lines[-1]).group(1)) == 6000
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        values = {record.value for _, record in zip(range(6000), consumer)}
    finally:
        consumer.close()
    assert values <= {b"alpha", b"beta", b"gamma"} and len(values) > 1
    assert records_in(cluster, topic, partitions=1) == 6000


def test_consumer_perf_reads_what_was_produced(cluster):
    topic = new_topic(cluster)
    boot = cluster.bootstrap_servers
    tool("producer-perf-test", "--topic", topic, "--num-records", "10000", "--record-size", "100",
         "--throughput", "-1", "--producer-props", f"bootstrap.servers={boot}")

    done = tool("consumer-perf-test", "--bootstrap-server", boot, "--topic", topic, "--messages", "10000")
    lines = done.stdout.splitlines()
    assert lines[0] == HEADER and len(lines) == 2, done.stdout
    result = RESULT_LINE.match(lines[1])
    assert result, lines[1]
    assert int(result.group(5)) == 10000
    assert float(result.group(3)) == round(10000 * 100 / (1024 * 1024), 4)

    # more than there is: the timeout ends it with Kafka's warning; hidden header; the deprecated --broker-list
    done = tool("consumer-perf-test", "--broker-list", boot, "--topic", topic, "--messages", "10500",
                "--timeout", "2000", "--hide-header", "--group", f"perf-{uuid.uuid4().hex[:6]}")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("WARNING: Exiting before consuming the expected number of messages: timeout "
                               "(2000 ms) exceeded.")
    assert int(RESULT_LINE.match(lines[1]).group(5)) == 10000 and len(lines) == 2


def test_consumer_perf_detailed_stats(cluster):
    topic = new_topic(cluster, partitions=1)
    boot = cluster.bootstrap_servers
    tool("producer-perf-test", "--topic", topic, "--num-records", "3000", "--record-size", "10",
         "--throughput", "1000", "--producer-props", f"bootstrap.servers={boot}")
    done = tool("consumer-perf-test", "--bootstrap-server", boot, "--topic", topic, "--messages", "3000",
                "--show-detailed-stats", "--reporting-interval", "1", "--date-format", "HH:mm:ss")
    lines = done.stdout.splitlines()
    assert lines[0] == ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    detail = re.compile(r"^\d\d:\d\d:\d\d, 0, \d+\.\d{4}, \d+\.\d{4}, (\d+), \d+\.\d{4}, \d+, -?\d+, "
                        r"\d+\.\d{4}, \d+\.\d{4}$")
    counts = [int(detail.match(line).group(1)) for line in lines[1:]]  # every line matches
    assert counts == sorted(counts) and all(0 < c <= 3000 for c in counts)


@pytest.mark.parametrize("name, args, message", [
    ("producer-perf-test", ["--topic", "t", "--record-size", "1", "--throughput", "-1",
                            "--producer-props", "bootstrap.servers=h:1"], "argument --num-records is required"),
    ("producer-perf-test", ["--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1"],
     "Either --producer-props or --producer.config must be specified."),
    ("consumer-perf-test", ["--bootstrap-server", "h:1", "--topic", "t"], 'Missing required argument "[messages]"'),
    ("consumer-perf-test", ["--bootstrap-server", "h:1", "--topic", "t", "--messages", "x"],
     "argument --messages: invalid int value: 'x'"),
])
def test_bad_flags_give_one_line_and_exit_1(name, args, message):
    done = tool(name, *args, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == message

"""odradek-console-producer and odradek-console-consumer run from the shell against a real broker, with
kafka-python on the other side of some of the round trips."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from odradek.clients.admin.client import Admin, NewTopic
from tests.conftest import new_cluster
from tests.integration.helpers import console_tool as tool

pytestmark = pytest.mark.timeout(300)

PROCESSED = re.compile(r"^Processed a total of (\d+) messages$", re.M)


def processed(done: subprocess.CompletedProcess) -> int:
    match = PROCESSED.search(done.stderr)
    assert match, done.stderr
    return int(match.group(1))


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    """One broker whose __consumer_offsets fits it (replication factor 1, few partitions), so groups work."""
    cluster = new_cluster(tmp_path_factory.mktemp("console-tools"), zookeeper, 1, {
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0"})
    cluster.start()
    yield cluster
    cluster.stop(timeout=15.0)


@pytest.fixture
def boot(cluster):
    return ["--bootstrap-server", cluster.bootstrap_servers]


def new_topic(cluster, partitions: int = 1) -> str:
    name = f"console-{uuid.uuid4().hex[:10]}"
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    return name


def test_round_trip_with_keys_and_every_print_property(cluster, boot):
    topic = new_topic(cluster)
    lines = "".join(f"key-{i}:value {i}:with colon\n" for i in range(5))
    done = tool("console-producer", *boot, "--topic", topic, "--property", "parse.key=true",
                "--property", "key.separator=:", stdin=lines)
    assert done.stdout == ""  # no ">" prompt when stdin is not a terminal

    done = tool("console-consumer", *boot, "--topic", topic, "--from-beginning", "--max-messages", "5",
                "--property", "print.key=true", "--property", "print.offset=true",
                "--property", "print.partition=true", "--property", "print.timestamp=true",
                "--property", "print.headers=true", "--property", "key.separator= | ")
    out = done.stdout.splitlines()
    assert len(out) == 5, done.stdout
    for i, line in enumerate(out):
        match = re.fullmatch(r"CreateTime:(\d+) \| Partition:0 \| Offset:(\d+) \| NO_HEADERS \| (.*) \| (.*)", line)
        assert match, line
        assert (int(match.group(2)), match.group(3), match.group(4)) == (i, f"key-{i}", f"value {i}:with colon")
    assert processed(done) == 5

    # value only (the default), a custom line separator
    done = tool("console-consumer", *boot, "--topic", topic, "--from-beginning", "--max-messages", "2",
                "--property", "line.separator=;")
    assert done.stdout == "value 0:with colon;value 1:with colon;"


def test_partition_and_offset_select_the_records(cluster, boot):
    topic = new_topic(cluster, partitions=3)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        for partition in range(3):
            for i in range(4):
                producer.send(topic, f"p{partition}-{i}".encode(), partition=partition)
        producer.flush()

    done = tool("console-consumer", *boot, "--topic", topic, "--partition", "1", "--offset", "2",
                "--max-messages", "2", "--property", "print.offset=true")
    assert done.stdout.splitlines() == ["Offset:2\tp1-2", "Offset:3\tp1-3"]

    done = tool("console-consumer", *boot, "--topic", topic, "--partition", "2", "--offset", "earliest",
                "--max-messages", "4")
    assert done.stdout.splitlines() == [f"p2-{i}" for i in range(4)]

    # --partition alone starts at the end: nothing comes, the timeout ends the run and is logged as Kafka's
    done = tool("console-consumer", *boot, "--topic", topic, "--partition", "0", "--timeout-ms", "1500")
    assert done.stdout == "" and processed(done) == 0
    assert "org.apache.kafka.common.errors.TimeoutException" in done.stderr

    # --from-beginning over all partitions: every record once
    done = tool("console-consumer", *boot, "--topic", topic, "--from-beginning", "--max-messages", "12")
    assert sorted(done.stdout.splitlines()) == sorted(f"p{p}-{i}" for p in range(3) for i in range(4))


def test_kafka_python_records_with_headers_read_by_our_console_consumer(cluster, boot):
    topic = new_topic(cluster)
    with KafkaProducer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        producer.send(topic, b"v1", key=b"k1", headers=[("trace", b"abc"), ("empty", b"")])
        producer.send(topic, None, key=b"k2")
        producer.flush()
    done = tool("console-consumer", *boot, "--topic", topic, "--from-beginning", "--max-messages", "2",
                "--property", "print.headers=true", "--property", "print.key=true",
                "--property", "headers.separator=;")
    assert done.stdout.splitlines() == ["trace:abc;empty:\tk1\tv1", "NO_HEADERS\tk2\tnull"]


def test_our_console_producer_read_by_kafka_python(cluster, boot):
    topic = new_topic(cluster)
    tool("console-producer", *boot, "--topic", topic, "--sync", "--compression-codec", "gzip",
         "--request-required-acks", "all", "--property", "parse.key=true",
         stdin="alpha\tone\nbeta\ttwo\ngamma\t\n")
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        records = [(r.key, r.value) for _, r in zip(range(3), consumer)]
    finally:
        consumer.close()
    assert records == [(b"alpha", b"one"), (b"beta", b"two"), (b"gamma", b"")]


def test_producer_line_without_key_stops_unless_ignore_error(cluster, boot):
    topic = new_topic(cluster)
    done = tool("console-producer", *boot, "--topic", topic, "--property", "parse.key=true",
                stdin="a\tb\nno separator\nc\td\n", check=False)
    assert done.returncode == 1 and "No key found on line 2: no separator" in done.stderr
    tool("console-producer", *boot, "--topic", topic, "--property", "parse.key=true",
         "--property", "ignore.error=true", stdin="no separator\n")
    done = tool("console-consumer", *boot, "--topic", topic, "--from-beginning", "--max-messages", "2",
                "--property", "print.key=true")
    # the line before the bad one was sent (the producer flushes on the way out), then the ignore.error one
    assert done.stdout.splitlines() == ["a\tb", "null\tno separator"]


def test_whitelist_reads_every_matching_topic(cluster, boot):
    stem = f"wl-{uuid.uuid4().hex[:8]}"
    for suffix in ("a", "b", "other"):
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(f"{stem}-{suffix}", 1, 1)])
        tool("console-producer", *boot, "--topic", f"{stem}-{suffix}", stdin=f"from {suffix}\n")
    done = tool("console-consumer", *boot, "--whitelist", f"{stem}-(a|b)", "--from-beginning",
                "--max-messages", "2", "--timeout-ms", "20000")
    assert sorted(done.stdout.splitlines()) == ["from a", "from b"]


def test_group_commits_let_the_next_run_continue(cluster, boot):
    topic = new_topic(cluster)
    tool("console-producer", *boot, "--topic", topic, stdin="".join(f"m{i}\n" for i in range(6)))
    group = f"console-group-{uuid.uuid4().hex[:6]}"
    first = tool("console-consumer", *boot, "--topic", topic, "--group", group, "--from-beginning",
                 "--max-messages", "3", "--timeout-ms", "30000")
    assert first.stdout.splitlines() == ["m0", "m1", "m2"]
    # the group's committed offset (auto-commit on close) wins over --from-beginning, as in Kafka
    second = tool("console-consumer", *boot, "--topic", topic, "--group", group, "--from-beginning",
                  "--max-messages", "3", "--timeout-ms", "30000")
    assert second.stdout.splitlines() == ["m3", "m4", "m5"]


@pytest.mark.parametrize("name, args, message", [
    ("console-consumer", ["--topic", "t", "--offset", "5"], "The partition is required when offset is specified."),
    ("console-consumer", ["--topic", "t", "--nonsense"], "nonsense is not a recognized option"),
    ("console-producer", [], 'Missing required argument "[topic]"'),
    ("console-producer", ["--topic", "t", "--compression-codec", "brotli"], "Invalid --compression-codec"),
])
def test_bad_flags_give_one_line_and_exit_1(boot, name, args, message):
    done = tool(name, *boot, *args, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0] and message in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_console_consumer_stops_cleanly_on_ctrl_c_and_sigterm(cluster, boot, sig):
    topic = f"stop-{uuid.uuid4().hex[:8]}"
    tool("console-producer", *boot, "--topic", topic, stdin="one\ntwo\n")
    consumer = subprocess.Popen(_console_consumer_command(*boot, "--topic", topic,
                                                          "--from-beginning"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while len(lines) < 2:  # polling and heartbeating when the signal comes
        lines.append(consumer.stdout.readline().strip())
    consumer.send_signal(sig)
    out, err = consumer.communicate(timeout=60)
    assert lines == ["one", "two"] and consumer.returncode == 0
    assert err.strip() == "Processed a total of 2 messages", err


def test_a_missing_topic_is_waited_for_and_read_once_it_exists(cluster, boot):
    topic = f"later-{uuid.uuid4().hex[:8]}"
    missing = tool("console-consumer", *boot, "--topic", f"never-{topic}", "--timeout-ms", "1500")
    lines = missing.stderr.splitlines()
    assert lines[-1] == "Processed a total of 0 messages" and "TimeoutException" in lines[-2]
    assert all(re.match(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ", line) for line in lines if line.startswith("["))
    assert {line[21:24] for line in lines if line.startswith("[")} != {"000"}  # real milliseconds
    consumer = subprocess.Popen(_console_consumer_command(*boot, "--topic", topic,
                                                          "--from-beginning", "--max-messages", "1",
                                                          "--timeout-ms", "60000"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in consumer.stderr.readline()  # Kafka's consumer warns and waits
    tool("console-producer", *boot, "--topic", topic, stdin="late\n")
    out, err = consumer.communicate(timeout=90)
    assert out == "late\n" and err.endswith("Processed a total of 1 messages\n"), err


def _console_consumer_command(*args: str) -> list[str]:
    script = shutil.which("odradek-console-consumer")
    return ([script] if script else [sys.executable, "-m", "odradek.tools.console_consumer"]) + list(args)

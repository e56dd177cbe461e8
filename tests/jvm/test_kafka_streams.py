"""Kafka Streams (the ``streams`` class path set) against 3 Odradek brokers: an exactly-once (v2) word count
with a repartition topic and a changelog, a broker SIGKILLed while it runs. Each count update reaches the
output (no record cache), so the committed output holds word w's counts 1..n exactly once each: a lost update
or a replay after the failure would show."""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict

import pytest

from odradek.clients import Admin
from odradek.clients.admin.client import ConfigResource, ConfigResourceType
from tests.integration.helpers import wait_until
from tests.spark.helpers import create_topic, produce

from . import jvm

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

WORDS = [f"w{i}" for i in range(20)]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from tests.conftest import module_cluster

    # A cluster of its own: the test kills a broker.
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("kafka-streams"), 3)


def lines(start: int, count: int) -> list[tuple]:
    """(partition, key, line) rows for the input topic: three words a line, from a fixed rotation."""
    return [(i % 3, f"line-{i}".encode(), " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3)).encode())
            for i in range(start, start + count)]


def expected_counts(rows: list[tuple]) -> Counter:
    return Counter(word for _, _, line in rows for word in line.decode().split())


class CommittedOutput:
    """The output topic as a read_committed consumer sees it: each word's count updates in order."""

    def __init__(self, servers: str, topic: str):
        confluent_kafka = pytest.importorskip("confluent_kafka")
        self.consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": f"{topic}-check",
                                                  "isolation.level": "read_committed",
                                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.updates: dict[str, list[int]] = defaultdict(list)

    def poll(self) -> dict[str, list[int]]:
        for message in self.consumer.consume(500, timeout=0.5):
            if message.error() is None:
                self.updates[message.key().decode()].append(int.from_bytes(message.value(), "big", signed=True))
        return self.updates

    def reached(self, counts: Counter) -> bool:
        updates = self.poll()
        return all(updates[word] and updates[word][-1] >= n for word, n in counts.items())


def test_exactly_once_word_count_through_a_broker_kill(cluster, tmp_path):
    servers, app = cluster.bootstrap_servers, "odradek-wordcount"
    source, sink = "streams-lines", "streams-counts"
    for topic in (source, sink):
        create_topic(servers, topic, 3, replication=3)
    first, second = lines(0, 600), lines(600, 600)
    produce(servers, source, first, acks="all")

    log = tmp_path / "streams.log"
    command = [jvm.java(), "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", jvm.classpath(jvm.STREAMS_SET),
               "odradek.jvmtests.StreamsWordCount", servers, app, source, sink, str(tmp_path / "state")]
    output = CommittedOutput(servers, sink)
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr)
    killed = None
    try:
        wait_until(lambda: output.reached(expected_counts(first)), 120, "the first half's counts")
        with cluster.client() as client:
            killed = client.metadata(topics=[source]).leader_for(source, 0)
        cluster.kill_broker(killed)
        produce(servers, source, second, acks="all")
        wait_until(lambda: output.reached(expected_counts(first + second)) or process.poll() is not None, 180,
                   "the complete counts")
        assert process.poll() is None, f"Kafka Streams exited:\n{log.read_text()[-3000:]}"
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        output.consumer.close()
        if killed is not None and not cluster.broker_alive(killed):
            cluster.start_broker(killed)

    # WARN lines come from the dead broker (connections refused, metadata naming it); no ERROR is expected.
    errors = [line for line in jvm.log_lines(log.read_text()) if line.startswith("ERROR ")]
    assert not errors, "Kafka Streams logged:\n" + "\n".join(errors)
    total = expected_counts(first + second)
    for word, n in total.items():
        assert output.updates[word] == list(range(1, n + 1)), f"{word}: {output.updates[word]}"
    assert set(output.updates) == set(total)

    with Admin(servers) as admin:
        topics = set(admin.list_topics())
        repartition, changelog = f"{app}-words-repartition", f"{app}-counts-changelog"
        assert {repartition, changelog} <= topics
        resources = [ConfigResource(ConfigResourceType.TOPIC, name, ["cleanup.policy"]) for name in
                     (repartition, changelog)]
        configs = admin.describe_configs(resources)
    assert configs[resources[0]]["cleanup.policy"].value == "delete"
    assert configs[resources[1]]["cleanup.policy"].value == "compact"

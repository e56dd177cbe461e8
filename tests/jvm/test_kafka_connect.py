"""Kafka Connect in standalone mode (org.apache.kafka.connect.cli.ConnectStandalone, the ``connect`` class
path set) against 3 Odradek brokers: FileStreamSource reads a file into a topic, FileStreamSink writes the
topic to another file, and the output equals the input, the topic's leader SIGKILLed midway.

Standalone keeps source offsets in a local file (offset.storage.file.filename), not in a connect-offsets
topic (that is distributed mode's, with connect-configs and connect-status); the sink's progress is its
consumer group's committed offsets (connect-<connector name>), which the test checks too.
"""

from __future__ import annotations

import subprocess

import pytest

from odradek.clients import Admin
from tests.integration.helpers import wait_until
from tests.spark.helpers import create_topic

from . import jvm

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]



@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from tests.conftest import module_cluster

    # A cluster of its own: the test kills a broker.
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("kafka-connect"), 3)


def properties(path, **entries) -> str:
    path.write_text("".join(f"{key.replace('_', '.')}={value}\n" for key, value in entries.items()))
    return str(path)


def test_file_source_to_topic_to_file_sink(cluster, tmp_path):
    servers, topic = cluster.bootstrap_servers, "connect-lines"
    create_topic(servers, topic, 1, replication=3)  # one partition: the sink writes the lines in order
    source_file, sink_file, offsets = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "offsets"
    first = [f"line {i} of the input" for i in range(500)]
    source_file.write_text("".join(line + "\n" for line in first))

    worker = properties(tmp_path / "worker.properties", bootstrap_servers=servers,
                        key_converter="org.apache.kafka.connect.storage.StringConverter",
                        value_converter="org.apache.kafka.connect.storage.StringConverter",
                        offset_storage_file_filename=offsets, offset_flush_interval_ms=500,
                        listeners="http://127.0.0.1:0")
    source = properties(tmp_path / "source.properties", name="file-source", tasks_max=1, file=source_file,
                        topic=topic, **{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector"})
    sink = properties(tmp_path / "sink.properties", name="file-sink", tasks_max=1, file=sink_file, topics=topic,
                      **{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector"})
    log = tmp_path / "connect.log"
    command = [jvm.java(), "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", jvm.classpath(jvm.CONNECT_SET),
               "org.apache.kafka.connect.cli.ConnectStandalone", worker, source, sink]

    def output() -> list[str]:
        return sink_file.read_text().splitlines() if sink_file.exists() else []

    killed = None
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, stdout=stderr, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: len(output()) >= len(first) or process.poll() is not None, 120, "the first lines")
        assert process.poll() is None, f"Connect exited:\n{log.read_text()[-3000:]}"
        # Lines appended while it runs, and while the topic's leader is down, are picked up from where the
        # source got to; its producer (idempotent) and the sink's consumer follow the new leader.
        with cluster.client() as client:
            killed = client.metadata(topics=[topic]).leader_for(topic, 0)
        cluster.kill_broker(killed)
        second = [f"appended line {i}" for i in range(200)]
        with source_file.open("a") as appending:
            appending.write("".join(line + "\n" for line in second))
        wait_until(lambda: len(output()) >= len(first + second) or process.poll() is not None, 120, "all lines")
        assert output() == first + second
        # The source's offset (its position in the file) reaches the offsets file.
        wait_until(lambda: offsets.exists() and offsets.stat().st_size > 0, 60, "the source's stored offset")
        # The sink's consumer commits what it wrote (every offset.flush.interval.ms).
        with Admin(servers) as admin:
            wait_until(lambda: sum(m.offset for m in admin.list_consumer_group_offsets("connect-file-sink").values())
                       == len(first + second), 60, "the sink's committed offsets")
    finally:
        if killed is not None and not cluster.broker_alive(killed):
            cluster.start_broker(killed)
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


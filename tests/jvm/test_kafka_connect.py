"""Kafka Connect (the ``connect`` class path set) against 3 Odradek brokers: FileStreamSource reads a file
into a topic, FileStreamSink writes the topic to another file, and the output equals the input.

Standalone (org.apache.kafka.connect.cli.ConnectStandalone), the topic's leader SIGKILLed midway: it keeps
source offsets in a local file (offset.storage.file.filename); the sink's progress is its consumer group's
committed offsets (connect-<connector name>), which the test checks too.

Distributed (ConnectDistributed): two workers in one group (Connect's own group protocol, "sessioned", over
our group coordinator) create the internal topics connect-configs, connect-offsets and connect-status
(compacted, with the partition counts and replication factor they ask for), take the connectors configured
through the REST API, and when one worker stops the other takes over its work.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from odradek.clients import Admin
from odradek.clients.admin.client import ConfigResource, ConfigResourceType
from tests.integration.helpers import console_tool, read_all, wait_until
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



# Connect's internal topics and what a worker asks for them (DistributedConfig's defaults; replication factor 3).
INTERNAL_TOPICS = {"connect-configs": 1, "connect-offsets": 25, "connect-status": 5}


# WARN lines a Connect worker logs against Apache Kafka too.
CONNECT_LOG_LINES = (
    (re.compile(r"All plugins have ServiceLoader manifests, consider reconfiguring plugin\.discovery"),
     "advice on plugin scanning, nothing on the wire"),
    (re.compile(r"Catching up to assignment's config offset"), "after each rebalance, reading connect-configs "
     "up to the leader's offset"),
    (re.compile(r"Close timed out with \d+ pending requests to coordinator"), "on the way out, the worker does "
     "not wait for the LeaveGroup answer"),
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Worker:
    """One ConnectDistributed JVM of group kt-connect, its REST API on a port of its own."""

    def __init__(self, servers: str, directory: Path, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / f"{name}.log"
        worker = properties(directory / f"{name}.properties", bootstrap_servers=servers, group_id="kt-connect",
                            key_converter="org.apache.kafka.connect.storage.StringConverter",
                            value_converter="org.apache.kafka.connect.storage.StringConverter",
                            config_storage_topic="connect-configs", offset_storage_topic="connect-offsets",
                            status_storage_topic="connect-status", offset_flush_interval_ms=500,
                            listeners=self.url,
                            # A departed worker's connectors wait this long for it to come back (default 5 min).
                            scheduled_rebalance_max_delay_ms=2000)
        command = [jvm.java(), "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", jvm.classpath(jvm.CONNECT_SET),
                   "org.apache.kafka.connect.cli.ConnectDistributed", worker]
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def rest(self, path: str, body: dict | None = None):
        request = urllib.request.Request(self.url + path, method="GET" if body is None else "PUT",
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)

    def configure(self, connector: str, config: dict) -> None:
        """PUT /connectors/<name>/config, again while the worker answers 409 (a rebalance under way)."""
        def put() -> bool:
            try:
                self.rest(f"/connectors/{connector}/config", config)
                return True
            except urllib.error.HTTPError as refused:
                if refused.code != 409:
                    raise
                return False
        wait_until(put, 60, f"{self.url} to take {connector}'s config")

    def ready(self) -> bool:
        assert self.process.poll() is None, f"the Connect worker exited:\n{self.log.read_text()[-3000:]}"
        try:
            self.rest("/connectors")
            return True
        except OSError:  # URLError, refused, timed out
            return False  # REST not up yet, or the herder still joining (it answers 500 meanwhile)

    def stop(self) -> None:
        self.process.terminate()  # as `kill`: the worker leaves the group
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def workers_running(worker: Worker, expected: set[str]) -> bool:
    """Every connector and task RUNNING, on the workers ``expected`` (their URLs' host:port)."""
    try:
        statuses = worker.rest("/connectors?expand=status")
    except OSError:  # URLError (HTTPError too), refused, timed out
        return False
    states = [entry["status"]["connector"] for entry in statuses.values()]
    states += [task for entry in statuses.values() for task in entry["status"]["tasks"]]
    return len(statuses) == 2 and all(state["state"] == "RUNNING" for state in states) and \
        {state["worker_id"] for state in states} == expected


def test_distributed_workers_share_the_connectors_and_take_over(cluster, tmp_path):
    servers, topic = cluster.bootstrap_servers, "connect-distributed-lines"
    create_topic(servers, topic, 1, replication=3)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    first = [f"line {i} for the group" for i in range(300)]
    source_file.write_text("".join(line + "\n" for line in first))
    workers = [Worker(servers, tmp_path, "worker-1"), Worker(servers, tmp_path, "worker-2")]

    def output() -> list[str]:
        return sink_file.read_text().splitlines() if sink_file.exists() else []

    try:
        for worker in workers:
            wait_until(worker.ready, 120, f"{worker.url}'s REST API")
        # The internal topics, as Kafka's brokers would have them: the partitions and replication factor
        # asked for, and cleanup.policy=compact as their one topic config.
        with Admin(servers) as admin:
            described = {t.topic: t for t in admin.describe_topics(list(INTERNAL_TOPICS))}
            assert {name: len(t.partitions) for name, t in described.items()} == INTERNAL_TOPICS
            assert all(len(p.replicas) == 3 for t in described.values() for p in t.partitions)
            configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in INTERNAL_TOPICS])
            assert all({e.name: e.value for e in entries.values() if e.source == 1} == {"cleanup.policy": "compact"}
                       for entries in configs.values()), configs

        workers[0].configure("file-source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
            "file": str(source_file), "topic": topic})
        workers[1].configure("file-sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
            "file": str(sink_file), "topics": topic})
        wait_until(lambda: len(output()) >= len(first), 120, "the first lines through the pipeline")
        both = {f"127.0.0.1:{w.port}" for w in workers}
        wait_until(lambda: workers_running(workers[0], both), 60, "the work spread over both workers")

        def settled_group():
            with Admin(servers) as admin:
                [group] = admin.describe_consumer_groups(["kt-connect"])
            return group if group.state not in ("PreparingRebalance", "CompletingRebalance") else None

        # Connect's sessioned protocol can follow a rebalance with another one (CI caught it PreparingRebalance
        # right after both workers ran tasks): wait until no rebalance is under way, then check what it is.
        group = wait_until(settled_group, 60, "the Connect group between rebalances")
        assert (group.protocol_type, group.partition_assignor, group.state, len(group.members)) == \
            ("connect", "sessioned", "Stable", 2)
        # Kafka's ConsumerGroupCommand and ours refuse to describe it alike: it is no consumer group.
        refused = "GroupId kt-connect is not a consumer group (connect)."
        theirs = jvm.run_tool("kafka.admin.ConsumerGroupCommand", "--bootstrap-server", servers, "--describe",
                              "--group", "kt-connect", check=False)
        ours = console_tool("consumer-groups", "--bootstrap-server", servers, "--describe", "--group", "kt-connect",
                            check=False)
        assert refused in theirs.stdout + theirs.stderr and refused in ours.stdout and ours.returncode == 1

        # One worker stops: the group rebalances and the other runs both connectors; lines appended meanwhile
        # arrive once each (the stopped worker committed its source offsets and sink progress on the way out).
        workers[1].stop()
        second = [f"appended line {i}" for i in range(200)]
        with source_file.open("a") as appending:
            appending.write("".join(line + "\n" for line in second))
        wait_until(lambda: workers_running(workers[0], {f"127.0.0.1:{workers[0].port}"}), 120,
                   "the remaining worker running everything")
        wait_until(lambda: len(output()) >= len(first + second), 120, "every line")
        assert output() == first + second
        # The source's position in the file, in connect-offsets (its key names the connector and the file).
        def stored_position() -> int | None:
            records = [r for rs in asyncio.run(read_all(servers, "connect-offsets", 25)).values() for r in rs]
            mine = [json.loads(bytes(r.value)) for r in records if r.key and b'"file-source"' in bytes(r.key)]
            return mine[-1]["position"] if mine else None
        wait_until(lambda: stored_position() == source_file.stat().st_size, 60, "the source's stored offset")
    finally:
        for worker in workers:
            worker.stop()
    for worker in workers:
        logged = jvm.troubling(jvm.log_lines(worker.log.read_text()), CONNECT_LOG_LINES)
        assert not logged, f"{worker.url} logged:\n" + "\n".join(logged)

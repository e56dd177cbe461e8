"""odradek-topics run from the shell against real brokers: Kafka's kafka-topics.sh flags, output and exit codes."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from odradek.clients.admin.client import Admin
from tests.integration.helpers import console_tool

pytestmark = pytest.mark.timeout(240)

TOPIC_LINE = re.compile(r"^Topic: (\S+)\tTopicId: ([A-Za-z0-9_-]{22})\tPartitionCount: (\d+)\t"
                        r"ReplicationFactor: (\d+)\tConfigs: (.*)$")
PARTITION_LINE = re.compile(r"^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\d+|none)\tReplicas: ([\d,]+)\tIsr: ([\d,]*)$")


def topics_tool(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return console_tool("topics", *args, check=check)


def wait_for_output(predicate, *args: str, timeout: float = 30.0) -> str:
    """Metadata reaches the other brokers a moment after the controller answers: poll the tool."""
    deadline = time.monotonic() + timeout
    while True:
        out = topics_tool(*args).stdout
        if predicate(out) or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


@pytest.fixture(scope="module")
def single(single_broker_cluster):
    return ["--bootstrap-server", single_broker_cluster.bootstrap_servers]


@pytest.fixture(scope="module")
def three(three_broker_cluster):
    return ["--bootstrap-server", three_broker_cluster.bootstrap_servers]


def test_create_list_describe_delete_on_one_broker(single):
    done = topics_tool(*single, "--create", "--topic", "tool-events", "--partitions", "3",
                       "--replication-factor", "1")
    assert done.stdout == "Created topic tool-events.\n"
    assert "tool-events" in topics_tool(*single, "--list").stdout.splitlines()

    lines = topics_tool(*single, "--describe", "--topic", "tool-events").stdout.splitlines()
    topic = TOPIC_LINE.match(lines[0])
    assert topic, lines[0]
    assert topic.group(1, 3, 4) == ("tool-events", "3", "1")
    assert len(lines) == 4
    for index, line in enumerate(lines[1:]):
        part = PARTITION_LINE.match(line)
        assert part, repr(line)
        assert part.group(1, 2) == ("tool-events", str(index))
        assert part.group(3) == part.group(4) == part.group(5)  # one broker: leader, replicas and ISR agree

    assert topics_tool(*single, "--delete", "--topic", "tool-events").stdout == ""
    out = wait_for_output(lambda o: "tool-events" not in o.split(), *single, "--list")
    assert "tool-events" not in out.split()


def test_existing_and_missing_topics(single):
    topics_tool(*single, "--create", "--topic", "tool-twice")
    again = topics_tool(*single, "--create", "--topic", "tool-twice", check=False)
    assert again.returncode == 1
    assert again.stdout.startswith("Error while executing topic command : ")
    assert "tool-twice" in again.stdout and "[Error" not in again.stdout
    assert topics_tool(*single, "--create", "--topic", "tool-twice", "--if-not-exists").stdout == ""

    for action in ("--describe", "--delete"):
        missing = topics_tool(*single, action, "--topic", "tool-never", check=False)
        assert missing.returncode == 1
        assert missing.stdout == "Error while executing topic command : Topic 'tool-never' does not exist as expected\n"
        assert topics_tool(*single, action, "--topic", "tool-never", "--if-exists").stdout == ""

    too_wide = topics_tool(*single, "--create", "--topic", "tool-wide", "--replication-factor", "2", check=False)
    assert too_wide.returncode == 1 and too_wide.stdout.startswith("Error while executing topic command : ")


def test_topic_regex_configs_and_collision_warning(single):
    done = topics_tool(*single, "--create", "--topic", "tool.dotted", "--config", "cleanup.policy=compact")
    assert done.stdout.splitlines() == [
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. "
        "To avoid issues it is best to use either, but not both.",
        "Created topic tool.dotted."]
    topics_tool(*single, "--create", "--topic", "tool-regex-a")
    topics_tool(*single, "--create", "--topic", "tool-regex-b")
    assert topics_tool(*single, "--list", "--topic", "tool-regex-.*").stdout == "tool-regex-a\ntool-regex-b\n"
    assert topics_tool(*single, "--list", "--topic", "tool-regex-a,tool.dotted").stdout == "tool-regex-a\ntool.dotted\n"
    described = topics_tool(*single, "--describe", "--topic", "tool-regex-.*").stdout.splitlines()
    assert [TOPIC_LINE.match(line).group(1) for line in described if line.startswith("Topic:")] == [
        "tool-regex-a", "tool-regex-b"]


def test_describe_on_three_brokers_and_filters(three, three_broker_cluster):
    topics_tool(*three, "--create", "--topic", "tool-rf3", "--partitions", "3", "--replication-factor", "3")
    out = wait_for_output(lambda o: o.startswith("Topic: tool-rf3"), *three, "--describe", "--topic", "tool-rf3")
    lines = out.splitlines()
    assert TOPIC_LINE.match(lines[0]).group(3, 4) == ("3", "3")
    parts = [PARTITION_LINE.match(line) for line in lines[1:]]
    assert all(parts) and len(parts) == 3
    assert all(len(p.group(4).split(",")) == 3 and p.group(3) in p.group(4).split(",") for p in parts)
    # The topic id is the one the Admin client reads, printed as Kafka's Uuid.toString.
    with Admin(bootstrap_servers=three_broker_cluster.bootstrap_servers) as admin:
        [description] = admin.describe_topics(["tool-rf3"])
    assert TOPIC_LINE.match(lines[0]).group(2) == description.topic_id_string
    # Every replica is in sync and led: the filters print nothing (and never the topic line).
    assert topics_tool(*three, "--describe", "--topic", "tool-rf3", "--under-replicated-partitions").stdout == ""
    assert topics_tool(*three, "--describe", "--unavailable-partitions").stdout == ""


def test_replica_assignment(three):
    topics_tool(*three, "--create", "--topic", "tool-placed", "--replica-assignment", "0:1,1:2")
    out = wait_for_output(lambda o: "Partition: 1" in o, *three, "--describe", "--topic", "tool-placed")
    replicas = [PARTITION_LINE.match(line).group(4) for line in out.splitlines()[1:]]
    assert replicas == ["0,1", "1,2"]


@pytest.mark.parametrize("args, message", [
    ([], 'Command must include exactly one action: --list, --describe, --create, --alter or --delete'),
    (["--list", "--describe"], 'Command must include exactly one action: --list, --describe, --create, --alter or --delete'),
    (["--zookeeper", "localhost:2181", "--list"], "zookeeper is not a recognized option"),
    (["--list", "--bogus"], "bogus is not a recognized option"),
    (["--create"], 'Missing required argument "[topic]"'),
    (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
    (["--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "2"],
     'Option "[replication-factor]" can\'t be used with option "[alter]"'),
    (["--list", "--if-not-exists"], 'Option "[if-not-exists]" can\'t be used with option "[list]"'),
])
def test_bad_flags_give_one_line_and_exit_1(single, args, message):
    done = topics_tool(*single, *args, check=False)
    assert done.returncode == 1
    assert done.stderr == message + "\n"
    assert done.stdout == ""


def test_missing_bootstrap_server_and_help():
    done = topics_tool("--list", check=False)
    assert (done.returncode, done.stderr) == (1, 'Missing required argument "[bootstrap-server]"\n')
    helped = topics_tool("--help")
    assert "This tool helps to create, delete, describe, or change a topic." in helped.stdout
    assert "--bootstrap-server" in helped.stdout and "--under-replicated-partitions" in helped.stdout


def test_unreachable_cluster_is_an_error_line(tmp_path):
    # As Kafka's, the tool's admin client tries until default.api.timeout.ms (60 s unless the
    # --command-config says less).
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=1000\ndefault.api.timeout.ms=2000\n")
    done = topics_tool("--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", str(config), check=False)
    assert done.returncode == 1
    assert done.stdout.startswith("Error while executing topic command : listTopics timed out after "), done.stdout
    assert "(deadline of 2000 ms passed)" in done.stdout and "127.0.0.1:1" in done.stdout


def test_alter_partitions(three):
    topics_tool(*three, "--create", "--topic", "tool-alter", "--partitions", "1", "--replication-factor", "2")
    assert topics_tool(*three, "--alter", "--topic", "tool-alter", "--partitions", "3").stdout == ""
    out = wait_for_output(lambda o: "PartitionCount: 3" in o, *three, "--describe", "--topic", "tool-alter")
    lines = out.splitlines()
    assert TOPIC_LINE.match(lines[0]).group(3, 4) == ("3", "2")
    assert [PARTITION_LINE.match(line).group(2) for line in lines[1:]] == ["0", "1", "2"]
    shrink = topics_tool(*three, "--alter", "--topic", "tool-alter", "--partitions", "2", check=False)
    assert shrink.returncode == 1
    assert shrink.stdout.startswith("Error while executing topic command : The number of partitions for a topic "
                                    "can only be increased.")
    # As Kafka: the assignment lists every partition, existing ones included; only the new ones are used.
    current = [PARTITION_LINE.match(line).group(4) for line in lines[1:]]
    topics_tool(*three, "--alter", "--topic", "tool-alter", "--partitions", "4",
                "--replica-assignment", ",".join(r.replace(",", ":") for r in current) + ",2:0")
    out = wait_for_output(lambda o: "Partition: 3" in o, *three, "--describe", "--topic", "tool-alter")
    assert PARTITION_LINE.match(out.splitlines()[4]).group(4) == "2,0"
    missing = topics_tool(*three, "--alter", "--topic", "tool-nope", "--partitions", "2", check=False)
    assert missing.stdout == "Error while executing topic command : Topic 'tool-nope' does not exist as expected\n"


def test_describe_shows_non_default_configs_and_filters_by_them(single):
    topics_tool(*single, "--create", "--topic", "tool-overridden", "--config", "cleanup.policy=compact",
                "--config", "min.insync.replicas=2")
    topics_tool(*single, "--create", "--topic", "tool-plain")
    line = topics_tool(*single, "--describe", "--topic", "tool-overridden").stdout.splitlines()[0]
    configs = TOPIC_LINE.match(line).group(5).split(",")
    assert "cleanup.policy=compact" in configs and "min.insync.replicas=2" in configs
    plain = TOPIC_LINE.match(topics_tool(*single, "--describe", "--topic", "tool-plain").stdout.splitlines()[0])
    assert "cleanup.policy" not in plain.group(5)
    overridden = topics_tool(*single, "--describe", "--topic", "tool-(overridden|plain)", "--topics-with-overrides")
    assert [TOPIC_LINE.match(x).group(1) for x in overridden.stdout.splitlines()] == ["tool-overridden"]
    # One replica in sync against min.insync.replicas=2: under the minimum; tool-plain (1) is at it.
    under = topics_tool(*single, "--describe", "--topic", "tool-(overridden|plain)", "--under-min-isr-partitions")
    assert [PARTITION_LINE.match(x).group(1) for x in under.stdout.splitlines()] == ["tool-overridden"]
    at = topics_tool(*single, "--describe", "--topic", "tool-(overridden|plain)", "--at-min-isr-partitions")
    assert [PARTITION_LINE.match(x).group(1) for x in at.stdout.splitlines()] == ["tool-plain"]

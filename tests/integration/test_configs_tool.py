"""odradek-configs run from the shell against a real broker: Kafka's kafka-configs.sh flags and output;
topic, broker and broker-logger changes show in --describe and take effect."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from odradek.clients.admin.client import Admin, ConfigResource, ConfigResourceType, NewTopic
from tests.integration.helpers import console_tool

pytestmark = pytest.mark.timeout(240)


def configs_tool(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return console_tool("configs", *args, check=check)


@pytest.fixture
def tool(single_broker_cluster):
    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return configs_tool("--bootstrap-server", single_broker_cluster.bootstrap_servers, *args, check=check)
    return run


@pytest.fixture
def topic(single_broker_cluster):
    name = f"t-{uuid.uuid4().hex[:8]}"
    with Admin(single_broker_cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])
    return name


def test_alter_and_describe_a_topic(single_broker_cluster, tool, topic):
    assert tool("--entity-type", "topics", "--entity-name", topic, "--describe").stdout == \
        f"Dynamic configs for topic {topic} are:\n"
    done = tool("--entity-type", "topics", "--entity-name", topic, "--alter",
                "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")
    assert done.stdout == f"Completed updating config for topic {topic}.\n"
    lines = tool("--topic", topic, "--describe").stdout.splitlines()
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    assert sorted(lines[1:]) == sorted([
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        # as Kafka 2.8.2: no broker synonym, since log.retention.ms itself is not set (Kafka's dropWhile)
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}",
    ])
    # The change is what the broker uses: DescribeConfigs reports it from the topic's override.
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    with Admin(single_broker_cluster.bootstrap_servers) as admin:
        assert admin.describe_configs([resource])[resource]["retention.ms"].value == "3600000"

    tool("--topic", topic, "--alter", "--delete-config", "retention.ms")
    lines = tool("--topic", topic, "--describe").stdout.splitlines()
    assert [line.split("=")[0].strip() for line in lines[1:]] == ["cleanup.policy"]
    everything = tool("--topic", topic, "--describe", "--all").stdout.splitlines()
    assert everything[0] == f"All configs for topic {topic} are:"
    assert any(line.startswith("  retention.ms=604800000 sensitive=false synonyms={") for line in everything)

    missing = tool("--topic", topic, "--alter", "--delete-config", "retention.ms", check=False)
    assert (missing.returncode, missing.stderr.strip()) == (1, "Invalid config(s): retention.ms")
    bad = tool("--topic", topic, "--alter", "--add-config", "retention.ms=soon", check=False)
    assert bad.returncode == 1
    assert bad.stderr.splitlines()[0].startswith("Error while executing config command with args")
    assert "InvalidRequestError" in bad.stderr and "retention.ms" in bad.stderr


def test_a_topic_change_takes_effect(single_broker_cluster, tool, topic):
    """max.message.bytes set with the tool is enforced by the partition's log at once; deleting it lifts it."""
    from odradek.clients.simple_client import SyncSimpleClient

    big = [(None, b"x" * 2000)]
    with SyncSimpleClient(single_broker_cluster.bootstrap_servers) as client:
        assert client.produce(topic, 0, big).error_code == 0
        tool("--topic", topic, "--alter", "--add-config", "max.message.bytes=1000")
        deadline = time.monotonic() + 30  # every broker applies /config/changes notifications asynchronously
        while (code := client.produce(topic, 0, big).error_code) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert code == 10  # MESSAGE_TOO_LARGE
        tool("--topic", topic, "--alter", "--delete-config", "max.message.bytes")
        deadline = time.monotonic() + 30
        while (code := client.produce(topic, 0, big).error_code) != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert code == 0


def test_alter_and_describe_broker_configs(single_broker_cluster, tool):
    done = tool("--entity-type", "brokers", "--entity-name", "0", "--alter", "--add-config", "log.retention.ms=7200000")
    assert done.stdout == "Completed updating config for broker 0.\n"
    try:
        lines = tool("--broker", "0", "--describe").stdout.splitlines()
        assert lines[0] == "Dynamic configs for broker 0 are:"
        assert any(line.startswith("  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
                                   "log.retention.ms=7200000") for line in lines[1:])
    finally:
        tool("--broker", "0", "--alter", "--delete-config", "log.retention.ms")
    assert tool("--broker", "0", "--describe").stdout == "Dynamic configs for broker 0 are:\n"
    done = tool("--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.segment.bytes=2000000")
    assert done.stdout == "Completed updating default config for brokers in the cluster.\n"
    try:
        lines = tool("--broker-defaults", "--describe").stdout.splitlines()
        assert lines[0] == "Default configs for brokers in the cluster are:"
        assert any(line.startswith("  log.segment.bytes=2000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:") for line in lines[1:]), lines
    finally:
        tool("--broker-defaults", "--alter", "--delete-config", "log.segment.bytes")


def test_alter_and_describe_broker_loggers(tool):
    done = tool("--entity-type", "broker-loggers", "--entity-name", "0", "--alter",
                "--add-config", "kafka.request.logger=DEBUG,odradek.server=WARN")
    assert done.stdout == "Completed updating config for broker-logger 0.\n"
    try:
        lines = tool("--broker-logger", "0", "--describe").stdout.splitlines()
        names = [line.split("=", 1)[0].strip() for line in lines[1:]]
        assert lines[0] == "Dynamic configs for broker-logger 0 are:" and names == sorted(names)
        assert {"  kafka.request.logger=DEBUG sensitive=false synonyms={}", "  odradek.server=WARN sensitive=false "
                "synonyms={}", "  root=INFO sensitive=false synonyms={}"} <= set(lines[1:])
    finally:
        tool("--broker-logger", "0", "--alter", "--delete-config", "kafka.request.logger,odradek.server")
    lines = tool("--broker-logger", "0", "--describe").stdout.splitlines()
    assert "  kafka.request.logger=INFO sensitive=false synonyms={}" in lines
    for change in ("--add-config", "no.such.logger=DEBUG"), ("--delete-config", "no.such.logger"):
        refused = tool("--broker-logger", "0", "--alter", *change, check=False)
        assert refused.returncode == 1 and "Invalid broker logger(s): no.such.logger" in refused.stderr
    refused = tool("--broker-logger", "0", "--alter", "--add-config", "root=LOUD", check=False)
    assert refused.returncode == 1 and "Cannot set the log level of root to LOUD" in refused.stderr
    assert "  root=INFO sensitive=false synonyms={}" in tool("--broker-logger", "0", "--describe").stdout.splitlines()


@pytest.mark.parametrize("args, message", [
    (["--entity-type", "broker-loggers", "--describe"], "an entity name must be specified with --describe of broker-loggers"),
    (["--broker-logger", "zero", "--describe"], "The entity name for broker-loggers must be a valid integer broker id"),
    (["--entity-type", "topics", "--entity-name", "t"], "Command must include exactly one action: --describe, --alter"),
    (["--describe"], "At least one entity type must be specified"),
    (["--entity-type", "ips", "--describe"], "Invalid entity type ips"),
    (["--entity-type", "topics", "--alter", "--add-config", "a=1"], "an entity name must be specified with --alter"),
    (["--topic", "t", "--alter"], "At least one of --add-config, --add-config-file, or --delete-config"),
    (["--topic", "t", "--alter", "--add-config", "novalue"], 'all configs to be added must be in the format "key=val"'),
    (["--topic", "t", "--entity-name", "u", "--describe"], "should not be used in conjunction"),
    (["--topic", "t", "--entity-type", "topics", "--describe"], "Duplicate entity type(s) specified: topics"),
    (["--broker", "zero", "--describe"], "must be a valid integer broker id"),
    (["--topic", "t", "--describe", "--delete-config", "a"], 'Option "[describe]" can\'t be used with option'),
    (["--topic", "t", "--describe", "--bogus"], "bogus is not a recognized option"),
])
def test_bad_flags_give_one_line_and_exit_1(tool, args, message):
    done = tool(*args, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_zookeeper_and_missing_bootstrap_server_are_usage_errors():
    done = configs_tool("--zookeeper", "localhost:2181", "--topic", "t", "--describe", check=False)
    assert done.returncode == 1 and "--bootstrap-server" in done.stderr
    done = configs_tool("--topic", "t", "--describe", check=False)
    assert done.returncode == 1 and "--bootstrap-server" in done.stderr

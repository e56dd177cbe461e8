"""Kafka's own command-line tools (kafka_2.13 2.8.2's TopicCommand and ConsumerGroupCommand) against a 3-broker
Odradek cluster: each succeeds, logs no WARN/ERROR line jvm.BENIGN_LOG_LINES does not explain, and prints what
its odradek-* twin prints for the same question."""

from __future__ import annotations

import time

import pytest

from tests.integration.helpers import console_tool, kafka_python_group_consumer, wait_until

from . import jvm

pytestmark = pytest.mark.jvm

TOPIC_COMMAND = "kafka.admin.TopicCommand"
GROUP_COMMAND = "kafka.admin.ConsumerGroupCommand"


def kafka_tool(main_class: str, *args: str) -> tuple[str, str]:
    """(stdout, stderr without the logger's lines): some messages, e.g. "has no active members", go to stderr."""
    done = jvm.run_tool(main_class, *args)
    logged = jvm.log_lines(done.stderr)
    assert not jvm.troubling(logged), f"{main_class} logged:\n{done.stderr}"
    return done.stdout, "".join(line + "\n" for line in done.stderr.splitlines() if line not in logged)


def same_output(main_class: str, twin: str, *args: str, timeout: float = 30.0) -> tuple[str, str]:
    """Kafka's tool and ours print the same (stdout and stderr); metadata reaches every broker a moment after a
    change, so they are asked again until they agree (or the time is up, and the assert shows both)."""
    deadline = time.monotonic() + timeout
    while True:
        theirs = kafka_tool(main_class, *args)
        done = console_tool(twin, *args)
        ours = (done.stdout, done.stderr)
        if theirs == ours or time.monotonic() > deadline:
            assert ours == theirs
            return ours
        time.sleep(0.5)


def test_topic_command_creates_alters_describes_lists_and_deletes(three_broker_cluster):
    bootstrap = ("--bootstrap-server", three_broker_cluster.bootstrap_servers)
    created, _ = kafka_tool(TOPIC_COMMAND, *bootstrap, "--create", "--topic", "kt-events", "--partitions", "3",
                         "--replication-factor", "2", "--config", "retention.ms=3600000")
    assert created.strip() == "Created topic kt-events."
    described, _ = same_output(TOPIC_COMMAND, "topics", *bootstrap, "--describe", "--topic", "kt-events")
    assert "PartitionCount: 3\tReplicationFactor: 2\tConfigs: retention.ms=3600000" in described

    kafka_tool(TOPIC_COMMAND, *bootstrap, "--alter", "--topic", "kt-events", "--partitions", "5")
    described, _ = same_output(TOPIC_COMMAND, "topics", *bootstrap, "--describe", "--topic", "kt-events")
    assert "PartitionCount: 5" in described and "Leader: none" not in described
    assert "kt-events" in same_output(TOPIC_COMMAND, "topics", *bootstrap, "--list")[0].split()

    kafka_tool(TOPIC_COMMAND, *bootstrap, "--delete", "--topic", "kt-events")
    wait_until(lambda: "kt-events" not in console_tool("topics", *bootstrap, "--list").stdout.split(), 60,
               "the deleted topic to leave the list")


def test_consumer_group_command_describes_a_live_group_and_resets_and_deletes_it(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    bootstrap = ("--bootstrap-server", servers)
    kafka_tool(TOPIC_COMMAND, *bootstrap, "--create", "--topic", "kt-orders", "--partitions", "2",
               "--replication-factor", "3")
    console_tool("console-producer", *bootstrap, "--topic", "kt-orders", stdin="".join(f"order-{i}\n" for i in range(10)))
    member = kafka_python_group_consumer("kt-orders", bootstrap_servers=servers, group_id="kt-group",
                                         client_id="kt-member", auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        read = 0
        deadline = time.monotonic() + 60
        while read < 6 and time.monotonic() < deadline:  # reads some records and commits them: lag stays
            read += sum(len(batch) for batch in member.poll(timeout_ms=500, max_records=6 - read).values())
        member.commit()
        live, _ = same_output(GROUP_COMMAND, "consumer-groups", *bootstrap, "--describe", "--group", "kt-group")
        assert "kt-member" in live and "/127.0.0.1" in live
        for view in (("--members", "--verbose"), ("--state",), ("--offsets",)):
            same_output(GROUP_COMMAND, "consumer-groups", *bootstrap, "--describe", "--group", "kt-group", *view)
        assert "kt-group" in same_output(GROUP_COMMAND, "consumer-groups", *bootstrap, "--list")[0].split()
    finally:
        member.close()

    reset, _ = kafka_tool(GROUP_COMMAND, *bootstrap, "--reset-offsets", "--group", "kt-group", "--topic", "kt-orders",
                       "--to-earliest", "--execute")
    assert [line.split()[-1] for line in reset.splitlines() if line.startswith("kt-group")] == ["0", "0"]
    _, empty = same_output(GROUP_COMMAND, "consumer-groups", *bootstrap, "--describe", "--group", "kt-group")
    assert "Consumer group 'kt-group' has no active members." in empty
    deleted, _ = kafka_tool(GROUP_COMMAND, *bootstrap, "--delete", "--group", "kt-group")
    assert "Deletion of requested consumer groups ('kt-group') was successful." in deleted
    assert "kt-group" not in console_tool("consumer-groups", *bootstrap, "--list").stdout.split()

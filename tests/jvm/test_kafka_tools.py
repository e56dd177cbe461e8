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


def same_output(main_class: str, twin: str, *args: str, timeout: float = 30.0, any_order: bool = False
                ) -> tuple[str, str]:
    """Kafka's tool and ours print the same (stdout and stderr); metadata reaches every broker a moment after a
    change, so they are asked again until they agree (or the time is up, and the assert shows both).
    ``any_order``: the same lines in any order (the Java AdminClient keeps a resource's configs in a HashMap,
    so Kafka's ConfigCommand prints them in hash order; ours prints the broker's order)."""
    def comparable(out: tuple[str, str]) -> tuple:
        return tuple(sorted(part.splitlines()) for part in out) if any_order else out

    deadline = time.monotonic() + timeout
    while True:
        theirs = kafka_tool(main_class, *args)
        done = console_tool(twin, *args)
        ours = (done.stdout, done.stderr)
        if comparable(theirs) == comparable(ours) or time.monotonic() > deadline:
            assert comparable(ours) == comparable(theirs)
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


CONFIG_COMMAND = "kafka.admin.ConfigCommand"


def test_config_command_alters_topic_user_and_broker_configs(three_broker_cluster):
    bootstrap = ("--bootstrap-server", three_broker_cluster.bootstrap_servers)
    kafka_tool(TOPIC_COMMAND, *bootstrap, "--create", "--topic", "kt-configs", "--partitions", "1",
               "--replication-factor", "3")
    topic = ("--entity-type", "topics", "--entity-name", "kt-configs")
    altered, _ = kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *topic,
                            "--add-config", "retention.ms=7200000,cleanup.policy=compact")
    assert altered.strip() == "Completed updating config for topic kt-configs."
    described, _ = same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", *topic, any_order=True)
    assert "retention.ms=7200000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=7200000" in described
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *topic, "--delete-config", "retention.ms")
    described, _ = same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", *topic, any_order=True)
    assert "retention.ms" not in described and "cleanup.policy=compact" in described

    user = ("--entity-type", "users", "--entity-name", "kt-user")
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *user, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    quotas, _ = same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", *user, any_order=True)
    assert quotas.strip() == "Quota configs for user-principal 'kt-user' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0"

    broker = ("--entity-type", "brokers", "--entity-name", "1")
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *broker, "--add-config", "log.cleaner.backoff.ms=16000")
    dynamic, _ = same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", *broker, any_order=True)
    assert "log.cleaner.backoff.ms=16000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:" in dynamic
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *broker, "--delete-config", "log.cleaner.backoff.ms")
    same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", "--all", "--entity-type", "brokers",
                "--entity-name", "0", any_order=True)


def test_console_producer_writes_what_both_console_consumers_read(three_broker_cluster):
    bootstrap = ("--bootstrap-server", three_broker_cluster.bootstrap_servers)
    kafka_tool(TOPIC_COMMAND, *bootstrap, "--create", "--topic", "kt-console", "--partitions", "1",
               "--replication-factor", "3")
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(20))
    done = jvm.run_tool("kafka.tools.ConsoleProducer", *bootstrap, "--topic", "kt-console", "--property", "parse.key=true",
                        "--property", "key.separator=:", "--request-required-acks", "all", input=lines)
    assert not jvm.troubling(jvm.log_lines(done.stderr)), done.stderr
    out, err = same_output("kafka.tools.ConsoleConsumer", "console-consumer", *bootstrap, "--topic", "kt-console",
                           "--from-beginning", "--max-messages", "20", "--property", "print.key=true",
                           "--property", "print.offset=true", "--property", "print.partition=true")
    assert out.splitlines()[19] == "Partition:0\tOffset:19\tkey-19\tvalue-19"
    assert "Processed a total of 20 messages" in err


def test_reassign_partitions_then_leader_election_command(three_broker_cluster, tmp_path):
    bootstrap = ("--bootstrap-server", three_broker_cluster.bootstrap_servers)
    # [1, 2] to [2, 1]: the leader (1) stays a replica, so only an election makes the new preferred one (2) lead.
    kafka_tool(TOPIC_COMMAND, *bootstrap, "--create", "--topic", "kt-moves", "--replica-assignment", "1:2")
    plan = tmp_path / "reassignment.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"kt-moves","partition":0,"replicas":[2,1]}]}')
    started, _ = kafka_tool("kafka.admin.ReassignPartitionsCommand", *bootstrap, "--reassignment-json-file", str(plan),
                            "--execute")
    assert "Successfully started partition reassignment for kt-moves-0" in started
    wait_until(lambda: "Reassignment of partition kt-moves-0 is complete." in kafka_tool(
        "kafka.admin.ReassignPartitionsCommand", *bootstrap, "--reassignment-json-file", str(plan), "--verify")[0],
        60, "the reassignment to complete")
    election = (*bootstrap, "--election-type", "preferred", "--topic", "kt-moves", "--partition", "0")
    # Kafka 2.8.2's tool lists the succeeded partitions (none) in its "already elected" line, not the no-ops.
    noop = "Valid replica already elected for partitions"
    first, _ = kafka_tool("kafka.admin.LeaderElectionCommand", *election)
    # The controller's automatic preferred-leader check may have been first: then ours is a no-op.
    assert first.strip() in ("Successfully completed leader election (PREFERRED) for partitions kt-moves-0", noop)
    again, _ = kafka_tool("kafka.admin.LeaderElectionCommand", *election)
    assert again.strip() == noop
    described, _ = same_output(TOPIC_COMMAND, "topics", *bootstrap, "--describe", "--topic", "kt-moves")
    assert "Partition: 0\tLeader: 2\tReplicas: 2,1\tIsr: " in described

"""Kafka's own command-line tools (kafka_2.13 2.8.2's TopicCommand, ConsumerGroupCommand, ConfigCommand,
AclCommand, the console tools, ReassignPartitionsCommand, LeaderElectionCommand and ConsumerPerformance;
kafka-tools 2.8.2's ProducerPerformance, VerifiableProducer and VerifiableConsumer) against a 3-broker Odradek
cluster with the authorizer on: each succeeds, logs no WARN/ERROR line jvm.BENIGN_LOG_LINES does not explain,
and prints what its odradek-* twin prints for the same question (the perf tools: the same lines, numbers
aside)."""

from __future__ import annotations

import json
import re
import time
from typing import Callable

import pytest

from tests.integration.helpers import console_tool, kafka_python_group_consumer, wait_until

from . import jvm

pytestmark = pytest.mark.jvm

# AclCommand needs the authorizer; allow.everyone.if.no.acl.found keeps every resource without ACLs open to the
# other tests' tools (all of them User:ANONYMOUS on a plaintext listener).
AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}


@pytest.fixture(scope="module")
def three_broker_cluster(zookeeper, tmp_path_factory):
    """The module's cluster: three brokers with the authorizer on."""
    from tests.conftest import module_cluster

    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("kafka-tools"), 3, AUTHORIZER)

TOPIC_COMMAND = "kafka.admin.TopicCommand"
GROUP_COMMAND = "kafka.admin.ConsumerGroupCommand"


def kafka_tool(main_class: str, *args: str) -> tuple[str, str]:
    """(stdout, stderr without the logger's lines): some messages, e.g. "has no active members", go to stderr."""
    done = jvm.run_tool(main_class, *args)
    logged = jvm.log_lines(done.stderr)
    assert not jvm.troubling(logged), f"{main_class} logged:\n{done.stderr}"
    return done.stdout, "".join(line + "\n" for line in done.stderr.splitlines() if line not in logged)


def same_output(main_class: str, twin: str, *args: str, timeout: float = 30.0, any_order: bool = False,
                view: Callable[[str], object] | None = None) -> tuple[str, str]:
    """Kafka's tool and ours print the same (stdout and stderr); metadata reaches every broker a moment after a
    change, so they are asked again until they agree (or the time is up, and the assert shows both).
    ``any_order``: the same lines in any order (the Java AdminClient keeps a resource's configs in a HashMap,
    so Kafka's ConfigCommand prints them in hash order; ours prints the broker's order). ``view``: what of
    each output is compared, for orders finer than lines."""
    def comparable(out: tuple[str, str]) -> tuple:
        if view is not None:
            return tuple(view(part) for part in out)
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
    # with a rate Kafka keeps as a dynamic-only key (no default synonym): the log dir move throttle
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *broker, "--add-config",
               "log.cleaner.backoff.ms=16000,replica.alter.log.dirs.io.max.bytes.per.second=1048576")
    dynamic, _ = same_output(CONFIG_COMMAND, "configs", *bootstrap, "--describe", *broker, any_order=True)
    assert "log.cleaner.backoff.ms=16000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:" in dynamic
    assert ("replica.alter.log.dirs.io.max.bytes.per.second=1048576 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
            "replica.alter.log.dirs.io.max.bytes.per.second=1048576}") in dynamic
    kafka_tool(CONFIG_COMMAND, *bootstrap, "--alter", *broker, "--delete-config",
               "log.cleaner.backoff.ms,replica.alter.log.dirs.io.max.bytes.per.second")
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


ACL_COMMAND = "kafka.admin.AclCommand"


def acl_blocks(output: str) -> list[tuple[str, frozenset[str]]]:
    """AclCommand's output as (resource line, its entries) blocks, sorted: Kafka prints the resources and each
    one's entries from Scala hash sets and maps, so in hash order; ours in the broker's order."""
    blocks = []
    for block in output.strip().split("\n\n") if output.strip() else []:
        header, *entries = block.splitlines()
        blocks.append((header, frozenset(entry.strip() for entry in entries)))
    return sorted(blocks)


def test_acl_command_adds_lists_and_removes_acls(three_broker_cluster):
    bootstrap = ("--bootstrap-server", three_broker_cluster.bootstrap_servers)

    def both(*args: str) -> str:
        return same_output(ACL_COMMAND, "acls", *bootstrap, *args, view=acl_blocks)[0]

    # First: the cluster's ACLs once it has any decide the tools' Describe/Alter there, so ANONYMOUS gets all.
    kafka_tool(ACL_COMMAND, *bootstrap, "--add", "--allow-principal", "User:ANONYMOUS", "--operation", "All",
               "--cluster")
    # Adding is idempotent: Kafka's tool adds, ours adds the same again; both print the ACLs now there.
    added = both("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
                 "--topic", "kt-acl-a")
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=kt-acl-a, patternType=LITERAL)`" in added
    kafka_tool(ACL_COMMAND, *bootstrap, "--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1",
               "--deny-principal", "User:eve", "--operation", "Describe", "--topic", "kt-acl-",
               "--resource-pattern-type", "prefixed")
    both("--add", "--producer", "--idempotent", "--allow-principal", "User:prod", "--topic", "kt-acl-b",
         "--transactional-id", "kt-acl-tx")
    kafka_tool(ACL_COMMAND, *bootstrap, "--add", "--consumer", "--allow-principal", "User:cons", "--topic",
               "kt-acl-b", "--group", "kt-acl-g")

    both("--list", "--topic", "kt-acl-b", "--resource-pattern-type", "match")  # kt-acl-b's and kt-acl-*'s
    both("--list", "--principal", "User:alice")
    everything = both("--list")
    assert "(principal=User:prod, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)" in everything
    assert "(principal=User:eve, host=*, operation=DESCRIBE, permissionType=DENY)" in everything

    kafka_tool(ACL_COMMAND, *bootstrap, "--remove", "--force", "--allow-principal", "User:alice", "--operation",
               "Write", "--topic", "kt-acl-a")
    # Every ACL of these resources (ANY: literal and prefixed names); --cluster is literal only, as Kafka's.
    both("--remove", "--force", "--resource-pattern-type", "any", "--topic", "kt-acl-b", "--topic", "kt-acl-",
         "--group", "kt-acl-g", "--transactional-id", "kt-acl-tx")
    left = both("--list")
    assert "kt-acl-b" not in left and "operation=READ" in left and "operation=WRITE" not in left
    kafka_tool(ACL_COMMAND, *bootstrap, "--remove", "--force", "--cluster", "--topic", "kt-acl-a")
    assert console_tool("acls", *bootstrap, "--list").stdout == ""


NUMBER = re.compile(r"\d+(\.\d+)?")


def shape(line: str) -> str:
    """A line with its numbers as #: what two runs of a tool print alike."""
    return NUMBER.sub("#", line)


def metrics_table(lines: list[str]) -> dict[str, str]:
    """--print-metrics' table (ToolsUtils.printMetrics: a header, then ``name : value`` with the name column as
    wide as the longest name), checked for that layout; name -> value."""
    header, *rows = lines
    names = [row.split(" : ", 1)[0].rstrip() for row in rows]
    width = max(map(len, names))
    assert header == f"{'Metric Name':<{width}}   Value", header
    assert all(row[width:width + 3] == " : " for row in rows), rows
    assert names == sorted(names), names
    return {name: row[width + 3:] for name, row in zip(names, rows)}


def perf_output(stdout: str) -> tuple[list[str], dict[str, str]]:
    """A perf tool's lines up to the blank line before its metrics table, and the table."""
    lines = stdout.splitlines()
    blank = lines.index("")
    return lines[:blank], metrics_table(lines[blank + 1:])


def test_producer_and_consumer_performance_print_what_their_twins_print(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", servers, "--create", "--topic", "kt-perf", "--partitions", "3",
               "--replication-factor", "3")
    produce = ("--topic", "kt-perf", "--num-records", "5000", "--record-size", "100", "--throughput", "-1",
               "--print-metrics", "--producer-props", f"bootstrap.servers={servers}", "acks=all")
    theirs = perf_output(kafka_tool("org.apache.kafka.tools.ProducerPerformance", *produce)[0])
    ours = perf_output(console_tool("producer-perf-test", *produce).stdout)
    # The total line (a 5 s window line may come before it in either: the run is shorter than that here).
    assert [shape(line) for line in ours[0][-1:]] == [shape(line) for line in theirs[0][-1:]]
    assert ours[0][-1].startswith("5000 records sent, ")
    assert set(ours[1]) <= set(theirs[1]), "metric names the Java producer does not have"

    consume = ("--bootstrap-server", servers, "--topic", "kt-perf", "--messages", "10000", "--timeout", "30000",
               "--print-metrics")
    theirs = perf_output(kafka_tool("kafka.tools.ConsumerPerformance", *consume, "--group", "kt-perf-java")[0])
    ours = perf_output(console_tool("consumer-perf-test", *consume, "--group", "kt-perf-ours").stdout)
    assert [shape(line) for line in ours[0]] == [shape(line) for line in theirs[0]]
    assert ours[0][1].split(", ")[4] == theirs[0][1].split(", ")[4] == "10000"  # data.consumed.in.nMsg
    # The Java consumer's client id is consumer-<group>-<n>, in each metric's tags.
    assert {name.replace("kt-perf-ours", "G") for name in ours[1]} <= \
        {name.replace("kt-perf-java", "G") for name in theirs[1]}


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_verifiable_producer_and_consumer(three_broker_cluster):
    """Every record the VerifiableProducer sends (acks=all) is acked once; the VerifiableConsumer reads each
    partition's offsets exactly, with no gap or repeat, and commits every one (as Kafka's system tests check)."""
    servers = three_broker_cluster.bootstrap_servers
    kafka_tool(TOPIC_COMMAND, "--bootstrap-server", servers, "--create", "--topic", "kt-verify", "--partitions", "3",
               "--replication-factor", "3")
    produced = json_lines(kafka_tool("org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server", servers,
                                     "--topic", "kt-verify", "--max-messages", "1000", "--acks", "-1")[0])
    acked = [event for event in produced if event["name"] == "producer_send_success"]
    assert sorted(int(event["value"]) for event in acked) == list(range(1000))
    assert not [event for event in produced if event["name"] == "producer_send_error"]
    [summary] = [event for event in produced if event["name"] == "tool_data"]
    assert (summary["sent"], summary["acked"]) == (1000, 1000)
    offsets: dict[int, list[int]] = {}
    for event in acked:
        offsets.setdefault(event["partition"], []).append(event["offset"])
    assert all(sorted(taken) == list(range(len(taken))) for taken in offsets.values()), "gaps or repeats"

    consumed = json_lines(kafka_tool("org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", servers,
                                     "--topic", "kt-verify", "--group-id", "kt-verify-group", "--max-messages",
                                     "1000", "--reset-policy", "earliest")[0])
    names = [event["name"] for event in consumed]
    assert names[0] == "startup_complete" and names[-1] == "shutdown_complete", names
    [assigned] = [event for event in consumed if event["name"] == "partitions_assigned"]
    assert sorted(p["partition"] for p in assigned["partitions"]) == [0, 1, 2]
    read: dict[int, list[int]] = {}
    for event in consumed:
        if event["name"] == "records_consumed":
            for part in event["partitions"]:
                read.setdefault(part["partition"], []).extend(range(part["minOffset"], part["maxOffset"] + 1))
    assert {p: sorted(taken) for p, taken in offsets.items()} == read
    commits = [event for event in consumed if event["name"] == "offsets_committed"]
    assert commits and all(event["success"] for event in commits)
    last = {o["partition"]: o["offset"] for event in commits for o in event["offsets"]}
    assert last == {p: len(taken) for p, taken in offsets.items()}
    # The group's committed offsets, as our tool reads them.
    described = console_tool("consumer-groups", "--bootstrap-server", servers, "--describe", "--group",
                             "kt-verify-group", "--offsets").stdout
    assert sorted(line.split()[3] for line in described.splitlines() if line.startswith("kt-verify-group")) == \
        sorted(str(len(taken)) for taken in offsets.values())

"""odradek-consumer-groups run from the shell against a real broker, with groups formed by kafka-python:
Kafka's kafka-consumer-groups.sh flags, column layouts, messages and exit codes; every --reset-offsets
scenario planned (--dry-run changes nothing) and executed (checked with OffsetFetch)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from datetime import datetime, timezone

import pytest

kafka = pytest.importorskip("kafka")

from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka import TopicPartition as KafkaTopicPartition  # noqa: E402
from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata  # noqa: E402

from odradek.clients.admin.client import Admin, NewTopic  # noqa: E402
from odradek.clients.connection import BrokerConnection  # noqa: E402
from odradek.protocol.messages import FindCoordinatorRequest, JoinGroupRequest  # noqa: E402
from tests.conftest import module_cluster  # noqa: E402
from tests.integration.helpers import console_tool, kafka_python_group_consumer  # noqa: E402

pytestmark = pytest.mark.timeout(300)
GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
OFFSETS_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID")
HOUR_MS = 3600 * 1000


def groups_tool(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return console_tool("consumer-groups", *args, check=check)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("groups-tool"), 1, GROUP_OVERRIDES)


@pytest.fixture
def tool(cluster):
    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return groups_tool("--bootstrap-server", cluster.bootstrap_servers, *args, check=check)
    return run


@pytest.fixture
def topic(cluster):
    """Two partitions of five records each; record i of a partition is (5 - i) hours old."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, 2, 1)])
    now = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    for partition in (0, 1):
        for i in range(5):
            producer.send(name, value=b"v", partition=partition, timestamp_ms=now - (5 - i) * HOUR_MS)
    producer.flush()
    producer.close()
    return name


def commit(cluster, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({KafkaTopicPartition(t, p): KafkaOffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close(autocommit=False)


def committed(cluster, group: str) -> dict[int, int]:
    """The group's committed offsets by partition, through OffsetFetch."""
    with Admin(cluster.bootstrap_servers) as admin:
        return {tp.partition: o.offset for tp, o in admin.list_consumer_group_offsets(group).items()}


@pytest.fixture
def active_member(cluster, topic):
    """A kafka-python member of a Stable group owning both partitions, partition 0 committed at 3."""
    group = f"active-{uuid.uuid4().hex[:6]}"
    consumer = kafka_python_group_consumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                           client_id="member-client", auto_offset_reset="earliest",
                                           enable_auto_commit=False)
    deadline = time.monotonic() + 60
    while len(consumer.assignment()) < 2:
        assert time.monotonic() < deadline, "the kafka-python consumer never got its assignment"
        consumer.poll(200)
    consumer.commit({KafkaTopicPartition(topic, 0): KafkaOffsetAndMetadata(3, "", -1)})
    yield group
    consumer.close(autocommit=False)


def table(out: str, header: tuple[str, ...]) -> list[list[str]]:
    """The rows under ``header`` (checked to be Kafka's space-aligned layout), split into cells."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == list(header))
    head = lines[start]
    columns = [head.index(name + " ") if name != header[-1] else head.rindex(name) for name in header]
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        cells = line.split()
        assert len(cells) == len(header), line
        # every cell starts where its column's title does (Kafka's %-Ns padding)
        assert [line.index(cell, pos) for cell, pos in zip(cells, columns)] == columns, (head, line)
        rows.append(cells)
    return rows


def test_list_and_describe_show_offsets_lag_members_and_state(cluster, tool, topic, active_member):
    idle = f"idle-{uuid.uuid4().hex[:6]}"
    commit(cluster, idle, {(topic, 0): 2, (topic, 1): 5})
    assert {active_member, idle} <= set(tool("--list").stdout.split())

    states = tool("--list", "--state").stdout.splitlines()
    assert states[0].split() == ["GROUP", "STATE"]
    assert f"{active_member:<15} Stable" in states and f"{idle:<15} Empty" in states
    only_empty = tool("--list", "--state", "empty").stdout
    assert idle in only_empty and active_member not in only_empty

    described = tool("--describe", "--group", active_member)
    rows = table(described.stdout, OFFSETS_HEADER)
    by_partition = {row[2]: row for row in rows}
    assert by_partition["0"][:6] == [active_member, topic, "0", "3", "5", "2"]
    assert by_partition["1"][:6] == [active_member, topic, "1", "-", "5", "-"]
    assert by_partition["0"][6].startswith("member-client-") and by_partition["0"][7] == "/127.0.0.1"
    assert by_partition["0"][8] == "member-client"

    described = tool("--describe", "--group", idle, "--offsets")
    assert f"Consumer group '{idle}' has no active members." in described.stderr
    assert [row[:9] for row in table(described.stdout, OFFSETS_HEADER)] == [
        [idle, topic, "0", "2", "5", "3", "-", "-", "-"], [idle, topic, "1", "5", "5", "0", "-", "-", "-"]]

    members = tool("--describe", "--group", active_member, "--members", "--verbose").stdout
    [member] = table(members, ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"))
    assert member[0] == active_member and member[3:] == ["member-client", "2", f"{topic}(0,1)"]

    state = tool("--describe", "--group", active_member, "--state").stdout
    assert state.splitlines()[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    assert state.splitlines()[2].split() == [active_member, f"{host}:{port}", "(0)", "range", "Stable", "1"]

    both = tool("--describe", "--all-groups").stdout
    assert active_member in both and idle in both
    missing = tool("--describe", "--group", "no-such-group")
    assert "Error: Consumer group 'no-such-group' does not exist." in missing.stdout


def _plan(out: str) -> dict[int, int]:
    return {int(row[2]): int(row[3]) for row in table(out, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))}


@pytest.mark.parametrize("scenario, expected", [
    (["--to-earliest"], {0: 0, 1: 0}),
    (["--to-latest"], {0: 5, 1: 5}),
    (["--to-current"], {0: 2, 1: 4}),
    (["--to-offset", "3"], {0: 3, 1: 3}),
    (["--to-offset", "100"], {0: 5, 1: 5}),  # clamped to the log end
    (["--shift-by", "-3"], {0: 0, 1: 1}),  # 2 - 3 is clamped to the log start
    (["--by-duration", "PT2H30M"], {0: 3, 1: 3}),  # records 3 and 4 are younger than 2.5 h
    (["--by-duration", "PT30M"], {0: 5, 1: 5}),  # none that young: the log end
    (["--to-datetime", "DATETIME"], {0: 2, 1: 2}),  # 3.5 h ago, in UTC
])
def test_reset_offsets_plans_then_executes(cluster, tool, topic, scenario, expected):
    group = f"reset-{uuid.uuid4().hex[:6]}"
    commit(cluster, group, {(topic, 0): 2, (topic, 1): 4})
    if "DATETIME" in scenario:
        moment = datetime.fromtimestamp(time.time() - 3.5 * 3600, tz=timezone.utc)
        scenario = ["--to-datetime", moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"]
    planned = tool("--reset-offsets", "--group", group, "--topic", topic, *scenario)
    assert "WARN: No action will be performed as the --execute option is missing." in planned.stderr
    assert _plan(planned.stdout) == expected
    assert committed(cluster, group) == {0: 2, 1: 4}
    assert _plan(tool("--reset-offsets", "--group", group, "--topic", topic, *scenario, "--dry-run").stdout) == expected
    assert committed(cluster, group) == {0: 2, 1: 4}
    assert _plan(tool("--reset-offsets", "--group", group, "--all-topics", *scenario, "--execute").stdout) == expected
    assert committed(cluster, group) == expected


def test_reset_offsets_scopes_export_and_from_file(cluster, tool, topic, tmp_path, active_member):
    group = f"reset-{uuid.uuid4().hex[:6]}"
    commit(cluster, group, {(topic, 0): 2, (topic, 1): 4})
    tool("--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-earliest", "--execute")
    assert committed(cluster, group) == {0: 2, 1: 0}
    exported = tool("--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--export").stdout
    assert exported.split() == [f"{topic},0,5", f"{topic},1,5"]
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{topic},0,1\n{topic},1,4\n")
    tool("--reset-offsets", "--group", group, "--from-file", str(plan), "--execute")
    assert committed(cluster, group) == {0: 1, 1: 4}
    # A group with members is refused (and keeps its offsets).
    refused = tool("--reset-offsets", "--group", active_member, "--all-topics", "--to-earliest", "--execute")
    assert (f"Error: Assignments can only be reset if the group '{active_member}' is inactive, but the current "
            "state is Stable.") in refused.stdout
    assert committed(cluster, active_member) == {0: 3}
    shift = tool("--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--shift-by", "1", "--execute")
    assert _plan(shift.stdout) == {0: 2}


def test_delete_offsets_and_groups(cluster, tool, topic, active_member):
    idle = f"idle-{uuid.uuid4().hex[:6]}"
    commit(cluster, idle, {(topic, 0): 2, (topic, 1): 5})
    done = tool("--delete-offsets", "--group", idle, "--topic", f"{topic}:0")
    assert f"Request succeed for deleting offsets with topic {topic}:0 group {idle}" in done.stdout
    assert table(done.stdout, ("TOPIC", "PARTITION", "STATUS")) == [[topic, "0", "Successful"]]
    assert committed(cluster, idle) == {1: 5}

    in_use = tool("--delete-offsets", "--group", active_member, "--topic", topic, check=False)
    assert in_use.returncode == 1
    assert "Error: Encounter some partition level error, see the follow-up details:" in in_use.stdout

    assert tool("--delete", "--group", idle).stdout.strip() == f"Deletion of requested consumer groups ('{idle}') was successful."
    assert idle not in tool("--list").stdout.split()
    refused = tool("--delete", "--group", active_member, check=False)
    assert refused.returncode == 1
    assert "Error: Deletion of some consumer groups failed:" in refused.stdout
    assert f"* Group '{active_member}' could not be deleted due to: NonEmptyGroupError" in refused.stdout


@pytest.mark.parametrize("args, message", [
    ([], "Command must include exactly one action"),
    (["--list", "--describe"], "Command must include exactly one action"),
    (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
    (["--describe", "--group", "g", "--members", "--state"], "takes at most one of these options"),
    (["--list", "--members"], "Option(s) [members] are unavailable"),
    (["--delete", "--group", "g", "--topic", "t"], "does not support topic-specific offset deletion"),
    (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", "g", "--all-topics"], "requires one of the following scenarios"),
    (["--reset-offsets", "--group", "g", "--to-earliest"], "One of the reset scopes should be defined"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"],
     "only accepts one of [execute] and [dry-run]"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "x"], "--to-offset"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "2 hours"], "--by-duration"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "yesterday"], "--to-datetime"),
    (["--describe", "--group", "g", "--execute"], 'Option "[execute]" can\'t be used with option "[describe]"'),
    (["--list", "--state", "sleepy"], "Invalid state list 'sleepy'. Valid states are:"),
    (["--list", "--frobnicate"], "frobnicate is not a recognized option"),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
])
def test_bad_flags_give_one_line_and_exit_1(tool, args, message):
    done = tool(*args, check=False)
    assert done.returncode == 1 and done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if not line.startswith("WARN")]
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_missing_bootstrap_server_and_help():
    done = groups_tool("--list", check=False)
    assert done.returncode == 1 and done.stderr.strip() == 'Missing required argument "[bootstrap-server]"'
    helped = groups_tool("--help")
    assert "--reset-offsets" in helped.stdout and "--bootstrap-server" in helped.stdout


def test_a_group_of_another_protocol_type_is_no_consumer_group(cluster, tool):
    """A Kafka Connect worker group (protocol type "connect"): Kafka 2.8's AdminClient refuses to describe it
    and leaves it out of the consumer groups it lists; so does the tool."""
    group = f"workers-{uuid.uuid4().hex[:6]}"
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)

    async def join() -> None:
        conn = await BrokerConnection.connect(host, int(port))
        try:
            deadline = time.monotonic() + 30
            while (await conn.send(FindCoordinatorRequest(key=group))).error_code:  # __consumer_offsets loading
                assert time.monotonic() < deadline, "no coordinator for the group"
                await asyncio.sleep(0.2)
            member_id = ""
            for _ in range(2):  # v4+: the first join is told MEMBER_ID_REQUIRED with the id to join with
                joined = await conn.send(JoinGroupRequest(
                    group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member_id,
                    protocol_type="connect", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                        name="sessioned", metadata=b"\x00")]), version=7)
                member_id = joined.member_id
            assert joined.error_code == 0, joined
        finally:
            await conn.close()

    asyncio.run(join())
    done = tool("--describe", "--group", group, check=False)
    assert done.returncode == 1
    assert done.stdout.strip() == f"Error: Executing consumer group command failed due to GroupId {group} is not a " \
                                  "consumer group (connect)."
    assert group not in tool("--list").stdout.split()

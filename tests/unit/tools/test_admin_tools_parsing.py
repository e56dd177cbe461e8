"""Flag parsing and output formatting of odradek-consumer-groups and odradek-configs, and the admin
tools' --command-config (no cluster)."""

from __future__ import annotations

import argparse
import io
from datetime import datetime, timezone

import pytest

from odradek.clients.admin.client import ConfigEntry
from odradek.clients.admin.groups import ConsumerGroupDescription, Coordinator, MemberDescription
from odradek.tools import configs, consumer_groups
from odradek.tools.common import UsageError, command_config_admin_timing
from odradek.clients.types import TopicPartition


@pytest.mark.parametrize("text, expected", [
    ("PT1H", 3600_000), ("PT2H30M", 9000_000), ("P1D", 86400_000), ("P1DT1S", 86401_000), ("PT0.5S", 500),
    ("-PT1M", -60_000), ("pt10m", 600_000),
])
def test_durations_are_java_duration_parse(text, expected):
    assert consumer_groups.parse_duration(text) == expected


@pytest.mark.parametrize("text", ["1h", "P", "PT", "P1H", "PT1D", "2 hours"])
def test_bad_durations_name_the_flag(text):
    with pytest.raises(UsageError, match="--by-duration"):
        consumer_groups.parse_duration(text)


def test_datetimes_with_and_without_zone():
    assert consumer_groups.parse_datetime("2024-03-01T12:00:00.250Z") == int(
        datetime(2024, 3, 1, 12, 0, 0, 250000, tzinfo=timezone.utc).timestamp() * 1000)
    assert consumer_groups.parse_datetime("2024-03-01T14:00:00.000+02:00") == int(
        datetime(2024, 3, 1, 12, tzinfo=timezone.utc).timestamp() * 1000)
    local = datetime(2024, 3, 1, 12).astimezone()  # no zone: local time, as Kafka's SimpleDateFormat
    assert consumer_groups.parse_datetime("2024-03-01T12:00:00.000") == int(local.timestamp() * 1000)
    for bad in ("2024-03-01", "2024-03-01T12:00:00", "yesterday"):
        with pytest.raises(UsageError, match="--to-datetime"):
            consumer_groups.parse_datetime(bad)


def test_topic_scopes_and_reset_plans():
    assert consumer_groups.parse_topic_scope("events") == ("events", None)
    assert consumer_groups.parse_topic_scope("events:0,2") == ("events", [0, 2])
    with pytest.raises(UsageError, match="--topic"):
        consumer_groups.parse_topic_scope("events:a")
    assert consumer_groups.parse_reset_plan("t,0,5\nt,1,7\n", ["g"]) == {
        "g": {TopicPartition("t", 0): 5, TopicPartition("t", 1): 7}}
    assert consumer_groups.parse_reset_plan("g1,t,0,5\ng2,t,0,1", ["g1", "g2"]) == {
        "g1": {TopicPartition("t", 0): 5}, "g2": {TopicPartition("t", 0): 1}}
    with pytest.raises(UsageError, match="--from-file"):
        consumer_groups.parse_reset_plan("t,zero,5", ["g"])


def test_states_and_checks():
    opts = consumer_groups.parse_args(["--bootstrap-server", "b:9092", "--list", "--state", "stable, EMPTY"])
    assert opts.list_states == ["Stable", "Empty"]
    with pytest.raises(UsageError, match="Invalid state list"):
        consumer_groups.parse_args(["--bootstrap-server", "b:9092", "--list", "--state", "running"])
    with pytest.raises(UsageError, match=r"\[group\].*\[all-groups\]"):
        consumer_groups.parse_args(["--bootstrap-server", "b", "--describe", "--group", "g", "--all-groups"])


def test_verbose_assignment_column():
    assert consumer_groups.assignment_text([]) == "-"
    assert consumer_groups.assignment_text([TopicPartition("b", 2), TopicPartition("a", 1), TopicPartition("a", 0)]) \
        == "a(0,1), b(2)"


def _command(**flags) -> tuple[consumer_groups.ConsumerGroupCommand, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    opts = consumer_groups.parse_args(["--bootstrap-server", "b", "--describe", "--group", "g",
                                       *[f"--{k}" for k, v in flags.items() if v]])
    return consumer_groups.ConsumerGroupCommand(opts, admin=None, out=out, err=err), out, err


def test_offsets_table_layout_is_kafkas():
    command, out, _ = _command()
    command._print_offsets([("g", "events", 0, 3, 5, 2, "consumer-1-abc", "/127.0.0.1", "c1"),
                            ("g", "events", 1, None, 5, None, "-", "-", "-")])
    lines = out.getvalue().splitlines()
    assert lines[0] == ""
    assert lines[1] == ("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
                        "CONSUMER-ID     HOST            CLIENT-ID")
    assert lines[2] == ("g               events          0          3               5               2               "
                        "consumer-1-abc  /127.0.0.1      c1")
    assert lines[3].split() == ["g", "events", "1", "-", "5", "-", "-", "-", "-"]


def test_members_and_state_tables():
    member = MemberDescription("consumer-1-abc", None, "c1", "/127.0.0.1", [TopicPartition("t", 0)])
    group = ConsumerGroupDescription("g", False, [member], "range", "Stable", Coordinator(0, "localhost", 9092),
                                     "consumer")
    command, out, _ = _command(members=True, verbose=True)
    command._print_members({"g": group})
    assert out.getvalue().splitlines()[1:] == [
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT",
        "g               consumer-1-abc  /127.0.0.1      c1              1               t(0)"]
    command, out, _ = _command(state=True)
    command._print_states({"g": group})
    assert out.getvalue().splitlines()[1:] == [
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS",
        "g                         localhost:9092 (0)        range                Stable          1"]


def test_group_state_messages():
    command, out, err = _command()
    assert command._should_print("g", "Empty", 2) and "Consumer group 'g' has no active members." in err.getvalue()
    assert not command._should_print("g", "Dead", 0)
    assert out.getvalue() == "\nError: Consumer group 'g' does not exist.\n"
    assert command._should_print("g", "PreparingRebalance", 1) and "is rebalancing" in err.getvalue()


@pytest.mark.parametrize("text, expected", [
    ("a=1", {"a": "1"}),
    ("a=1,b=[x,y],c=", {"a": "1", "b": "x,y", "c": ""}),
    ("k = v , cleanup.policy=[compact,delete]", {"k": "v", "cleanup.policy": "compact,delete"}),
])
def test_add_config_values_as_kafka_splits_them(text, expected):
    assert configs.parse_configs_to_add(text) == expected


def test_bad_add_config_and_entity_checks():
    with pytest.raises(UsageError, match='format "key=val"'):
        configs.parse_configs_to_add("a=1,b")
    base = ["--bootstrap-server", "b:9092"]
    opts = configs.parse_args(base + ["--entity-type", "brokers", "--entity-default", "--describe"])
    assert (opts.entity, opts.name) == ("brokers", "")
    opts = configs.parse_args(base + ["--topic", "t", "--alter", "--delete-config", "a,b", "--delete-config", "c"])
    assert (opts.entity, opts.name, opts.to_delete) == ("topics", "t", ["a", "b", "c"])
    with pytest.raises(UsageError, match="Invalid entity type ips"):
        configs.parse_args(base + ["--entity-type", "ips", "--describe"])
    with pytest.raises(UsageError, match="is illegal"):
        configs.parse_args(base + ["--topic", "a/b", "--describe"])


def test_user_and_client_entities_pair_names_with_types_in_command_line_order():
    base = ["--bootstrap-server", "b:9092"]
    opts = configs.parse_args(base + ["--entity-type", "users", "--entity-default", "--entity-type", "clients",
                                      "--entity-name", "app", "--alter", "--add-config", "producer_byte_rate=10"])
    assert (opts.entity_types, opts.entity_names, opts.to_add) == (["users", "clients"], ["", "app"],
                                                                   {"producer_byte_rate": "10"})
    # the shortcuts are listed as Kafka lists them: --client before --user
    opts = configs.parse_args(base + ["--user", "alice", "--client", "app", "--describe"])
    assert (opts.entity_types, opts.entity_names) == (["clients", "users"], ["app", "alice"])
    opts = configs.parse_args(base + ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                                      "--describe"])  # every client-id of alice
    assert (opts.entity_types, opts.entity_names) == (["users", "clients"], ["alice"])
    with pytest.raises(UsageError, match="must be specified with each --entity-type for --alter"):
        configs.parse_args(base + ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                                   "--alter", "--add-config", "producer_byte_rate=10"])
    with pytest.raises(UsageError, match="More entity names specified than entity types"):
        configs.parse_args(base + ["--entity-type", "clients", "--entity-name", "a", "--entity-name", "b",
                                   "--describe"])
    with pytest.raises(UsageError, match="Only 'users' and 'clients' entity types may be specified together"):
        configs.parse_args(base + ["--entity-type", "users", "--entity-type", "topics", "--describe"])


@pytest.mark.parametrize("value, text", [(200000.0, "200000.0"), (12.5, "12.5"), (1e7, "1.0E7"),
                                         (123456789.0, "1.23456789E8"), (0.0005, "5.0E-4"), (0.0, "0.0")])
def test_quota_values_print_as_java_doubles(value, text):
    assert configs.java_double(value) == text


def test_config_entry_line():
    entry = ConfigEntry("retention.ms", "1000", 1, False, False, False,
                        [("retention.ms", "1000", 1), ("log.retention.hours", "168", 4)])
    assert configs.entry_line(entry) == ("  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                                         "retention.ms=1000, STATIC_BROKER_CONFIG:log.retention.hours=168}")
    secret = ConfigEntry("ssl.key.password", None, 2, False, False, True, [])
    assert configs.entry_line(secret) == "  ssl.key.password=null sensitive=true synonyms={}"


def test_the_command_config_sets_the_admin_clients_timing(tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text("client.id=mine\nrequest.timeout.ms=1000\ndefault.api.timeout.ms=2000\nretries=3\n")
    opts = argparse.Namespace(command_config=str(config))
    assert command_config_admin_timing(opts) == {"request_timeout_ms": 1000, "default_api_timeout_ms": 2000,
                                                 "retries": 3}
    assert command_config_admin_timing(argparse.Namespace(command_config=None)) == {}
    config.write_text("retry.backoff.ms=soon\n")
    with pytest.raises(UsageError, match="Invalid value soon for configuration retry.backoff.ms"):
        command_config_admin_timing(opts)

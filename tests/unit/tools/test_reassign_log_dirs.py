"""odradek-reassign-partitions with "log_dirs" (Kafka's format): which replicas move, and --verify's move lines."""

from __future__ import annotations

import pytest

from odradek.clients.admin.log_dirs import TopicPartitionReplica as R
from odradek.tools.common import UsageError
from odradek.tools.reassign_partitions import (
    CommandFailed, move_status_lines, parse_args, parse_reassignment, parse_replica_moves,
)


def document(*partitions):
    return {"version": 1, "partitions": list(partitions)}


def test_only_replicas_with_a_dir_other_than_any_move():
    doc = document({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d/b", "any"]},
                   {"topic": "t", "partition": 1, "replicas": [2, 1]})
    assert set(parse_reassignment(doc)) == {("t", 0), ("t", 1)}
    assert parse_replica_moves(doc) == {R("t", 0, 1): "/d/b"}


@pytest.mark.parametrize("log_dirs, message", [
    (["/d/b"], "Size of replicas list [1, 2] is different from size of log dirs list ['/d/b'] for partition t-0"),
    ("/d/b", '"log_dirs" must be a list'),
])
def test_log_dirs_that_do_not_fit_the_replicas_are_refused(log_dirs, message):
    with pytest.raises(CommandFailed, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_reassignment(document({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": log_dirs}))


def test_move_lines_say_what_kafka_says():
    moves = {R("t", 0, 1): "/b", R("t", 1, 1): "/b", R("t", 2, 1): "/b", R("t", 3, 1): "/b", R("t", 4, 1): "/b",
             R("t", 5, 1): "/b"}
    found = {R("t", 0, 1): ("/b", None), R("t", 1, 1): ("/a", "/b"), R("t", 2, 1): ("/a", None),
             R("t", 3, 1): ("/a", "/c"), R("t", 4, 1): (None, "/b")}
    assert move_status_lines(moves, found) == [
        "Reassignment of replica t-0-1 completed successfully.",
        "Reassignment of replica t-1-1 is still in progress.",
        "Partition t-2 on broker 1 is not being moved from log dir /a to /b.",
        "Partition t-3 on broker 1 is being moved to log dir /c instead of /b.",
        "Partition t-4 is not found in any live log dir on broker 1. There is likely an offline log directory on "
        "the broker.",
        "Partition t-5 cannot be found in any live log directory on broker 1.",
    ]


def test_the_log_dir_throttle_goes_with_execute_only():
    opts = parse_args(["--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", "p.json",
                       "--replica-alter-log-dirs-throttle", "1000"])
    assert opts.replica_alter_log_dirs_throttle == 1000
    with pytest.raises(UsageError, match=r'Option "\[replica-alter-log-dirs-throttle\]" can\'t be used with option '
                                         r'"\[verify\]"'):
        parse_args(["--bootstrap-server", "h:1", "--verify", "--reassignment-json-file", "p.json",
                    "--replica-alter-log-dirs-throttle", "1000"])

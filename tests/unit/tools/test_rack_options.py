"""Rack options of the tools: odradek-cluster's --brokers-per-rack, odradek-topics' --disable-rack-aware and
odradek-reassign-partitions' rack-aware plans."""

import pytest

from odradek.clients.types import TopicPartition
from odradek.tools import cluster, topics
from odradek.tools.local_cluster import LocalCluster
from odradek.tools.reassign_partitions import propose


def overrides_of(command):
    return dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--override")


def test_brokers_per_rack_puts_k_brokers_in_each_rack(tmp_path):
    local = LocalCluster(tmp_path, 5, zookeeper="127.0.0.1:2181", brokers_per_rack=2)
    assert [overrides_of(local.broker_command(b))["broker.rack"] for b in local.brokers] == \
        ["rack-0", "rack-0", "rack-1", "rack-1", "rack-2"]


def test_no_rack_without_brokers_per_rack(tmp_path):
    local = LocalCluster(tmp_path, 2, zookeeper="127.0.0.1:2181")
    assert all("broker.rack" not in overrides_of(local.broker_command(b)) for b in local.brokers)


def test_cluster_start_parses_brokers_per_rack():
    args = cluster.build_parser().parse_args(["start", "--brokers", "4", "--brokers-per-rack", "2"])
    assert (args.brokers, args.brokers_per_rack) == (4, 2)
    with pytest.raises(cluster.UsageError, match="--brokers-per-rack: expected a number >= 1"):
        cluster.build_parser().parse_args(["start", "--brokers-per-rack", "0"])


def test_disable_rack_aware_only_with_create_or_alter():
    opts = topics.parse_args(["--bootstrap-server", "b:9092", "--create", "--topic", "t", "--disable-rack-aware"])
    assert opts.disable_rack_aware
    with pytest.raises(topics.UsageError, match=r'Option "\[disable-rack-aware\]" can\'t be used with option '
                                                r'"\[describe\]"'):
        topics.parse_args(["--bootstrap-server", "b:9092", "--describe", "--disable-rack-aware"])


def test_generated_plans_place_each_topic_by_rack():
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    current = {TopicPartition("t", p): [0, 1] for p in range(8)}
    proposed = propose(current, [0, 1, 2, 3], racks)
    assert sorted(proposed) == sorted(current)
    assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in proposed.values())

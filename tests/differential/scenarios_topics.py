"""Hand-written sequences: discovery (ApiVersions, Metadata, DescribeCluster) and topic administration
(CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeLogDirs, ElectLeaders, partition reassignments), every advertised version, normal and error paths."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.protocol.api_keys import ApiKey as K

from .harness import Side, versions

TOPIC = "diff-topics"  # made by `create_topics`, read by the others (scenarios run in file order)


async def wait_for_leader(side: Side, topic: str, partitions: int = 1) -> None:
    """Poll Metadata (unrecorded) until every partition of ``topic`` has a leader."""
    for _ in range(300):
        response = await side.call("poll", K.METADATA, 9, {"topics": [{"name": topic}],
                                                          "allow_auto_topic_creation": False}, record=False)
        parts = response.topics[0].partitions if response.topics else []
        if len(parts) == partitions and all(p.leader_id >= 0 for p in parts):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{side.name}: {topic} has no leader")


async def create_topic(side: Side, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    await side.call(f"create {name}", K.CREATE_TOPICS, 5, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
        "timeout_ms": 30000})
    await wait_for_leader(side, name, partitions)


async def api_versions(side: Side) -> None:
    for v in versions(K.API_VERSIONS):
        await side.call(f"v{v}", K.API_VERSIONS, v, {"client_software_name": "differential",
                                                     "client_software_version": "1.0"})
    await side.call("bad software name", K.API_VERSIONS, 3, {"client_software_name": "spaces are invalid",
                                                             "client_software_version": "1.0"})
    await side.call("empty software version", K.API_VERSIONS, 3, {"client_software_name": "x",
                                                                   "client_software_version": ""})


async def create_topics(side: Side) -> None:
    for v in versions(K.CREATE_TOPICS):
        topic = {"name": f"{TOPIC}-v{v}", "num_partitions": 2, "replication_factor": 1,
                 "configs": [{"name": "retention.ms", "value": "86400000"}]}
        spec = {"topics": [topic], "timeout_ms": 30000}
        if v >= 1:
            await side.call(f"v{v} validate only", K.CREATE_TOPICS, v, {**spec, "validate_only": True})
        await side.call(f"v{v} create", K.CREATE_TOPICS, v, spec)
        await side.call(f"v{v} exists", K.CREATE_TOPICS, v, spec)
        # a short timeout: the partition assigned to a broker that does not exist gets no leader
        await side.call(f"v{v} errors", K.CREATE_TOPICS, v, {"timeout_ms": 200, "topics": [
            {"name": "bad name!", "num_partitions": 1, "replication_factor": 1},
            {"name": f"zero-partitions-v{v}", "num_partitions": 0, "replication_factor": 1},
            {"name": f"rf-too-big-v{v}", "num_partitions": 1, "replication_factor": 3},
            {"name": f"bad-config-v{v}", "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "cleanup.policy", "value": "sometimes"}]},
            {"name": f"unknown-config-v{v}", "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "no.such.config", "value": "1"}]},
            {"name": f"assignment-and-count-v{v}", "num_partitions": 2, "replication_factor": 1,
             "assignments": [{"partition_index": 0, "broker_ids": [0]}]},
            {"name": f"unknown-broker-v{v}", "num_partitions": -1, "replication_factor": -1,
             "assignments": [{"partition_index": 0, "broker_ids": [7]}]},
            {"name": "x" * 250, "num_partitions": 1, "replication_factor": 1},
        ]})
        if v >= 4:
            await side.call(f"v{v} defaults", K.CREATE_TOPICS, v, {"timeout_ms": 30000, "topics": [
                {"name": f"{TOPIC}-defaults-v{v}", "num_partitions": -1, "replication_factor": -1}]})
        await side.call(f"v{v} duplicate in request", K.CREATE_TOPICS, v, {"timeout_ms": 30000, "topics": [
            {"name": f"dup-v{v}", "num_partitions": 1, "replication_factor": 1},
            {"name": f"dup-v{v}", "num_partitions": 1, "replication_factor": 1}]})
    await create_topic(side, TOPIC, 3)


async def metadata(side: Side) -> None:
    await wait_for_leader(side, f"{TOPIC}-v0", 2)
    for v in versions(K.METADATA):
        names = [TOPIC, f"{TOPIC}-v0"] + (["no-such-topic", "bad name!"] if v >= 4 else [])
        spec: dict = {"topics": [{"name": n} for n in names]}
        if v >= 4:
            spec["allow_auto_topic_creation"] = False
        if v >= 8:
            spec["include_topic_authorized_operations"] = True
            if v <= 10:
                spec["include_cluster_authorized_operations"] = True
        await side.call(f"v{v} named", K.METADATA, v, spec)
        await side.call(f"v{v} brokers only", K.METADATA, v, {"topics": []})
    await side.call("v1 all topics", K.METADATA, 1, {"topics": None})
    await side.call("v9 auto create", K.METADATA, 9, {"topics": [{"name": "auto-created"}],
                                                      "allow_auto_topic_creation": True})
    await side.call("v9 auto create invalid", K.METADATA, 9, {"topics": [{"name": "in valid"}],
                                                              "allow_auto_topic_creation": True})
    await side.call("v9 internal", K.METADATA, 9, {"topics": [{"name": "__consumer_offsets"}],
                                                   "allow_auto_topic_creation": False})


async def describe_cluster(side: Side) -> None:
    for v in versions(K.DESCRIBE_CLUSTER):
        await side.call(f"v{v}", K.DESCRIBE_CLUSTER, v, {"include_cluster_authorized_operations": False})
        await side.call(f"v{v} with operations", K.DESCRIBE_CLUSTER, v,
                        {"include_cluster_authorized_operations": True})


async def create_partitions(side: Side) -> None:
    name = "diff-partitions"
    await create_topic(side, name, 1)
    for v in versions(K.CREATE_PARTITIONS):
        await side.call(f"v{v} validate", K.CREATE_PARTITIONS, v, {"topics": [
            {"name": name, "count": 2 + v, "assignments": None}], "timeout_ms": 30000, "validate_only": True})
        await side.call(f"v{v} grow", K.CREATE_PARTITIONS, v, {"topics": [
            {"name": name, "count": 2 + v, "assignments": None}], "timeout_ms": 30000})
        await side.call(f"v{v} errors", K.CREATE_PARTITIONS, v, {"timeout_ms": 30000, "topics": [
            {"name": name, "count": 1, "assignments": None},
            {"name": "no-such-topic", "count": 4, "assignments": None},
            {"name": f"{TOPIC}-v1", "count": 4, "assignments": [{"broker_ids": [9]}, {"broker_ids": [0]}]},
            {"name": f"{TOPIC}-v2", "count": 3, "assignments": [{"broker_ids": [0]}, {"broker_ids": [0]}]},
        ]})
        await side.call(f"v{v} same topic twice", K.CREATE_PARTITIONS, v, {"timeout_ms": 30000, "topics": [
            {"name": f"{TOPIC}-v3", "count": 5, "assignments": None},
            {"name": f"{TOPIC}-v3", "count": 6, "assignments": None}]})


async def delete_topics(side: Side) -> None:
    for v in versions(K.DELETE_TOPICS):
        name = f"diff-delete-v{v}"
        await create_topic(side, name)
        if v >= 6:
            spec = {"topics": [{"name": name}, {"name": "no-such-topic"}, {"name": "bad name!"}],
                    "timeout_ms": 30000}
        else:
            spec = {"topic_names": [name, "no-such-topic", "bad name!"], "timeout_ms": 30000}
        await side.call(f"v{v}", K.DELETE_TOPICS, v, spec)
    await side.call("internal topic", K.DELETE_TOPICS, 5, {"topic_names": ["__consumer_offsets"],
                                                           "timeout_ms": 30000})


BROKER_RESOURCE, TOPIC_RESOURCE, LOGGER_RESOURCE = 4, 2, 8


async def describe_configs(side: Side) -> None:
    for v in versions(K.DESCRIBE_CONFIGS):
        spec: dict = {"resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC,
             "configuration_keys": ["retention.ms", "cleanup.policy", "no.such.key", "min.insync.replicas"]},
            {"resource_type": TOPIC_RESOURCE, "resource_name": "no-such-topic", "configuration_keys": None},
            {"resource_type": TOPIC_RESOURCE, "resource_name": "bad name!", "configuration_keys": None},
            {"resource_type": BROKER_RESOURCE, "resource_name": "0",
             "configuration_keys": ["log.retention.hours", "num.io.threads", "auto.create.topics.enable"]},
            {"resource_type": BROKER_RESOURCE, "resource_name": "7", "configuration_keys": None},
            {"resource_type": BROKER_RESOURCE, "resource_name": "not-a-number", "configuration_keys": None},
        ]}
        if v >= 1:
            spec["include_synonyms"] = True
        if v >= 3:
            spec["include_documentation"] = False
        await side.call(f"v{v}", K.DESCRIBE_CONFIGS, v, spec)
        unknown_type = {"resource_type": 99, "resource_name": "x", "configuration_keys": None}
        await side.call(f"v{v} unknown type", K.DESCRIBE_CONFIGS, v, {**spec, "resources": [
            *spec["resources"][:2], unknown_type]})
    await side.call("all topic configs", K.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC, "configuration_keys": None}],
        "include_synonyms": False})


async def alter_configs(side: Side) -> None:
    for v in versions(K.ALTER_CONFIGS):
        for validate in (True, False):
            await side.call(f"v{v} validate={validate}", K.ALTER_CONFIGS, v, {"validate_only": validate, "resources": [
                {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC,
                 "configs": [{"name": "retention.ms", "value": str(3600000 + v)}]},
                {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v0",
                 "configs": [{"name": "cleanup.policy", "value": "sometimes"}]},
                {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v1",
                 "configs": [{"name": "no.such.config", "value": "1"}]},
                {"resource_type": TOPIC_RESOURCE, "resource_name": "no-such-topic",
                 "configs": [{"name": "retention.ms", "value": "1"}]},
                {"resource_type": BROKER_RESOURCE, "resource_name": "0",
                 "configs": [{"name": "log.cleaner.threads", "value": "2"}]},
                {"resource_type": BROKER_RESOURCE, "resource_name": "",
                 "configs": [{"name": "no.such.broker.config", "value": "2"}]},
            ]})
    # Kafka stored that unknown key in the cluster-wide default (ACCEPTED.md): cleared, so later scenarios
    # describing the default see the same on both sides.
    await side.call("clear the broker default", K.ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
        {"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": []}]})
    await describe_after_alter(side)


async def incremental_alter_configs(side: Side) -> None:
    for v in versions(K.INCREMENTAL_ALTER_CONFIGS):
        await side.call(f"v{v}", K.INCREMENTAL_ALTER_CONFIGS, v, {"validate_only": False, "resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC, "configs": [
                {"name": "retention.bytes", "config_operation": 0, "value": "1000000"},
                {"name": "retention.ms", "config_operation": 1, "value": None},
                {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]},
            {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v0", "configs": [
                {"name": "retention.ms", "config_operation": 2, "value": "5"}]},
            {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v1", "configs": [
                {"name": "retention.ms", "config_operation": 9, "value": "5"}]},
            {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v2", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "soon"}]},
            {"resource_type": TOPIC_RESOURCE, "resource_name": f"{TOPIC}-v3", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "7"},
                {"name": "retention.ms", "config_operation": 1, "value": None}]},
            {"resource_type": BROKER_RESOURCE, "resource_name": "0", "configs": [
                {"name": "log.cleaner.threads", "config_operation": 0, "value": "1"}]},
            {"resource_type": LOGGER_RESOURCE, "resource_name": "0", "configs": [
                {"name": "kafka.server.KafkaApis", "config_operation": 0, "value": "INFO"}]},
        ]})
        await side.call(f"v{v} validate only", K.INCREMENTAL_ALTER_CONFIGS, v, {"validate_only": True, "resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC, "configs": [
                {"name": "segment.bytes", "config_operation": 0, "value": "10"}]}]})
        await side.call(f"v{v} append unknown", K.INCREMENTAL_ALTER_CONFIGS, v, {"validate_only": True, "resources": [
            {"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC, "configs": [
                {"name": "no.such.config", "config_operation": 2, "value": "x"}]},
            {"resource_type": BROKER_RESOURCE, "resource_name": "0", "configs": [
                {"name": "no.such.broker.config", "config_operation": 3, "value": "x"}]}]})
    await describe_after_alter(side)


async def describe_after_alter(side: Side) -> None:
    await side.call("after", K.DESCRIBE_CONFIGS, 1, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": name,
         "configuration_keys": ["retention.ms", "retention.bytes", "cleanup.policy", "segment.bytes"]}
        for name in (TOPIC, f"{TOPIC}-v0", f"{TOPIC}-v1", f"{TOPIC}-v2", f"{TOPIC}-v3")], "include_synonyms": True})


THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                  "replica.alter.log.dirs.io.max.bytes.per.second")


async def broker_throttle_rates(side: Side) -> None:
    """The rates kafka-reassign-partitions sets on a broker (dynamic-only keys in Kafka 2.8): refused below 0,
    listed with their synonyms once the broker applied them, gone once deleted."""
    def change(label: str, operation: int, value: str | None, broker: str = "0") -> Any:
        return side.call(label, K.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": False, "resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": broker, "configs": [
                {"name": key, "config_operation": operation, "value": value} for key in THROTTLE_RATES]}]})

    describe = {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": "0", "configuration_keys": [
        *THROTTLE_RATES, "alter.log.dirs.replication.quota.window.num",
        "alter.log.dirs.replication.quota.window.size.seconds"]}], "include_synonyms": True}

    async def applied(count: int) -> None:  # a broker applies its dynamic configs when ZooKeeper tells it
        for _ in range(300):
            answer = await side.call("poll", K.DESCRIBE_CONFIGS, 1, describe, record=False)
            if sum(c.name in THROTTLE_RATES for c in answer.results[0].configs) == count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{side.name}: {count} throttle rates not described")

    await change("below zero", 0, "-1")
    await change("set", 0, "1000000")
    await applied(3)
    await side.call("described", K.DESCRIBE_CONFIGS, 1, describe)
    await change("deleted", 1, None)
    await applied(0)
    await side.call("described after delete", K.DESCRIBE_CONFIGS, 1, describe)
    # the cluster-wide default: listed in the default resource with its own synonym only, and in the broker's
    await change("set as the default", 0, "2000000", broker="")
    await applied(3)
    await side.call("described with the default", K.DESCRIBE_CONFIGS, 1, describe)
    await side.call("the default resource", K.DESCRIBE_CONFIGS, 1, {"resources": [
        {"resource_type": BROKER_RESOURCE, "resource_name": "", "configuration_keys": None}], "include_synonyms": True})
    await change("default deleted", 1, None, broker="")
    await applied(0)


async def broker_config_requirements(side: Side) -> None:
    """Values that parse but that KafkaConfig.validateValues refuses in the config they would make: a retention
    of 0 ms, a dedupe buffer of 1 MiB or less per cleaner thread (validated only, nothing changes)."""
    for key, value in (("log.retention.ms", "0"), ("log.retention.ms", "1"),
                       ("log.cleaner.dedupe.buffer.size", "1048576"), ("log.cleaner.dedupe.buffer.size", "1048577")):
        await side.call(f"{key}={value}", K.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": True, "resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": "0", "configs": [
                {"name": key, "config_operation": 0, "value": value}]}]})


async def describe_log_dirs(side: Side) -> None:
    for v in versions(K.DESCRIBE_LOG_DIRS):
        await side.call(f"v{v} some", K.DESCRIBE_LOG_DIRS, v, {"topics": [
            {"topic": TOPIC, "partitions": [0, 1, 99]}, {"topic": "no-such-topic", "partitions": [0]}]})
        await side.call(f"v{v} none", K.DESCRIBE_LOG_DIRS, v, {"topics": []})


async def elect_leaders(side: Side) -> None:
    for v in versions(K.ELECT_LEADERS):
        spec: dict = {"timeout_ms": 10000, "topic_partitions": [
            {"topic": TOPIC, "partitions": [0, 99]}, {"topic": "no-such-topic", "partitions": [0]}]}
        if v >= 1:
            spec["election_type"] = v % 2
        await side.call(f"v{v}", K.ELECT_LEADERS, v, spec)
    await side.call("v2 bad type", K.ELECT_LEADERS, 2, {"timeout_ms": 10000, "election_type": 5,
                                                        "topic_partitions": [{"topic": TOPIC, "partitions": [0]}]})


async def reassignments(side: Side) -> None:
    await side.call("alter", K.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": TOPIC, "partitions": [
            {"partition_index": 0, "replicas": [0]},
            {"partition_index": 1, "replicas": [3]},
            {"partition_index": 2, "replicas": [0, 0]},
            {"partition_index": 99, "replicas": [0]},
            {"partition_index": 0, "replicas": None}]},
        {"name": "no-such-topic", "partitions": [{"partition_index": 0, "replicas": [0]}]}]})
    await side.call("cancel nothing", K.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 1, "replicas": None}]}]})
    await side.call("list all", K.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": None})
    await side.call("list some", K.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 10000, "topics": [
        {"name": TOPIC, "partition_indexes": [0, 1, 99]}, {"name": "no-such-topic", "partition_indexes": [0]}]})


SCENARIOS = {f.__name__: f for f in (
    api_versions, create_topics, metadata, describe_cluster, create_partitions, delete_topics, describe_configs,
    alter_configs, incremental_alter_configs, broker_throttle_rates, broker_config_requirements, describe_log_dirs,
    elect_leaders, reassignments)}

"""The Apache Kafka Java client (each version of jvm.CLIENT_VERSIONS) against a 3-broker Odradek cluster.

Each (version, group) runs in one JVM (odradek.jvmtests.Main, src/main/java) that checks its scenarios and
reports a line per scenario; a test here is one scenario of one version: it passes when the scenario's checks
held and the client logged no WARN/ERROR line that jvm.BENIGN_LOG_LINES does not explain. Some scenarios are
checked further here, on the brokers' logs on disk.
"""

from __future__ import annotations

import pytest

from odradek.protocol.records import iter_batches
from odradek.protocol.records.compression import Compression

from . import jvm

pytestmark = pytest.mark.jvm

PRODUCER = ["acks-0", "acks-1", "acks-all", "codec-none", "codec-gzip", "codec-snappy", "codec-lz4", "codec-zstd",
            "idempotent-default", "transactional-offsets", "fencing-zombie"]
CONSUMER = ["group-eager-range", "group-cooperative-sticky", "static-membership", "offsets-for-times", "seek",
            "read-committed-aborted"]
ADMIN = ["topics-create-partitions-delete", "configs", "list-offsets", "delete-records", "describe-cluster",
         "describe-log-dirs", "describe-producers", "consumer-groups", "acls-without-authorizer", "scram-credentials",
         "client-quotas", "reassign-and-elect-leaders"]
GROUPS = {"producer": PRODUCER, "consumer": CONSUMER, "admin": ADMIN}
# Calls the 2.8 client does not have: the scenario's first client major version.
SINCE_MAJOR = {"describe-producers": 3}  # Admin.describeProducers (KIP-664) came with 3.0


def runnable(version: str, scenarios: list[str]) -> list[str]:
    return [s for s in scenarios if int(version.split(".")[0]) >= SINCE_MAJOR.get(s, 0)]


def cases(group: str) -> list[tuple[str, str]]:
    return [(version, scenario) for version in jvm.CLIENT_VERSIONS for scenario in runnable(version, GROUPS[group])]


@pytest.fixture(scope="module")
def java_runs(three_broker_cluster):
    """``runs(version, group)``: the group's results, from one JVM run per (version, group) in this module."""
    runs: dict[tuple[str, str], jvm.GroupRun] = {}

    def get(version: str, group: str) -> jvm.GroupRun:
        if (version, group) not in runs:
            prefix = "j" + version.replace(".", "")  # the versions share the cluster: names of their own
            runs[version, group] = jvm.run_group(version, group, runnable(version, GROUPS[group]),
                                                 three_broker_cluster.bootstrap_servers, prefix)
        return runs[version, group]

    return get


def passed(java_runs, version: str, group: str, scenario: str) -> jvm.ScenarioResult:
    run = java_runs(version, group)
    assert run.client_version == version, "the class path holds another kafka-clients"
    result = run.results[scenario]
    assert result.ok, result.error
    assert not jvm.troubling(result.log_lines), "the Java client logged:\n" + "\n".join(result.log_lines)
    return result


def batches_on_disk(cluster, topic: str, partitions: int):
    for broker in cluster.brokers:
        for p in range(partitions):
            for segment in sorted((broker.log_dirs / f"{topic}-{p}").glob("*.log")):
                yield from iter_batches(segment.read_bytes())


@pytest.mark.parametrize(("version", "scenario"), cases("producer"))
def test_producer(java_runs, three_broker_cluster, version, scenario):
    result = passed(java_runs, version, "producer", scenario)
    if scenario.startswith("codec-"):
        codec = Compression[scenario.removeprefix("codec-").upper()]
        stored = {Compression(b.compression) for b in batches_on_disk(three_broker_cluster, result.detail["topic"], 3)}
        assert stored == {codec}, "the batches keep the producer's codec on every replica"
    elif scenario == "idempotent-default":
        batches = list(batches_on_disk(three_broker_cluster, result.detail["topic"], 3))
        assert batches and all(b.has_producer_id for b in batches), "idempotent batches carry a producer id"


@pytest.mark.parametrize(("version", "scenario"), cases("consumer"))
def test_consumer(java_runs, version, scenario):
    passed(java_runs, version, "consumer", scenario)


@pytest.mark.parametrize(("version", "scenario"), cases("admin"))
def test_admin(java_runs, version, scenario):
    passed(java_runs, version, "admin", scenario)

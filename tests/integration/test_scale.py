"""Many partitions per broker (issue 18), on real broker processes: a broker whose open-file limit is far below
its number of partitions serves them all and says once which limit it would need; a LeaderAndIsr of thousands
of partitions is applied while the broker goes on answering other requests. Behaviour only: the figures are
benchmarks/bench_scale.py's."""

from __future__ import annotations

import asyncio
import os
import stat
import sys

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.messages import DescribeLogDirsRequest

from ..conftest import module_cluster
from .helpers import run, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OPEN_FILE_LIMIT = 200
NARROW_PARTITIONS = 320  # Kafka would need one descriptor per segment: more than the limit


@pytest.fixture(scope="module")
def narrow_cluster(zookeeper, tmp_path_factory):
    """One broker started under ``ulimit -n 200`` (soft and hard: the broker cannot raise it)."""
    data = tmp_path_factory.mktemp("narrow")
    python = data / "python-ulimit"
    python.write_text(f"#!/bin/sh\nulimit -n {OPEN_FILE_LIMIT}\nexec {sys.executable} \"$@\"\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    yield from module_cluster(zookeeper, data / "cluster", 1, python=str(python))


def test_a_broker_with_fewer_descriptors_than_partitions_serves_them_all(narrow_cluster):
    cluster = narrow_cluster
    pid = cluster.brokers[0].process.pid

    async def main():
        async with SimpleClient(cluster.bootstrap_servers, request_timeout=60) as client:
            assert (await client.create_topics({"narrow": (NARROW_PARTITIONS, 1)}, timeout_ms=120_000))["narrow"] == 0
            await client.wait_for_leaders("narrow", timeout=120)
            for partition in range(NARROW_PARTITIONS):
                result = await client.produce("narrow", partition, [(None, b"value-%d" % partition)])
                assert result.error_code == 0, (partition, result)
            for partition in range(NARROW_PARTITIONS):
                fetched = await client.fetch("narrow", partition, 0, max_wait_ms=0)
                assert fetched.error_code == 0 and [r.value for r in fetched.records] == [b"value-%d" % partition]

    run(main(), timeout=280)
    assert len(os.listdir(f"/proc/{pid}/fd")) < OPEN_FILE_LIMIT
    log = cluster.broker_log(0).read_text()
    assert "Open-file limit (ulimit -n) 200" in log
    warnings = [line for line in log.splitlines() if "exceed its descriptor budget" in line]
    assert len(warnings) == 1 and "raise ulimit -n to at least" in warnings[0]
    assert "Too many open files" not in log


def test_a_leader_and_isr_of_thousands_of_partitions_leaves_the_broker_answering_meanwhile(odradek_cluster_factory):
    """While the controller's LeaderAndIsr creating a 2,000-partition topic is applied, DescribeLogDirs (any
    request) is answered and sees part of the logs: the broker yields between slices of the request."""
    cluster = odradek_cluster_factory(brokers=1)
    partitions = 2000
    request = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(
        topic="wide", partitions=list(range(partitions)))])

    async def main() -> list[int]:
        seen: list[int] = []
        async with SimpleClient(cluster.bootstrap_servers, request_timeout=60) as admin, \
                SimpleClient(cluster.bootstrap_servers, request_timeout=60) as observer:
            await observer.metadata(topics=[])
            creating = asyncio.create_task(admin.create_topics({"wide": (partitions, 1)}, timeout_ms=0))
            while len(seen) < 2 or seen[-1] < partitions:
                response = await observer.send(0, request)
                seen.append(sum(len(t.partitions) for r in response.results for t in r.topics))
                await asyncio.sleep(0.005)
            assert (await creating)["wide"] == 0
        return seen

    seen = run(main(), timeout=280)
    assert any(0 < count < partitions for count in seen), seen
    assert seen[-1] == partitions
    wait_until(lambda: len(cluster.metadata(timeout=30).brokers) == 1, what="the broker in metadata")

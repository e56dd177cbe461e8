"""The Java client while a broker dies: an idempotent producer (each kafka-clients version) writes at a steady
pace while the leader of a partition is SIGKILLed and later restarted; every send succeeds and every record
is in the log exactly once, on every replica."""

from __future__ import annotations

import pytest

from tests.integration.log_inspection import duplicates_on_disk

from . import jvm

pytestmark = [pytest.mark.jvm, pytest.mark.timeout(600)]

KILL_AT, RESTART_AT = 1000, 2600  # acknowledged records (of 4000) when the leader dies and comes back


@pytest.fixture(scope="module")
def failover_cluster(zookeeper, tmp_path_factory):
    from tests.conftest import module_cluster

    # A cluster of its own: a test here kills brokers.
    yield from module_cluster(zookeeper, tmp_path_factory.mktemp("java-failover"), 3)


@pytest.mark.parametrize("version", jvm.CLIENT_VERSIONS)
def test_idempotent_producer_through_a_leader_kill(failover_cluster, version):
    cluster = failover_cluster
    scenario = "idempotent-through-leader-kill"
    process = jvm.start_group(version, "failover", [scenario], cluster.bootstrap_servers,
                              "f" + version.replace(".", ""))
    stderr, topic, killed = [], None, None
    try:
        for line in process.stderr:
            stderr.append(line.rstrip("\n"))
            if line.startswith("##topic "):
                topic = line.split()[1]
            elif line.startswith("##progress "):
                acked = int(line.split()[1])
                if killed is None and acked >= KILL_AT:
                    with cluster.client() as client:
                        killed = client.metadata(topics=[topic]).leader_for(topic, 0)
                    cluster.kill_broker(killed)
                elif killed is not None and acked >= RESTART_AT and not cluster.broker_alive(killed):
                    cluster.start_broker(killed)
        stdout = process.stdout.read()
        process.wait(timeout=jvm.GROUP_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
    assert killed is not None, "the producer never reached the kill point:\n" + "\n".join(stderr[-20:])
    if not cluster.broker_alive(killed):
        cluster.start_broker(killed)
    result = jvm.group_results([scenario], stdout, "\n".join(stderr), process.returncode).results[scenario]
    assert result.ok, result.error
    troubling = jvm.troubling(result.log_lines, jvm.BROKER_KILLED_LOG_LINES)
    assert not troubling, "the Java client logged:\n" + "\n".join(troubling)
    cluster.wait_for_brokers(3)
    same_epoch, cross_epoch = duplicates_on_disk(cluster, topic, 3)
    assert not same_epoch and not cross_epoch, "records stored twice:\n" + "\n".join((same_epoch + cross_epoch)[:10])

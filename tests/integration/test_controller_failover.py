"""Controller failover with real broker processes (issue 4, "Verified by").

SIGKILL the broker that is controller: once its ZooKeeper session ends, another broker wins /controller with
a higher /controller_epoch, every survivor's Metadata names it, the partitions the dead broker led get new
leaders, and topics are created through it. Restarted, the old controller is a plain broker: it finds
/controller taken, accepts the new controller's requests and leads partitions again.
"""

from __future__ import annotations

import signal
import time

from odradek.clients.simple_client import SyncSimpleClient
from tests.integration.helpers import wait_until

SESSION_S = 6.0  # tests/conftest.py's zookeeper.session.timeout.ms
# Kafka's promise: a new controller within the session timeout plus a few seconds (the failure bound here)
FAILOVER_BOUND_S = SESSION_S + 8.0
WAIT_S = 60.0  # upper bound for the cluster to converge; never a speed assertion


def metadata_of(cluster, broker_id: int, topics: list[str] | None = None):
    """Metadata as broker ``broker_id`` itself answers it (its own metadata cache), or None if it cannot."""
    port = cluster.brokers[broker_id].port
    try:
        with SyncSimpleClient(f"127.0.0.1:{port}", request_timeout=2.0, connect_timeout=2.0, retries=0) as client:
            return client.metadata(topics if topics is not None else [])
    except Exception:  # not listening yet: the caller polls again
        return None


def agreed_controller(cluster, brokers: list[int]) -> tuple[int] | None:
    """(the controller,) every one of ``brokers`` names and lists as live, if they agree (a tuple, as
    broker 0 is a falsy answer)."""
    answers = [metadata_of(cluster, b) for b in brokers]
    if any(md is None for md in answers):
        return None
    named = {md.controller_id for md in answers}
    if len(named) == 1 and all(md.controller_id in md.brokers for md in answers):
        return (named.pop(),)
    return None


def write_and_read_back(cluster, topic: str, partitions: int, tag: bytes) -> None:
    """An acks=all record to every partition, then read back from each leader."""
    with cluster.client(retries=8) as client:
        for p in range(partitions):
            result = client.produce(topic, p, [(None, tag + b"-%d" % p)], acks=-1)
            assert result.error_code == 0, (topic, p, result)
            fetched = client.fetch(topic, p, result.base_offset, max_wait_ms=100)
            assert [r.value for r in fetched.records][:1] == [tag + b"-%d" % p]


def test_sigkilled_controller_is_replaced_and_rejoins_as_a_plain_broker(odradek_cluster_factory, zk_client_factory):
    cluster = odradek_cluster_factory(brokers=3)
    zk = zk_client_factory(cluster.zookeeper_connect)
    (old,) = wait_until(lambda: agreed_controller(cluster, [0, 1, 2]), WAIT_S, "every broker to name one controller")
    assert zk.get_controller_id() == old
    epoch = zk.get_controller_epoch()[0]
    # Partitions spread over all three brokers: the controller leads one of them (preferred replicas spread evenly).
    with cluster.client() as client:
        assert client.create_topics({"before": (3, 3)}) == {"before": 0}
        client.wait_for_leaders("before", timeout=WAIT_S)
        assert old in {p.leader for p in client.metadata(["before"]).topics["before"].partitions.values()}
    write_and_read_back(cluster, "before", 3, b"first")

    cluster.kill_broker(old, signal.SIGKILL)
    killed_at = time.monotonic()
    survivors = [b for b in range(3) if b != old]
    (new,) = wait_until(lambda: (c := agreed_controller(cluster, survivors)) not in (None, (old,)) and c,
                     FAILOVER_BOUND_S, "the survivors' Metadata to name a new controller")
    print(f"\ncontroller {old} SIGKILLed; broker {new} is controller in every survivor's Metadata "
          f"{time.monotonic() - killed_at:.1f} s later (session timeout {SESSION_S:g} s)")
    assert new in survivors and zk.get_controller_id() == new
    assert zk.get_controller_epoch()[0] == epoch + 1  # one election, one increment

    # The new controller handled the death of the old one, which led a partition: every partition is led
    # by a survivor again and takes acks=all writes.
    with cluster.client() as client:
        metadata = client.wait_for_leaders("before", timeout=WAIT_S)
        assert {p.leader for p in metadata.topics["before"].partitions.values()} <= set(survivors)
    write_and_read_back(cluster, "before", 3, b"second")

    # Topic creation goes through the new controller; only the two live brokers get replicas.
    with cluster.client() as client:
        assert client.create_topics({"during": (4, 2)}) == {"during": 0}
        metadata = client.wait_for_leaders("during", timeout=WAIT_S)
        assert all(set(p.replicas) == set(survivors) for p in metadata.topics["during"].partitions.values())
    write_and_read_back(cluster, "during", 4, b"during")

    # The old controller comes back: /controller is taken, so it stays a plain broker and hears the new one.
    cluster.start_broker(old)
    assert wait_until(lambda: agreed_controller(cluster, [0, 1, 2]), WAIT_S, "all three to agree") == (new,)
    assert zk.get_controller_id() == new and zk.get_controller_epoch()[0] == epoch + 1
    # It rejoins: back in the ISR of the partitions it replicates, and it leads again where it is preferred.
    with cluster.client() as client:
        wait_until(lambda: all(len(p.isr) == 3 for p in client.metadata(["before"]).topics["before"]
                               .partitions.values()), WAIT_S, "the restarted broker to rejoin every ISR")
        assert client.create_topics({"after": (3, 3)}) == {"after": 0}
        metadata = client.wait_for_leaders("after", timeout=WAIT_S)
        assert old in {p.leader for p in metadata.topics["after"].partitions.values()}
    write_and_read_back(cluster, "after", 3, b"after")
    assert metadata_of(cluster, old, ["after"]).topics["after"].partitions.keys() == {0, 1, 2}

"""Three brokers whose only listener is SASL_SSL (odradek-cluster's ``--security sasl_ssl``): the controller,
the replica fetchers and the transaction markers all go broker to broker over TLS with SCRAM-SHA-512 as the
``admin`` user. An idempotent confluent-kafka producer writes through SASL_SSL while the leader of its
partitions is SIGKILLed and restarted; nothing acknowledged is lost, the restarted broker catches up over the
secured inter-broker path, and a transaction commits across the cluster. The ACL authorizer is on
(allow.everyone.if.no.acl.found=false, super.users=User:admin): the brokers' ClusterAction requests and
follower fetches pass because they authenticate as ``admin``."""

from __future__ import annotations

import signal
import uuid

import pytest

from odradek.clients import Admin, Consumer, NewTopic, Producer
from odradek.tools.local_cluster import LocalCluster
from odradek.clients.errors import KafkaConnectionError
from tests.conftest import TEST_BROKER_OVERRIDES
from tests.integration.helpers import IdempotentProducerLoad, wait_until
from tests.integration.log_inspection import stored_records

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
WAIT_S = 120.0  # upper bound for the cluster to converge; never a speed assertion
TOPIC, PARTITIONS = "secured", 3
AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin",
              "allow.everyone.if.no.acl.found": "false"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("sasl-ssl-cluster"), 3, zookeeper=zookeeper, base_port=0,
                           chroot=f"/odradek-{uuid.uuid4().hex}", broker_overrides={**TEST_BROKER_OVERRIDES, **AUTHORIZER},
                           security="sasl_ssl")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout=15.0)


def librdkafka_config(cluster: LocalCluster) -> dict[str, str]:
    kwargs = cluster.security.client_kwargs()
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": kwargs["ssl_cafile"],
            "sasl.mechanism": kwargs["sasl_mechanism"], "sasl.username": kwargs["sasl_plain_username"],
            "sasl.password": kwargs["sasl_plain_password"]}


def isr_of(admin: Admin, partition: int) -> list[int]:
    return sorted(admin.describe_topics([TOPIC])[0].partitions[partition].isr)


def test_leader_killed_under_load_loses_nothing_and_comes_back(cluster):
    security = cluster.security.client_kwargs()
    with Admin(cluster.bootstrap_servers, **security) as admin:
        assert admin.describe_acls() == []  # the authorizer is on (SECURITY_DISABLED otherwise), no ACL anywhere
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, topic_configs={"min.insync.replicas": "2"})])
        wait_until(lambda: all(isr_of(admin, p) == [0, 1, 2] for p in range(PARTITIONS)), WAIT_S,
                   "every replica in sync over SASL_SSL")
        leader = admin.describe_topics([TOPIC])[0].partitions[0].leader
        with IdempotentProducerLoad(cluster.bootstrap_servers, TOPIC, PARTITIONS, timeout_s=180,
                                    config=librdkafka_config(cluster)) as load:
            wait_until(lambda: len(load.acked) > 500, WAIT_S, "the producer to get going")
            cluster.kill_broker(leader, signal.SIGKILL)
            acked = len(load.acked)
            wait_until(lambda: len(load.acked) > acked + 500, WAIT_S, "records acknowledged after the SIGKILL")
            cluster.start_broker(leader)
            wait_until(lambda: all(isr_of(admin, p) == [0, 1, 2] for p in range(PARTITIONS)), WAIT_S,
                       f"broker {leader} back in every ISR (its fetchers on the secured listener)")
    assert not load.failed, load.failed[:5]
    for broker in cluster.brokers:  # every replica, the restarted one included, holds every acknowledged record
        stored = {value for p in range(PARTITIONS) for _, value, *_ in stored_records(broker.log_dirs, TOPIC, p)}
        assert load.acked <= stored, f"broker {broker.broker_id}: {len(load.acked - stored)} records missing"
    with Consumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id="check", auto_offset_reset="earliest",
                  consumer_timeout_ms=15000, **security) as consumer:
        read = set()
        for record in consumer:
            read.add(record.value)
            if load.acked <= read:
                break
    assert load.acked <= read


def test_a_transaction_commits_with_markers_over_the_secured_listener(cluster):
    security = cluster.security.client_kwargs()
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap_servers, **security) as admin:
        admin.create_topics([NewTopic(topic, 3, 3)])
    with Producer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="secured-txn", **security) as producer:
        producer.init_transactions()
        with producer.transaction():
            for n in range(30):
                producer.send(topic, b"%d" % n, partition=n % 3)
    with Consumer(topic, bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed",
                  auto_offset_reset="earliest", consumer_timeout_ms=15000, **security) as consumer:
        values = [record.value for _, record in zip(range(30), consumer)]
    assert sorted(values, key=int) == [b"%d" % n for n in range(30)]


def test_controller_failover_then_a_reassignment_over_the_secured_listener(cluster):
    """The controller is SIGKILLed: another broker takes over and drives the others over SASL_SSL (its
    LeaderAndIsr and UpdateMetadata need ClusterAction) and the old one comes back; a partition is then
    reassigned to a broker that had no replica of it, which catches up by follower fetches (ClusterAction again)
    and joins the ISR. Every broker authenticates as ``admin``; there is no ACL and
    allow.everyone.if.no.acl.found=false."""
    security = cluster.security.client_kwargs()
    topic = f"moved-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap_servers, **security) as admin:
        old = admin.describe_cluster().controller_id
        first, second = [b.broker_id for b in cluster.brokers if b.broker_id != old]
        admin.create_topics([NewTopic(topic, replica_assignments={0: [first, old]})])
        with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all", **security) as producer:
            for n in range(20):
                producer.send(topic, b"%d" % n, partition=0)
        cluster.kill_broker(old, signal.SIGKILL)
        def new_controller() -> bool:
            try:
                return admin.describe_cluster().controller_id in (first, second)
            except KafkaConnectionError:  # asked the killed broker over its old connection: ask again
                return False
        wait_until(new_controller, WAIT_S, "a new controller among the live brokers")
        cluster.start_broker(old)
        wait_until(lambda: sorted(admin.describe_topics([topic])[0].partitions[0].isr) == sorted([first, old]), WAIT_S,
                   f"broker {old} back in the ISR, led by the new controller")
        admin.alter_partition_reassignments({(topic, 0): [first, second]}, raise_errors=True)
        wait_until(lambda: not admin.list_partition_reassignments() and
                   sorted(admin.describe_topics([topic])[0].partitions[0].isr) == sorted([first, second]), WAIT_S,
                   f"the reassignment to broker {second} to complete")
    stored = {value for _, value, *_ in stored_records(cluster.brokers[second].log_dirs, topic, 0)}
    assert stored == {b"%d" % n for n in range(20)}

"""ACLs with real users: the issue's configuration as written (INTERNAL SASL_PLAINTEXT for the brokers as
``admin``, EXTERNAL SASL_SSL with SCRAM, OPEN PLAINTEXT) with its authorizer lines:

    authorizer.class.name=kafka.security.authorizer.AclAuthorizer
    super.users=User:admin
    allow.everyone.if.no.acl.found=false

The SCRAM users are made before the broker starts (``odradek-configs --zookeeper``), the ACLs by ``admin``
through ``odradek-acls --command-config``. alice, with only Read on a topic and a group, reads it and can
do nothing else; ANONYMOUS on the OPEN listener may do nothing no ACL allows; bob's idempotent producer
needs Write on some topic and his transactional one Write on its transactional id; carol has no ACL at
all; and a user who is not a super user forging controller requests gets CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import uuid

import pytest

from odradek.tools.local_ca import LocalCA
from odradek.tools.local_zookeeper import free_port
from odradek.clients.security.client_security import ClientSecurity
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.errors import (  # type: ignore[attr-defined]
    ClusterAuthorizationFailedError, TopicAuthorizationFailedError,
)
from odradek.protocol.messages import (
    InitProducerIdRequest, LeaderAndIsrRequest, MetadataRequest, StopReplicaRequest,
)

from ..conftest import new_cluster
from .helpers import console_tool, delivery_errors, first_consumed, run
from .security_clients import Profile

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

ORDERS, PAYMENTS = "orders", "payments"
SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'


class Secured:
    def __init__(self, cluster, ca: LocalCA, ports: dict[str, int], work) -> None:
        self.cluster, self.ports = cluster, ports
        external = f"localhost:{ports['EXTERNAL']}"

        def user(name: str) -> Profile:
            return Profile(name, external, "SASL_SSL", str(ca.cert_path), mechanism="SCRAM-SHA-256", username=name,
                           password=f"{name}-secret")
        self.alice, self.bob, self.carol = user("alice"), user("bob"), user("carol")
        self.admin = Profile("admin", f"127.0.0.1:{ports['INTERNAL']}", "SASL_PLAINTEXT", mechanism="SCRAM-SHA-512",
                             username="admin", password="admin-secret")
        self.anonymous = Profile("anonymous", f"127.0.0.1:{ports['OPEN']}", "PLAINTEXT")
        self.admin_config = work / "admin.properties"
        self.admin_config.write_text(self.admin.properties())

    def acls(self, *args: str) -> str:
        return console_tool("acls", "--bootstrap-server", self.admin.bootstrap, "--command-config",
                            str(self.admin_config), *args).stdout


def add_user(connect: str, user: str, config: str) -> None:
    console_tool("configs", "--zookeeper", connect, "--alter", "--add-config", config, "--entity-type", "users",
                 "--entity-name", user)


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory):
    work = tmp_path_factory.mktemp("secured-acls")
    ca = LocalCA(work / "ca")
    keystore = ca.issue("broker", hosts=["localhost", "127.0.0.1"])
    ports = {name: free_port() for name in ("INTERNAL", "EXTERNAL")}
    overrides = {  # the issue's configuration, ports and paths filled in
        "listeners": f"INTERNAL://127.0.0.1:{ports['INTERNAL']},EXTERNAL://127.0.0.1:{ports['EXTERNAL']},"
                     "OPEN://127.0.0.1:{port}",
        "advertised.listeners": f"INTERNAL://127.0.0.1:{ports['INTERNAL']},EXTERNAL://localhost:{ports['EXTERNAL']},"
                                "OPEN://127.0.0.1:{port}",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL,OPEN:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM,
        "listener.name.external.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.cert_path),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
    }
    cluster = new_cluster(work / "cluster", zookeeper, 1, overrides)
    add_user(cluster.zookeeper_connect, "admin", "SCRAM-SHA-512=[password=admin-secret]")
    for name in ("alice", "bob", "carol"):
        add_user(cluster.zookeeper_connect, name, f"SCRAM-SHA-256=[password={name}-secret]")
    cluster.start()
    ports["OPEN"] = cluster.brokers[0].port
    try:
        secured = Secured(cluster, ca, ports, work)
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient(secured.admin.librdkafka())
        for topic in (ORDERS, PAYMENTS, "bob-events"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
        producer = Producer(secured.admin.librdkafka())
        for topic in (ORDERS, PAYMENTS):
            for i in range(3):
                producer.produce(topic, f"{topic}-{i}".encode())
        assert producer.flush(60) == 0
        secured.acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", ORDERS,
                     "--group", "alice-group")
        secured.acls("--add", "--allow-principal", "User:bob", "--producer", "--topic", "bob-events",
                     "--transactional-id", "bob-tx")
        yield secured
    finally:
        cluster.stop(timeout=15.0)


def first_poll(profile: Profile, topic: str, group: str):
    return first_consumed(profile.librdkafka(), topic, group)


def delivery_error(profile: Profile, topic: str, **config):
    return delivery_errors({**profile.librdkafka(), **config}, topic)[0]


def test_the_acls_odradek_acls_wrote_over_sasl(secured):
    listed = secured.acls("--list", "--principal", "User:alice")
    assert listed.startswith("ACLs for principal `User:alice`\n")
    assert "ResourcePattern(resourceType=GROUP, name=alice-group, patternType=LITERAL)" in listed
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    alice_config = secured.admin_config.with_name("alice.properties")
    alice_config.write_text(secured.alice.properties())
    refused = console_tool("acls", "--bootstrap-server", secured.alice.bootstrap, "--command-config",
                           str(alice_config), "--list", check=False)
    assert (refused.returncode, refused.stdout) == (1, "Error while executing ACL command: Cluster authorization "
                                                       "failed.\n")


def test_a_user_with_only_read_reads_and_does_nothing_else(secured):
    from confluent_kafka import KafkaError
    from kafka.admin import KafkaAdminClient
    assert first_poll(secured.alice, ORDERS, "alice-group") == (None, b"orders-0")
    assert delivery_error(secured.alice, ORDERS).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = KafkaAdminClient(bootstrap_servers=secured.alice.bootstrap, **secured.alice.kafka_python())
    try:
        result = admin.delete_topics([ORDERS], raise_errors=False)
        assert result["topics"][0]["error_code"] == TopicAuthorizationFailedError.code
    finally:
        admin.close()
    error, _ = first_poll(secured.alice, PAYMENTS, "alice-group")
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    error, _ = first_poll(secured.alice, ORDERS, f"other-{uuid.uuid4().hex[:6]}")
    assert error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_anonymous_on_the_open_listener_may_do_nothing_no_acl_allows(secured):
    from confluent_kafka import KafkaError

    async def topics_seen():
        async with SimpleClient(secured.anonymous.bootstrap) as client:
            everything = await client.send(None, MetadataRequest(topics=None), version=9)
            named = await client.send(None, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
                name=ORDERS)]), version=9)
            return [t.name for t in everything.topics], named.topics[0].error_code

    assert run(topics_seen()) == ([], TopicAuthorizationFailedError.code)
    assert delivery_error(secured.anonymous, ORDERS).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_idempotent_and_transactional_producers_need_their_acls(secured):
    from confluent_kafka import KafkaException, Producer
    assert delivery_error(secured.bob, "bob-events", **{"enable.idempotence": True}) is None  # Write on a topic

    async def producer_ids():  # the idempotent producer's InitProducerId, as bob and as carol (no ACL at all)
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        answers = []
        for profile in (secured.bob, secured.carol):
            async with SimpleClient(profile.bootstrap, security=ClientSecurity.from_kwargs(**profile.ours())) as c:
                answers.append((await c.send(None, request, version=4)).error_code)
        return answers

    assert run(producer_ids()) == [0, ClusterAuthorizationFailedError.code]
    for transactional_id, allowed in (("bob-tx", True), ("not-bobs-tx", False)):
        producer = Producer({**secured.bob.librdkafka(), "transactional.id": transactional_id})
        if not allowed:
            with pytest.raises(KafkaException) as refused:
                producer.init_transactions(30)
            assert refused.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
            continue
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("bob-events", b"in a transaction")
        producer.commit_transaction(30)


def test_a_user_who_is_not_a_super_user_cannot_forge_controller_requests(secured):
    stop = StopReplicaRequest(controller_id=0, controller_epoch=1_000, topic_states=[
        StopReplicaRequest.StopReplicaTopicState(topic_name=ORDERS, partition_states=[
            StopReplicaRequest.StopReplicaTopicState.StopReplicaPartitionState(
                partition_index=0, leader_epoch=1_000, delete_partition=True)])])
    state = LeaderAndIsrRequest.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
        partition_index=0, controller_epoch=1_000, leader=0, leader_epoch=1_000, isr=[0], partition_epoch=9,
        replicas=[0])
    leader_and_isr = LeaderAndIsrRequest(controller_id=0, controller_epoch=1_000, type=0, live_leaders=[],
                                         topic_states=[LeaderAndIsrRequest.LeaderAndIsrTopicState(
                                             topic_name=ORDERS, partition_states=[state])])

    async def forge():
        security = ClientSecurity.from_kwargs(**secured.alice.ours())
        async with SimpleClient(secured.alice.bootstrap, security=security) as client:
            return (await client.send(None, stop, version=3), await client.send(None, leader_and_isr, version=5))

    stopped, led = run(forge())
    assert stopped.error_code == led.error_code == ClusterAuthorizationFailedError.code
    admin_security = ClientSecurity.from_kwargs(**secured.admin.ours())

    async def records():
        async with SimpleClient(secured.admin.bootstrap, security=admin_security) as client:
            return [r.value for r in (await client.fetch(ORDERS, 0, 0)).records]

    assert run(records()) == [b"orders-0", b"orders-1", b"orders-2"]

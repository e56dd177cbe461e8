"""What ApiVersions advertises is served, as Kafka 2.8 serves it: the audit of ``protocol/api_keys.py`` against
real brokers, DescribeCluster (60), DescribeProducers (61) and the SASL APIs on a PLAINTEXT listener.

- every broker advertises exactly ``KAFKA_2_8_VERSIONS`` (an API is advertised only when a handler is
  registered for it, and every listed key has a codec both ways);
- DescribeCluster through raw requests, our Admin and confluent-kafka's AdminClient (which uses the API):
  brokers on the listener, controller, cluster id, and without an authorizer every Cluster operation;
- DescribeProducers on the leader and on a follower (Kafka 2.8 answers from the local log), idempotent and
  transactional producers from confluent-kafka (open transaction, then committed), NOT_LEADER_OR_FOLLOWER
  on a broker without the partition, UNKNOWN_TOPIC_OR_PARTITION for unknown topics and partitions;
- DescribeGroups v3+ and Metadata v8+ report authorized operations when asked (the group's coordinator only);
- SaslHandshake and SaslAuthenticate answer ILLEGAL_SASL_STATE, as Kafka 2.8 does on a PLAINTEXT listener.
"""

from __future__ import annotations

import asyncio

import pytest

from odradek.clients import Admin, TopicPartition
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
from odradek.protocol.messages import (
    REQUESTS, RESPONSES, ApiVersionsRequest, DescribeClusterRequest, DescribeGroupsRequest, DescribeProducersRequest,
    FindCoordinatorRequest, SaslAuthenticateRequest, SaslHandshakeRequest,
)
from tests.integration.helpers import run, wait_until

pytestmark = pytest.mark.timeout(240)

CLUSTER_OPERATIONS = {5, 7, 8, 9, 10, 11, 12}  # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, *_CONFIGS, IDEMPOTENT_WRITE
TOPIC_OPERATIONS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, *_CONFIGS
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_SASL_STATE = 6, 3, 34


@pytest.fixture(scope="module")
def servers(three_broker_cluster):
    return three_broker_cluster.bootstrap_servers


def test_every_listed_api_is_advertised_by_every_broker(servers):
    for key, (low, high) in KAFKA_2_8_VERSIONS.items():
        assert key in REQUESTS and key in RESPONSES
        assert all(v in REQUESTS[key].valid and v in RESPONSES[key].valid for v in range(low, high + 1))

    async def go():
        async with SimpleClient(servers) as client:
            metadata = await client.metadata([])
            for node in metadata.brokers:
                answer = await client.send(node, ApiVersionsRequest(client_software_name="audit",
                                                                    client_software_version="1"), version=3)
                assert answer.error_code == 0
                assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys} == KAFKA_2_8_VERSIONS
    run(go())


def test_describe_cluster_raw_admin_and_confluent(servers):
    from confluent_kafka.admin import AclOperation, AdminClient

    async def raw():
        async with SimpleClient(servers) as client:
            metadata = await client.metadata_response([])
            plain = await client.send(None, DescribeClusterRequest(include_cluster_authorized_operations=False))
            asked = await client.send(None, DescribeClusterRequest(include_cluster_authorized_operations=True))
            return metadata, plain, asked
    metadata, plain, asked = run(raw())
    assert plain.error_code == 0 and plain.cluster_authorized_operations == -(1 << 31)
    assert asked.cluster_authorized_operations == sum(1 << op for op in CLUSTER_OPERATIONS)
    assert (plain.cluster_id, plain.controller_id) == (metadata.cluster_id, metadata.controller_id)
    assert sorted((b.broker_id, b.host, b.port, b.rack) for b in plain.brokers) == \
        sorted((b.node_id, b.host, b.port, b.rack) for b in metadata.brokers)

    with Admin(bootstrap_servers=servers) as admin:
        ours = admin.describe_cluster(include_authorized_operations=True)
        assert (ours.cluster_id, ours.controller_id, len(ours.brokers)) == (plain.cluster_id, plain.controller_id, 3)
        assert ours.authorized_operations == CLUSTER_OPERATIONS
        assert admin.describe_cluster().authorized_operations is None

    confluent = AdminClient({"bootstrap.servers": servers})  # kept alive until the answer arrives
    theirs = confluent.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert theirs.cluster_id == plain.cluster_id and theirs.controller.id == plain.controller_id
    assert sorted(n.id for n in theirs.nodes) == sorted(b.broker_id for b in plain.brokers)
    assert {op.value for op in theirs.authorized_operations} == CLUSTER_OPERATIONS
    assert AclOperation.IDEMPOTENT_WRITE in theirs.authorized_operations
    # librdkafka asks Metadata v8+ for a topic's operations: without an authorizer, all a Topic supports
    from confluent_kafka import TopicCollection
    with Admin(bootstrap_servers=servers) as admin:
        from odradek.clients import NewTopic
        admin.create_topics([NewTopic("described-operations", 1, 1)])
    [topic] = confluent.describe_topics(TopicCollection(["described-operations"]),
                                        include_authorized_operations=True).values()
    assert {op.value for op in topic.result(timeout=30).authorized_operations} == TOPIC_OPERATIONS


def test_describe_producers_of_idempotent_and_transactional_producers(servers):
    from confluent_kafka import Producer
    with Admin(bootstrap_servers=servers) as admin:
        from odradek.clients import NewTopic
        admin.create_topics([NewTopic("producers-idem", 1, 1), NewTopic("producers-txn", 1, 2)])
        wait_until(lambda: admin.describe_topics(["producers-idem", "producers-txn"])[1].partitions[0].isr[1:],
                   what="the follower of producers-txn in the ISR")
        idempotent = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 0})
        for i in range(10):
            idempotent.produce("producers-idem", value=b"%d" % i, partition=0, timestamp=1_700_000_000_000 + i)
            idempotent.flush(30)
        [state] = admin.describe_producers([TopicPartition("producers-idem", 0)])[TopicPartition("producers-idem", 0)]
        assert (state.producer_epoch, state.last_sequence, state.last_timestamp) == (0, 9, 1_700_000_000_009)
        assert state.coordinator_epoch is None and state.current_transaction_start_offset is None

        txn = Producer({"bootstrap.servers": servers, "transactional.id": "describe-producers"})
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce("producers-txn", value=b"open", partition=0)
        assert txn.flush(30) == 0
        tp = TopicPartition("producers-txn", 0)
        [open_txn] = admin.describe_producers([tp])[tp]
        assert open_txn.current_transaction_start_offset == 0 and open_txn.last_sequence == 0
        txn.commit_transaction(30)  # answered once the commit is prepared; the marker follows

        def closed():
            [state] = admin.describe_producers([tp])[tp]
            return state if state.current_transaction_start_offset is None else None
        done = wait_until(closed, what="the commit marker on the leader")
        assert done.coordinator_epoch is not None and done.last_sequence == 0
        [partition] = admin.describe_topics(["producers-txn"])[0].partitions
        follower = next(r for r in partition.replicas if r != partition.leader)
        # Kafka 2.8 answers from any local log, the follower's too, once it has replicated the marker
        wait_until(lambda: admin.describe_producers([tp], broker_id=follower)[tp] == [done],
                   what="the follower's producer state")

        idem_leader = admin.describe_topics(["producers-idem"])[0].partitions[0].leader
        elsewhere = next(b.node_id for b in admin.describe_cluster().brokers if b.node_id != idem_leader)

    async def raw():
        async with SimpleClient(servers) as client:
            request = DescribeProducersRequest(topics=[
                DescribeProducersRequest.TopicRequest(name="producers-idem", partition_indexes=[0, 7]),
                DescribeProducersRequest.TopicRequest(name="no-such-topic", partition_indexes=[0])])
            return await client.send(elsewhere, request)
    answer = run(raw())
    assert [(t.name, [(p.partition_index, p.error_code, p.active_producers) for p in t.partitions])
            for t in answer.topics] == [("producers-idem", [(0, NOT_LEADER_OR_FOLLOWER, []),
                                                            (7, UNKNOWN_TOPIC_OR_PARTITION, [])]),
                                        ("no-such-topic", [(0, UNKNOWN_TOPIC_OR_PARTITION, [])])]


def test_describe_groups_reports_group_operations_when_asked(servers):
    async def go():
        async with SimpleClient(servers) as client:
            nodes = (await client.metadata([])).brokers
            for _ in range(300):  # the first lookup creates __consumer_offsets; wait for its leaders
                found = await client.send(None, FindCoordinatorRequest(key="nobody-here", key_type=0))
                if found.error_code == 0:
                    break
                await asyncio.sleep(0.1)
            assert found.error_code == 0
            for include, expected in ((True, 1 << 3 | 1 << 6 | 1 << 8), (False, -(1 << 31))):  # READ, DELETE, DESCRIBE
                request = DescribeGroupsRequest(groups=["nobody-here"], include_authorized_operations=include)
                answers = set()
                for node in nodes:  # the coordinator describes the group; the others answer NOT_COORDINATOR
                    [group] = (await client.send(node, request, version=3)).groups
                    answers.add((group.error_code, group.group_state, group.authorized_operations))
                assert answers == {(0, "Dead", expected), (16, "", -(1 << 31))}
    run(go())


def test_sasl_apis_on_a_plaintext_listener_are_illegal_sasl_state(servers):
    async def go():
        async with SimpleClient(servers) as client:
            for version in (0, 1):
                answer = await client.send(None, SaslHandshakeRequest(mechanism="PLAIN"), version=version)
                assert (answer.error_code, answer.mechanisms) == (ILLEGAL_SASL_STATE, [])
            for version in (0, 1, 2):
                answer = await client.send(None, SaslAuthenticateRequest(auth_bytes=b"\x00u\x00p"), version=version)
                assert answer.error_code == ILLEGAL_SASL_STATE and "after successful authentication" in \
                    answer.error_message
            # the connection is still usable afterwards
            assert (await client.send(None, DescribeClusterRequest())).error_code == 0
    run(go())

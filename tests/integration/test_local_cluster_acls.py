"""A secured local cluster (``odradek-cluster start --security sasl_plaintext``) has ACLs on with the admin
as super user: an ordinary authenticated user can neither forge controller requests nor read a topic it
was given no ACL on, while the admin (and the brokers, which log in as admin) can do everything."""

from __future__ import annotations

import uuid

import pytest

from odradek.clients import Admin, NewTopic
from odradek.clients.admin.scram import UserScramCredentialUpsertion
from odradek.clients.security.client_security import ClientSecurity
from odradek.clients.simple_client import SimpleClient
from odradek.protocol.errors import (  # type: ignore[attr-defined]
    ClusterAuthorizationFailedError, SaslAuthenticationFailedError, TopicAuthorizationFailedError,
)
from odradek.protocol.messages import MetadataRequest, StopReplicaRequest
from odradek.tools.local_cluster import LocalCluster
from tests.conftest import TEST_BROKER_OVERRIDES
from tests.integration.helpers import run, wait_until

pytestmark = pytest.mark.timeout(180)
TOPIC = "guarded"


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("acl-cluster"), 1, zookeeper=zookeeper, base_port=0,
                           chroot=f"/odradek-{uuid.uuid4().hex}", broker_overrides=dict(TEST_BROKER_OVERRIDES),
                           security="sasl_plaintext")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout=15.0)


def test_the_admin_is_a_super_user_and_others_need_acls(cluster):
    assert cluster.security.super_users == "User:admin"
    with Admin(cluster.bootstrap_servers, **cluster.security.client_kwargs()) as admin:
        assert admin.describe_acls() == []  # answered, not SECURITY_DISABLED: the authorizer is on
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("mallory", "SCRAM-SHA-256", "mallory-secret")])

    stop = StopReplicaRequest(controller_id=0, controller_epoch=1_000, topic_states=[
        StopReplicaRequest.StopReplicaTopicState(topic_name=TOPIC, partition_states=[
            StopReplicaRequest.StopReplicaTopicState.StopReplicaPartitionState(
                partition_index=0, leader_epoch=1_000, delete_partition=True)])])
    metadata = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                               allow_auto_topic_creation=False)

    async def as_mallory():
        security = ClientSecurity.from_kwargs(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                              sasl_plain_username="mallory", sasl_plain_password="mallory-secret")
        async with SimpleClient(cluster.bootstrap_servers, security=security) as client:
            return await client.send(None, stop, version=3), await client.send(None, metadata, version=9)

    answers = []

    def authenticated() -> bool:  # the new credential reaches the broker through /config/changes
        try:
            answers.append(run(as_mallory()))
            return True
        except SaslAuthenticationFailedError:
            return False

    wait_until(authenticated, 60, "mallory's SCRAM credential to reach the broker")
    stopped, described = answers[0]
    assert stopped.error_code == ClusterAuthorizationFailedError.code
    assert [t.error_code for t in described.topics] == [TopicAuthorizationFailedError.code]
    with Admin(cluster.bootstrap_servers, **cluster.security.client_kwargs()) as admin:
        assert admin.describe_topics([TOPIC])[0].partitions[0].leader == 0  # the forged StopReplica did nothing

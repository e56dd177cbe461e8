"""A failure inside the broker (ZooKeeper's, a parser's) answers UNKNOWN_SERVER_ERROR without its message, as
Kafka's ApiError.fromThrowable does, so that clients learn nothing of the broker's insides."""

import asyncio
from types import SimpleNamespace

from odradek.broker.apis.acl_apis import AclApis
from odradek.broker.apis.scram_credentials import ScramCredentialsApi
from odradek.protocol.acl import AclBinding
from odradek.protocol.errors import UnknownServerError  # type: ignore[attr-defined]
from odradek.protocol.messages import AlterUserScramCredentialsRequest, CreateAclsRequest

INSIDES = "NoNodeError at /kafka-acl/Topic/t, session 0x1003a"


class _Authorizer:
    def create_acls(self, bindings: list[AclBinding]) -> list:
        return [UnknownServerError(INSIDES) for _ in bindings]


def _request(body, version=2):
    return SimpleNamespace(body=body, api_version=version, principal="User:admin", connection=None, api_key=30)


def test_create_acls_hides_the_message_of_a_server_failure():
    auth = SimpleNamespace(authorizer=_Authorizer(), authorize_cluster=lambda request, operation: None)
    services = SimpleNamespace(auth=auth, in_executor=lambda fn, *args: asyncio.sleep(0, fn(*args)))
    body = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:alice", host="*", operation=3,
        permission_type=3)])
    (result,) = asyncio.run(AclApis(services).create_acls(_request(body))).results
    assert (result.error_code, result.error_message) == (UnknownServerError.code, None)


def test_alter_user_scram_credentials_answers_the_default_message_of_a_zookeeper_failure():
    def fail(*args):
        raise RuntimeError(INSIDES)

    zk = SimpleNamespace(get_entity_config=lambda entity_type, name: {}, set_entity_config=fail)
    api = ScramCredentialsApi(SimpleNamespace(zk=zk))
    upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(name="alice", mechanism=1, iterations=4096,
                                                                          salt=b"salt", salted_password=b"x" * 32)
    (result,) = api._alter([upsertion], [])
    assert result.error_code == UnknownServerError.code
    assert result.error_message == "The server experienced an unexpected error when processing the request."

"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554, as Kafka 2.8's ZK mode.

Credentials live in ``/config/users/<sanitized user>`` (broker/security/credential_cache.py has the format).
Describe reads them on any broker: every user with a SCRAM credential when no user is named (sorted),
else each named user once (RESOURCE_NOT_FOUND for one without credentials or an empty name,
DUPLICATE_RESOURCE for one named twice). Alter goes to the controller (NOT_CONTROLLER elsewhere, so clients
move on to it): the client sends salt and salted password, never the password; the broker derives the
stored and server keys, writes the user's whole config back and announces it under ``/config/changes``,
so every broker's credential cache follows. Per user, Kafka's checks and codes: an empty name
(UNACCEPTABLE_CREDENTIAL "Username must not be empty"), an unknown mechanism (UNSUPPORTED_SASL_MECHANISM),
iterations outside [4096, 16384] (UNACCEPTABLE_CREDENTIAL), a user/mechanism pair twice (DUPLICATE_RESOURCE),
deleting a credential that does not exist (RESOURCE_NOT_FOUND). Describing needs Describe on the cluster,
altering Alter (after the controller check), else CLUSTER_AUTHORIZATION_FAILED, as Kafka 2.8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...clients.security.scram import MAX_ITERATIONS, MECHANISMS, MECHANISMS_BY_TYPE, ScramCredential
from ...controller.zk_data import desanitize_entity_name, sanitize_entity_name
from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    DuplicateResourceError, NotControllerError, ResourceNotFoundError, UnacceptableCredentialError, for_code,
    UnknownServerError, UnsupportedSaslMechanismError,
)
from ...protocol.messages import AlterUserScramCredentialsResponse, DescribeUserScramCredentialsResponse
from ..api_errors import error_code_of

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_DescribeResult = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_CredentialInfo = _DescribeResult.CredentialInfo
_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_EMPTY_USER = "Username must not be empty"
# Kafka's Sanitizer keeps dots, and ZooKeeper refuses "." and ".." as path elements: Kafka answers such a
# user UNKNOWN_SERVER_ERROR (the ZooKeeper client's IllegalArgumentException); we never build the path.
_NOT_ZNODE_NAMES = (".", "..")
_NOT_A_ZNODE = "Invalid user name: not a ZooKeeper path element"


def _infos(config: dict[str, str]) -> list[Any]:
    return [_CredentialInfo(mechanism=m.type_id, iterations=ScramCredential.from_text(config[name]).iterations)
            for name, m in MECHANISMS.items() if name in config]


class ScramCredentialsApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    # -- describe ----------------------------------------------------------------------------------
    async def describe(self, request: "Request") -> Any:
        self.services.auth.authorize_cluster(request, AclOperation.DESCRIBE)
        users = [u.name for u in request.body.users] if request.body.users else None
        results = await self.services.in_executor(self._describe, users)
        return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=0, error_message="",
                                                    results=results)  # Kafka's generated default

    def _describe(self, users: list[str] | None) -> list[Any]:
        zk = self.services.zk
        if users is None:
            out = []
            for sanitized in zk.get_children("/config/users"):
                infos = _infos(zk.get_entity_config("users", sanitized))
                if infos:
                    out.append(_DescribeResult(user=desanitize_entity_name(sanitized), error_code=0,
                                               error_message=None, credential_infos=infos))
            return sorted(out, key=lambda r: r.user)
        results = []
        for user in dict.fromkeys(users):
            if not user:
                results.append(_describe_error(user, ResourceNotFoundError.code, _EMPTY_USER))
            elif users.count(user) > 1:
                results.append(_describe_error(user, DuplicateResourceError.code, "Cannot describe SCRAM "
                                               f"credentials for the same user twice in a single request: {user}"))
            elif user in _NOT_ZNODE_NAMES:
                results.append(_describe_error(user, UnknownServerError.code, _NOT_A_ZNODE))
            else:
                infos = _infos(zk.get_entity_config("users", sanitize_entity_name(user)))
                results.append(_DescribeResult(user=user, error_code=0, error_message=None, credential_infos=infos)
                               if infos else _describe_error(user, ResourceNotFoundError.code, "Attempt to describe "
                                                             f"a user credential that does not exist: {user}"))
        return results

    def describe_error(self, request: "Request", code: int) -> Any:
        return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=code, error_message=None,
                                                    results=[])

    # -- alter -------------------------------------------------------------------------------------
    async def alter(self, request: "Request") -> Any:
        controller = self.services.controller
        if controller is None or not controller.is_active:
            raise NotControllerError("this broker is not the controller")
        self.services.auth.authorize_cluster(request, AclOperation.ALTER)
        body = request.body
        results = await self.services.in_executor(self._alter, list(body.upsertions), list(body.deletions))
        return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)

    def _alter(self, upsertions: list[Any], deletions: list[Any]) -> list[Any]:
        failed: dict[str, tuple[int, str]] = {}
        for d in deletions:
            if not d.name:
                failed[d.name] = (UnacceptableCredentialError.code, _EMPTY_USER)
            elif d.mechanism not in MECHANISMS_BY_TYPE:
                failed[d.name] = (UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism")
        for x in (*upsertions, *deletions):
            if x.name in _NOT_ZNODE_NAMES:
                failed[x.name] = (UnknownServerError.code, _NOT_A_ZNODE)
        for u in upsertions:
            mechanism = MECHANISMS_BY_TYPE.get(u.mechanism)
            if failed.get(u.name, (0, ""))[1] == _NOT_A_ZNODE:
                continue  # an illegal upsertion's error replaces its user's illegal deletion's, as in Kafka 2.8
            if not u.name:
                failed[u.name] = (UnacceptableCredentialError.code, _EMPTY_USER)
            elif mechanism is None:
                failed[u.name] = (UnsupportedSaslMechanismError.code, "Unknown SCRAM mechanism")
            elif u.iterations > MAX_ITERATIONS:
                failed[u.name] = (UnacceptableCredentialError.code, "Too many iterations")
            elif u.iterations < mechanism.min_iterations:
                failed[u.name] = (UnacceptableCredentialError.code, "Too few iterations")
        pairs = [(x.name, x.mechanism) for x in (*upsertions, *deletions) if x.name not in failed]
        for name, _ in {p for p in pairs if pairs.count(p) > 1}:
            failed[name] = (DuplicateResourceError.code, "A user credential cannot be altered twice in the same request")
        zk = self.services.zk
        configs = {name: zk.get_entity_config("users", sanitize_entity_name(name))
                   for name, _ in pairs if name not in failed}
        for d in deletions:
            if d.name in configs and MECHANISMS_BY_TYPE[d.mechanism].name not in configs[d.name]:
                failed[d.name] = (ResourceNotFoundError.code, "Attempt to delete a user credential that does not exist")
        results = [_AlterResult(user=name, error_code=code, error_message=message)
                   for name, (code, message) in failed.items()]
        for name, config in configs.items():
            if name in failed:
                continue
            for d in deletions:
                if d.name == name:
                    config.pop(MECHANISMS_BY_TYPE[d.mechanism].name, None)
            for u in upsertions:
                if u.name == name:
                    mechanism = MECHANISMS_BY_TYPE[u.mechanism]
                    credential = ScramCredential.from_salted_password(mechanism, bytes(u.salt),
                                                                      bytes(u.salted_password), u.iterations)
                    config[mechanism.name] = credential.to_text()
            try:
                zk.set_entity_config("users", sanitize_entity_name(name), config)
            except Exception as exc:  # Kafka answers the error's default message, never the exception's
                code = error_code_of(exc)
                results.append(_AlterResult(user=name, error_code=code, error_message=for_code(code).message))
                continue
            results.append(_AlterResult(user=name, error_code=0, error_message=None))
        return results

    def alter_error(self, request: "Request", code: int) -> Any:
        names = dict.fromkeys(x.name for x in (*request.body.upsertions, *request.body.deletions))
        return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=[
            _AlterResult(user=name, error_code=code, error_message=None) for name in names])


def _describe_error(user: str, code: int, message: str) -> Any:
    return _DescribeResult(user=user, error_code=code, error_message=message, credential_infos=[])


def register(apis: "KafkaApis", services: "BrokerServices") -> ScramCredentialsApi:
    api = ScramCredentialsApi(services)
    apis.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, api.describe, api.describe_error)
    apis.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, api.alter, api.alter_error)
    return api

"""InitProducerId (22) for idempotent and transactional producers (FindCoordinator is in group_apis).

Without a transactional id, InitProducerId returns a fresh producer id at epoch 0 (Kafka 2.8 does the
same, also when a v3+ client sends its old id after a fatal error). With one, the transaction
coordinator answers (NOT_COORDINATOR on any other broker): it bumps the epoch, fencing older
producers, after finishing or aborting the id's previous transaction. As Kafka 2.8's KafkaApis, a
request that sets only one of producer id and epoch is INVALID_REQUEST, and versions below 4 get
INVALID_PRODUCER_EPOCH for PRODUCER_FENCED.

Authorization, first, as Kafka 2.8: a transactional id needs Write on it
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs IdempotentWrite on the cluster
or Write on at least one topic (KIP-679; CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.errors import (  # type: ignore[attr-defined]
    ClusterAuthorizationFailedError, InvalidRequestError, TransactionalIdAuthorizationFailedError,
)
from ...protocol.messages import InitProducerIdResponse
from ..coordinator.transaction.trace import trace
from .authorization import CLUSTER, TOPIC, TRANSACTIONAL_ID
from .txn_apis import fenced_for_version

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


class ProducerApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def init_producer_id(self, request: "Request") -> Any:
        body = request.body
        self._authorize(request)
        producer_id, epoch = body.producer_id, body.producer_epoch
        if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
            raise InvalidRequestError(f"producer id {producer_id} and epoch {epoch} must both be set or both -1")
        if body.transactional_id is None:
            producer_id = await self.services.producer_ids.generate_producer_id()
            return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=producer_id,
                                          producer_epoch=0)
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, epoch)
        trace(producer_id, "init-producer-id-received")
        result = await self.services.transaction_coordinator.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, expected)
        trace(result.producer_id, "init-producer-id-answered", error=result.error_code)
        code = fenced_for_version(result.error_code, request.api_version, 4)
        if code:
            return self.init_producer_id_error(request, code)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=result.producer_id,
                                      producer_epoch=result.producer_epoch)

    def _authorize(self, request: "Request") -> None:
        auth, transactional_id = self.services.auth, request.body.transactional_id
        if transactional_id is not None:
            if not auth.authorize(request, AclOperation.WRITE, TRANSACTIONAL_ID, transactional_id):
                raise TransactionalIdAuthorizationFailedError()
        elif not auth.authorize(request, AclOperation.IDEMPOTENT_WRITE, CLUSTER, log_denied=False) and \
                not auth.authorize_by_resource_type(request, AclOperation.WRITE, TOPIC):
            raise ClusterAuthorizationFailedError()

    def init_producer_id_error(self, request: "Request", error_code: int) -> Any:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=error_code, producer_id=-1, producer_epoch=-1)


def register(apis: "KafkaApis", services: "BrokerServices") -> ProducerApis:
    api = ProducerApis(services)
    apis.register(ApiKey.INIT_PRODUCER_ID, api.init_producer_id, api.init_producer_id_error)
    return api

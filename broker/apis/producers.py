"""InitProducerId (22) for idempotent and transactional producers (FindCoordinator is in group_apis).

Without a transactional id, InitProducerId returns a fresh producer id at epoch 0 (Kafka 2.8 does the
same, also when a v3+ client sends its old id after a fatal error). With one, the transaction
coordinator answers (NOT_COORDINATOR on any other broker): it bumps the epoch, fencing older
producers, after finishing or aborting the id's previous transaction. As Kafka 2.8's KafkaApis, a
request that sets only one of producer id and epoch is INVALID_REQUEST, and versions below 4 get
INVALID_PRODUCER_EPOCH for PRODUCER_FENCED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import InvalidRequestError  # type: ignore[attr-defined]
from ...protocol.messages import InitProducerIdResponse
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
        producer_id, epoch = body.producer_id, body.producer_epoch
        if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
            raise InvalidRequestError(f"producer id {producer_id} and epoch {epoch} must both be set or both -1")
        if body.transactional_id is None:
            producer_id = await self.services.producer_ids.generate_producer_id()
            return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=producer_id,
                                          producer_epoch=0)
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, epoch)
        result = await self.services.transaction_coordinator.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, expected)
        code = fenced_for_version(result.error_code, request.api_version, 4)
        if code:
            return self.init_producer_id_error(request, code)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=result.producer_id,
                                      producer_epoch=result.producer_epoch)

    def init_producer_id_error(self, request: "Request", error_code: int) -> Any:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=error_code, producer_id=-1, producer_epoch=-1)


def register(apis: "KafkaApis", services: "BrokerServices") -> ProducerApis:
    api = ProducerApis(services)
    apis.register(ApiKey.INIT_PRODUCER_ID, api.init_producer_id, api.init_producer_id_error)
    return api

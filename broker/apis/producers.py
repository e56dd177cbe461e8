"""InitProducerId (22) for idempotent producers (FindCoordinator is in group_apis).

Without a transactional id, InitProducerId returns a fresh producer id at epoch 0 (Kafka 2.8 does the
same, also when a v3+ client sends its old id after a fatal error). Transactional ids belong to the
transaction coordinator (a later issue): until then they get COORDINATOR_NOT_AVAILABLE, a
retriable error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.errors import CoordinatorNotAvailableError  # type: ignore[attr-defined]
from ...protocol.messages import InitProducerIdResponse

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices


class ProducerApis:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services

    async def init_producer_id(self, request: "Request") -> Any:
        if request.body.transactional_id is not None:
            raise CoordinatorNotAvailableError("transactions are not available on this broker yet")
        producer_id = await self.services.producer_ids.generate_producer_id()
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=producer_id, producer_epoch=0)

    def init_producer_id_error(self, request: "Request", error_code: int) -> Any:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=error_code, producer_id=-1, producer_epoch=-1)


def register(apis: "KafkaApis", services: "BrokerServices") -> ProducerApis:
    api = ProducerApis(services)
    apis.register(ApiKey.INIT_PRODUCER_ID, api.init_producer_id, api.init_producer_id_error)
    return api

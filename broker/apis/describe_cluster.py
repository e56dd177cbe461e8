"""DescribeCluster (60, v0): the brokers on the request's listener, the controller and the cluster id.

As Kafka 2.8's KafkaApis.handleDescribeCluster: every live broker with an endpoint on the listener the
request came in on (with its rack), the controller id from the metadata cache (-1 when none is known),
and the cluster's authorized operations only when asked for (else -2147483648): 0 without Describe on
the cluster, else the operations the principal may perform on it (all it supports without an authorizer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.api_keys import ApiKey
from ...protocol.messages import DescribeClusterResponse
from .authorization import AUTHORIZED_OPERATIONS_OMITTED

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

_Broker = DescribeClusterResponse.DescribeClusterBroker


class DescribeClusterApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.cache = services.metadata_cache
        self.auth = services.auth

    def handle(self, request: "Request") -> Any:
        cache = self.cache
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if request.body.include_cluster_authorized_operations:
            operations = self.auth.cluster_authorized_operations(request)
        brokers = [_Broker(broker_id=broker_id, host=endpoint.host, port=endpoint.port,
                           rack=cache.brokers[broker_id].rack)
                   for broker_id in cache.alive_broker_ids()
                   if (endpoint := cache.endpoint(broker_id, request.listener)) is not None]
        return DescribeClusterResponse(
            throttle_time_ms=0, error_code=0, error_message=None, cluster_id=cache.cluster_id or "",
            controller_id=cache.controller_id if cache.controller_id is not None else -1, brokers=brokers,
            cluster_authorized_operations=operations)

    def error_response(self, request: "Request", error_code: int) -> Any:
        return DescribeClusterResponse(throttle_time_ms=0, error_code=error_code, cluster_id="", brokers=[])


def register(apis: "KafkaApis", services: "BrokerServices") -> DescribeClusterApi:
    api = DescribeClusterApi(services)
    apis.register(ApiKey.DESCRIBE_CLUSTER, api.handle, api.error_response)
    return api

"""The broker's client quotas (Kafka's QuotaManagers: produce, fetch, request) and where requests meet them.

``throttle_response`` is called by KafkaApis for every response before it is encoded (and for an acks=0
Produce, which gets none), as Kafka's RequestHandlerHelper.sendResponseMaybeThrottle:

- Produce: the request's size goes to the ``producer_byte_rate`` sensor, its handler time to the
  ``request_percentage`` one (not for acks=0); the larger throttle wins.
- a consumer's Fetch is throttled by the fetch handler itself (``fetch_throttle_time``), because a
  throttled fetch answers with no data (KafkaApis.handleFetchRequest); the hook only copies its time.
- any other client request: ``request_percentage`` on its handler time.
- broker-to-broker requests (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
  WriteTxnMarkers, a follower's Fetch) are exempt, as Kafka's cluster actions.

A throttle mutes the connection for that long (the response itself goes out at once, KIP-219) and is put
in the response's ``throttle_time_ms`` when its version has the field.

Quotas come from ZooKeeper (``/config/users``, ``/config/clients``): the dynamic config manager passes each
entity's stored config to ``apply_entity_config`` (Kafka's ClientIdConfigHandler / UserConfigHandler), on
the event loop. The static ``quota.producer.default`` / ``quota.consumer.default`` are the last resort for
client-ids (deprecated in Kafka, still honoured).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...protocol.api_keys import ApiKey
from .entity import DEFAULT, UNLIMITED, key_from_path
from .manager import FETCH, PRODUCE, ClientQuotaManager, ClientRequestQuotaManager
from .stats import monotonic_ms

if TYPE_CHECKING:
    from ..config import KafkaConfig

log = logging.getLogger(__name__)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"  # Kafka's KIP-599 quota: not enforced here
# Kafka's QuotaConfigs.isClientOrUserConfig keys and their types (LONG, LONG, DOUBLE, DOUBLE).
QUOTA_KEY_TYPES: dict[str, type] = {PRODUCER_BYTE_RATE: int, CONSUMER_BYTE_RATE: int, REQUEST_PERCENTAGE: float,
                                    CONTROLLER_MUTATION_RATE: float}

_PRODUCE = int(ApiKey.PRODUCE)
_FETCH = int(ApiKey.FETCH)
# Kafka's cluster actions: answered without a request-quota check (sendResponseExemptThrottle).
EXEMPT_APIS = frozenset(int(k) for k in (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                                         ApiKey.CONTROLLED_SHUTDOWN, ApiKey.WRITE_TXN_MARKERS))
_THROTTLE_FIELD: dict[tuple[int, int], bool] = {}  # (api key, version) -> has throttle_time_ms


def _has_throttle_field(body: Any, version: int) -> bool:
    message = getattr(type(body), "MESSAGE", None)
    if message is None:
        return False
    key = (message.api_key, version)
    found = _THROTTLE_FIELD.get(key)
    if found is None:
        found = _THROTTLE_FIELD[key] = any(f.name == "throttle_time_ms" and f.present_in(version)
                                           for f in message.fields)
    return found


def _client(request: Any) -> tuple[str, str]:
    """(principal name, client-id) of a request, as Kafka's session.principal.getName and header.clientId."""
    return request.principal.name, request.header.client_id or ""


def handler_seconds(request: Any) -> float:
    """Time the request held a handler: from dequeue until the handler returned or parked
    (Kafka's requestThreadTimeNanos); 0 outside the handler pool."""
    start = getattr(request, "dequeue_time", 0.0)
    if not start:
        return 0.0
    end = getattr(request, "local_complete_time", 0.0) or time.monotonic()
    return max(0.0, end - start)


class ClientQuotas:
    def __init__(self, produce: ClientQuotaManager, fetch: ClientQuotaManager,
                 request: ClientRequestQuotaManager) -> None:
        self.produce = produce
        self.fetch = fetch
        self.request = request
        self._warned_mutation_rate = False

    @classmethod
    def from_config(cls, config: KafkaConfig, clock: Callable[[], float] = monotonic_ms) -> "ClientQuotas":
        samples, window = config.get("quota.window.num"), config.get("quota.window.size.seconds")
        producer_default = float(config.get("quota.producer.default"))
        consumer_default = float(config.get("quota.consumer.default"))
        for key, value in (("quota.producer.default", producer_default), ("quota.consumer.default", consumer_default)):
            if value < UNLIMITED:
                log.warning("%s has been deprecated in 0.11.0.0 and will be removed in a future release. "
                            "Use dynamic quota defaults instead.", key)
        return cls(ClientQuotaManager(PRODUCE, quota_default=producer_default, num_samples=samples,
                                      window_seconds=window, clock=clock),
                   ClientQuotaManager(FETCH, quota_default=consumer_default, num_samples=samples,
                                      window_seconds=window, clock=clock),
                   ClientRequestQuotaManager(num_samples=samples, window_seconds=window, clock=clock))

    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return (self.produce, self.fetch, self.request)

    # -- configuration --------------------------------------------------------------------------------

    def apply_entity_config(self, entity_type: str, sanitized_path: str, config: Mapping[str, str]) -> None:
        """An entity's stored config: ``clients/<c>``, ``users/<u>`` or ``users/<u>/clients/<c>`` (names
        sanitized, ``<default>`` for the defaults). A key that is absent removes that quota."""
        if entity_type == "clients":
            key = key_from_path(None, sanitized_path)
        elif entity_type == "users":
            parts = sanitized_path.split("/")
            if len(parts) not in (1, 3) or (len(parts) == 3 and parts[1] != "clients"):
                raise ValueError(f"Invalid quota entity path: {sanitized_path}")
            key = key_from_path(parts[0], parts[2] if len(parts) == 3 else None)
        else:
            raise ValueError(f"not a client quota entity type: {entity_type}")
        for manager, name in ((self.produce, PRODUCER_BYTE_RATE), (self.fetch, CONSUMER_BYTE_RATE),
                              (self.request, REQUEST_PERCENTAGE)):
            manager.update_quota(key, _quota_value(config, name, entity_type, sanitized_path))
        if CONTROLLER_MUTATION_RATE in config and not self._warned_mutation_rate:
            self._warned_mutation_rate = True
            log.warning("%s (set for %s/%s) is not enforced by this broker", CONTROLLER_MUTATION_RATE, entity_type,
                        sanitized_path)

    # -- requests -------------------------------------------------------------------------------------

    def throttle_response(self, request: Any, body: Any) -> None:
        """KafkaApis' hook, before ``body`` is encoded (``body`` is None for an acks=0 Produce)."""
        throttle = request.throttle_time_ms
        if throttle is None:
            throttle = request.throttle_time_ms = self._record(request)
        if throttle and body is not None:
            # an ApiVersions request at a version we do not speak is answered at v0
            version = 0 if request.unsupported_version else request.header.api_version
            if _has_throttle_field(body, version):
                body.throttle_time_ms = throttle

    def _record(self, request: Any) -> int:
        api_key = request.header.api_key
        if api_key in EXEMPT_APIS:
            return 0
        produce_quota, request_quota = self.produce, self.request
        if not (request_quota.quotas_enabled or (api_key == _PRODUCE and produce_quota.quotas_enabled)):
            return 0
        if api_key == _FETCH and request.body is not None and request.body.replica_id >= 0:
            return 0  # a follower: exempt (the fetch handler skips its own quota path for it too)
        user, client_id = _client(request)
        now = produce_quota.clock()
        bandwidth = 0
        acks_zero = False
        if api_key == _PRODUCE and request.body is not None:
            bandwidth = produce_quota.maybe_record_and_get_throttle_time_ms(user, client_id, request.size, now)
            acks_zero = request.body.acks == 0  # the request quota does not apply to acks=0
        handler = 0 if acks_zero else request_quota.maybe_record_handler_time(user, client_id, handler_seconds(request),
                                                                              now)
        throttle = max(bandwidth, handler)
        if throttle > 0:
            manager = produce_quota if bandwidth > handler else request_quota
            manager.throttle(request.connection, throttle, user, client_id)
        return throttle

    def fetch_max_bytes(self, request: Any) -> float:
        """A consumer's fetch is capped at what the quota window allows (Kafka's maxQuotaWindowBytes)."""
        return self.fetch.max_value_in_quota_window(*_client(request))

    @property
    def fetch_enabled(self) -> bool:
        return self.fetch.quotas_enabled or self.request.quotas_enabled

    def fetch_throttle_time(self, request: Any, response_size: int) -> int:
        """A consumer's Fetch about to answer ``response_size`` bytes: record the request and fetch quotas;
        when either is violated the connection is muted, the bytes are taken back (the answer will be
        empty) and the throttle time is returned (Kafka's handleFetchRequest.processResponseCallback)."""
        user, client_id = _client(request)
        fetch_quota = self.fetch
        now = fetch_quota.clock()
        handler = self.request.maybe_record_handler_time(user, client_id, handler_seconds(request), now)
        bandwidth = fetch_quota.maybe_record_and_get_throttle_time_ms(user, client_id, response_size, now)
        throttle = max(handler, bandwidth)
        if throttle > 0:
            if fetch_quota.quotas_enabled:
                fetch_quota.unrecord(user, client_id, response_size, now)
            manager = fetch_quota if bandwidth > handler else self.request
            manager.throttle(request.connection, throttle, user, client_id)
        request.throttle_time_ms = throttle
        return throttle


def _quota_value(config: Mapping[str, str], name: str, entity_type: str, path: str) -> float | None:
    raw = config.get(name)
    if raw is None:
        return None
    try:
        return float(QUOTA_KEY_TYPES[name](raw))
    except ValueError:
        log.error("Ignoring %s=%r of %s/%s: not a number", name, raw, entity_type, path)
        return None


__all__ = ["ClientQuotas", "QUOTA_KEY_TYPES", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE",
           "CONTROLLER_MUTATION_RATE", "DEFAULT", "EXEMPT_APIS"]

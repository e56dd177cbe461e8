"""Metadata (3): brokers, controller, cluster id and topics from the metadata cache, plus auto-creation.

As Kafka 2.8's handleTopicMetadataRequest: every live broker with an endpoint on the listener the
request came in on (the full list, always: librdkafka stops re-bootstrapping after an answer with
no brokers), the live controller (-1 if none yet), and
per topic its partitions. A missing topic is created when the request allows it and
``auto.create.topics.enable`` is on, and answered LEADER_NOT_AVAILABLE until the controller has
elected its leaders; otherwise UNKNOWN_TOPIC_OR_PARTITION.

With an authorizer (Kafka 2.8's checks): topics the principal may not Describe are left out of an
all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named; auto-creation needs Create on
the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED otherwise). v8+ fill the authorized
operations fields when asked (every supported operation when there is no authorizer).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from ...protocol.acl import AclOperation
from ...protocol.api_keys import ApiKey
from ...protocol.fields import EncodedArray
from ...protocol.errors import (  # type: ignore[attr-defined]
    InvalidReplicationFactorError,
    InvalidTopicError,
    KafkaError,
    LeaderNotAvailableError,
    ReplicaNotAvailableError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from ...protocol.messages import MetadataResponse
from ...protocol.types import ZERO_UUID
from ...controller.admin_zk import validate_topic_name
from ..metadata_cache import INTERNAL_TOPICS
from .authorization import CLUSTER, TOPIC

if TYPE_CHECKING:
    from ..kafka_apis import KafkaApis
    from ..network.request_channel import Request
    from .services import BrokerServices

log = logging.getLogger(__name__)

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition


class MetadataApi:
    def __init__(self, services: "BrokerServices") -> None:
        self.services = services
        self.cache = services.metadata_cache
        self.config = services.config
        self.auth = services.auth
        # (listener, version) -> topic -> its entry in the answer (see _entry)
        self._memo: dict[tuple[str, int], dict[str, _TopicEntry]] = {}

    def handle(self, request: "Request") -> Any:
        body = request.body
        version = request.api_version
        all_topics = body.topics is None or (version == 0 and not body.topics)
        if all_topics:
            names = self.cache.all_topics()
        else:
            names = list(dict.fromkeys(t.name for t in body.topics))
        refused: list[tuple[str, bool]] = []  # (name, is_internal) answered TOPIC_AUTHORIZATION_FAILED
        if self.auth.enabled:
            # Topics the principal may not describe are hidden, or refused when named (Kafka 2.8).
            names, hidden = self.auth.partition_authorized(request, AclOperation.DESCRIBE, TOPIC, names, str,
                                                           log_denied=not all_topics)
            if not all_topics:
                refused += [(name, False) for name in hidden]
        missing = [n for n in names if not self.cache.contains_topic(n)]
        auto_create = body.allow_auto_topic_creation and self.config.get("auto.create.topics.enable")
        if missing and auto_create and body.topics is not None:
            if not self.auth.authorize(request, AclOperation.CREATE, CLUSTER, log_denied=False):
                missing, uncreatable = self.auth.partition_authorized(request, AclOperation.CREATE, TOPIC, missing, str)
                names = [n for n in names if n not in uncreatable]
                refused += [(name, name in INTERNAL_TOPICS) for name in uncreatable]
            if missing:
                return self._create_then_answer(request, names, missing, refused)
        # Kafka 2.8 answers a missing topic it will not create INVALID_TOPIC_EXCEPTION when its name is illegal
        return self._answer(request, names, {n: _missing_topic_error(n) for n in missing}, refused)

    async def _create_then_answer(self, request: "Request", names: list[str], missing: list[str],
                                  refused: list[tuple[str, bool]]) -> Any:
        errors = {}
        for name in missing:
            errors[name] = await self._auto_create(name)
        return self._answer(request, names, errors, refused)

    async def _auto_create(self, topic: str) -> int:
        if topic in INTERNAL_TOPICS:
            return UnknownTopicOrPartitionError.code  # created by their coordinators (later issues)
        partitions = self.config.get("num.partitions")
        replication = self.config.get("default.replication.factor")
        try:
            await self.services.in_executor(self.services.admin.create_topic, topic, partitions, replication, {})
            log.info("Auto-created topic %s with %d partitions, replication factor %d", topic, partitions,
                     replication)
        except TopicAlreadyExistsError:
            pass
        except (InvalidTopicError, InvalidReplicationFactorError) as exc:
            return exc.code
        except KafkaError as exc:
            log.warning("Cannot auto-create topic %s: %s", topic, exc)
            return exc.code
        return LeaderNotAvailableError.code

    def _answer(self, request: "Request", names: list[str], errors: dict[str, int],
                refused: list[tuple[str, bool]]) -> Any:
        version = request.api_version
        listener = request.listener
        cache = self.cache
        brokers = []
        for broker_id in cache.alive_broker_ids():
            endpoint = cache.endpoint(broker_id, listener)
            if endpoint is not None:
                brokers.append(_Broker(node_id=broker_id, host=endpoint.host, port=endpoint.port,
                                       rack=cache.brokers[broker_id].rack))
        live = tuple(b.node_id for b in brokers)
        self._forget_deleted_topics()
        topics: list[Any] = []  # _Topic for a topic answered with an error, else its _TopicEntry
        for name in names:
            if name in errors or not cache.contains_topic(name):
                code = errors.get(name, UnknownTopicOrPartitionError.code)
                topics.append(_Topic(error_code=code, name=name, topic_id=ZERO_UUID,
                                     is_internal=name in INTERNAL_TOPICS, partitions=[]))
            else:
                topics.append(self._entry(name, listener, version, live))
        body = request.body
        with_operations = version >= 8 and body.include_topic_authorized_operations
        structs = with_operations or request.log_entry is not None  # filled in, or logged as JSON
        if structs:
            topics = [t.fresh_topic() if type(t) is _TopicEntry else t for t in topics]
            if with_operations:
                for topic in topics:
                    topic.topic_authorized_operations = self.auth.authorized_operations(request, TOPIC, topic.name)
        topics += [_Topic(error_code=TopicAuthorizationFailedError.code, name=name, topic_id=ZERO_UUID,
                          is_internal=internal, partitions=[]) for name, internal in refused]
        if not structs:
            topics = _encoded(topics, version)
        controller = cache.controller_id if cache.controller_id is not None else -1
        response = MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id=cache.cluster_id,
                                    controller_id=controller, topics=topics)
        if 8 <= version <= 10 and body.include_cluster_authorized_operations:
            response.cluster_authorized_operations = self.auth.cluster_authorized_operations(request)
        return response

    def _entry(self, topic: str, listener: str, version: int, live: tuple[int, ...]) -> "_TopicEntry":
        """The topic's entry, built again only when its partitions, its id or the live brokers on the listener
        changed (each UpdateMetadata replaces only the changed topics' maps): an all-topics answer at 3,336
        topics (10,000 partitions) took 31 ms on the event loop (build 16, error count 2.5, encoding 12.5),
        nearly all of it for topics that had not changed since the previous answer."""
        parts = self.cache.topic_partitions(topic)
        topic_id = self.cache.topic_ids.get(topic, ZERO_UUID)
        memo = self._memo.setdefault((listener, version), {})
        entry = memo.get(topic)
        if entry is None or entry.parts is not parts or entry.live != live or entry.topic_id != topic_id:
            entry = memo[topic] = _TopicEntry(topic, topic_id, parts, live,
                                              self._build_partitions(parts, listener, version))
        return entry

    def _forget_deleted_topics(self) -> None:
        """Drop the entries of topics gone from the cache, once they are more than the topics left."""
        for memo in self._memo.values():
            if len(memo) > 2 * len(self.cache.partitions) + 100:
                for topic in [t for t in memo if not self.cache.contains_topic(t)]:
                    del memo[topic]

    def _build_partitions(self, parts: dict[int, Any], listener: str, version: int) -> list[Any]:
        """The entries of a topic's partitions (``parts``, the metadata cache's map of them)."""
        cache = self.cache
        result = []
        for index, p in sorted(parts.items()):
            replicas, isr = p.replicas, p.isr
            leader_alive = cache.endpoint(p.leader, listener) is not None
            error = 0 if leader_alive else LeaderNotAvailableError.code
            if version == 0:  # v0 lists only live replicas and flags the missing ones (Kafka does)
                replicas = [r for r in replicas if cache.endpoint(r, listener) is not None]
                isr = [r for r in isr if cache.endpoint(r, listener) is not None]
                if leader_alive and (len(replicas) < len(p.replicas) or len(isr) < len(p.isr)):
                    error = ReplicaNotAvailableError.code
            result.append(_Partition(error_code=error, partition_index=index,
                                     leader_id=p.leader if leader_alive else -1, leader_epoch=p.leader_epoch,
                                     replica_nodes=replicas, isr_nodes=isr, offline_replicas=p.offline_replicas))
        return result


class _TopicEntry:
    """One topic of the answer at one listener and version, and what it was built from; its encoding and
    error codes once an answer asked for them. Shared between answers: never changed after it is built."""

    __slots__ = ("name", "topic_id", "parts", "live", "partitions", "data", "error_counts")

    def __init__(self, name: str, topic_id: Any, parts: Any, live: tuple[int, ...], partitions: list[Any]) -> None:
        self.name, self.topic_id, self.parts, self.live, self.partitions = name, topic_id, parts, live, partitions
        self.data: bytes | None = None
        self.error_counts: dict[int, int] = {}

    def fresh_topic(self) -> Any:
        return _Topic(error_code=0, name=self.name, topic_id=self.topic_id, is_internal=self.name in INTERNAL_TOPICS,
                      partitions=self.partitions)

    def encoded(self, encode: Callable[[Any], bytes]) -> bytes:
        """Its bytes by ``encode`` (the topic element encoder of its version), once."""
        if self.data is None:
            counts = {0: 1}
            for p in self.partitions:
                counts[p.error_code] = counts.get(p.error_code, 0) + 1
            self.error_counts = counts
            self.data = encode(self.fresh_topic())
        return self.data


def _encoded(topics: list[Any], version: int) -> EncodedArray:
    """The answer's topics as one EncodedArray: kept entries reuse their encoding."""
    encode = MetadataResponse.MESSAGE.element_encoder("topics", version)
    parts, counts = [], {}
    for topic in topics:
        if type(topic) is _TopicEntry:
            parts.append(topic.encoded(encode))
            for code, n in topic.error_counts.items():
                counts[code] = counts.get(code, 0) + n
        else:
            parts.append(encode(topic))
            counts[topic.error_code] = counts.get(topic.error_code, 0) + 1
    return EncodedArray(b"".join(parts), len(parts), counts)


def register(apis: "KafkaApis", services: "BrokerServices") -> MetadataApi:
    api = MetadataApi(services)
    apis.register(ApiKey.METADATA, api.handle)
    return api


def _missing_topic_error(name: str) -> int:
    try:
        validate_topic_name(name)
    except InvalidTopicError as exc:
        return exc.code
    return UnknownTopicOrPartitionError.code

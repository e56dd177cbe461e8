"""Cluster administration: ``AIOAdmin`` (asyncio) and its blocking twin ``Admin``.

Named after kafka-python's ``KafkaAdminClient`` (CONVENTIONS.md §5):

    with Admin(bootstrap_servers="127.0.0.1:9092") as admin:
        admin.create_topics([NewTopic("events", num_partitions=6, replication_factor=3)])
        admin.create_partitions({"events": NewPartitions(total_count=8)})
        print(admin.describe_topics(["events"]))
        print(admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "events")]))
        admin.incremental_alter_configs({ConfigResource(ConfigResourceType.TOPIC, "events"):
                                         [AlterConfigOp("retention.ms", "3600000")]})
        admin.delete_records({TopicPartition("events", 0): 100})
        print(admin.list_consumer_groups(), admin.describe_consumer_groups(["billing"]))
        admin.create_acls([AclBinding(ResourcePattern(ResourceType.TOPIC, "events"),
                                      AccessControlEntry("User:alice", "*", AclOperation.READ,
                                                         AclPermissionType.ALLOW))])   # acls.py
        admin.delete_topics(["events"])

Every call runs as Kafka 2.8's AdminClient runs one (``calls.py``): it has a deadline, its
``timeout_ms`` or else ``default_api_timeout_ms`` (60 s), and a try that loses its connection, times
out (``request_timeout_ms``) or gets a retriable error is made again after ``retry_backoff_ms`` at the
node its route picks then; past the deadline it raises ``AdminTimeoutError`` naming the last failure.
Topic administration goes to the controller (looked up again after NOT_CONTROLLER or a lost
connection), a broker's configuration to that broker, descriptions to the least loaded broker, records
to partition leaders, group operations to the group's coordinator (``groups.py``). A
``SimpleClient`` owns the connections and the metadata picture. Errors are raised as the
``odradek.protocol.errors`` class of their Kafka code, carrying the broker's message when it sent one;
like the Java AdminClient, a call about several topics raises the first failure after all were tried
(``raise_errors=False`` returns every topic's error instead).
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from ...protocol.api_keys import ApiKey
from ...protocol.config_resource import ConfigResourceType
from ...protocol.errors import (  # type: ignore[attr-defined]
    KafkaError, NotLeaderOrFollowerError, UnknownTopicOrPartitionError, UnsupportedVersionError, for_code,
)
from ...protocol.messages import (
    AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
)
from ...protocol.types import ZERO_UUID
from .calls import ANY, LEADERS, MAX_RETRIES, AdminCalls, AdminTimeoutError, Broker, Try, at_controller, final
from .acls import (
    AccessControlEntry, AccessControlEntryFilter, AclAdmin, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)
from .groups import ConsumerGroupDescription, Coordinator, GroupAdmin, GroupListing, MemberDescription
from .log_dirs import LogDirAdmin, LogDirDescription, ReplicaInfo, TopicPartitionReplica
from .partitions import ElectionType, PartitionAdmin, PartitionReassignment
from .quotas import (
    ClientQuotaAlteration, ClientQuotaEntity, ClientQuotaFilter, ClientQuotaFilterComponent, QuotaAdmin,
)
from .producers import ProducerAdmin, ProducerState
from .scram import (ScramAdmin, ScramCredentialInfo, UserScramCredentialDeletion, UserScramCredentialsDescription,
                          UserScramCredentialUpsertion)
from ..security.client_security import SECURITY_DEFAULTS, client_security
from ..simple_client import SimpleClient, SyncSimpleClient, _creatable_topic
from ..types import KafkaConfigurationError, TopicPartition, check_configs

_DEFAULT_TIMEOUT_MS = 30000
_DEFAULT_API_TIMEOUT_MS = 60000
# Kafka's describe calls fail at once on a topic the broker asked does not know; a broker learns of a new
# topic from the controller's UpdateMetadata a moment after it is created, so we ask again for this long.
_PROPAGATION_GRACE_S = 2.5
DEFAULT_CONFIG_SOURCE = 5
LATEST, EARLIEST = -1, -2  # list_offsets specs besides timestamps (Kafka's OffsetSpec.latest()/earliest())


class NewTopic:
    """A topic to create (kafka-python's ``NewTopic``). -1 counts take the broker's defaults
    (num.partitions, default.replication.factor); ``replica_assignments`` maps partition -> broker ids."""

    def __init__(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignments: Mapping[int, Sequence[int]] | None = None,
                 topic_configs: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignments = dict(replica_assignments or {})
        self.topic_configs = dict(topic_configs or {})

    def __repr__(self) -> str:
        return (f"NewTopic({self.name!r}, num_partitions={self.num_partitions}, "
                f"replication_factor={self.replication_factor})")


class NewPartitions:
    """The partition count a topic should grow to (kafka-python's ``NewPartitions``);
    ``new_assignments`` lists the new partitions' replicas in partition order."""

    def __init__(self, total_count: int, new_assignments: Sequence[Sequence[int]] | None = None) -> None:
        self.total_count = total_count
        self.new_assignments = [list(a) for a in new_assignments] if new_assignments else None

    def __repr__(self) -> str:
        return f"NewPartitions(total_count={self.total_count})"


class BrokerMetadata(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


class ClusterDescription(NamedTuple):
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerMetadata]
    # the AclOperation codes the caller may use on the cluster; None unless asked for
    authorized_operations: frozenset[int] | None = None


class PartitionDescription(NamedTuple):
    topic: str
    partition: int
    leader: int  # -1 when leaderless
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error_code: int


class TopicDescription(NamedTuple):
    topic: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[PartitionDescription]

    @property
    def topic_id_string(self) -> str:
        """The id as Kafka prints it (Uuid.toString: URL-safe base64 of the 16 bytes, unpadded)."""
        return format_topic_id(self.topic_id)


def format_topic_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class ConfigResource:
    """A topic or broker (by id) whose configuration to describe; ``configs`` limits the keys.
    Hashable (``configs`` is kept as a tuple) so results can be keyed by it."""
    resource_type: ConfigResourceType
    name: str
    configs: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.configs is not None:
            object.__setattr__(self, "configs", tuple(self.configs))


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int  # 1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG, ...
    is_default: bool
    read_only: bool
    is_sensitive: bool
    synonyms: list[tuple[str, str | None, int]]  # (name, value, source), highest precedence first


class AlterConfigOpType(IntEnum):
    """IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType ids)."""
    SET = 0
    DELETE = 1
    APPEND = 2  # list-valued keys: add to the list
    SUBTRACT = 3  # list-valued keys: remove from the list


class AlterConfigOp(NamedTuple):
    """One change of ``incremental_alter_configs`` (Kafka's AlterConfigOp); DELETE needs no value."""
    name: str
    value: str | None = None
    op_type: AlterConfigOpType = AlterConfigOpType.SET


class AIOAdmin(GroupAdmin, LogDirAdmin, PartitionAdmin, QuotaAdmin, ProducerAdmin, ScramAdmin, AclAdmin):
    """``AIOAdmin(bootstrap_servers="host:9092", client_id=..., request_timeout_ms=30000,
    default_api_timeout_ms=60000, retries=<no limit>, retry_backoff_ms=100)`` and kafka-python's security
    keywords (``security_protocol``, ``ssl_cafile``, ``sasl_mechanism``, ...); ``async with`` or ``await
    close()``. ``request_timeout_ms`` bounds one request, ``default_api_timeout_ms`` a whole call, tries
    included, when the call is given no ``timeout_ms``."""

    def __init__(self, bootstrap_servers: str | list[str] = "localhost:9092", *, client_id: str = "odradek-admin",
                 request_timeout_ms: int = _DEFAULT_TIMEOUT_MS, default_api_timeout_ms: int | None = None,
                 retries: int = MAX_RETRIES, retry_backoff_ms: int = 100, client: SimpleClient | None = None,
                 **security: Any) -> None:
        if default_api_timeout_ms is None:  # as Kafka: a longer request timeout raises the default
            default_api_timeout_ms = max(_DEFAULT_API_TIMEOUT_MS, request_timeout_ms)
        elif default_api_timeout_ms < request_timeout_ms:
            raise KafkaConfigurationError(f"default_api_timeout_ms ({default_api_timeout_ms}) must be no smaller "
                                          f"than request_timeout_ms ({request_timeout_ms})")
        if retries < 0:
            raise KafkaConfigurationError(f"retries must be at least 0, not {retries}")
        # retries=0: the client makes one try per request; the calls' retries are AdminCalls'
        self._client = client or SimpleClient(bootstrap_servers, client_id=client_id,
                                              request_timeout=request_timeout_ms / 1000.0, retries=0,
                                              retry_backoff=retry_backoff_ms / 1000.0,
                                              security=client_security(check_configs(security, SECURITY_DEFAULTS)))
        self._calls = AdminCalls(self._client, request_timeout_ms=request_timeout_ms,
                                 default_api_timeout_ms=default_api_timeout_ms, retries=retries,
                                 retry_backoff_ms=retry_backoff_ms)
        self.request_timeout_ms = request_timeout_ms
        self.default_api_timeout_ms = default_api_timeout_ms

    async def __aenter__(self) -> "AIOAdmin":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._client.close()

    # -- topics -----------------------------------------------------------------------------------
    async def create_topics(self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
                            validate_only: bool = False, *, raise_errors: bool = True
                            ) -> dict[str, KafkaError | None]:
        """Create topics at the controller, which answers once their leaders are elected. A topic answered
        TOPIC_ALREADY_EXISTS after an earlier try of the same call was cut off may be one that try
        created (Kafka reports it alike); the error's message then says so."""
        specs = {t.name: t for t in new_topics}
        creatable = {name: _creatable_topic(
            name, t.replica_assignments or (t.num_partitions, t.replication_factor), t.topic_configs)
            for name, t in specs.items()}
        return await self._at_controller(
            "createTopics", creatable, lambda items, t: CreateTopicsRequest(
                topics=items, timeout_ms=t.timeout_ms, validate_only=validate_only),
            lambda response: response.topics, timeout_ms, raise_errors)

    async def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None, *,
                            raise_errors: bool = True) -> dict[str, KafkaError | None]:
        names = {name: name for name in topics}

        def request(items: list[str], t: Try) -> Any:
            assert t.conn is not None
            if t.conn.version_for(ApiKey.DELETE_TOPICS) >= 6:
                return DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in items],
                                           timeout_ms=t.timeout_ms)
            return DeleteTopicsRequest(topic_names=items, timeout_ms=t.timeout_ms)

        results = await self._at_controller("deleteTopics", names, request, lambda response: response.responses,
                                            timeout_ms, raise_errors)
        self._client.cluster = self._client.cluster.without_topics([n for n, e in results.items() if e is None])
        return results

    async def create_partitions(self, topic_partitions: Mapping[str, NewPartitions], timeout_ms: int | None = None,
                                validate_only: bool = False, *, raise_errors: bool = True
                                ) -> dict[str, KafkaError | None]:
        """Grow topics to ``NewPartitions.total_count`` partitions (CreatePartitions, at the controller)."""
        topic_cls = CreatePartitionsRequest.CreatePartitionsTopic
        wanted = {name: topic_cls(
            name=name, count=spec.total_count,
            assignments=None if spec.new_assignments is None else [
                topic_cls.CreatePartitionsAssignment(broker_ids=ids) for ids in spec.new_assignments])
            for name, spec in topic_partitions.items()}
        return await self._at_controller(
            "createPartitions", wanted, lambda items, t: CreatePartitionsRequest(
                topics=items, timeout_ms=t.timeout_ms, validate_only=validate_only),
            lambda response: response.results, timeout_ms, raise_errors)

    async def _at_controller(self, name: str, items: dict[str, Any], make_request: Callable[[list[Any], Try], Any],
                             results_of: Callable[[Any], list[Any]], timeout_ms: int | None, raise_errors: bool
                             ) -> dict[str, KafkaError | None]:
        results = await at_controller(self._calls, name, items, make_request,
                                      lambda response: [(r.name, r.error_code, getattr(r, "error_message", None))
                                                        for r in results_of(response)], timeout_ms)
        return _first_raised(results, raise_errors)

    async def list_topics(self, include_internal: bool = True) -> list[str]:
        """Every topic's name, sorted."""
        async def attempt(t: Try) -> Any:
            return await self._client.metadata_at(t.conn, None, timeout=t.timeout)

        response = await self._calls.run("listTopics", ANY, attempt)
        return sorted(t.name for t in response.topics
                      if t.error_code == 0 and (include_internal or not t.is_internal))

    async def describe_topics(self, topics: Sequence[str] | None = None) -> list[TopicDescription]:
        """Partitions, leaders, replicas and ISRs of ``topics`` (None: every topic), in the order asked
        (sorted for None). An unknown topic raises UnknownTopicOrPartitionError (after a short grace)."""
        async def attempt(t: Try) -> Any:
            response = await self._client.metadata_at(t.conn, None if topics is None else list(topics),
                                                      timeout=t.timeout)
            found = {topic.name: topic for topic in response.topics}
            for name in topics or ():
                code = found[name].error_code if name in found else UnknownTopicOrPartitionError.code
                if code:
                    raise _unpropagated(for_code(code)(), t)
            return found

        found = await self._calls.run("describeTopics", ANY, attempt)
        names = sorted(found) if topics is None else list(topics)
        descriptions = []
        for name in names:
            t = found[name]
            partitions = [PartitionDescription(name, p.partition_index, p.leader_id, p.leader_epoch,
                                               list(p.replica_nodes), list(p.isr_nodes),
                                               list(p.offline_replicas or ()), p.error_code)
                          for p in sorted(t.partitions, key=lambda p: p.partition_index)]
            descriptions.append(TopicDescription(name, getattr(t, "topic_id", None) or ZERO_UUID, t.is_internal,
                                                 partitions))
        return descriptions

    async def describe_cluster(self, include_authorized_operations: bool = False) -> ClusterDescription:
        """Brokers, controller and cluster id through DescribeCluster, or Metadata from a broker that does
        not serve it (Kafka 2.8's Admin does the same)."""
        async def attempt(t: Try) -> ClusterDescription:
            assert t.conn is not None
            try:
                answer = await t.conn.send(DescribeClusterRequest(
                    include_cluster_authorized_operations=include_authorized_operations), timeout=t.timeout)
            except UnsupportedVersionError:
                response = await self._client.metadata_at(t.conn, [], timeout=t.timeout)
                return ClusterDescription(response.cluster_id, response.controller_id, sorted(
                    (BrokerMetadata(b.node_id, b.host, b.port, b.rack) for b in response.brokers),
                    key=lambda b: b.node_id))
            if answer.error_code:
                raise for_code(answer.error_code)(answer.error_message or "DescribeCluster")
            operations = None
            if include_authorized_operations and answer.cluster_authorized_operations != -(1 << 31):
                operations = frozenset(op for op in range(32) if answer.cluster_authorized_operations >> op & 1)
            return ClusterDescription(answer.cluster_id, answer.controller_id, sorted(
                (BrokerMetadata(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers),
                key=lambda b: b.node_id), operations)

        return await self._calls.run("describeCluster", ANY, attempt)

    # -- configs ----------------------------------------------------------------------------------
    async def describe_configs(self, config_resources: Sequence[ConfigResource], include_synonyms: bool = False
                               ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Each resource's configuration, key -> ConfigEntry. A broker's resource is asked of that
        broker (as the Java AdminClient does), topics of any broker; a failed resource raises."""
        results: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for resource in config_resources:
            request = DescribeConfigsRequest(
                resources=[DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=int(resource.resource_type), resource_name=resource.name,
                    configuration_keys=None if resource.configs is None else list(resource.configs))],
                include_synonyms=include_synonyms, include_documentation=False)

            async def attempt(t: Try, request: Any = request) -> Any:
                assert t.conn is not None
                [result] = (await t.conn.send(request, timeout=t.timeout)).results
                if result.error_code:
                    error = for_code(result.error_code)
                    raise _unpropagated(error(result.error_message) if result.error_message else error(), t)
                return result

            result = await self._calls.run("describeConfigs", _config_route(resource), attempt)
            results[resource] = {
                e.name: ConfigEntry(e.name, e.value, e.config_source, e.config_source == DEFAULT_CONFIG_SOURCE,
                                    e.read_only, e.is_sensitive, [(s.name, s.value, s.source) for s in e.synonyms or ()])
                for e in result.configs}
        return results

    async def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str | None]],
                            validate_only: bool = False, *, raise_errors: bool = True
                            ) -> dict[ConfigResource, KafkaError | None]:
        """Replace each resource's whole set of dynamic configs (AlterConfigs, the legacy API: keys left
        out are removed). Prefer ``incremental_alter_configs``."""
        cls = AlterConfigsRequest.AlterConfigsResource
        requests = {resource: AlterConfigsRequest(validate_only=validate_only, resources=[cls(
            resource_type=int(resource.resource_type), resource_name=resource.name,
            configs=[cls.AlterableConfig(name=k, value=None if v is None else str(v)) for k, v in entries.items()])])
            for resource, entries in configs.items()}
        return await self._alter("alterConfigs", requests, raise_errors)

    async def incremental_alter_configs(self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]],
                                        validate_only: bool = False, *, raise_errors: bool = True
                                        ) -> dict[ConfigResource, KafkaError | None]:
        """Apply SET/DELETE/APPEND/SUBTRACT operations to each resource's configs (IncrementalAlterConfigs);
        resource -> None or its error (INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, ...)."""
        cls = IncrementalAlterConfigsRequest.AlterConfigsResource
        requests = {resource: IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[cls(
            resource_type=int(resource.resource_type), resource_name=resource.name,
            configs=[cls.AlterableConfig(name=op.name, config_operation=int(op.op_type),
                                         value=None if op.value is None else str(op.value)) for op in ops])])
            for resource, ops in changes.items()}
        return await self._alter("incrementalAlterConfigs", requests, raise_errors)

    async def _alter(self, name: str, requests: Mapping[ConfigResource, Any], raise_errors: bool
                     ) -> dict[ConfigResource, KafkaError | None]:
        """One request per resource: a broker's to that broker (as the Java Admin does), others to any."""
        async def alter(resource: ConfigResource, request: Any) -> KafkaError | None:
            async def attempt(t: Try) -> KafkaError | None:
                assert t.conn is not None
                [result] = (await t.conn.send(request, timeout=t.timeout)).responses
                if result.error_code:
                    return for_code(result.error_code)(result.error_message or f"{resource.name}")
                return None
            return await self._calls.run(name, _config_route(resource), attempt)

        results = {resource: await alter(resource, request) for resource, request in requests.items()}
        return _first_raised(results, raise_errors)

    # -- records ----------------------------------------------------------------------------------
    async def list_offsets(self, specs: Mapping[TopicPartition, int], *, raise_errors: bool = True
                           ) -> dict[TopicPartition, Any]:
        """Each partition's offset for LATEST (-1: the log end), EARLIEST (-2: the log start) or a
        timestamp in ms (the first offset at or after it; -1 when no record is that new), from the
        leaders. With ``raise_errors=False`` a failed partition maps to its KafkaError instead."""
        async def one(tp: TopicPartition, spec: int) -> Any:
            async def attempt(t: Try) -> int:
                return (await self._client.list_offsets(tp.topic, tp.partition, spec))[0]
            try:
                return await self._calls.run("listOffsets", LEADERS, attempt)
            except KafkaError as exc:
                if raise_errors:
                    raise
                return exc

        found = await asyncio.gather(*(one(tp, spec) for tp, spec in specs.items()))
        return dict(zip(specs, found))

    async def delete_records(self, records_to_delete: Mapping[TopicPartition, int], timeout_ms: int | None = None
                             ) -> dict[TopicPartition, int]:
        """Delete every record before the given offset of each partition (-1: the high watermark),
        at each partition's leader (DeleteRecords); returns the new low watermarks. A moved leader is
        looked up again; other errors (OFFSET_OUT_OF_RANGE, ...) raise."""
        pending = dict(records_to_delete)
        low_watermarks: dict[TopicPartition, int] = {}
        topic_cls = DeleteRecordsRequest.DeleteRecordsTopic

        async def at_leader(leader: int, partitions: list[TopicPartition], t: Try) -> None:
            by_topic: dict[str, list[Any]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(
                    topic_cls.DeleteRecordsPartition(partition_index=tp.partition, offset=pending[tp]))
            request = DeleteRecordsRequest(timeout_ms=t.timeout_ms, topics=[
                topic_cls(name=name, partitions=ps) for name, ps in by_topic.items()])
            response = await self._client.send(leader, request, timeout=t.timeout)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if p.error_code == 0:
                        low_watermarks[tp] = p.low_watermark
                        pending.pop(tp, None)
                    elif not for_code(p.error_code).retriable:
                        raise for_code(p.error_code)(f"DeleteRecords of {tp.topic}-{tp.partition}")

        async def attempt(t: Try) -> dict[TopicPartition, int]:
            by_leader = await _leaders(self._client, pending, t)
            await asyncio.gather(*(at_leader(leader, tps, t) for leader, tps in by_leader.items()))
            if pending:  # answered with a retriable error (the leader moved): look it up again
                raise NotLeaderOrFollowerError(f"DeleteRecords of {sorted(pending)}")
            return dict(sorted(low_watermarks.items()))

        return await self._calls.run("deleteRecords", LEADERS, attempt, timeout_ms)


def _config_route(resource: ConfigResource) -> Any:
    """A broker's configs and loggers are that broker's to tell and change; a topic's any broker's."""
    if resource.resource_type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) and resource.name:
        return Broker(int(resource.name))
    return ANY


async def _leaders(client: Any, partitions: Iterable[TopicPartition], t: Try) -> dict[int, list[TopicPartition]]:
    """The partitions grouped by leader. An unknown topic or partition is the call's result once the
    propagation grace is over (Kafka 2.8's deleteRecords fails it at once); a missing leader is waited for."""
    try:
        return await client.partitions_by_leader(partitions)
    except UnknownTopicOrPartitionError as error:
        raise _unpropagated(error, t) from None


def _unpropagated(error: KafkaError, t: Try) -> KafkaError:
    """A describe call's per-topic error: asked again during the grace (the broker may not know a new topic
    yet), then the call's result."""
    return error if error.retriable and t.elapsed < _PROPAGATION_GRACE_S else final(error)


def _first_raised(results: dict[Any, KafkaError | None], raise_errors: bool) -> dict[Any, KafkaError | None]:
    failed = [error for error in results.values() if error is not None]
    if raise_errors and failed:
        raise failed[0]
    return results


class Admin(SyncSimpleClient):
    """The blocking ``AIOAdmin``: same arguments and methods, on a private event loop in a thread;
    ``with Admin(bootstrap_servers=...) as admin: admin.list_topics()``."""

    def __init__(self, bootstrap_servers: str | list[str] = "localhost:9092", **configs: Any) -> None:
        super().__init__(bootstrap_servers)  # starts the loop thread; its SimpleClient is replaced below
        self._client = AIOAdmin(bootstrap_servers, **configs)  # type: ignore[assignment]

    def __enter__(self) -> "Admin":
        return self


__all__ = ["AIOAdmin", "Admin", "LATEST", "EARLIEST", "NewTopic", "NewPartitions", "ConfigResource", "ConfigResourceType", "ConfigEntry",
           "AlterConfigOp", "AlterConfigOpType", "BrokerMetadata", "ClusterDescription", "TopicDescription",
           "PartitionDescription", "format_topic_id", "GroupListing", "ConsumerGroupDescription", "MemberDescription",
           "Coordinator", "LogDirDescription", "ReplicaInfo", "TopicPartitionReplica", "ClientQuotaEntity", "ClientQuotaFilter",
           "ClientQuotaFilterComponent", "ClientQuotaAlteration", "ProducerState",
           "ScramCredentialInfo", "UserScramCredentialsDescription", "UserScramCredentialUpsertion",
           "UserScramCredentialDeletion",
           "AclBinding", "AclBindingFilter", "AccessControlEntry", "AccessControlEntryFilter", "ResourcePattern",
           "ResourcePatternFilter", "ResourceType", "PatternType", "AclOperation", "AclPermissionType",
           "AdminTimeoutError"]

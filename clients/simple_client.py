"""SimpleClient: one-request-at-a-time access to a cluster, for tests, tools and the controller.

    async with SimpleClient("127.0.0.1:9092") as client:
        await client.wait_for_brokers(3)
        await client.create_topics({"events": (6, 3)})
        await client.wait_for_leaders("events")
        result = await client.produce("events", 0, [(b"key", b"value", [])])
        fetched = await client.fetch("events", 0, result.base_offset)

It keeps one ``BrokerConnection`` per broker id (plus one per bootstrap address it had to use) and a
``ClusterMetadata`` picture. Partition requests go to the leader, topic administration to the
controller, the rest to the least loaded live connection (or, when none is open, to a broker that has
not failed lately: addresses whose connection failed are tried last). Retriable errors are retried a few times
with exponential backoff; NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION and
LEADER_NOT_AVAILABLE (and NOT_CONTROLLER for administration) refresh the metadata first, as Kafka's
clients do. Once the retries are spent, produce/fetch return the error code, create/delete return
it per topic, and list_offsets/init_producer_id raise it.

``SyncSimpleClient`` is the blocking twin (its own event loop in a thread) for synchronous callers
such as the local-cluster launcher.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any, Awaitable, Callable, Iterable, Mapping, NamedTuple, Sequence, TypeVar

from ..protocol.api_keys import ApiKey
from ..protocol.errors import (  # type: ignore[attr-defined]
    KafkaError, LeaderNotAvailableError, UnknownTopicOrPartitionError, UnsupportedVersionError, for_code,
)
from ..protocol.messages import (
    CreateTopicsRequest, DeleteTopicsRequest, FetchRequest, InitProducerIdRequest, ListOffsetsRequest,
    MetadataRequest, ProduceRequest,
)
from ..protocol.records import Compression, Record, RecordBatchBuilder, decode_batch
from .cluster_metadata import ClusterMetadata
from .connection import BrokerConnection
from .event_loop_thread import EventLoopThread
from .errors import KafkaConnectionError, NoBrokersAvailableError
from .fetched_batches import scan_fetched
from .security.client_security import AUTHENTICATION_ERRORS, ClientSecurity
from .throttle import ThrottleState, ThrottleTimeSensor

log = logging.getLogger(__name__)
T = TypeVar("T")

UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
NOT_CONTROLLER = 41
# Errors after which the partition's leader (or the controller) must be looked up again.
_REFRESH_ERRORS = frozenset({UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER})
_INT32_MAX = 2**31 - 1
_MAX_BACKOFF = 1.0

Records = Sequence[tuple[Any, ...]] | bytes | bytearray | memoryview


class ProduceResult(NamedTuple):
    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int


class FetchResult(NamedTuple):
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: list[Record]


class _Retry(Exception):
    """An error code ending one attempt. ``refresh``: the metadata is stale, look it up before
    retrying; ``retriable=False``: give up at once (the operation returns or raises the code)."""

    def __init__(self, code: int, refresh: bool, retriable: bool = True) -> None:
        super().__init__(code)
        self.code = code
        self.refresh = refresh
        self.retriable = retriable


def parse_bootstrap_servers(servers: str | Iterable[str | tuple[str, int]]) -> list[tuple[str, int]]:
    """"h1:9092,h2:9093", ["h1:9092", ("h2", 9093)], "[::1]:9092" -> [(host, port), ...]."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    addresses = []
    for item in items:
        if isinstance(item, tuple):
            addresses.append((item[0], int(item[1])))
            continue
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or host.count(":") and not host.startswith("["):  # no port, or a bare IPv6 address
            host, port = item, "9092"
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError(f"no bootstrap servers in {servers!r}")
    return addresses


def _bytes(value: Any) -> bytes | None:
    return value.encode("utf-8") if isinstance(value, str) else value


def build_batch(records: Iterable[tuple[Any, ...]], compression: str = "none", *, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False) -> bytes:
    """A v2 record batch from (key, value[, headers[, timestamp ms]]) tuples; str is encoded as UTF-8."""
    builder = RecordBatchBuilder(Compression[compression.upper()], producer_id=producer_id,
                                 producer_epoch=producer_epoch, base_sequence=base_sequence,
                                 is_transactional=transactional)
    for record in records:
        key, value, headers, timestamp = (*record, (), None)[:4] if len(record) == 2 else (*record, None)[:4]
        builder.append(timestamp, _bytes(key), _bytes(value),
                       [(k, _bytes(v)) for k, v in headers or ()])
    return builder.build()


def records_from_fetch(data: Any, fetch_offset: int, aborted_transactions: list[Any] | None = None) -> list[Record]:
    """The records at or after ``fetch_offset`` in a Fetch response's record data (``fetched_batches.scan_fetched``
    says which batches: CRCs checked, control batches and, given the aborted transactions, aborted ones dropped)."""
    records: list[Record] = []
    for batch in scan_fetched(data, fetch_offset, aborted_transactions)[0]:
        records.extend(r for r in decode_batch(batch) if r.offset >= fetch_offset)
    return records


class SimpleClient:
    def __init__(self, bootstrap_servers: str | list[str], *, client_id: str = "odradek-simple",
                 request_timeout: float = 30.0, retries: int = 5, retry_backoff: float = 0.1,
                 connect_timeout: float = 10.0, security: ClientSecurity | None = None) -> None:
        self.bootstrap_servers = parse_bootstrap_servers(bootstrap_servers)
        self.security = security  # TLS / SASL for every connection (None: PLAINTEXT)
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.connect_timeout = connect_timeout
        self.cluster = ClusterMetadata()  # the latest picture, updated by every Metadata answer
        self._connections: dict[Any, BrokerConnection] = {}  # node id, or ("bootstrap", host, port)
        self._connecting: dict[Any, asyncio.Lock] = {}
        self._throttles: dict[Any, ThrottleState] = {}  # per connection key, outliving connections (KIP-219)
        self._failures: dict[tuple[str, int], int] = {}  # address -> number of its latest connection failure
        self._failure_count = 0  # failures noted so far (numbers, not times: a coarse clock would tie them)
        self.throttle_time = ThrottleTimeSensor()  # every response's throttle_time_ms (the clients' metrics)
        self._closed = False

    async def __aenter__(self) -> "SimpleClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        self._closed = True
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(conn.close() for conn in connections), return_exceptions=True)

    # -- connections ------------------------------------------------------------------------------
    async def _connect(self, key: Any, host: str, port: int) -> BrokerConnection:
        if self._closed:
            raise KafkaConnectionError("the client is closed")
        conn = self._connections.get(key)
        if conn is not None and not conn.closed and (conn.host, conn.port) == (host, port):
            return conn
        lock = self._connecting.setdefault(key, asyncio.Lock())
        async with lock:  # one connection per broker even when many requests want it at once
            conn = self._connections.get(key)
            if conn is not None and not conn.closed and (conn.host, conn.port) == (host, port):
                return conn
            if conn is not None:
                await conn.close()  # closed already, or the broker moved to another address
            try:
                conn = await BrokerConnection.connect(host, port, client_id=self.client_id,
                                                      timeout=self.connect_timeout, security=self.security,
                                                      throttle=self._throttles.setdefault(key, ThrottleState()),
                                                      throttle_sensor=self.throttle_time)
            except OSError:
                self.note_failure(host, port)
                raise
            self._connections[key] = conn
            return conn

    def note_failure(self, host: str, port: int) -> None:
        """A connection to ``host:port`` failed or timed out: ``_any_connection`` tries it after the others
        (as Java's leastLoadedNode skips nodes in reconnect backoff)."""
        self._failure_count += 1
        self._failures[(host, port)] = self._failure_count

    async def connection(self, node_id: int) -> BrokerConnection:
        """The connection to broker ``node_id`` (opened on first use, from the metadata's address)."""
        address = self.cluster.broker_address(node_id)
        if address is None:
            await self.metadata(topics=[])
            address = self.cluster.broker_address(node_id)
            if address is None:
                raise KafkaConnectionError(f"broker {node_id} is not in the cluster's metadata")
        return await self._connect(node_id, *address)

    async def _any_connection(self) -> BrokerConnection:
        """The least loaded live connection, unthrottled first (Java's leastLoadedNode skips throttled ones);
        else the first known broker or bootstrap server that answers."""
        live = [conn for conn in self._connections.values() if not conn.closed]
        if live:
            return min(live, key=lambda conn: (conn.throttle_delay() > 0, conn.in_flight))
        brokers = [(node_id, (b.host, b.port)) for node_id, b in self.cluster.brokers.items()]
        random.shuffle(brokers)
        candidates = brokers + [(("bootstrap", host, port), (host, port)) for host, port in self.bootstrap_servers]
        candidates.sort(key=lambda candidate: self._failures.get(candidate[1], -1))  # stable: shuffled otherwise
        failures = []
        for key, (host, port) in candidates:
            try:
                return await self._connect(key, host, port)
            except (OSError, KafkaError) as exc:
                if isinstance(exc, AUTHENTICATION_ERRORS):
                    raise  # wrong credentials or mechanism: another broker would say the same (Java: fatal)
                failures.append(f"{host}:{port}: {exc}")
        raise NoBrokersAvailableError("no broker could be reached: " + "; ".join(failures))

    async def send(self, node_id: int | None, body: Any, *, version: int | None = None,
                   timeout: float | None = None) -> Any:
        """Send any request to broker ``node_id`` (None: any broker); no retries."""
        conn = await (self._any_connection() if node_id is None else self.connection(node_id))
        return await conn.send(body, version=version, timeout=timeout or self.request_timeout)

    def _timeout_for(self, server_timeout_ms: int) -> float:
        """Requests the broker may hold for ``server_timeout_ms`` get that long plus the request timeout."""
        return self.request_timeout + max(server_timeout_ms, 0) / 1000.0

    # -- retries ----------------------------------------------------------------------------------
    async def _with_retries(self, attempt: Callable[[], Awaitable[T]], exhausted: Callable[[int], T], *,
                            topics: list[str] | None) -> T:
        """Run ``attempt`` until it returns; ``_Retry`` and connection failures are retried with backoff.

        Before a retry after a connection failure or a ``_Retry(refresh=True)``, the metadata of
        ``topics`` (``[]``: brokers and controller only; None: no refresh) is looked up again.
        When the retries are spent, a ``_Retry``'s code goes to ``exhausted`` and a connection failure
        is raised.
        """
        delay = self.retry_backoff
        for attempt_number in range(self.retries + 1):
            last = attempt_number == self.retries
            try:
                return await attempt()
            except _Retry as retry:
                if last or not retry.retriable:
                    return exhausted(retry.code)
                refresh = retry.refresh
                log.debug("retrying after error %d (attempt %d)", retry.code, attempt_number + 1)
            except OSError as exc:  # ConnectionError, TimeoutError: the connection is closed already
                if last:
                    raise
                refresh = True
                log.debug("retrying after %s (attempt %d)", exc, attempt_number + 1)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_BACKOFF)
            if refresh and topics is not None:
                try:
                    await self.metadata(topics=topics)
                except (OSError, KafkaError) as exc:
                    log.debug("metadata refresh failed: %s", exc)
        raise AssertionError("unreachable")

    @staticmethod
    def _check(code: int) -> None:
        """Raise ``_Retry`` for a retriable error code."""
        if code and for_code(code).retriable:
            raise _Retry(code, code in _REFRESH_ERRORS or code == NOT_CONTROLLER)

    async def _leader_connection(self, topic: str, partition: int) -> BrokerConnection:
        leader = self.cluster.leader_for(topic, partition)
        if leader is None or leader not in self.cluster.brokers:
            await self.metadata([topic])
            leader = self.cluster.leader_for(topic, partition)
        if leader is None:
            info = self.cluster.topics.get(topic)
            if info is not None and info.error_code:
                code = info.error_code
            elif info is not None and partition in info.partitions:
                code = info.partitions[partition].error_code or LEADER_NOT_AVAILABLE
            else:
                code = UNKNOWN_TOPIC_OR_PARTITION
            # No refresh before the retry: the metadata was just looked up.
            raise _Retry(code, False, retriable=for_code(code).retriable)
        return await self.connection(leader)

    async def _controller_connection(self) -> BrokerConnection:
        if self.cluster.controller_id not in self.cluster.brokers:
            await self.metadata(topics=[])
        if self.cluster.controller_id not in self.cluster.brokers:
            raise _Retry(NOT_CONTROLLER, True)
        return await self.connection(self.cluster.controller_id)

    # -- metadata ---------------------------------------------------------------------------------
    async def metadata(self, topics: list[str] | None = None,
                       allow_auto_topic_creation: bool = False) -> ClusterMetadata:
        """Ask any broker; ``topics=None`` means every topic, ``[]`` only brokers and controller."""
        return ClusterMetadata.from_response(await self.metadata_response(topics, allow_auto_topic_creation))

    async def metadata_response(self, topics: list[str] | None = None,
                                allow_auto_topic_creation: bool = False) -> Any:
        """``metadata`` but returning the MetadataResponse itself (topic ids, offline replicas: Admin)."""
        async def attempt() -> Any:
            return await self.metadata_at(await self._any_connection(), topics, allow_auto_topic_creation)

        # No metadata refresh between attempts (that would recurse): another broker is simply tried.
        return await self._with_retries(attempt, _raise_code, topics=None)

    async def metadata_at(self, conn: BrokerConnection, topics: list[str] | None = None,
                          allow_auto_topic_creation: bool = False, *, timeout: float | None = None) -> Any:
        """One Metadata request on ``conn`` (``topics`` as for ``metadata``); the answer updates ``cluster``."""
        version = conn.version_for(ApiKey.METADATA)
        if topics is None:
            wanted = [] if version == 0 else None  # v0 has no null: an empty list meant "all"
        else:
            wanted = [MetadataRequest.MetadataRequestTopic(name=name) for name in topics]
        request = MetadataRequest(topics=wanted)
        if version >= 4:  # earlier versions always let the broker's config decide
            request.allow_auto_topic_creation = allow_auto_topic_creation
        response = await conn.send(request, version=version, timeout=timeout or self.request_timeout)
        fresh = ClusterMetadata.from_response(response)
        self.cluster = fresh if topics is None else self.cluster.merged(fresh)
        return response

    def forget_controller(self) -> None:
        """The controller moved or died: the next administrative request looks it up again."""
        self.cluster = ClusterMetadata(dict(self.cluster.brokers), -1, self.cluster.cluster_id, self.cluster.topics)

    def forget_topics(self) -> None:
        """Partition leaders may have moved: requests to leaders look them up again."""
        self.cluster = self.cluster.without_topics(list(self.cluster.topics))

    async def _poll(self, topics: list[str], ready: Callable[[ClusterMetadata], bool], timeout: float,
                    what: str) -> ClusterMetadata:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last: Any = None
        while True:
            remaining = deadline - loop.time()
            try:
                async with asyncio.timeout(max(remaining, 0.001)):
                    metadata = await self.metadata(topics)
                if ready(metadata):
                    return metadata
                last = metadata
            except (OSError, KafkaError) as exc:  # brokers still starting up
                last = exc
            if loop.time() >= deadline:
                raise TimeoutError(f"{what} within {timeout} s; last answer: {last!r}")
            await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0)))

    async def wait_for_brokers(self, count: int, timeout: float = 30.0, *,
                               require_controller: bool = True) -> ClusterMetadata:
        """Poll Metadata until ``count`` brokers are registered (and a controller is elected)."""
        def ready(md: ClusterMetadata) -> bool:
            return len(md.brokers) >= count and (not require_controller or md.controller_id in md.brokers)

        return await self._poll([], ready, timeout, f"{count} brokers{' and a controller' * require_controller}")

    async def wait_for_leaders(self, topic: str, timeout: float = 30.0) -> ClusterMetadata:
        """Poll Metadata until ``topic`` exists and every partition has a live leader."""
        def ready(md: ClusterMetadata) -> bool:
            info = md.topics.get(topic)
            return (info is not None and info.error_code == 0 and bool(info.partitions)
                    and all(p.leader in md.brokers for p in info.partitions.values()))

        return await self._poll([topic], ready, timeout, f"leaders for every partition of {topic!r}")

    async def wait_until_broker_knows(self, node_id: int, topic: str, timeout: float = 30.0) -> None:
        """Poll broker ``node_id``'s own Metadata until it lists ``topic``: its metadata cache has the
        controller's UpdateMetadata, which answers such as DescribeConfigs or NOT_LEADER_OR_FOLLOWER
        depend on (as Kafka's)."""
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                  allow_auto_topic_creation=False)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (await self.send(node_id, request)).topics[0].error_code != 0:
            if loop.time() >= deadline:
                raise TimeoutError(f"broker {node_id} does not know {topic!r} after {timeout} s")
            await asyncio.sleep(0.1)

    # -- topic administration (sent to the controller) --------------------------------------------
    async def _admin(self, names: list[str], send: Callable[[BrokerConnection, list[str]], Awaitable[dict[str, int]]]
                     ) -> dict[str, int]:
        """Run an administrative request at the controller; topics answered NOT_CONTROLLER are retried."""
        results: dict[str, int] = {}
        pending = list(names)

        async def attempt() -> dict[str, int]:
            nonlocal pending
            conn = await self._controller_connection()
            answers = await send(conn, pending)
            results.update(answers)
            pending = [name for name in pending if answers.get(name) == NOT_CONTROLLER]
            if pending:
                raise _Retry(NOT_CONTROLLER, True)
            return results

        def exhausted(code: int) -> dict[str, int]:
            results.update({name: code for name in pending})
            return results

        return await self._with_retries(attempt, exhausted, topics=[])

    async def create_topics(self, topics: Mapping[str, Any] | Iterable[str], *,
                            configs: Mapping[str, Any] | None = None, timeout_ms: int = 30000,
                            validate_only: bool = False) -> dict[str, int]:
        """Create topics; returns topic -> error code (0, or e.g. 36 TOPIC_ALREADY_EXISTS).

        ``topics`` maps a name to (partitions, replication factor), to a partition count, or to a
        replica assignment {partition: [broker ids]}; a plain list of names takes the broker's
        defaults (-1, CreateTopics v4+). ``configs`` is either {config: value} for every topic or
        {topic: {config: value}}.
        """
        specs = dict(topics) if isinstance(topics, Mapping) else {name: (-1, -1) for name in topics}
        creatable = {name: _creatable_topic(name, spec, _topic_configs(configs, name)) for name, spec in specs.items()}

        async def send(conn: BrokerConnection, names: list[str]) -> dict[str, int]:
            request = CreateTopicsRequest(topics=[creatable[name] for name in names], timeout_ms=timeout_ms,
                                          validate_only=validate_only)
            response = await conn.send(request, timeout=self._timeout_for(timeout_ms))
            for topic in response.topics:
                if topic.error_code:
                    log.debug("CreateTopics %s: error %d %s", topic.name, topic.error_code, topic.error_message)
            return {topic.name: topic.error_code for topic in response.topics}

        return await self._admin(list(specs), send)

    async def delete_topics(self, topics: list[str], timeout_ms: int = 30000) -> dict[str, int]:
        """Delete topics; returns topic -> error code."""
        async def send(conn: BrokerConnection, names: list[str]) -> dict[str, int]:
            version = conn.version_for(ApiKey.DELETE_TOPICS)
            if version >= 6:
                request = DeleteTopicsRequest(
                    topics=[DeleteTopicsRequest.DeleteTopicState(name=name) for name in names], timeout_ms=timeout_ms)
            else:
                request = DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)
            response = await conn.send(request, version=version, timeout=self._timeout_for(timeout_ms))
            return {result.name: result.error_code for result in response.responses}

        results = await self._admin(list(topics), send)
        self.cluster = self.cluster.without_topics([name for name, code in results.items() if code == 0])
        return results

    # -- partitions (sent to the leader) ----------------------------------------------------------
    async def produce(self, topic: str, partition: int, records: Records, *, acks: int = 1,
                      compression: str = "none", timeout_ms: int = 30000, producer_id: int = -1,
                      producer_epoch: int = -1, base_sequence: int = -1,
                      transactional_id: str | None = None) -> ProduceResult:
        """Write one batch to a partition's leader. ``records`` is a list of (key, value[, headers[,
        timestamp]]) tuples, built into one v2 batch, or the raw bytes of a batch (sent as given).
        acks=0 returns at once with base_offset -1 (the broker sends no answer)."""
        if isinstance(records, (bytes, bytearray, memoryview)):
            batch = records
        else:
            batch = build_batch(records, compression, producer_id=producer_id, producer_epoch=producer_epoch,
                                base_sequence=base_sequence, transactional=transactional_id is not None)
        partition_data = ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)
        request = ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
                                 topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[partition_data])])

        async def attempt() -> ProduceResult:
            conn = await self._leader_connection(topic, partition)
            version = conn.version_for(ApiKey.PRODUCE)
            if version < 3:
                raise UnsupportedVersionError(f"{conn.host}:{conn.port} cannot take v2 record batches (Produce v{version})")
            response = await conn.send(request, version=version, timeout=self._timeout_for(timeout_ms))
            if response is None:
                return ProduceResult(0, -1, -1, -1)
            answer = _find_partition(response.responses, topic, partition, "partition_responses", "index")
            self._check(answer.error_code)
            return ProduceResult(answer.error_code, answer.base_offset, answer.log_append_time_ms,
                                 answer.log_start_offset)

        return await self._with_retries(attempt, lambda code: ProduceResult(code, -1, -1, -1), topics=[topic])

    async def fetch(self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 500, min_bytes: int = 1,
                    max_bytes: int = 1048576, isolation_level: int = 0) -> FetchResult:
        """Read from a partition's leader, without a fetch session; records before ``offset`` are dropped."""
        fetch_partition = FetchRequest.FetchTopic.FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)
        request = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                               isolation_level=isolation_level, session_id=0, session_epoch=-1,
                               topics=[FetchRequest.FetchTopic(topic=topic, partitions=[fetch_partition])])

        async def attempt() -> FetchResult:
            conn = await self._leader_connection(topic, partition)
            response = await conn.send(request, timeout=self._timeout_for(max_wait_ms))
            if response.error_code:
                self._check(response.error_code)
                return FetchResult(response.error_code, -1, -1, [])
            answer = _find_partition(response.responses, topic, partition, "partitions", "partition_index")
            self._check(answer.error_code)
            if answer.error_code:
                return FetchResult(answer.error_code, answer.high_watermark, answer.log_start_offset, [])
            aborted = (answer.aborted_transactions or []) if isolation_level else None
            records = records_from_fetch(answer.records, offset, aborted)
            return FetchResult(0, answer.high_watermark, answer.log_start_offset, records)

        return await self._with_retries(attempt, lambda code: FetchResult(code, -1, -1, []), topics=[topic])

    async def list_offsets(self, topic: str, partition: int, timestamp: int, *,
                           isolation_level: int = 0) -> tuple[int, int]:
        """(offset, timestamp) for ``timestamp`` in ms, or -1 (latest) / -2 (earliest). Errors raise."""
        list_partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, timestamp=timestamp)
        request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level,
                                     topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[list_partition])])

        async def attempt() -> tuple[int, int]:
            conn = await self._leader_connection(topic, partition)
            version = conn.version_for(ApiKey.LIST_OFFSETS)
            response = await conn.send(request, version=version, timeout=self.request_timeout)
            answer = _find_partition(response.topics, topic, partition, "partitions", "partition_index")
            self._check(answer.error_code)
            if answer.error_code:
                raise for_code(answer.error_code)(f"ListOffsets {topic}-{partition}")
            if version == 0:
                return (answer.old_style_offsets[0] if answer.old_style_offsets else -1), -1
            return answer.offset, answer.timestamp

        return await self._with_retries(attempt, _raise_code, topics=[topic])

    async def partitions_by_leader(self, partitions: Iterable[Any]) -> dict[int, list[Any]]:
        """TopicPartitions grouped by their leader, from fresh metadata. A topic the metadata has an error
        for raises that error, a partition it does not list UNKNOWN_TOPIC_OR_PARTITION, and one without a
        leader LEADER_NOT_AVAILABLE (all but authorization errors retriable)."""
        partitions = list(partitions)
        metadata = await self.metadata(sorted({tp.topic for tp in partitions}))
        by_leader: dict[int, list[Any]] = {}
        for tp in partitions:
            topic = metadata.topics.get(tp.topic)
            if topic is not None and topic.error_code:
                raise for_code(topic.error_code)(f"metadata of topic {tp.topic}")
            if topic is None or tp.partition not in topic.partitions:
                raise UnknownTopicOrPartitionError(f"no partition {tp.topic}-{tp.partition}")
            leader = metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                raise LeaderNotAvailableError(f"no leader for {tp.topic}-{tp.partition}")
            by_leader.setdefault(leader, []).append(tp)
        return by_leader

    async def init_producer_id(self) -> tuple[int, int]:
        """A producer id and epoch for an idempotent (non-transactional) producer, from any broker."""
        # Kafka's idempotent producer sends a null transactional id and Integer.MAX_VALUE as timeout.
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=_INT32_MAX)

        async def attempt() -> tuple[int, int]:
            conn = await self._any_connection()
            response = await conn.send(request, timeout=self.request_timeout)
            self._check(response.error_code)
            if response.error_code:
                raise for_code(response.error_code)("InitProducerId")
            return response.producer_id, response.producer_epoch

        return await self._with_retries(attempt, _raise_code, topics=[])


def _raise_code(code: int) -> Any:
    raise for_code(code)()


def _find_partition(topics: list[Any], topic: str, partition: int, partitions_field: str, index_field: str) -> Any:
    for answer in topics:
        if _topic_name(answer) == topic:
            for item in getattr(answer, partitions_field):
                if getattr(item, index_field) == partition:
                    return item
    raise KafkaConnectionError(f"the response has no entry for {topic}-{partition}")


def _topic_name(answer: Any) -> str:
    return answer.topic if hasattr(answer, "topic") else answer.name


def _topic_configs(configs: Mapping[str, Any] | None, topic: str) -> dict[str, str | None]:
    if not configs:
        return {}
    if all(isinstance(value, Mapping) for value in configs.values()):
        return dict(configs.get(topic, {}))
    return dict(configs)


def _creatable_topic(name: str, spec: Any, configs: dict[str, str | None]) -> Any:
    topic_cls = CreateTopicsRequest.CreatableTopic
    assignments = []
    if isinstance(spec, int):
        partitions, replication = spec, -1
    elif isinstance(spec, Mapping):  # an explicit assignment: counts must then be -1
        partitions, replication = -1, -1
        assignments = [topic_cls.CreatableReplicaAssignment(partition_index=p, broker_ids=list(brokers))
                       for p, brokers in sorted(spec.items())]
    else:
        partitions, replication = spec
    return topic_cls(name=name, num_partitions=partitions, replication_factor=replication, assignments=assignments,
                     configs=[topic_cls.CreateableTopicConfig(name=k, value=None if v is None else str(v))
                              for k, v in configs.items()])


class SyncSimpleClient:
    """The blocking twin of ``SimpleClient``: same arguments and methods, run on a private event loop
    in a daemon thread. ``with SyncSimpleClient("127.0.0.1:9092") as client: client.wait_for_brokers(3)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._thread = EventLoopThread("odradek-sync-client")
        self._client = SimpleClient(*args, **kwargs)
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return self._thread.blocking(getattr(self._client, name))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.run(self._client.close())
        finally:
            self._thread.stop()

    def __enter__(self) -> "SyncSimpleClient":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

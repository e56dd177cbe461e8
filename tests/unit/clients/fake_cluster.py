"""A fake cluster for SimpleClient and Admin tests: real broker reactors (SocketServer + KafkaApis) on
loopback, with small handlers for Metadata, Produce, Fetch, ListOffsets, CreateTopics, DeleteTopics,
InitProducerId, FindCoordinator and OffsetFetch sharing one in-memory state that a test can change (move
leaders, the controller and the group coordinator, register brokers, inject error codes, close a
connection after handling a request) while the client holds stale metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter, defaultdict
from typing import Any, Iterator

from odradek.broker.kafka_apis import KafkaApis
from odradek.broker.network.request_channel import Response
from odradek.broker.server import build_socket_server
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages import (
    CreateTopicsResponse, DeleteTopicsResponse, FetchResponse, FindCoordinatorResponse, InitProducerIdResponse,
    ListOffsetsResponse, MetadataResponse, OffsetFetchResponse, ProduceResponse,
)
from odradek.protocol.records import RecordBatchView

from .helpers import make_config, switchboard

MdTopic = MetadataResponse.MetadataResponseTopic
MdPartition = MdTopic.MetadataResponsePartition
MdBroker = MetadataResponse.MetadataResponseBroker
ProduceTopic = ProduceResponse.TopicProduceResponse
ProducePartition = ProduceTopic.PartitionProduceResponse
FetchTopic = FetchResponse.FetchableTopicResponse
FetchPartition = FetchTopic.PartitionData
OffsetsTopic = ListOffsetsResponse.ListOffsetsTopicResponse
OffsetsPartition = OffsetsTopic.ListOffsetsPartitionResponse

NOT_CONTROLLER = 41
NOT_COORDINATOR = 16
NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3


class PartitionLog:
    def __init__(self) -> None:
        self.batches: list[tuple[int, int, bytes]] = []  # (base offset, last offset, bytes)
        self.next_offset = 0

    def append(self, data: Any) -> int:
        buffer = bytearray(data)
        batch = RecordBatchView(buffer)
        base = self.next_offset
        batch.set_base_offset(base)
        self.next_offset = batch.last_offset + 1
        self.batches.append((base, batch.last_offset, bytes(buffer)))
        return base

    def read(self, offset: int) -> bytes:
        return b"".join(data for _, last, data in self.batches if last >= offset)


class FakeCluster:
    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.controller_id = 0
        self.registered: set[int] = set(range(size))
        self.topics: dict[str, dict[int, int]] = {}  # topic -> partition -> leader (-1: none)
        self.logs: dict[tuple[str, int], PartitionLog] = defaultdict(PartitionLog)
        self.calls: Counter = Counter()  # (broker id, api key) -> requests handled
        self.inject: dict[int, list[int]] = defaultdict(list)  # api key -> error codes to answer next
        self.drop: Counter = Counter()  # api key -> requests handled, then answered by closing the connection
        self.coordinator_id = 0  # of every group
        self.servers: dict[int, SocketServer] = {}
        self.next_producer_id = 1000

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> None:
        for broker_id in range(self.size):
            server = build_socket_server(make_config(), self._apis(broker_id))
            await server.start()
            self.servers[broker_id] = server

    async def stop(self) -> None:
        for server in self.servers.values():
            await server.stop(timeout=0.5)

    def port(self, broker_id: int) -> int:
        return self.servers[broker_id].port()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port(0)}"

    def add_topic(self, name: str, leaders: list[int]) -> None:
        self.topics[name] = dict(enumerate(leaders))

    def _apis(self, broker_id: int) -> KafkaApis:
        apis = switchboard()
        handlers = {
            ApiKey.METADATA: self._metadata, ApiKey.PRODUCE: self._produce, ApiKey.FETCH: self._fetch,
            ApiKey.LIST_OFFSETS: self._list_offsets, ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics, ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            ApiKey.FIND_COORDINATOR: self._find_coordinator, ApiKey.OFFSET_FETCH: self._offset_fetch,
        }
        for key, handler in handlers.items():
            def handle(request, handler=handler, key=key):
                self.calls[(broker_id, int(key))] += 1
                answer = handler(broker_id, request)
                if self.drop[int(key)] > 0:  # done, but the client never hears of it
                    self.drop[int(key)] -= 1
                    return Response.close(request, "the fake broker drops this connection")
                return answer
            apis.register(key, handle)
        return apis

    def _injected(self, api_key: int) -> int:
        queue = self.inject[api_key]
        return queue.pop(0) if queue else 0

    # -- handlers ---------------------------------------------------------------------------------
    def _metadata(self, broker_id: int, request: Any) -> Any:
        names = list(self.topics) if request.body.topics is None else [t.name for t in request.body.topics]
        topics = []
        for name in names:
            if name not in self.topics:
                topics.append(MdTopic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name))
                continue
            partitions = [MdPartition(error_code=0 if leader >= 0 else 5, partition_index=p, leader_id=leader,
                                      leader_epoch=0, replica_nodes=[max(leader, 0)], isr_nodes=[max(leader, 0)])
                          for p, leader in sorted(self.topics[name].items())]
            topics.append(MdTopic(error_code=0, name=name, partitions=partitions))
        brokers = [MdBroker(node_id=b, host="127.0.0.1", port=self.port(b)) for b in sorted(self.registered)]
        return MetadataResponse(brokers=brokers, cluster_id="fake-cluster", controller_id=self.controller_id,
                                topics=topics)

    def _leader_error(self, broker_id: int, topic: str, partition: int) -> int:
        if topic not in self.topics or partition not in self.topics[topic]:
            return UNKNOWN_TOPIC_OR_PARTITION
        return 0 if self.topics[topic][partition] == broker_id else NOT_LEADER_OR_FOLLOWER

    def _produce(self, broker_id: int, request: Any) -> Any:
        responses = []
        for topic in request.body.topic_data:
            answers = []
            for part in topic.partition_data:
                code = self._leader_error(broker_id, topic.name, part.index) or self._injected(ApiKey.PRODUCE)
                base = self.logs[(topic.name, part.index)].append(part.records) if code == 0 else -1
                answers.append(ProducePartition(index=part.index, error_code=code, base_offset=base))
            responses.append(ProduceTopic(name=topic.name, partition_responses=answers))
        return ProduceResponse(responses=responses)

    def _fetch(self, broker_id: int, request: Any) -> Any:
        responses = []
        for topic in request.body.topics:
            answers = []
            for part in topic.partitions:
                code = self._leader_error(broker_id, topic.topic, part.partition) or self._injected(ApiKey.FETCH)
                log = self.logs[(topic.topic, part.partition)]
                answers.append(FetchPartition(partition_index=part.partition, error_code=code,
                                              high_watermark=log.next_offset, log_start_offset=0,
                                              records=log.read(part.fetch_offset) if code == 0 else b""))
            responses.append(FetchTopic(topic=topic.topic, partitions=answers))
        return FetchResponse(responses=responses)

    def _list_offsets(self, broker_id: int, request: Any) -> Any:
        topics = []
        for topic in request.body.topics:
            answers = []
            for part in topic.partitions:
                code = self._leader_error(broker_id, topic.name, part.partition_index)
                offset = 0 if part.timestamp == -2 else self.logs[(topic.name, part.partition_index)].next_offset
                answers.append(OffsetsPartition(partition_index=part.partition_index, error_code=code,
                                                timestamp=-1, offset=offset))
            topics.append(OffsetsTopic(name=topic.name, partitions=answers))
        return ListOffsetsResponse(topics=topics)

    def _create_topics(self, broker_id: int, request: Any) -> Any:
        results = []
        for topic in request.body.topics:
            if broker_id != self.controller_id:
                code = NOT_CONTROLLER
            elif topic.name in self.topics:
                code = 36
            else:
                code = 0
                count = topic.num_partitions if topic.num_partitions > 0 else len(topic.assignments) or 1
                self.add_topic(topic.name, [p % self.size for p in range(count)])
            results.append(CreateTopicsResponse.CreatableTopicResult(name=topic.name, error_code=code))
        return CreateTopicsResponse(topics=results)

    def _delete_topics(self, broker_id: int, request: Any) -> Any:
        body = request.body
        names = [t.name for t in body.topics] if request.api_version >= 6 else body.topic_names
        results = []
        for name in names:
            if broker_id != self.controller_id:
                code = NOT_CONTROLLER
            else:
                code = 0 if self.topics.pop(name, None) is not None else UNKNOWN_TOPIC_OR_PARTITION
            results.append(DeleteTopicsResponse.DeletableTopicResult(name=name, error_code=code))
        return DeleteTopicsResponse(responses=results)

    def _find_coordinator(self, broker_id: int, request: Any) -> Any:
        code = self._injected(ApiKey.FIND_COORDINATOR)
        if code:
            return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)
        node = self.coordinator_id
        return FindCoordinatorResponse(error_code=0, node_id=node, host="127.0.0.1", port=self.port(node))

    def _offset_fetch(self, broker_id: int, request: Any) -> Any:
        """No group has committed offsets; only the coordinator says so."""
        code = 0 if broker_id == self.coordinator_id else NOT_COORDINATOR
        return OffsetFetchResponse(error_code=code, topics=[])

    def _init_producer_id(self, broker_id: int, request: Any) -> Any:
        code = self._injected(ApiKey.INIT_PRODUCER_ID)
        if code:
            return InitProducerIdResponse(error_code=code)
        self.next_producer_id += 1
        return InitProducerIdResponse(error_code=0, producer_id=self.next_producer_id, producer_epoch=0)


@contextlib.asynccontextmanager
async def fake_cluster(size: int = 2):
    cluster = FakeCluster(size)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@contextlib.contextmanager
def fake_cluster_in_thread(size: int = 2) -> Iterator[FakeCluster]:
    """The fake cluster on an event loop of its own, for the synchronous client's tests."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    cluster = FakeCluster(size)
    try:
        asyncio.run_coroutine_threadsafe(cluster.start(), loop).result(10)
        yield cluster
    finally:
        asyncio.run_coroutine_threadsafe(cluster.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

"""Cross-check with librdkafka (confluent-kafka): batches WE build are read back by its consumer.

The reverse of ``test_records_librdkafka.py``: there, librdkafka's producer writes and our parser
reads. Here ``RecordBatchBuilder`` writes two batches per codec and a tiny fake broker on 127.0.0.1
serves them to a ``confluent_kafka.Consumer`` (``check.crcs`` on). The fake broker speaks through
OUR codec end to end: ``decode_request`` on every frame, response objects from
``odradek.protocol.messages``, ``encode_response`` for the bytes on the wire. So this also checks
that librdkafka accepts our ApiVersions, Metadata and Fetch encodings at the versions it picks.

ApiVersions advertises Kafka 2.8's ranges (``KAFKA_2_8_VERSIONS``) for the keys served here; an
ApiVersions request above our v3 gets a v0 body with error 35, as Kafka answers.

Observed with librdkafka 2.16: ApiVersions v3 (so the error-35 path is only exercised by the
hand-made frame of the last test), Metadata v11, FindCoordinator v2 (it looks the group coordinator
up even with ``assign`` and auto-commit off; never OffsetFetch, ListOffsets or
OffsetForLeaderEpoch, since the assigned offset is explicit and leader epochs are -1), Fetch v12.
"""

from __future__ import annotations

import struct
import time

import pytest

from odradek.protocol import messages as m
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS, ApiKey
from odradek.protocol.errors import UnsupportedApiVersionError
from odradek.protocol.header import decode_request, decode_response, encode_response
from odradek.protocol.records import Compression, RecordBatchBuilder, iter_batches
from tests.fakes.socket_broker import FrameServer

pytestmark = pytest.mark.usefixtures("each_codec")  # every test with both record codecs

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "t"
NODE_ID = 1
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_OR_PARTITION = 3

# Produce is never called; it is advertised because librdkafka derives its MsgVer2/ZSTD features
# from Produce and Fetch together. FindCoordinator: librdkafka's feature checks want it (and a
# consumer with a group.id may look the coordinator up).
SERVED = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
          ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.API_VERSIONS,
          ApiKey.OFFSET_FOR_LEADER_EPOCH}
ADVERTISED = {key: rng for key, rng in KAFKA_2_8_VERSIONS.items() if key in SERVED}


class FakeBroker(FrameServer):
    """One broker, one topic, one partition holding ``log`` (already-built batches)."""

    def __init__(self, log: bytes, record_count: int) -> None:
        self.log = log
        self.record_count = record_count
        self.requests: list[tuple[int, int]] = []  # (api key, version), in arrival order
        super().__init__(self._handle)

    def _handle(self, frame: bytes) -> bytes:
        try:
            header, body = decode_request(frame)
        except UnsupportedApiVersionError as exc:
            if exc.api_key != ApiKey.API_VERSIONS:
                raise
            self.requests.append((exc.api_key, exc.api_version))
            # Kafka's answer to a too-new ApiVersions: a v0 body, error 35, its own ApiVersions range.
            lo, hi = ADVERTISED[ApiKey.API_VERSIONS]
            answer = m.ApiVersionsResponse(
                error_code=UNSUPPORTED_VERSION,
                api_keys=[m.ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS,
                                                           min_version=lo, max_version=hi)])
            return encode_response(answer, 0, exc.correlation_id)
        key, version = header.api_key, header.api_version
        self.requests.append((key, version))
        handler = {
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.METADATA: self._metadata,
            ApiKey.FETCH: self._fetch,
            ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.FIND_COORDINATOR: self._find_coordinator,
            ApiKey.OFFSET_FETCH: self._offset_fetch,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self._offset_for_leader_epoch,
        }.get(key)
        if handler is None:
            raise RuntimeError(f"fake broker: no handler for api key {key} v{version}")
        return encode_response(handler(body, version), version, header.correlation_id)

    def _api_versions(self, body, version):
        return m.ApiVersionsResponse(error_code=0, api_keys=[
            m.ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(ADVERTISED.items())])

    def _metadata(self, body, version):
        R = m.MetadataResponse
        partition = R.MetadataResponsePartition(
            error_code=0, partition_index=0, leader_id=NODE_ID, leader_epoch=-1,
            replica_nodes=[NODE_ID], isr_nodes=[NODE_ID], offline_replicas=[])
        topics = []
        wanted = None if body.topics is None else [t.name for t in body.topics]
        for name in ([TOPIC] if wanted is None else wanted):
            known = name == TOPIC
            topics.append(R.MetadataResponseTopic(
                error_code=0 if known else UNKNOWN_TOPIC_OR_PARTITION, name=name,
                is_internal=False, partitions=[partition] if known else []))
        return R(brokers=[R.MetadataResponseBroker(node_id=NODE_ID, host="127.0.0.1",
                                                   port=self.port, rack=None)],
                 cluster_id="odradek-fake", controller_id=NODE_ID, topics=topics)

    def _fetch(self, body, version):
        R = m.FetchResponse
        last_offset = self.record_count - 1
        responses = []
        empty = True
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                if topic.topic != TOPIC or p.partition != 0:
                    partitions.append(R.PartitionData(partition_index=p.partition,
                                                      error_code=UNKNOWN_TOPIC_OR_PARTITION,
                                                      high_watermark=-1, records=b""))
                    continue
                records = self.log if p.fetch_offset <= last_offset else b""
                empty = empty and not records
                partitions.append(R.PartitionData(
                    partition_index=0, error_code=0, high_watermark=self.record_count,
                    last_stable_offset=self.record_count, log_start_offset=0,
                    aborted_transactions=None if version >= 4 else [], records=records))
            responses.append(R.FetchableTopicResponse(topic=topic.topic, partitions=partitions))
        if empty:  # long poll, briefly: keep librdkafka from spinning on empty fetches
            self.stopping.wait(min(body.max_wait_ms, 100) / 1000)
        return R(throttle_time_ms=0, error_code=0, session_id=0, responses=responses)

    def _list_offsets(self, body, version):
        R = m.ListOffsetsResponse
        topics = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                offset = 0 if p.timestamp == -2 else self.record_count  # earliest / latest
                partitions.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=0, old_style_offsets=[offset],
                    timestamp=-1, offset=offset, leader_epoch=-1))
            topics.append(R.ListOffsetsTopicResponse(name=topic.name, partitions=partitions))
        return R(throttle_time_ms=0, topics=topics)

    def _find_coordinator(self, body, version):
        return m.FindCoordinatorResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                         node_id=NODE_ID, host="127.0.0.1", port=self.port)

    def _offset_fetch(self, body, version):
        R = m.OffsetFetchResponse
        topics = [R.OffsetFetchResponseTopic(name=t.name, partitions=[
            R.OffsetFetchResponsePartition(partition_index=i, committed_offset=-1,
                                           committed_leader_epoch=-1, metadata="", error_code=0)
            for i in t.partition_indexes]) for t in (body.topics or [])]
        return R(throttle_time_ms=0, topics=topics, error_code=0)

    def _offset_for_leader_epoch(self, body, version):
        R = m.OffsetForLeaderEpochResponse
        return R(throttle_time_ms=0, topics=[R.OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            R.EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=-1,
                             end_offset=self.record_count)
            for p in t.partitions]) for t in body.topics])


BASE_TS = 1_700_000_000_000
# (key, value, headers, timestamp); two batches: RECORDS[:SPLIT] and RECORDS[SPLIT:].
RECORDS = [
    (b"key-0", b"value zero " * 20, [("h1", b"v1"), ("empty", b""), ("null", None)], BASE_TS),
    (None, b"null key", [], BASE_TS + 5),
    (b"key-2", b"", [("only", b"one")], BASE_TS + 1),  # timestamps need not be monotonic
    (b"key-3", None, [], BASE_TS + 10),  # tombstone
    (b"", b"empty key " * 50, [], BASE_TS + 11),
    (b"key-5", b"second batch " * 30, [("h\u00e9", b"\x00\xff")], BASE_TS + 20),
    (None, b"x" * 3000, [], BASE_TS + 21),
    (b"key-7", b"last", [("a", b"1"), ("b", b"2")], BASE_TS + 22),
]
SPLIT = 5


def _build_log(codec: Compression) -> bytes:
    batches = []
    for base, chunk in ((0, RECORDS[:SPLIT]), (SPLIT, RECORDS[SPLIT:])):
        builder = RecordBatchBuilder(codec, base_offset=base)
        for key, value, headers, ts in chunk:
            builder.append(ts, key, value, headers)
        batches.append(builder.build())
    log = b"".join(batches)
    views = list(iter_batches(log, allow_partial=False))  # sanity: our own reader agrees
    assert [v.compression for v in views] == [codec, codec]
    return log


def _consume(port: int, want: int, deadline_s: float = 15.0):
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": f"127.0.0.1:{port}",
        "group.id": "g",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_uncommitted",
        "check.crcs": True,
        "api.version.request": True,
        "socket.timeout.ms": 10_000,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 60_000,
    })
    got, errors = [], []
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + deadline_s
        while len(got) < want and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
                continue
            got.append(msg)
    finally:
        consumer.close()
    return got, errors


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name.lower())
def test_librdkafka_consumer_reads_our_batches(codec):
    broker = FakeBroker(_build_log(codec), len(RECORDS))
    try:
        got, errors = _consume(broker.port, len(RECORDS))
    finally:
        broker.close()
    assert broker.errors == [], broker.errors
    assert errors == [], f"{errors}; requests: {broker.requests}"
    assert len(got) == len(RECORDS), f"got {len(got)} messages; requests: {broker.requests}"
    for offset, (msg, (key, value, headers, ts)) in enumerate(zip(got, RECORDS)):
        assert msg.error() is None
        assert (msg.topic(), msg.partition(), msg.offset()) == (TOPIC, 0, offset)
        assert msg.key() == key
        assert msg.value() == value
        assert (msg.headers() or []) == headers
        assert msg.timestamp() == (confluent_kafka.TIMESTAMP_CREATE_TIME, ts)
    keys = {k for k, _ in broker.requests}
    assert ApiKey.FETCH in keys and ApiKey.METADATA in keys
    # What librdkafka 2.16 picks against Kafka 2.8's ranges (see the module docstring).
    fetch_versions = {v for k, v in broker.requests if k == ApiKey.FETCH}
    assert max(fetch_versions) >= 4  # magic v2 needs Fetch v4+


def test_too_new_api_versions_gets_error_35():
    """ApiVersions v4 (beyond our v3) is answered with a v0 body: error 35 and our range."""
    broker = FakeBroker(_build_log(Compression.NONE), len(RECORDS))
    try:
        # header v2 (api key, version, correlation id, client id, no tags) and a v4 body's bytes
        frame = struct.pack(">hhih", ApiKey.API_VERSIONS, 4, 42, 3) + b"cli" + b"\x00" + b"\x04x\x02y\x00"
        response = broker._handle(frame)
    finally:
        broker.close()
    correlation_id, body = decode_response(response[4:], ApiKey.API_VERSIONS, 0)
    assert correlation_id == 42
    assert body.error_code == UNSUPPORTED_VERSION
    assert [(a.api_key, a.min_version, a.max_version) for a in body.api_keys] == [
        (ApiKey.API_VERSIONS, *KAFKA_2_8_VERSIONS[ApiKey.API_VERSIONS])]
    assert broker.requests == [(ApiKey.API_VERSIONS, 4)]

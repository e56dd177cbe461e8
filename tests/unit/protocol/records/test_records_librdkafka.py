"""Cross-check with librdkafka (confluent-kafka): batches its producer writes parse with ours.

There is no broker here, so the test runs a tiny fake one on 127.0.0.1 that speaks just enough of the
protocol for a non-idempotent producer: ApiVersions v0 (a v3 request gets error 35 and the v0 range,
as Kafka does), Metadata v0/v1 naming itself as the only broker and leader of partition 0, and
Produce v3-v7, whose records bytes it keeps. Responses are encoded by hand with struct.
"""

from __future__ import annotations

import struct
import threading

import pytest

from odradek.protocol.records import Compression, Record, iter_batches
from tests.fakes.socket_broker import FrameServer

pytestmark = pytest.mark.usefixtures("each_codec")  # every test with both record codecs

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "xcheck"
# (api key, min, max): Produce 0-7 and Fetch 0-11 (librdkafka derives MsgVer2 and ZSTD from both),
# Metadata 0-1, FindCoordinator 0-2 (its LZ4 feature check; never called here), ApiVersions 0.
# No InitProducerId: the producer stays non-idempotent.
API_VERSIONS = [(0, 0, 7), (1, 0, 11), (3, 0, 1), (10, 0, 2), (18, 0, 0)]


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        value = self.data[self.pos:self.pos + size].decode()
        self.pos += size
        return value

    def bytes_(self) -> bytes | None:
        size = self.take(">i")
        if size < 0:
            return None
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value


class FakeBroker(FrameServer):
    """One-partition broker that records every Produce request's records bytes."""

    def __init__(self) -> None:
        self.produced: list[bytes] = []
        self.requests: list[tuple[int, int]] = []  # (api key, version)
        self.next_offset = 0
        self.lock = threading.Lock()
        super().__init__(self._answer)

    def _answer(self, frame: bytes) -> bytes | None:
        request = _Reader(frame)
        api_key, version, correlation_id = request.take(">hhi")
        request.string()  # client id
        self.requests.append((api_key, version))
        body = self._handle(api_key, version, request)
        if body is None:
            return None
        response = struct.pack(">i", correlation_id) + body  # header v0
        return struct.pack(">i", len(response)) + response

    def _handle(self, api_key: int, version: int, request: _Reader) -> bytes | None:
        if api_key == 18:
            if version > 0:  # unsupported version: a v0 body with error 35 and our range
                return struct.pack(">hihhh", 35, 1, 18, 0, 0)
            entries = b"".join(struct.pack(">hhh", *entry) for entry in API_VERSIONS)
            return struct.pack(">hi", 0, len(API_VERSIONS)) + entries
        if api_key == 3:
            return self._metadata(version)
        if api_key == 0:
            return self._produce(version, request)
        raise ConnectionError(f"fake broker: unexpected api key {api_key}")

    def _metadata(self, version: int) -> bytes:
        broker = struct.pack(">i", 1) + _string("127.0.0.1") + struct.pack(">i", self.port)
        if version >= 1:
            broker += struct.pack(">h", -1)  # rack: null
        out = struct.pack(">i", 1) + broker
        if version >= 1:
            out += struct.pack(">i", 1)  # controller id
        topic = struct.pack(">h", 0) + _string(TOPIC)
        if version >= 1:
            topic += b"\x00"  # is_internal
        partition = struct.pack(">hiiiiii", 0, 0, 1, 1, 1, 1, 1)  # error, index, leader, [1], [1]
        return out + struct.pack(">i", 1) + topic + struct.pack(">i", 1) + partition

    def _produce(self, version: int, request: _Reader) -> bytes | None:
        if version >= 3:
            request.string()  # transactional id
        acks, _timeout = request.take(">hi")
        topics = []
        for _ in range(request.take(">i")):
            name = request.string()
            partitions = []
            for _ in range(request.take(">i")):
                index = request.take(">i")
                records = request.bytes_()
                with self.lock:
                    self.produced.append(records)
                    base = self.next_offset
                    self.next_offset += sum(v.record_count for v in iter_batches(records))
                entry = struct.pack(">ihq", index, 0, base)
                if version >= 2:
                    entry += struct.pack(">q", -1)  # log append time
                if version >= 5:
                    entry += struct.pack(">q", 0)  # log start offset
                partitions.append(entry)
            topics.append(_string(name) + struct.pack(">i", len(partitions)) + b"".join(partitions))
        if acks == 0:
            return None
        body = struct.pack(">i", len(topics)) + b"".join(topics)
        return body + struct.pack(">i", 0) if version >= 1 else body


@pytest.fixture(scope="module")
def broker():
    fake = FakeBroker()
    yield fake
    fake.close()


BASE_TS = 1_700_000_000_000
MESSAGES = [
    (None if i % 6 == 5 else b"key-%d" % i,
     None if i % 9 == 8 else b"librdkafka value %d " % i * 15,
     [("idx", str(i).encode()), ("empty", None)] if i % 4 == 0 else None,
     BASE_TS + 3 * i)
    for i in range(30)
]

CODEC_NAMES = {Compression.GZIP: "gzip", Compression.SNAPPY: "snappy",
               Compression.LZ4: "lz4", Compression.ZSTD: "zstd", Compression.NONE: "none"}


def _produce(broker: FakeBroker, codec_name: str) -> list[bytes]:
    with broker.lock:
        start = len(broker.produced)
    producer = confluent_kafka.Producer({
        "bootstrap.servers": f"127.0.0.1:{broker.port}",
        "compression.type": codec_name,
        "linger.ms": 200,  # one batch for all messages
        "message.timeout.ms": 15_000,
        "socket.timeout.ms": 10_000,
    })
    errors = []
    for key, value, headers, ts in MESSAGES:
        producer.produce(TOPIC, value=value, key=key, headers=headers, timestamp=ts, partition=0,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    remaining = producer.flush(20)
    assert remaining == 0 and errors == []
    with broker.lock:
        return broker.produced[start:]


@pytest.mark.parametrize("codec", list(Compression))
def test_librdkafka_batches_parse_with_ours(broker, codec):
    captured = _produce(broker, CODEC_NAMES[codec])
    assert captured, "librdkafka produced nothing"
    records = []
    for data in captured:
        for view in iter_batches(data, allow_partial=False):
            view.validate()
            assert view.compression == codec
            assert view.producer_id == -1 and view.base_sequence == -1
            if codec == Compression.SNAPPY:
                assert not bytes(view.records_data).startswith(b"\x82SNAPPY")  # raw snappy
            records.extend(view.records())
    expected_headers = [[(k, v) for k, v in headers] if headers else [] for _, _, headers, _ in MESSAGES]
    # offsets are relative to each batch's baseOffset, which librdkafka leaves at 0
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == [
        (key, value, hdrs, ts) for (key, value, _, ts), hdrs in zip(MESSAGES, expected_headers)]
    assert all(isinstance(r, Record) for r in records)
    assert {version for key, version in broker.requests if key == 0} == {7}  # magic-2 Produce

"""Message formats v0/v1 (magic 0 and 1) against a real broker, with kafka-python in its old-broker modes.

kafka-python's ``api_version`` picks the format and the request versions: (0, 8, 2) magic 0 with Produce v0 and
Fetch v0, (0, 9) magic 0 with Produce/Fetch v1, (0, 10, 0) magic 1 with Produce/Fetch v2, (0, 10, 1) magic 1
with Fetch v3. The broker converts what they produce into v2 batches on append and down-converts on fetch,
as Kafka 2.8 with its default ``log.message.format.version`` does:

- every codec kafka-python has for old formats (none, gzip, snappy, lz4; lz4 with magic 0 uses the old
  frame checksum) round-trips, and the log holds v2 batches of the producer's codec, without producer ids,
  with the producer's timestamps (NO_TIMESTAMP, -1, for magic 0) and gap-free offsets;
- v2 batches written by confluent-kafka (headers, a transaction committed and one aborted) read by
  kafka-python in 0.10/0.9 mode: offsets and timestamps as stored, headers and markers gone, aborted
  records delivered (these fetch versions have no isolation level); and kafka-python's magic 1 records read
  back by confluent-kafka with their CreateTime;
- LogAppendTime topics stamp converted batches and old consumers see the stamp;
- ``message.downconversion.enable=false`` answers UNSUPPORTED_VERSION below Fetch v4; Produce v3+ refuses
  magic 1 (INVALID_RECORD), a bad CRC is CORRUPT_MESSAGE, a producer claiming LogAppendTime INVALID_TIMESTAMP.
"""

from __future__ import annotations

import time

import pytest

from odradek.clients.simple_client import SimpleClient
from odradek.protocol.records import iter_batches
from odradek.protocol.records.legacy_records import LegacyMessageSetBuilder, iter_messages
from tests.integration.helpers import raw_fetch, raw_produce, run

pytestmark = pytest.mark.timeout(300)

CODECS = (None, "gzip", "snappy", "lz4")
CODEC_IDS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3}
MODES = {(0, 8, 2): 0, (0, 9): 0, (0, 10, 0): 1, (0, 10, 1): 1}  # kafka-python api_version -> magic
RECORDS = 40
CORRUPT_MESSAGE, INVALID_TIMESTAMP, UNSUPPORTED_VERSION, INVALID_RECORD = 2, 32, 35, 87


def create(servers: str, topic: str, partitions: int, configs: dict | None = None) -> None:
    async def go():
        async with SimpleClient(servers) as client:
            assert (await client.create_topics({topic: (partitions, 1)}, configs=configs))[topic] == 0
            await client.wait_for_leaders(topic)
    run(go())


def stored_batches(servers: str, topic: str, partition: int) -> list:
    """The partition's batches as the log holds them (Fetch v12 is never converted)."""
    async def go():
        async with SimpleClient(servers) as client:
            answer = await raw_fetch(client, topic, 0, 12, partition=partition, max_bytes=8 << 20)
            assert answer.error_code == 0
            return list(iter_batches(bytes(answer.records)))
    return run(go())


def kafka_python_read(servers: str, topic: str, ends: dict[int, int], api_version: tuple, **config) -> dict:
    """Every record up to ``ends`` per partition, read with kafka-python in ``api_version`` mode."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=servers, api_version=api_version, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest", **config)
    try:
        partitions = [TopicPartition(topic, p) for p in ends]
        consumer.assign(partitions)
        got: dict[int, list] = {p: [] for p in ends}
        deadline = time.monotonic() + 60
        while any(got[p][-1].offset + 1 < end if got[p] else end > 0 for p, end in ends.items()):
            assert time.monotonic() < deadline, {p: len(r) for p, r in got.items()}
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += records
        return got
    finally:
        consumer.close()


def assert_delivered_as(records: list, magic: int) -> None:
    """kafka-python hands out a message's CRC only for magic 0/1 (v2 records have none), and no timestamp
    at all for magic 0: proof of the format the broker sent."""
    assert all(isinstance(r.checksum, int) for r in records)
    if magic == 0:
        assert {(r.timestamp, r.timestamp_type) for r in records} == {(None, None)}


@pytest.mark.parametrize("api_version", list(MODES), ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_old_modes_round_trip_every_codec(single_broker_cluster, api_version):
    from kafka import KafkaProducer
    servers = single_broker_cluster.bootstrap_servers
    magic = MODES[api_version]
    topic = "legacy-" + "-".join(map(str, api_version))
    create(servers, topic, len(CODECS))
    base_ts = int(time.time() * 1000) - 10_000
    sent = {}
    for partition, codec in enumerate(CODECS):
        producer = KafkaProducer(bootstrap_servers=servers, api_version=api_version, compression_type=codec,
                                 linger_ms=50, acks=1)
        try:
            futures = [producer.send(topic, key=b"k%d" % i if i % 3 else None, value=b"v%d-" % i * (i % 7),
                                     partition=partition, timestamp_ms=base_ts + i) for i in range(RECORDS)]
            producer.flush(timeout=60)
            sent[partition] = [f.get(timeout=10) for f in futures]
        finally:
            producer.close()
        assert [m.offset for m in sent[partition]] == list(range(RECORDS)), codec

    expected_ts = [base_ts + i if magic else -1 for i in range(RECORDS)]
    for partition, codec in enumerate(CODECS):
        batches = stored_batches(servers, topic, partition)
        assert {b.compression for b in batches} == {CODEC_IDS[codec]}, codec
        assert all(b.magic == 2 and b.producer_id == -1 and b.verify_crc() for b in batches)
        stored = [r for b in batches for r in b.records()]
        assert [r.offset for r in stored] == list(range(RECORDS))
        assert [r.timestamp for r in stored] == expected_ts
        assert [(r.key, r.value) for r in stored] == \
            [(b"k%d" % i if i % 3 else None, b"v%d-" % i * (i % 7)) for i in range(RECORDS)]

    got = kafka_python_read(servers, topic, {p: RECORDS for p in range(len(CODECS))}, api_version)
    for partition, records in got.items():
        assert [r.offset for r in records] == list(range(RECORDS)), CODECS[partition]
        assert_delivered_as(records, magic)
        assert [(r.key, r.value) for r in records] == \
            [(b"k%d" % i if i % 3 else None, b"v%d-" % i * (i % 7)) for i in range(RECORDS)]
        if magic:
            assert [(r.timestamp, r.timestamp_type) for r in records] == [(t, 0) for t in expected_ts]


def test_confluent_batches_read_by_kafka_python_in_old_modes(single_broker_cluster):
    from confluent_kafka import Producer
    servers = single_broker_cluster.bootstrap_servers
    topic = "legacy-mixed-from-v2"
    create(servers, topic, 2)
    base_ts = int(time.time() * 1000) - 5_000
    producer = Producer({"bootstrap.servers": servers, "transactional.id": "legacy-mixed", "linger.ms": 20,
                         "compression.type": "gzip"})
    producer.init_transactions(30)
    expected: dict[int, list] = {0: [], 1: []}

    def send_all(values: list[bytes], partition: int) -> None:
        for i, value in enumerate(values):
            producer.produce(topic, value=value, key=b"key", partition=partition, timestamp=base_ts + len(value) + i,
                             headers=[("h", b"dropped")])
    for step, (commit, count) in enumerate([(True, 3), (False, 2), (True, 4)]):
        producer.begin_transaction()
        values = [b"txn%d-%d" % (step, i) for i in range(count)]
        for partition in (0, 1):
            send_all(values, partition)
            # read_uncommitted below Fetch v4: aborted records are delivered too, markers never
            expected[partition] += [(v, base_ts + len(v) + i) for i, v in enumerate(values)]
        assert producer.flush(30) == 0  # written before the abort, so the aborted records are in the log
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    stored_offsets = {p: [r.offset for b in stored_batches(servers, topic, p) if not b.is_control for r in b.records()]
                      for p in (0, 1)}
    assert stored_offsets[0] == [0, 1, 2, 4, 5, 7, 8, 9, 10]  # markers at 3, 6 and 11
    for api_version, magic in (((0, 10, 1), 1), ((0, 9), 0)):
        # up to the last data record: a fetch from the final marker gets only overflow bytes, as from Kafka
        got = kafka_python_read(servers, topic, {0: 11, 1: 11}, api_version)
        for partition, records in got.items():
            assert [r.offset for r in records] == stored_offsets[partition], api_version
            assert_delivered_as(records, magic)
            assert [(r.value, r.key) for r in records] == [(v, b"key") for v, _ in expected[partition]]
            assert all(not r.headers for r in records)
            if magic:
                assert [r.timestamp for r in records] == [t for _, t in expected[partition]]

    async def from_the_last_marker():
        async with SimpleClient(servers) as client:
            return await raw_fetch(client, topic, 11, 3)
    # Kafka's LazyDownConversionRecords when nothing converts: 12 bytes, offset -1 and a length past them
    answer = run(from_the_last_marker())
    assert (answer.error_code, bytes(answer.records)) == (0, b"\xff" * 8 + (61).to_bytes(4, "big"))


def test_kafka_python_magic_1_read_by_confluent_kafka(single_broker_cluster):
    from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, TopicPartition
    from kafka import KafkaProducer
    servers = single_broker_cluster.bootstrap_servers
    topic = "legacy-mixed-to-v2"
    create(servers, topic, 1)
    base_ts = int(time.time() * 1000) - 5_000
    producer = KafkaProducer(bootstrap_servers=servers, api_version=(0, 10, 0), compression_type="snappy",
                             linger_ms=20)
    for i in range(20):
        producer.send(topic, key=b"%d" % i, value=b"value-%d" % i, partition=0, timestamp_ms=base_ts + i)
    producer.flush(timeout=30)
    producer.close()
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "legacy-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got.append(message)
        assert [(m.offset(), m.key(), m.value(), m.timestamp()) for m in got] == \
            [(i, b"%d" % i, b"value-%d" % i, (TIMESTAMP_CREATE_TIME, base_ts + i)) for i in range(20)]
    finally:
        consumer.close()


def test_log_append_time_topic_stamps_converted_batches(single_broker_cluster):
    from kafka import KafkaProducer
    servers = single_broker_cluster.bootstrap_servers
    topic = "legacy-log-append-time"
    create(servers, topic, 2, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    stamps = {}
    for partition, codec in enumerate((None, "gzip")):
        producer = KafkaProducer(bootstrap_servers=servers, api_version=(0, 10, 0), compression_type=codec,
                                 linger_ms=20)
        futures = [producer.send(topic, value=b"x%d" % i, partition=partition, timestamp_ms=1000 + i)
                   for i in range(5)]
        producer.flush(timeout=30)
        stamps[partition] = {f.get(timeout=10).timestamp for f in futures}
        producer.close()
    for partition in (0, 1):
        [stamp] = stamps[partition]  # the produce response's log_append_time, one per request
        assert stamp >= before
        [batch] = stored_batches(servers, topic, partition)
        assert batch.timestamp_type == 1 and batch.max_timestamp == stamp
    got = kafka_python_read(servers, topic, {0: 5, 1: 5}, (0, 10, 1))
    for partition, records in got.items():
        [stamp] = stamps[partition]
        assert [(r.timestamp, r.timestamp_type) for r in records] == [(stamp, 1)] * 5
        assert_delivered_as(records, 1)


def test_fetch_sizes_and_refusals_as_kafka(single_broker_cluster):
    """Raw requests: down-conversion disabled, Produce v3 with magic 1, bad CRC, LogAppendTime claimed, and a
    converted fetch taking max(stored bytes, first converted batch) with a small partition limit."""
    servers = single_broker_cluster.bootstrap_servers
    create(servers, "legacy-no-downconversion", 1, configs={"message.downconversion.enable": "false"})
    create(servers, "legacy-raw", 1)

    def message_set(magic: int, count: int, *, log_append_time: bool = False, codec: int = 0) -> bytes:
        builder = LegacyMessageSetBuilder(magic, codec, timestamp_type=1 if log_append_time else 0,
                                          log_append_time=123 if log_append_time else -1)
        for i in range(count):
            builder.append(i, 1000 + i, b"key", b"value-%d" % i * 10)
        return builder.build()

    async def go():
        async with SimpleClient(servers) as client:
            answer = await raw_produce(client, "legacy-no-downconversion", message_set(1, 3), 2)
            assert (answer.error_code, answer.base_offset) == (0, 0)
            refused = await raw_fetch(client, "legacy-no-downconversion", 0, 3)
            assert (refused.error_code, refused.high_watermark, bytes(refused.records or b"")) == \
                (UNSUPPORTED_VERSION, -1, b"")
            assert (await raw_fetch(client, "legacy-no-downconversion", 0, 4)).error_code == 0

            assert (await raw_produce(client, "legacy-raw", message_set(1, 2), 3)).error_code == INVALID_RECORD
            corrupt = bytearray(message_set(0, 2))
            corrupt[-1] ^= 0xFF
            assert (await raw_produce(client, "legacy-raw", bytes(corrupt), 1)).error_code == CORRUPT_MESSAGE
            claimed = message_set(1, 2, log_append_time=True)
            assert (await raw_produce(client, "legacy-raw", claimed, 2)).error_code == INVALID_TIMESTAMP
            for base in (0, 50):
                answer = await raw_produce(client, "legacy-raw", message_set(1, 50), 2)
                assert (answer.error_code, answer.base_offset) == (0, base)
            stored = await raw_fetch(client, "legacy-raw", 0, 4, max_bytes=100)  # KIP-74: one whole batch
            first_batch = len(stored.records)
            converted = await raw_fetch(client, "legacy-raw", 0, 3, max_bytes=100)
            messages = list(iter_messages(bytes(converted.records)))
            # v1 messages are bigger than v2 records: the first batch converted decides the size, whole
            assert len(converted.records) > first_batch and [m.offset for m in messages] == list(range(50))
            # from the middle of an uncompressed batch: magic 0 messages from the fetch offset, cut at the
            # stored size (they are bigger than v2 records), the last one partial
            both = await raw_fetch(client, "legacy-raw", 10, 4, max_bytes=1 << 20)
            magic0 = await raw_fetch(client, "legacy-raw", 10, 1, max_bytes=1 << 20)
            messages = list(iter_messages(bytes(magic0.records)))
            assert len(magic0.records) == len(both.records) and {m.magic for m in messages} == {0}
            assert [m.offset for m in messages] == list(range(10, 10 + len(messages))) and 40 < len(messages) < 90
            assert sum(m.size_in_bytes for m in messages) < len(magic0.records)
    run(go())

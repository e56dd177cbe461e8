"""The bulk client APIs against a real broker: send_batch (lists, pyarrow arrays, Tables; keys, headers,
timestamps, a partition; in transactions), poll_arrow (Spark's schema, positions, max_records, read_committed,
seek, pause) and the blocking Consumer's iteration (the position follows what was handed out).

Other clients read what send_batch wrote (kafka-python, confluent-kafka), so its batches are Kafka's format.
One broker for the module; about 30 s in all.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from odradek.clients import AIOConsumer, AIOProducer, Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.clients.producer.partitioner import partition_for_key
from odradek.protocol.records.arrow import KAFKA_SCHEMA
from tests.integration.helpers import run

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 3


@pytest.fixture(scope="module")
def servers(single_broker_cluster) -> str:
    return single_broker_cluster.bootstrap_servers


def new_topic(servers: str, partitions: int = PARTITIONS, configs: dict | None = None) -> str:
    name = f"bulk-{uuid.uuid4().hex[:8]}"
    with Admin(servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    return name


def read_records(servers: str, topic: str, count: int, partitions: int = PARTITIONS, **configs) -> dict:
    """{partition: [ConsumerRecord]} until ``count`` records were read (getmany, the reference)."""
    got: dict[int, list] = {p: [] for p in range(partitions)}
    with Consumer(bootstrap_servers=servers, auto_offset_reset="earliest", **configs) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        for _ in range(200):
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += records
            if sum(len(r) for r in got.values()) >= count:
                break
    return got


def test_send_batch_lists_keys_headers_timestamps(servers):
    topic = new_topic(servers)
    values = [b"value-%d" % i if i % 7 else None for i in range(500)]
    keys = [b"key-%d" % (i % 13) if i % 5 else None for i in range(500)]
    headers = [[("n", b"%d" % i), ("empty", None)] if i % 3 == 0 else None for i in range(500)]
    timestamps = [1_700_000_000_000 + i for i in range(500)]
    with Producer(bootstrap_servers=servers, linger_ms=5) as producer:
        result = producer.send_batch(topic, values, keys=keys, headers=headers, timestamps=timestamps).get(30)
        single = producer.send(topic, b"after", key=b"key-3").get(30)
    assert result.records == 500 and sum(count for _, _, count in result.offsets) == 500
    assert single.partition == partition_for_key(b"key-3", PARTITIONS)  # send_batch places keys as send does
    got = read_records(servers, topic, 501)
    stored = [r for records in got.values() for r in records]
    assert all(r.partition == partition_for_key(r.key, PARTITIONS) for r in stored if r.key is not None)
    mine = sorted((r for r in stored if r.value != b"after"), key=lambda r: r.timestamp)
    assert [(r.value, r.key, r.timestamp) for r in mine] == list(zip(values, keys, timestamps))
    assert [r.headers for r in mine] == [h or [] for h in headers]
    for records in got.values():  # each partition holds its records in the call's order
        assert [r.timestamp for r in records if r.value != b"after"] == \
            sorted(r.timestamp for r in records if r.value != b"after")


def test_send_batch_arrow_table_and_one_partition_async(servers):
    topic = new_topic(servers)
    table = pa.table({"key": pa.array([f"k{i}" for i in range(300)], pa.string()),
                      "value": pa.array([b"v%d" % i for i in range(300)], pa.binary())})

    async def main():
        async with AIOProducer(bootstrap_servers=servers) as producer:
            first = await producer.send_batch(topic, table.slice(100), partition=2)  # a sliced Table
            second = await producer.send_batch(topic, pa.array(["s1", "s2"]), partition=2)
            return await first, await second

    first, second = run(main())
    assert (first.records, second.records) == (200, 2)
    got = read_records(servers, topic, 202)
    assert not got[0] and not got[1]
    assert [(r.key, r.value) for r in got[2]] == \
        [(f"k{i}".encode(), b"v%d" % i) for i in range(100, 300)] + [(None, b"s1"), (None, b"s2")]
    assert [r.offset for r in got[2]] == list(range(202))
    assert first.offsets[0][1] == 0 and second.offsets == [(TopicPartition(topic, 2), 200, 2)]


def test_send_batch_bad_input_raises_in_the_callers_thread(servers):
    with Producer(bootstrap_servers=servers) as producer:
        with pytest.raises(ValueError, match="keys has 2 items for 3 records"):
            producer.send_batch("t", [b"a", b"b", b"c"], keys=[b"k", b"k"])
        with pytest.raises(TypeError):
            producer.send_batch("t", b"not a sequence")
        with pytest.raises(ValueError, match="needs a 'value' column"):
            producer.send_batch("t", pa.table({"key": [b"k"]}))


def test_send_batch_in_transactions_and_poll_arrow_read_committed(servers):
    topic = new_topic(servers, 1)
    with Producer(bootstrap_servers=servers, transactional_id=f"bulk-{topic}") as producer:
        producer.init_transactions()
        with producer.transaction():
            producer.send_batch(topic, [b"committed-%d" % i for i in range(100)])
        producer.begin_transaction()
        producer.send_batch(topic, [b"aborted-%d" % i for i in range(50)])
        producer.flush()
        producer.abort_transaction()
        with producer.transaction():
            producer.send_batch(topic, pa.array([b"later-%d" % i for i in range(10)]))
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=servers, auto_offset_reset="earliest", isolation_level="read_committed") as c:
        c.assign([tp])
        values = []
        for _ in range(100):
            for batch in c.poll_arrow(timeout_ms=500).values():
                values += batch.column("value").to_pylist()
            if len(values) >= 110:
                break
        assert values == [b"committed-%d" % i for i in range(100)] + [b"later-%d" % i for i in range(10)]
        assert c.position(tp) == 100 + 1 + 50 + 1 + 10 + 1  # past the markers and the aborted records


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_poll_arrow_matches_getmany(servers, compression):
    topic = new_topic(servers, configs={"compression.type": "producer"})
    with Producer(bootstrap_servers=servers, compression_type=compression, linger_ms=5) as producer:
        for i in range(900):
            producer.send(topic, b"value-%d" % i if i % 11 else None, key=b"k%d" % (i % 17) if i % 4 else None,
                          headers=[("i", b"%d" % i)] if i % 9 == 0 else None, partition=i % PARTITIONS)
        producer.flush()
    expected = read_records(servers, topic, 900)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer(bootstrap_servers=servers, auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        got: dict[int, list] = {p: [] for p in range(PARTITIONS)}
        for _ in range(200):
            for tp, batch in consumer.poll_arrow(timeout_ms=500, max_records=70).items():
                assert batch.schema == KAFKA_SCHEMA and batch.num_rows <= 70
                batch.validate(full=True)
                got[tp.partition] += batch.to_pylist()
            if sum(len(rows) for rows in got.values()) >= 900:
                break
        assert {tp: consumer.position(tp) for tp in tps} == {tp: 300 for tp in tps}
    for p in range(PARTITIONS):
        assert [(row["topic"], row["partition"], row["offset"], row["key"], row["value"],
                 int(row["timestamp"].timestamp() * 1000), row["timestampType"],
                 [(h["key"], h["value"]) for h in row["headers"]]) for row in got[p]] == \
            [(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp, r.timestamp_type, r.headers)
             for r in expected[p]]


def test_poll_arrow_after_a_partial_getmany_seek_and_pause(servers):
    topic = new_topic(servers, 1)
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap_servers=servers) as producer:
        producer.send_batch(topic, [b"%d" % i for i in range(200)]).get(30)

    async def main():
        async with AIOConsumer(bootstrap_servers=servers, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            first = (await consumer.getmany(timeout_ms=5000, max_records=5))[tp]  # part of a batch
            rest = (await consumer.poll_arrow(timeout_ms=5000, max_records=20))[tp]
            consumer.seek(tp, 150)
            after_seek = (await consumer.poll_arrow(timeout_ms=5000, max_records=10))[tp]
            consumer.pause(tp)
            paused = await consumer.poll_arrow(timeout_ms=200)
            consumer.resume(tp)
            resumed = (await consumer.getmany(timeout_ms=5000, max_records=3))[tp]
            return first, rest, after_seek, paused, resumed, await consumer.position(tp)

    first, rest, after_seek, paused, resumed, position = run(main())
    assert [r.offset for r in first] == list(range(5))
    assert rest.column("offset").to_pylist() == list(range(5, 25))
    assert after_seek.column("value").to_pylist() == [b"%d" % i for i in range(150, 160)]
    assert paused == {}
    assert [r.offset for r in resumed] == [160, 161, 162] and position == 163


def test_iteration_moves_the_position_record_by_record(servers):
    topic = new_topic(servers, 1)
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap_servers=servers) as producer:
        producer.send_batch(topic, [b"%d" % i for i in range(300)]).get(30)
    group = f"bulk-iter-{topic}"
    with Consumer(bootstrap_servers=servers, auto_offset_reset="earliest", group_id=group,
                  consumer_timeout_ms=5000) as consumer:
        consumer.assign([tp])
        seen = []
        for record in consumer:  # the whole buffer is taken at once, handed out one by one
            seen.append(record.offset)
            if len(seen) == 40:
                assert consumer.position(tp) == 40
                consumer.commit()
                break
        assert consumer.committed(tp).offset == 40
        for record in consumer:  # the same iteration goes on where it stopped
            seen.append(record.offset)
            if record.offset == 99:
                consumer.seek(tp, 250)  # the records taken but not handed out are dropped
            if record.offset == 299:
                break
        assert seen == list(range(100)) + list(range(250, 300))
        assert next(consumer, None) is None  # consumer_timeout_ms without a record ends the iteration
        assert consumer.position(tp) == 300
    with Consumer(bootstrap_servers=servers, group_id=group) as again:  # the committed position was 40
        again.assign([tp])
        assert again.position(tp) == 40


def test_other_clients_read_what_send_batch_wrote(servers):
    kafka = pytest.importorskip("kafka")
    confluent = pytest.importorskip("confluent_kafka")
    topic = new_topic(servers, 1)
    with Producer(bootstrap_servers=servers, compression_type="lz4") as producer:
        producer.send_batch(topic, pa.array([b"x%d" % i for i in range(1000)]), keys=[b"k"] * 1000,
                            headers=[[("h", b"1")]] * 1000).get(30)
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=servers, auto_offset_reset="earliest",
                                   consumer_timeout_ms=5000)
    theirs = [(m.key, m.value, list(m.headers)) for m in consumer]
    consumer.close()
    assert theirs == [(b"k", b"x%d" % i, [("h", b"1")]) for i in range(1000)]
    c = confluent.Consumer({"bootstrap.servers": servers, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    values = []
    while len(values) < 1000:
        for message in c.consume(1000, 5.0):
            assert message.error() is None
            values.append(message.value())
    c.close()
    assert values == [b"x%d" % i for i in range(1000)]


def test_record_futures_from_send_and_callbacks(servers):
    topic = new_topic(servers, 1)
    calls = []
    with Producer(bootstrap_servers=servers, linger_ms=20) as producer:
        futures = [producer.send(topic, b"%d" % i, key=b"k", timestamp_ms=1_700_000_000_000 + i) for i in range(50)]
        futures[0].add_callback(calls.append)  # before its batch is answered (maybe before it is in one)
        producer.flush()
        futures[1].add_callback(calls.append)  # after
    metadata = [future.get(0) for future in futures]
    assert [(m.offset, m.timestamp, m.serialized_key_size, m.serialized_value_size) for m in metadata] == \
        [(i, 1_700_000_000_000 + i, 1, len(b"%d" % i)) for i in range(50)]
    assert calls == metadata[:2]
    assert all(future.succeeded() and future.exception() is None for future in futures)

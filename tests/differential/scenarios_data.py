"""Hand-written sequences: the data path (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords,
InitProducerId without a transaction, DescribeProducers), every advertised version, normal and error paths:
unknown topics and partitions, out-of-range offsets, fenced leader epochs, bad acks, legacy message sets,
corrupt batches, idempotent producers with bad sequences and epochs."""

from __future__ import annotations

from odradek.clients.simple_client import build_batch
from odradek.protocol.api_keys import ApiKey as K
from odradek.protocol.records.legacy_records import encode_message

from .harness import Side, versions
from .scenarios_topics import create_topic

TOPIC = "diff-data"
TS = 1_700_000_000_000  # every record carries its own timestamp, so both logs hold the same bytes


def batch(values: list[bytes], ts: int = TS, **producer: int) -> bytes:
    return build_batch([(b"k", v, (), ts + i) for i, v in enumerate(values)], **producer)


def legacy(value: bytes, magic: int = 1, ts: int = TS) -> bytes:
    return encode_message(0, magic, 0, ts, b"k", value)


def produce_spec(records: bytes, *, topic: str = TOPIC, partition: int = 0, acks: int = -1,
                 txn: str | None = None) -> dict:
    return {"transactional_id": txn, "acks": acks, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


async def produce(side: Side) -> None:
    await create_topic(side, TOPIC, 2)
    for v in versions(K.PRODUCE):
        records = legacy(b"v%d" % v) if v < 3 else batch([b"v%d-a" % v, b"v%d-b" % v])
        await side.call(f"v{v} acks=-1", K.PRODUCE, v, produce_spec(records))
        await side.call(f"v{v} acks=1 p1", K.PRODUCE, v, produce_spec(records, partition=1, acks=1))
        await side.call(f"v{v} unknown topic", K.PRODUCE, v, produce_spec(records, topic="no-such-topic"))
        await side.call(f"v{v} unknown partition", K.PRODUCE, v, produce_spec(records, partition=99))
        await side.call(f"v{v} acks=2", K.PRODUCE, v, produce_spec(records, acks=2))
        await side.call(f"v{v} invalid topic", K.PRODUCE, v, produce_spec(records, topic="bad name!"))
    await side.call("v8 magic 1 after v2", K.PRODUCE, 8, produce_spec(legacy(b"old")))
    await side.call("v2 magic 2 before v3", K.PRODUCE, 2, produce_spec(batch([b"new"])))
    corrupt = bytearray(batch([b"corrupt"]))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    await side.call("v8 corrupt crc", K.PRODUCE, 8, produce_spec(bytes(corrupt)))
    await side.call("v8 empty records", K.PRODUCE, 8, produce_spec(b""))
    await side.call("v8 internal topic", K.PRODUCE, 8, produce_spec(batch([b"x"]), topic="__consumer_offsets"))
    await side.call("v8 acks=0", K.PRODUCE, 8, produce_spec(batch([b"fire and forget"]), acks=0))


async def idempotent_produce(side: Side) -> None:
    for v in versions(K.INIT_PRODUCER_ID):
        spec: dict = {"transactional_id": None, "transaction_timeout_ms": 60000}
        if v >= 3:
            spec.update(producer_id=-1, producer_epoch=-1)
        await side.call(f"init v{v}", K.INIT_PRODUCER_ID, v, spec)
    answer = await side.call("init", K.INIT_PRODUCER_ID, 4, {"transactional_id": None,
                                                             "transaction_timeout_ms": 60000,
                                                             "producer_id": -1, "producer_epoch": -1})
    pid, epoch = answer.producer_id, answer.producer_epoch
    await side.call("init bad epoch", K.INIT_PRODUCER_ID, 4, {"transactional_id": None,
                                                              "transaction_timeout_ms": 60000,
                                                              "producer_id": pid, "producer_epoch": 7})

    def send(label: str, seq: int, ep: int = epoch, producer: int = pid, values: tuple = (b"a", b"b")):
        records = batch(list(values), producer_id=producer, producer_epoch=ep, base_sequence=seq)
        return side.call(label, K.PRODUCE, 8, produce_spec(records))

    await send("seq 0", 0)
    await send("seq 0 again (duplicate)", 0)
    await send("seq 2", 2)
    await send("seq 9 (gap)", 9)
    await send("seq 1 (old, not the last)", 1, values=(b"x",))
    await send("epoch -1 lower", 4, ep=epoch - 1 if epoch > 0 else -1)
    await send("epoch + 1 seq 5", 5, ep=epoch + 1)
    await send("epoch + 1 seq 0", 0, ep=epoch + 1)
    await send("old epoch after bump", 4)
    await send("unknown producer seq 3", 3, producer=pid + 1000)
    await send("unknown producer seq 0", 0, producer=pid + 1001)
    for v in versions(K.DESCRIBE_PRODUCERS):
        await side.call(f"describe producers v{v}", K.DESCRIBE_PRODUCERS, v, {"topics": [
            {"name": TOPIC, "partition_indexes": [0, 1, 99]}, {"name": "no-such-topic", "partition_indexes": [0]}]})


def fetch_spec(v: int, offset: int, *, topic: str = TOPIC, partition: int = 0, leader_epoch: int = -1,
               isolation: int = 0, max_bytes: int = 1 << 20) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes, "isolation_level": isolation,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": leader_epoch, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": max_bytes}]}]}


async def fetch(side: Side) -> None:
    for v in versions(K.FETCH):
        await side.call(f"v{v} from 0", K.FETCH, v, fetch_spec(v, 0))
        await side.call(f"v{v} p1 from 2", K.FETCH, v, fetch_spec(v, 2, partition=1))
        await side.call(f"v{v} out of range", K.FETCH, v, fetch_spec(v, 1000))
        await side.call(f"v{v} unknown topic", K.FETCH, v, fetch_spec(v, 0, topic="no-such-topic"))
        await side.call(f"v{v} unknown partition", K.FETCH, v, fetch_spec(v, 0, partition=99))
        await side.call(f"v{v} small max bytes", K.FETCH, v, fetch_spec(v, 3, max_bytes=10))
        if v >= 9:
            await side.call(f"v{v} future leader epoch", K.FETCH, v, fetch_spec(v, 0, leader_epoch=5))
            await side.call(f"v{v} current leader epoch", K.FETCH, v, fetch_spec(v, 0, leader_epoch=0))
        if v >= 4:
            await side.call(f"v{v} read committed", K.FETCH, v, fetch_spec(v, 0, isolation=1))


async def list_offsets(side: Side) -> None:
    for v in versions(K.LIST_OFFSETS):
        def spec(timestamp: int, partition: int = 0, topic: str = TOPIC, epoch: int = -1) -> dict:
            return {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": epoch, "timestamp": timestamp,
                 "max_num_offsets": 1}]}]}
        await side.call(f"v{v} latest", K.LIST_OFFSETS, v, spec(-1))
        await side.call(f"v{v} earliest", K.LIST_OFFSETS, v, spec(-2))
        await side.call(f"v{v} by time", K.LIST_OFFSETS, v, spec(TS + 1))
        await side.call(f"v{v} after the last time", K.LIST_OFFSETS, v, spec(TS + 10**9))
        if v == 0:  # the legacy answer: segment base offsets by file time, up to max_num_offsets
            await side.call("v0 in the future, 5 offsets", K.LIST_OFFSETS, 0, {**spec(4 * 10**12), "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": 4 * 10**12,
                                                "max_num_offsets": 5}]}]})
            await side.call("v0 earliest, 5 offsets", K.LIST_OFFSETS, 0, {**spec(-2), "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -2, "max_num_offsets": 5}]}]})
        await side.call(f"v{v} unknown topic", K.LIST_OFFSETS, v, spec(-1, topic="no-such-topic"))
        await side.call(f"v{v} unknown partition", K.LIST_OFFSETS, v, spec(-1, partition=99))
        if v >= 4:
            await side.call(f"v{v} future epoch", K.LIST_OFFSETS, v, spec(-1, epoch=5))
        if v >= 2:
            await side.call(f"v{v} read committed", K.LIST_OFFSETS, v, {**spec(-1), "isolation_level": 1})
            await side.call(f"v{v} same partition twice", K.LIST_OFFSETS, v, {
                "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1},
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]})


async def offset_for_leader_epoch(side: Side) -> None:
    for v in versions(K.OFFSET_FOR_LEADER_EPOCH):
        def spec(epoch: int, current: int = -1, partition: int = 0, topic: str = TOPIC, replica: int = -1) -> dict:
            return {"replica_id": replica, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}]}]}
        await side.call(f"v{v} epoch 0", K.OFFSET_FOR_LEADER_EPOCH, v, spec(0))
        await side.call(f"v{v} epoch 5", K.OFFSET_FOR_LEADER_EPOCH, v, spec(5))
        await side.call(f"v{v} unknown topic", K.OFFSET_FOR_LEADER_EPOCH, v, spec(0, topic="no-such-topic"))
        await side.call(f"v{v} unknown partition", K.OFFSET_FOR_LEADER_EPOCH, v, spec(0, partition=99))
        if v >= 2:
            await side.call(f"v{v} fenced", K.OFFSET_FOR_LEADER_EPOCH, v, spec(0, current=7))
        if v >= 3:
            await side.call(f"v{v} as a follower", K.OFFSET_FOR_LEADER_EPOCH, v, spec(0, replica=0))


async def delete_records(side: Side) -> None:
    name = "diff-delete-records"
    await create_topic(side, name, 1)
    await side.call("fill", K.PRODUCE, 8, produce_spec(batch([b"1", b"2", b"3", b"4", b"5"]), topic=name))
    for v in versions(K.DELETE_RECORDS):
        await side.call(f"v{v}", K.DELETE_RECORDS, v, {"timeout_ms": 5000, "topics": [
            {"name": name, "partitions": [{"partition_index": 0, "offset": 1 + v},
                                          {"partition_index": 99, "offset": 0}]},
            {"name": "no-such-topic", "partitions": [{"partition_index": 0, "offset": 0}]}]})
    await side.call("past the end", K.DELETE_RECORDS, 2, {"timeout_ms": 5000, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "offset": 99}]}]})
    await side.call("to the high watermark", K.DELETE_RECORDS, 2, {"timeout_ms": 5000, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "offset": -1}]}]})
    await side.call("before the start", K.DELETE_RECORDS, 2, {"timeout_ms": 5000, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "offset": 1}]}]})
    await side.call("earliest after", K.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]})


SCENARIOS = {f.__name__: f for f in (
    produce, idempotent_produce, fetch, list_offsets, offset_for_leader_epoch, delete_records)}

"""Hand-written sequences: transactions (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn, WriteTxnMarkers, transactional Produce, read_committed Fetch),
every advertised version, in each state of a transaction: empty, ongoing, committed, aborted, fenced."""

from __future__ import annotations

import asyncio

from odradek.protocol.api_keys import ApiKey as K

from .harness import Side, versions
from .scenarios_data import TOPIC, batch, fetch_spec, produce_spec
from .scenarios_topics import create_topic

TXN_GROUP = "diff-txn-group"


async def init(side: Side, label: str, txn: str, version: int = 4, pid: int = -1, epoch: int = -1):
    return await side.call(label, K.INIT_PRODUCER_ID, version, {
        "transactional_id": txn, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": epoch})


async def wait_until_ended(side: Side, txn: str, pid: int, epoch: int, commit: bool) -> None:
    """Poll (unrecorded) until the coordinator has completed an EndTxn: the same EndTxn again is answered
    CONCURRENT_TRANSACTIONS while the markers are being written, NONE once the transaction is complete."""
    for _ in range(400):
        answer = await side.call("poll", K.END_TXN, 3, end(txn, pid, epoch, commit), record=False)
        if answer.error_code != 51:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{side.name}: {txn} did not complete")


async def wait_until_complete(side: Side, partitions: tuple[int, ...] = (0, 1)) -> None:
    """Poll (unrecorded) until no transaction is open on the topic's partitions: the markers of an EndTxn are
    written after it is answered, and what follows must not race them."""
    for _ in range(400):
        answer = await side.call("poll", K.DESCRIBE_PRODUCERS, 0, {"topics": [
            {"name": TOPIC, "partition_indexes": list(partitions)}]}, record=False)
        states = [p for t in answer.topics for p in t.partitions for p in p.active_producers]
        if all(p.current_txn_start_offset == -1 for p in states):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{side.name}: a transaction stayed open")


def add_partitions(txn: str, pid: int, epoch: int, partitions: list[int], topic: str = TOPIC) -> dict:
    return {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
            "topics": [{"name": topic, "partitions": partitions}]}


def end(txn: str, pid: int, epoch: int, commit: bool) -> dict:
    return {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": commit}


async def transactions(side: Side) -> None:
    await create_topic(side, TOPIC, 2)
    for v in versions(K.INIT_PRODUCER_ID):
        await init(side, f"init v{v}", f"diff-txn-init-v{v}", v)
    await side.call("init too long timeout", K.INIT_PRODUCER_ID, 4, {
        "transactional_id": "diff-txn-timeout", "transaction_timeout_ms": 10**9, "producer_id": -1,
        "producer_epoch": -1})
    await side.call("init empty id", K.INIT_PRODUCER_ID, 4, {
        "transactional_id": "", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
    for v in versions(K.END_TXN):
        txn = f"diff-txn-v{v}"
        answer = await init(side, f"v{v} init", txn)
        pid, epoch = answer.producer_id, answer.producer_epoch
        await side.call(f"v{v} end with nothing open", K.END_TXN, v, end(txn, pid, epoch, True))
        add_v = min(v, max(versions(K.ADD_PARTITIONS_TO_TXN)))
        await side.call(f"v{v} add", K.ADD_PARTITIONS_TO_TXN, add_v, add_partitions(txn, pid, epoch, [0, 1]))
        await side.call(f"v{v} add unknown", K.ADD_PARTITIONS_TO_TXN, add_v, {
            "transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
            "topics": [{"name": TOPIC, "partitions": [0, 99]}, {"name": "no-such-topic", "partitions": [0]}]})
        await side.call(f"v{v} add stale epoch", K.ADD_PARTITIONS_TO_TXN, add_v,
                        add_partitions(txn, pid, epoch - 1 if epoch else 5, [0]))
        await side.call(f"v{v} add wrong producer", K.ADD_PARTITIONS_TO_TXN, add_v,
                        add_partitions(txn, pid + 77, epoch, [0]))
        await side.call(f"v{v} add unknown txn", K.ADD_PARTITIONS_TO_TXN, add_v,
                        add_partitions("no-such-txn", pid, epoch, [0]))
        records = batch([b"t%d-a" % v, b"t%d-b" % v], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                        transactional=True)
        await side.call(f"v{v} produce", K.PRODUCE, 8, produce_spec(records, txn=txn))
        await side.call(f"v{v} produce again (duplicate)", K.PRODUCE, 8, produce_spec(records, txn=txn))
        await side.call(f"v{v} produce without the transactional id", K.PRODUCE, 8,
                        produce_spec(records, partition=1))
        await side.call(f"v{v} add offsets", K.ADD_OFFSETS_TO_TXN, min(v, 3), {
            "transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": TXN_GROUP})
        await side.call(f"v{v} txn offset commit", K.TXN_OFFSET_COMMIT, min(v, 3), {
            "transactional_id": txn, "group_id": TXN_GROUP, "producer_id": pid, "producer_epoch": epoch,
            "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 5 + v,
                                                "committed_leader_epoch": -1, "committed_metadata": "txn"}]}]})
        await side.call(f"v{v} end stale epoch", K.END_TXN, v, end(txn, pid, epoch + 3, True))
        await side.call(f"v{v} end", K.END_TXN, v, end(txn, pid, epoch, v % 2 == 0))
        await wait_until_ended(side, txn, pid, epoch, v % 2 == 0)
        await wait_until_complete(side)
        await side.call(f"v{v} end again, the other way", K.END_TXN, v, end(txn, pid, epoch, v % 2 == 1))
        fenced = await init(side, f"v{v} init again (bumps the epoch)", txn)
        await side.call(f"v{v} old epoch add", K.ADD_PARTITIONS_TO_TXN, add_v, add_partitions(txn, pid, epoch, [0]))
        await side.call(f"v{v} old epoch end", K.END_TXN, v, end(txn, pid, epoch, True))
        await side.call(f"v{v} new epoch end", K.END_TXN, v, end(txn, fenced.producer_id, fenced.producer_epoch, False))
    await txn_offset_commit_versions(side)
    await side.call("read committed", K.FETCH, 12, fetch_spec(12, 0, isolation=1))
    await side.call("read uncommitted", K.FETCH, 12, fetch_spec(12, 0, isolation=0))
    await side.call("txn offsets visible", K.OFFSET_FETCH, 7, {"group_id": TXN_GROUP, "topics": None,
                                                               "require_stable": True})


async def txn_offset_commit_versions(side: Side) -> None:
    for v in versions(K.TXN_OFFSET_COMMIT):
        txn = f"diff-txn-offsets-v{v}"
        answer = await init(side, f"offsets v{v} init", txn)
        pid, epoch = answer.producer_id, answer.producer_epoch
        spec = {"transactional_id": txn, "group_id": TXN_GROUP, "producer_id": pid, "producer_epoch": epoch,
                "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
                    {"name": TOPIC, "partitions": [{"partition_index": 1, "committed_offset": 9,
                                                    "committed_leader_epoch": -1, "committed_metadata": ""}]}]}
        await side.call(f"offsets v{v} before add offsets", K.TXN_OFFSET_COMMIT, v, spec)
        for add_v in versions(K.ADD_OFFSETS_TO_TXN):
            await side.call(f"offsets v{v} add offsets v{add_v}", K.ADD_OFFSETS_TO_TXN, add_v, {
                "transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": TXN_GROUP})
        await side.call(f"offsets v{v} commit", K.TXN_OFFSET_COMMIT, v, spec)
        await side.call(f"offsets v{v} stale epoch", K.TXN_OFFSET_COMMIT, v, {**spec, "producer_epoch": epoch + 2})
        if v >= 3:
            await side.call(f"offsets v{v} unknown member", K.TXN_OFFSET_COMMIT, v,
                            {**spec, "generation_id": 3, "member_id": "nobody"})
        await side.call(f"offsets v{v} abort", K.END_TXN, 3, end(txn, pid, epoch, False))
        # The commit at a higher epoch moved the offsets partition's producer epoch on: the abort marker is
        # refused as fenced and the transaction stays in PrepareAbort, on Kafka 2.8.2 as on Odradek
        await side.call(f"offsets v{v} abort again", K.END_TXN, 3, end(txn, pid, epoch, False))


async def write_txn_markers(side: Side) -> None:
    for v in versions(K.WRITE_TXN_MARKERS):
        await side.call(f"v{v}", K.WRITE_TXN_MARKERS, v, {"markers": [
            {"producer_id": 4242, "producer_epoch": 0, "transaction_result": False, "coordinator_epoch": 0,
             "topics": [{"name": "no-such-topic", "partition_indexes": [0]},
                        {"name": TOPIC, "partition_indexes": [99]}]}]})


SCENARIOS = {f.__name__: f for f in (transactions, write_txn_markers)}

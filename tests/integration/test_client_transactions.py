"""Our transactional producer against three real brokers (RF 3), read by our, confluent-kafka's and
kafka-python's consumers.

Run as a script (``python test_client_transactions.py copy ...``) this module is also the
exactly-once copier that the SIGKILL test starts and kills.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from odradek.clients.consumer.consumer import AIOConsumer
from odradek.clients.producer.producer import AIOProducer
from odradek.clients.simple_client import SimpleClient
from odradek.clients.producer.sync_producer import Producer
from odradek.clients.producer.transaction_manager import TransactionAbortedError, TransactionState
from odradek.clients.types import TopicPartition
from odradek.protocol.errors import KafkaError, MessageTooLargeError, ProducerFencedError
from odradek.protocol.messages import FindCoordinatorRequest

pytestmark = pytest.mark.timeout(600)
PARTITIONS = 3


def run(coro, timeout: float = 300):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def create_topic(servers: str, name: str, partitions: int = PARTITIONS) -> None:
    async with SimpleClient(servers) as client:
        assert (await client.create_topics({name: (partitions, 3)}))[name] == 0
        await client.wait_for_leaders(name)


async def wait_until_stable(servers: str, topic: str, partitions: int = PARTITIONS, timeout: float = 60) -> dict:
    """Wait until every partition's last stable offset reached its log end (all markers written)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with SimpleClient(servers) as client:
        while True:
            ends = {}
            for p in range(partitions):
                committed = (await client.list_offsets(topic, p, -1, isolation_level=1))[0]
                ends[p] = (await client.list_offsets(topic, p, -1))[0]
                if committed != ends[p]:
                    break
            else:
                return ends
            assert loop.time() < deadline, f"{topic}: the last stable offset stayed behind the log end"
            await asyncio.sleep(0.1)


async def read_ours(servers: str, topic: str, isolation: str, partitions: int = PARTITIONS,
                    timeout: float = 60) -> list:
    """Every record our consumer returns from the start to the end offsets (LSO for read_committed)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    records = []
    async with AIOConsumer(bootstrap_servers=servers, isolation_level=isolation, auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            positions = {tp: await consumer.position(tp) for tp in tps}
            if all(positions[tp] >= ends[tp] for tp in tps):
                break
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records += batch
        else:
            raise AssertionError(f"our consumer stopped at {positions}, short of {ends} ({len(records)} records)")
    return records


def read_confluent(servers: str, topic: str, partitions: int = PARTITIONS, timeout: float = 60) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition as CKPartition

    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"ck-{topic}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([CKPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    values, at_end = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"confluent-kafka reached the end of only {at_end}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            values.append(message.value())
    finally:
        consumer.close()
    return values


def read_kafka_python(servers: str, topic: str, partitions: int = PARTITIONS, timeout: float = 60) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition as KPPartition

    consumer = KafkaConsumer(bootstrap_servers=servers, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    tps = [KPPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    ends = consumer.end_offsets(tps)
    values = []
    deadline = time.monotonic() + timeout
    try:
        while not all(consumer.position(tp) >= ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (f"kafka-python stopped at {[consumer.position(tp) for tp in tps]}, "
                                                 f"short of {ends}")
            for batch in consumer.poll(timeout_ms=500).values():
                values += [record.value for record in batch]
    finally:
        consumer.close()
    return values


def test_commit_and_abort_over_several_partitions_seen_by_three_read_committed_consumers(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-mixed"
    committed = [b"commit-%d" % i for i in range(60)] + [b"again-%d" % i for i in range(45)]
    aborted = [b"abort-%d" % i for i in range(30)] + [b"error-%d" % i for i in range(12)]

    async def produce():
        await create_topic(servers, topic)
        async with AIOProducer(bootstrap_servers=servers, transactional_id="txn-mixed-1", linger_ms=5) as producer:
            await producer.init_transactions()
            assert producer.transaction_state is TransactionState.READY
            producer.begin_transaction()
            futures = [await producer.send(topic, value, partition=i % PARTITIONS) for i, value in enumerate(committed[:60])]
            await producer.commit_transaction()
            offsets = [(await future).offset for future in futures]
            assert all(offset >= 0 for offset in offsets)

            producer.begin_transaction()
            for i, value in enumerate(aborted[:30]):
                await producer.send(topic, value, partition=i % PARTITIONS)
            await producer.flush()  # written to the partitions, then aborted
            await producer.abort_transaction()

            with pytest.raises(RuntimeError, match="boom"):  # transaction(): an exception aborts
                async with producer.transaction():
                    for i, value in enumerate(aborted[30:]):
                        await producer.send(topic, value, partition=i % PARTITIONS)
                    await producer.flush()
                    raise RuntimeError("boom")

            async with producer.transaction():  # and success commits
                for i, value in enumerate(committed[60:]):
                    await producer.send(topic, value, partition=i % PARTITIONS)
            assert producer.transaction_state is TransactionState.READY
        await wait_until_stable(servers, topic)
        return (await read_ours(servers, topic, "read_committed"), await read_ours(servers, topic, "read_uncommitted"))

    ours_committed, ours_uncommitted = run(produce())
    assert Counter(r.value for r in ours_committed) == Counter(committed)
    assert Counter(r.value for r in ours_uncommitted) == Counter(committed + aborted)  # no control records shown
    # Every transaction ended with one marker per partition: offsets have gaps that no record fills.
    highest = max(r.offset for r in ours_uncommitted if r.partition == 0)
    assert highest + 1 > len([r for r in ours_uncommitted if r.partition == 0])
    assert Counter(read_confluent(servers, topic)) == Counter(committed)
    assert Counter(read_kafka_python(servers, topic)) == Counter(committed)


def test_unsent_records_fail_when_the_transaction_aborts(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-unsent"

    async def main():
        await create_topic(servers, topic)
        async with AIOProducer(bootstrap_servers=servers, transactional_id="txn-unsent-1", linger_ms=60000) as producer:
            with pytest.raises(Exception, match="init_transactions"):
                await producer.send(topic, b"too early")
            await producer.init_transactions()
            with pytest.raises(Exception, match="begin_transaction"):
                await producer.send(topic, b"outside")
            producer.begin_transaction()
            future = await producer.send(topic, b"lingering", partition=0)  # waits for linger_ms
            await producer.abort_transaction()
            with pytest.raises(TransactionAbortedError):
                await future
            async with producer.transaction():
                await producer.send(topic, b"kept", partition=1)
        await wait_until_stable(servers, topic)
        return await read_ours(servers, topic, "read_uncommitted")

    assert [r.value for r in run(main())] == [b"kept"]


def test_close_aborts_an_open_transaction(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-close"

    async def main():
        await create_topic(servers, topic)
        # A coordinator timeout far beyond the wait below: only close()'s abort can end the transaction.
        async with AIOProducer(bootstrap_servers=servers, transactional_id="txn-close-1",
                               transaction_timeout_ms=600000) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            for i in range(9):
                await producer.send(topic, b"open-%d" % i, partition=i % PARTITIONS)
            await producer.flush()
        await wait_until_stable(servers, topic, timeout=60)
        return (await read_ours(servers, topic, "read_committed"), await read_ours(servers, topic, "read_uncommitted"))

    committed, everything = run(main())
    assert committed == []
    assert sorted(r.value for r in everything) == sorted(b"open-%d" % i for i in range(9))


def test_a_failed_batch_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-too-large"

    async def main():
        async with SimpleClient(servers) as client:
            assert (await client.create_topics({topic: (1, 3)}, configs={"max.message.bytes": "2000"}))[topic] == 0
            await client.wait_for_leaders(topic)
        async with AIOProducer(bootstrap_servers=servers, transactional_id="txn-too-large-1") as producer:
            await producer.init_transactions()
            epoch = producer._producer_epoch
            producer.begin_transaction()
            kept = await producer.send(topic, b"small", partition=0)
            await kept  # written in a batch of its own
            too_large = await producer.send(topic, b"x" * 5000, partition=0)
            with pytest.raises(MessageTooLargeError):
                await too_large
            assert producer.transaction_state is TransactionState.ABORTABLE_ERROR
            with pytest.raises(KafkaError) as refused:
                await producer.commit_transaction()
            assert isinstance(refused.value.__cause__, MessageTooLargeError)
            await producer.abort_transaction()  # "small" was written: the abort marker hides it
            # The refused batch took a sequence number: the abort took a new epoch (KIP-360), so the
            # next transaction's batches start at sequence 0 and are accepted.
            assert producer._producer_epoch == epoch + 1
            async with producer.transaction():
                await producer.send(topic, b"after", partition=0)
        await wait_until_stable(servers, topic, partitions=1)
        return await read_ours(servers, topic, "read_committed", partitions=1)

    assert [r.value for r in run(main())] == [b"after"]


def test_send_offsets_to_transaction_commits_the_group_offsets_only_with_the_transaction(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    source, sink, group = "txn-offsets-in", "txn-offsets-out", "txn-offsets-group"
    tp = TopicPartition(source, 1)

    async def main():
        await create_topic(servers, source)
        await create_topic(servers, sink)
        async with AIOProducer(bootstrap_servers=servers, transactional_id="txn-offsets-1") as producer, \
                AIOConsumer(bootstrap_servers=servers, group_id=group) as consumer:
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send(sink, b"aborted", partition=0)
            await producer.send_offsets_to_transaction({tp: 5}, group)
            await producer.abort_transaction()

            producer.begin_transaction()  # its AddOffsetsToTxn waits out the abort (CONCURRENT_TRANSACTIONS)
            await producer.send(sink, b"committed", partition=0)
            await producer.send_offsets_to_transaction({tp: 7, TopicPartition(source, 2): 3}, group)
            seen = [await consumer.committed(tp)]
            await producer.commit_transaction()
            # The coordinator writes the markers after EndTxn returned: wait for the offsets to appear.
            deadline = time.monotonic() + 60
            while (seen[-1] is None or seen[-1].offset != 7) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                seen.append(await consumer.committed(tp))
            other = await consumer.committed(TopicPartition(source, 2))
        return seen, other

    seen, other = run(main())
    assert seen[0] is None  # neither the aborted offset nor the open transaction's one is visible
    assert seen[-1] is not None and seen[-1].offset == 7
    assert all(s is None or s.offset == 7 for s in seen)  # 5 (aborted) never shows
    assert other is not None and other.offset == 3


def test_a_second_producer_with_the_same_id_fences_the_first(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-zombie"

    async def main():
        await create_topic(servers, topic)
        zombie = AIOProducer(bootstrap_servers=servers, transactional_id="txn-zombie-1")
        successor = AIOProducer(bootstrap_servers=servers, transactional_id="txn-zombie-1")
        try:
            await zombie.init_transactions()
            zombie.begin_transaction()
            for i in range(9):
                await zombie.send(topic, b"zombie-%d" % i, partition=i % PARTITIONS)
            await zombie.flush()  # written, in an open transaction

            await successor.init_transactions()  # fences the zombie and aborts its transaction
            assert (successor._producer_id, successor._producer_epoch) > (zombie._producer_id, zombie._producer_epoch)
            async with successor.transaction():
                for i in range(6):
                    await successor.send(topic, b"successor-%d" % i, partition=i % PARTITIONS)

            with pytest.raises(ProducerFencedError):
                await zombie.commit_transaction()
            assert zombie.transaction_state is TransactionState.FATAL_ERROR
            with pytest.raises(ProducerFencedError):
                await zombie.send(topic, b"late")
            with pytest.raises(ProducerFencedError):
                zombie.begin_transaction()
        finally:
            await zombie.close()
            await successor.close()
        await wait_until_stable(servers, topic)
        return (await read_ours(servers, topic, "read_committed"), await read_ours(servers, topic, "read_uncommitted"))

    committed, everything = run(main())
    assert sorted(r.value for r in committed) == sorted(b"successor-%d" % i for i in range(6))
    assert {b"zombie-%d" % i for i in range(9)} <= {r.value for r in everything}  # written, never visible
    assert Counter(read_confluent(servers, topic)) == Counter(b"successor-%d" % i for i in range(6))


def test_the_blocking_producer_commits_and_aborts(three_broker_cluster):
    servers = three_broker_cluster.bootstrap_servers
    topic = "txn-blocking"
    run(create_topic(servers, topic))
    with Producer(bootstrap_servers=servers, transactional_id="txn-blocking-1", value_serializer=str.encode) as producer:
        with producer.transaction():  # init_transactions on first use
            for i in range(20):
                producer.send(topic, f"kept-{i}", partition=i % PARTITIONS)
        with pytest.raises(ValueError):
            with producer.transaction():
                for i in range(20):
                    producer.send(topic, f"dropped-{i}", partition=i % PARTITIONS)
                producer.flush()
                raise ValueError("abort it")
        producer.begin_transaction()
        producer.send(topic, "last", partition=0)
        producer.commit_transaction()
        with pytest.raises(Exception, match="begin_transaction"):
            producer.send(topic, "outside")
    run(wait_until_stable(servers, topic))
    assert Counter(read_kafka_python(servers, topic)) == Counter([b"kept-%d" % i for i in range(20)] + [b"last"])


def test_transactions_go_on_when_the_transaction_coordinator_is_sigkilled(odradek_cluster_factory):
    cluster = odradek_cluster_factory(3)
    servers = cluster.bootstrap_servers
    topic, transactional_id = "txn-failover", "txn-failover-1"

    async def main():
        await create_topic(servers, topic)
        committed, failed = [], 0
        async with AIOProducer(bootstrap_servers=servers, transactional_id=transactional_id, linger_ms=2) as producer:
            await producer.init_transactions()
            async with SimpleClient(servers) as client:  # __transaction_state exists now
                found = await client.send(None, FindCoordinatorRequest(key=transactional_id, key_type=1))
            assert found.error_code == 0
            for n in range(24):
                if n == 8:  # coordinator requests now meet a dead connection, then NOT_COORDINATOR elsewhere
                    await asyncio.to_thread(cluster.kill_broker, found.node_id, signal.SIGKILL)
                if n == 16:
                    await asyncio.to_thread(cluster.start_broker, found.node_id)
                values = [b"txn-%d-%d" % (n, i) for i in range(9)]
                try:
                    async with producer.transaction():
                        for i, value in enumerate(values):
                            await producer.send(topic, value, partition=i % PARTITIONS)
                    committed += values
                except KafkaError as exc:  # abortable (the context aborted it); the producer goes on
                    assert producer.transaction_state is TransactionState.READY, exc
                    failed += 1
        await wait_until_stable(servers, topic)
        return committed, failed, await read_ours(servers, topic, "read_committed")

    committed, failed, seen = run(main())
    print(f"{len(committed) // 9} transactions committed, {failed} aborted after an error")
    assert len(committed) >= 9 * 12
    assert Counter(r.value for r in seen) == Counter(committed)
    assert Counter(read_kafka_python(servers, topic)) == Counter(committed)


# -- exactly-once consume-transform-produce, killed and restarted ---------------------------------------

async def copy_exactly_once(servers: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    """Read ``source`` from the group's committed offsets, write each value upper-cased to ``sink`` and
    commit the offsets in the same transaction; return once the (complete) input is consumed."""
    tps = [TopicPartition(source, p) for p in range(PARTITIONS)]
    async with AIOProducer(bootstrap_servers=servers, transactional_id=transactional_id, linger_ms=2) as producer, \
            AIOConsumer(bootstrap_servers=servers, group_id=group, isolation_level="read_committed",
                        auto_offset_reset="earliest") as consumer:
        # First fence a killed predecessor and let its transaction finish, then read the offsets.
        await producer.init_transactions()
        consumer.assign(tps)
        for tp in tps:
            committed = await consumer.committed(tp)
            consumer.seek(tp, committed.offset if committed else 0)
        print("started", flush=True)
        ends = await consumer.end_offsets(tps)
        while True:
            positions = {tp: await consumer.position(tp) for tp in tps}
            if all(positions[tp] >= ends[tp] for tp in tps):
                break
            batches = await consumer.getmany(timeout_ms=500, max_records=25)
            if not batches:
                continue
            async with producer.transaction():
                for records in batches.values():
                    for record in records:
                        await producer.send(sink, record.value.upper(), key=record.key)
                await producer.flush()
                print("sent", flush=True)  # written to the output, not committed yet
                await producer.send_offsets_to_transaction(
                    {tp: records[-1].offset + 1 for tp, records in batches.items()}, group)
            print("committed", sum(map(len, batches.values())), flush=True)
    print("done", flush=True)


def test_exactly_once_copy_survives_sigkill_and_restarts(three_broker_cluster, tmp_path):
    servers = three_broker_cluster.bootstrap_servers
    source, sink, group = "eos-in", "eos-out", "eos-group"
    values = [b"record-%d" % i for i in range(1200)]

    async def seed():
        await create_topic(servers, source)
        await create_topic(servers, sink)
        async with AIOProducer(bootstrap_servers=servers, linger_ms=5) as producer:
            for i, value in enumerate(values):
                await producer.send(source, value, key=b"%d" % i)
    run(seed())

    seed_value = random.randrange(1 << 30)
    rng = random.Random(seed_value)
    print("random seed", seed_value)
    command = [sys.executable, __file__, "copy", servers, source, sink, group, "eos-copier"]
    kills = 0
    # Two kills right after a transaction's records were written (so a zombie transaction must be
    # aborted), two at a random moment: mid-transaction, during the commit, or between transactions.
    for mode in rng.sample(["written", "written", "anywhere", "anywhere"], 4):
        copier = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert copier.stdout.readline().strip() == "started"
            for _ in range(rng.randint(0, 3)):  # let a few transactions commit
                while (line := copier.stdout.readline()) and not line.startswith("committed"):
                    pass
            if mode == "written":
                while (line := copier.stdout.readline()) and not line.startswith("sent"):
                    pass
            else:
                time.sleep(rng.uniform(0, 0.3))
            if copier.poll() is None:
                copier.send_signal(signal.SIGKILL)
                kills += 1
        finally:
            copier.stdout.close()
            copier.wait(timeout=60)
    finished = subprocess.run(command, capture_output=True, text=True, timeout=400)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.strip().endswith("done")
    print(f"{kills} copiers SIGKILLed")
    assert kills >= 3  # about 48 transactions of input: the copiers cannot all finish before their kill

    async def output():
        await wait_until_stable(servers, sink)
        return (await read_ours(servers, sink, "read_committed"), await read_ours(servers, sink, "read_uncommitted"))

    committed, everything = run(output())
    print(f"output: {len(committed)} committed records, {len(everything)} written")
    assert len(everything) > len(committed)  # the killed copiers' written transactions were aborted
    counts = Counter(r.value for r in committed)
    assert counts == Counter(value.upper() for value in values)  # every input transformed exactly once
    assert Counter(read_confluent(servers, sink)) == counts


if __name__ == "__main__" and sys.argv[1:2] == ["copy"]:
    asyncio.run(copy_exactly_once(*sys.argv[2:7]))

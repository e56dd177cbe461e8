"""TransactionManager's state machine and requests against a fake coordinator connection.

The fake stands in for SimpleClient.send: every request goes through the real codec (encoded and
decoded at the highest Kafka 2.8 version, so a request our brokers or Kafka could not parse fails
here) and is answered by a scripted coordinator: a queue of error codes per API, 0 once empty.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from odradek.clients.producer.transaction_manager import (
    CommitFailedError, TransactionManager, TransactionState, TransactionStateError,
)
from odradek.clients.types import OffsetAndMetadata, TopicPartition
from odradek.protocol.api_keys import KAFKA_2_8_VERSIONS
from odradek.protocol.errors import (
    InvalidProducerEpochError, ProducerFencedError, RequestTimedOutError, TopicAuthorizationFailedError,
)
from odradek.protocol.header import decode_request, encode_request
from odradek.protocol.messages import (
    AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse, FindCoordinatorResponse,
    InitProducerIdResponse, TxnOffsetCommitResponse,
)

S = TransactionState
TXN_NODE, GROUP_NODE = 1, 2
APTopic = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
APPartition = APTopic.AddPartitionsToTxnPartitionResult
TOCTopic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
TOCPartition = TOCTopic.TxnOffsetCommitResponsePartition

CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE = 51, 16, 15
PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, TOPIC_AUTHORIZATION_FAILED = 90, 47, 29
UNKNOWN_MEMBER_ID, OPERATION_NOT_ATTEMPTED, INVALID_TXN_STATE = 25, 55, 48


class FakeCoordinator:
    """``send(node, request)`` as SimpleClient's. ``errors[api name]`` is a queue of codes to answer."""

    def __init__(self) -> None:
        self.errors: dict[str, list[int]] = defaultdict(list)
        self.requests: list[tuple[int | None, object]] = []  # (node, decoded request)
        self.epoch = 0
        self.lost_connections = 0  # the next N sends fail with ConnectionError

    def sent(self, name: str) -> list[object]:
        return [request for _, request in self.requests if type(request).__name__ == name]

    def nodes(self, name: str) -> list[int | None]:
        return [node for node, request in self.requests if type(request).__name__ == name]

    def _code(self, name: str) -> int:
        queue = self.errors[name]
        return queue.pop(0) if queue else 0

    async def send(self, node_id, body, *, version=None, timeout=None):
        api_key = body.MESSAGE.api_key
        version = KAFKA_2_8_VERSIONS[api_key][1] if version is None else version
        _, request = decode_request(memoryview(encode_request(body, version, 7, "test")[4:]))
        self.requests.append((node_id, request))
        await asyncio.sleep(0)
        if self.lost_connections:
            self.lost_connections -= 1
            raise ConnectionError("connection lost")
        name = type(request).__name__
        code = self._code(name)
        if name == "FindCoordinatorRequest":
            node = TXN_NODE if request.key_type == 1 else GROUP_NODE
            return FindCoordinatorResponse(error_code=code, node_id=node if not code else -1, host="h", port=1)
        assert node_id == (GROUP_NODE if name == "TxnOffsetCommitRequest" else TXN_NODE), (name, node_id)
        if name == "InitProducerIdRequest":
            if not code:
                self.epoch += 1
            return InitProducerIdResponse(error_code=code, producer_id=1000 if not code else -1,
                                          producer_epoch=self.epoch if not code else -1)
        if name == "AddPartitionsToTxnRequest":
            results = []
            for i, topic in enumerate(request.topics):
                results.append(APTopic(name=topic.name, results=[
                    APPartition(partition_index=p, error_code=code if i == 0 and j == 0 else
                                (OPERATION_NOT_ATTEMPTED if code else 0))
                    for j, p in enumerate(topic.partitions)]))
            return AddPartitionsToTxnResponse(results=results)
        if name == "AddOffsetsToTxnRequest":
            return AddOffsetsToTxnResponse(error_code=code)
        if name == "EndTxnRequest":
            return EndTxnResponse(error_code=code)
        if name == "TxnOffsetCommitRequest":
            return TxnOffsetCommitResponse(topics=[TOCTopic(name=t.name, partitions=[
                TOCPartition(partition_index=p.partition_index, error_code=code) for p in t.partitions])
                for t in request.topics])
        raise AssertionError(f"unexpected request {name}")


def make(fake: FakeCoordinator, max_block_ms: int = 5000) -> TransactionManager:
    return TransactionManager(fake, "txn-1", transaction_timeout_ms=30000, retry_backoff_ms=1,
                              max_block_ms=max_block_ms)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def add_partitions(manager: TransactionManager, *tps: TopicPartition) -> None:
    for tp in tps:
        manager.maybe_add_partition(tp)
    done = asyncio.Event()
    manager.maybe_add_partitions(done.set)
    await done.wait()


async def ready(fake: FakeCoordinator) -> TransactionManager:
    manager = make(fake)
    await manager.init_transactions()
    return manager


def test_init_transactions_finds_the_coordinator_and_retries_until_it_answers():
    fake = FakeCoordinator()
    fake.errors["FindCoordinatorRequest"] = [COORDINATOR_NOT_AVAILABLE]
    fake.errors["InitProducerIdRequest"] = [CONCURRENT_TRANSACTIONS, NOT_COORDINATOR]
    manager = make(fake)

    assert manager.state is S.UNINITIALIZED
    assert run(manager.init_transactions()) == (1000, 1)
    assert manager.state is S.READY
    finds = fake.sent("FindCoordinatorRequest")
    assert [(f.key, f.key_type) for f in finds] == [("txn-1", 1)] * 3  # failed, first answer, after NOT_COORDINATOR
    inits = fake.sent("InitProducerIdRequest")
    assert len(inits) == 3
    assert all(r.transactional_id == "txn-1" and r.transaction_timeout_ms == 30000 and r.producer_id == -1
               for r in inits)


def test_a_lost_connection_looks_the_coordinator_up_again():
    fake = FakeCoordinator()

    async def main():
        manager = await ready(fake)
        fake.lost_connections = 1
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0))
        return manager

    manager = run(main())
    assert manager.is_send_allowed(TopicPartition("t", 0))
    assert len(fake.sent("FindCoordinatorRequest")) == 2
    assert len(fake.sent("AddPartitionsToTxnRequest")) == 2


def test_sends_are_refused_outside_a_transaction():
    fake = FakeCoordinator()
    manager = make(fake)
    with pytest.raises(TransactionStateError, match="init_transactions"):
        manager.check_send()
    with pytest.raises(TransactionStateError):
        manager.begin_transaction()
    run(manager.init_transactions())
    with pytest.raises(TransactionStateError, match="begin_transaction"):
        manager.maybe_add_partition(TopicPartition("t", 0))
    manager.begin_transaction()
    with pytest.raises(TransactionStateError, match="IN_TRANSACTION"):
        manager.begin_transaction()
    manager.check_send()


def test_new_partitions_are_added_in_one_request_before_their_batches_may_go():
    fake = FakeCoordinator()

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        tps = [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 3)]
        for tp in tps:
            manager.maybe_add_partition(tp)
        assert not any(manager.is_send_allowed(tp) for tp in tps)
        done = asyncio.Event()
        manager.maybe_add_partitions(done.set)
        manager.maybe_add_partition(TopicPartition("c", 0))  # arrives while the first request runs
        manager.maybe_add_partitions(done.set)  # no second request while one is in flight
        await done.wait()
        assert len(fake.sent("AddPartitionsToTxnRequest")) == 1
        assert all(manager.is_send_allowed(tp) for tp in tps)
        assert not manager.is_send_allowed(TopicPartition("c", 0))
        await add_partitions(manager)
        assert manager.is_send_allowed(TopicPartition("c", 0))
        manager.maybe_add_partition(tps[0])  # already in the transaction: nothing to add
        manager.maybe_add_partitions(lambda: None)
        assert len(fake.sent("AddPartitionsToTxnRequest")) == 2
        manager.begin_commit()
        await manager.end_transaction(commit=True)
        return manager

    manager = run(main())
    first = fake.sent("AddPartitionsToTxnRequest")[0]
    assert {(t.name, tuple(t.partitions)) for t in first.topics} == {("a", (0, 1)), ("b", (3,))}
    assert (first.producer_id, first.producer_epoch, first.transactional_id) == (1000, 1, "txn-1")
    end = fake.sent("EndTxnRequest")
    assert len(end) == 1 and end[0].committed is True
    assert manager.state is S.READY and not manager.partitions_in_transaction


def test_concurrent_transactions_on_add_partitions_is_retried():
    fake = FakeCoordinator()
    fake.errors["AddPartitionsToTxnRequest"] = [CONCURRENT_TRANSACTIONS, CONCURRENT_TRANSACTIONS]

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0))
        return manager

    manager = run(main())
    assert manager.is_send_allowed(TopicPartition("t", 0)) and manager.state is S.IN_TRANSACTION
    assert len(fake.sent("AddPartitionsToTxnRequest")) == 3


def test_an_empty_transaction_ends_without_end_txn():
    fake = FakeCoordinator()

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        manager.begin_commit()
        await manager.end_transaction(commit=True)
        manager.begin_transaction()
        manager.begin_abort()
        await manager.end_transaction(commit=False)
        return manager

    assert run(main()).state is S.READY
    assert fake.sent("EndTxnRequest") == []


def test_fenced_on_add_partitions_is_fatal():
    fake = FakeCoordinator()
    fake.errors["AddPartitionsToTxnRequest"] = [PRODUCER_FENCED]

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0), TopicPartition("t", 1))
        return manager

    manager = run(main())
    assert manager.state is S.FATAL_ERROR and manager.is_fatal
    assert isinstance(manager.last_error, ProducerFencedError)
    assert not manager.is_send_allowed(TopicPartition("t", 1))  # OPERATION_NOT_ATTEMPTED: not added
    with pytest.raises(ProducerFencedError):
        manager.begin_commit()
    with pytest.raises(ProducerFencedError):
        manager.begin_abort()
    with pytest.raises(ProducerFencedError):
        manager.check_send()


def test_invalid_producer_epoch_on_end_txn_is_reported_as_fenced():
    fake = FakeCoordinator()
    fake.errors["EndTxnRequest"] = [INVALID_PRODUCER_EPOCH]

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0))
        manager.begin_commit()
        with pytest.raises(ProducerFencedError):
            await manager.end_transaction(commit=True)
        return manager

    assert run(main()).state is S.FATAL_ERROR


def test_a_fenced_batch_is_fatal_and_another_failed_batch_abortable():
    fake = FakeCoordinator()

    async def main():
        fenced = await ready(fake)
        fenced.begin_transaction()
        fenced.on_batch_error(InvalidProducerEpochError("Produce"))
        abortable = await ready(FakeCoordinator())
        abortable.begin_transaction()
        abortable.on_batch_error(RequestTimedOutError("not delivered"))
        return fenced, abortable

    fenced, abortable = run(main())
    assert fenced.state is S.FATAL_ERROR and isinstance(fenced.last_error, ProducerFencedError)
    assert abortable.state is S.ABORTABLE_ERROR and abortable.drops_unsent
    assert isinstance(abortable.unsent_error(), RequestTimedOutError)


def test_an_abortable_error_refuses_commit_and_clears_with_an_abort():
    fake = FakeCoordinator()
    fake.errors["AddPartitionsToTxnRequest"] = [TOPIC_AUTHORIZATION_FAILED]

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("secret", 0))
        assert manager.state is S.ABORTABLE_ERROR
        assert isinstance(manager.last_error, TopicAuthorizationFailedError)
        with pytest.raises(TransactionStateError) as refused:
            manager.begin_commit()
        assert isinstance(refused.value.__cause__, TopicAuthorizationFailedError)
        with pytest.raises(TransactionStateError):
            manager.check_send()
        manager.begin_abort()
        assert manager.drops_unsent and manager.unsent_error().name == "TRANSACTION_ABORTED"
        await manager.end_transaction(commit=False)
        assert manager.state is S.READY
        manager.begin_transaction()  # usable again
        await add_partitions(manager, TopicPartition("t", 0))
        manager.begin_abort()
        await manager.end_transaction(commit=False, bump_epoch=True)
        return manager

    manager = run(main())
    assert manager.state is S.READY
    assert [r.committed for r in fake.sent("EndTxnRequest")] == [False]  # the first transaction added nothing
    bump = fake.sent("InitProducerIdRequest")[-1]
    assert (bump.producer_id, bump.producer_epoch) == (1000, 1)  # names the epoch it replaces (KIP-360)
    assert manager.producer_epoch == 2


def test_send_offsets_goes_to_both_coordinators():
    fake = FakeCoordinator()
    fake.errors["TxnOffsetCommitRequest"] = [NOT_COORDINATOR]

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        await manager.send_offsets_to_transaction(
            {TopicPartition("in", 1): 42, TopicPartition("in", 0): OffsetAndMetadata(7, "meta")}, "group-a")
        manager.begin_commit()
        await manager.end_transaction(commit=True)  # offsets alone start a transaction
        return manager

    assert run(main()).state is S.READY
    add = fake.sent("AddOffsetsToTxnRequest")
    assert [(r.group_id, r.producer_id, r.producer_epoch) for r in add] == [("group-a", 1000, 1)]
    finds = [(r.key, r.key_type) for r in fake.sent("FindCoordinatorRequest")]
    assert finds == [("txn-1", 1), ("group-a", 0), ("group-a", 0)]
    commits = fake.sent("TxnOffsetCommitRequest")
    assert len(commits) == 2 and set(fake.nodes("TxnOffsetCommitRequest")) == {GROUP_NODE}
    sent = {(t.name, p.partition_index): (p.committed_offset, p.committed_metadata)
            for t in commits[-1].topics for p in t.partitions}
    assert sent == {("in", 0): (7, "meta"), ("in", 1): (42, "")}
    assert (commits[-1].generation_id, commits[-1].member_id, commits[-1].transactional_id) == (-1, "", "txn-1")
    assert len(fake.sent("EndTxnRequest")) == 1


def test_txn_offset_commit_from_a_stale_member_is_abortable():
    fake = FakeCoordinator()
    fake.errors["TxnOffsetCommitRequest"] = [UNKNOWN_MEMBER_ID]

    class GroupMetadata:
        group_id, generation_id, member_id, group_instance_id = "g", 5, "member-1", None

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        with pytest.raises(CommitFailedError):
            await manager.send_offsets_to_transaction({TopicPartition("in", 0): 1}, GroupMetadata())
        return manager

    manager = run(main())
    assert manager.state is S.ABORTABLE_ERROR
    commit = fake.sent("TxnOffsetCommitRequest")[0]
    assert (commit.generation_id, commit.member_id) == (5, "member-1")


def test_a_commit_that_times_out_keeps_its_state_and_can_be_retried():
    fake = FakeCoordinator()

    async def main():
        manager = make(fake, max_block_ms=200)
        await manager.init_transactions()
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0))
        fake.errors["EndTxnRequest"] = [CONCURRENT_TRANSACTIONS] * 100000
        manager.begin_commit()
        with pytest.raises(RequestTimedOutError):
            await manager.end_transaction(commit=True)
        assert manager.state is S.COMMITTING_TRANSACTION
        fake.errors["EndTxnRequest"] = []
        manager.begin_commit()  # the retry of a timed-out commit
        await manager.end_transaction(commit=True)
        return manager

    assert run(main()).state is S.READY


def test_invalid_txn_state_is_fatal_and_transitions_follow_java():
    fake = FakeCoordinator()
    fake.errors["EndTxnRequest"] = [INVALID_TXN_STATE]

    async def main():
        manager = await ready(fake)
        with pytest.raises(TransactionStateError):
            manager.begin_commit()  # READY: nothing to commit
        with pytest.raises(TransactionStateError):
            manager.begin_abort()
        manager.begin_transaction()
        await add_partitions(manager, TopicPartition("t", 0))
        manager.begin_commit()
        with pytest.raises(TransactionStateError):
            manager.begin_abort()  # COMMITTING cannot turn into ABORTING
        with pytest.raises(Exception) as failed:
            await manager.end_transaction(commit=True)
        assert failed.value.code == INVALID_TXN_STATE
        return manager

    assert run(main()).state is S.FATAL_ERROR


def test_an_abort_while_partitions_are_being_added_still_ends_the_transaction():
    fake = FakeCoordinator()

    async def main():
        manager = await ready(fake)
        manager.begin_transaction()
        manager.maybe_add_partition(TopicPartition("t", 0))
        manager.maybe_add_partitions(lambda: None)  # AddPartitionsToTxn on its way
        manager.begin_abort()
        await manager.end_transaction(commit=False)  # waits for it: the coordinator has the partition
        return manager

    assert run(main()).state is S.READY
    assert len(fake.sent("AddPartitionsToTxnRequest")) == 1
    assert [r.committed for r in fake.sent("EndTxnRequest")] == [False]

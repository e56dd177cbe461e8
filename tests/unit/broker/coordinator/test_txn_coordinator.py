"""TransactionCoordinator on its own: state is written to real Logs (a one-replica leader), the marker
sender is replaced by a recorder (the integration tests send real markers)."""

from __future__ import annotations

import asyncio

import pytest

from odradek.broker.coordinator.transaction import coordinator as coordinator_module
from odradek.broker.coordinator.transaction import records as fmt
from odradek.broker.coordinator.transaction.coordinator import TransactionCoordinator
from odradek.broker.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from odradek.broker.coordinator.transaction.transaction_metadata import (
    COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, ONGOING, PREPARE_ABORT, PREPARE_COMMIT)
from odradek.protocol.records import iter_batches
from tests.fakes.coordinator_services import LogReplicaManager
from tests.fakes.polling import until as poll_until

from .helpers import DictConfig, run_in_loop

CONFIG = {"transaction.state.log.num.partitions": 1, "transaction.state.log.load.buffer.size": 1 << 20,
          "transaction.max.timeout.ms": 60000, "transactional.id.expiration.ms": 1000, "request.timeout.ms": 5000,
          "transaction.state.log.min.isr": 1, "transaction.state.log.segment.bytes": 1 << 20}
STATE_TP = (TRANSACTION_STATE_TOPIC, 0)


def state_records(rm: LogReplicaManager):
    """(transactional id, TxnRecord or None) in the transaction state log's order."""
    found = []
    for batch in iter_batches(rm.log(STATE_TP).read(0, 1 << 20).records):
        for r in batch.records():
            found.append((fmt.parse_key(r.key), fmt.parse_value(r.value) if r.value is not None else None))
    return found


class MarkerRecorder:
    def __init__(self):
        self.sent = []

    def add_markers(self, coordinator_epoch, commit, metadata, complete):
        self.sent.append((coordinator_epoch, commit, metadata, complete))

    def remove_for_partition(self, partition):
        pass

    async def shutdown(self):
        pass


@pytest.fixture
def make(tmp_path):
    async def build(rm=None, load=True):
        rm = rm or LogReplicaManager(tmp_path)
        ids = iter(range(100, 200))

        async def generate():
            return next(ids)
        c = TransactionCoordinator(1, DictConfig(CONFIG), rm, None, generate, "PLAINTEXT")
        recorder = MarkerRecorder()
        recorder.next_transaction = c.markers.next_transaction  # what the real sender asks before CompleteCommit
        c.markers = recorder
        if load:
            c.on_leadership_change([STATE_TP], [])
            await until(lambda: 0 in c.state.partitions)
        return c, rm
    return build


async def until(condition):
    # one loop turn at a time: the tests look at the coordinator between two of its steps
    await poll_until(condition, interval=0)


async def begin(c, tid="tx", partitions=frozenset({("t", 0), ("t", 1)})):
    result = await c.init_producer_id(tid, 10000)
    assert result.error_code == 0
    assert await c.add_partitions(tid, result.producer_id, result.producer_epoch, set(partitions)) == 0
    return result


@run_in_loop
async def test_init_producer_id_creates_the_id_and_bumps_the_epoch_each_time(make):
    c, rm = await make()
    first = await c.init_producer_id("tx", 10000)
    second = await c.init_producer_id("tx", 10000)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 100, 0)
    assert (second.error_code, second.producer_id, second.producer_epoch) == (0, 100, 1)
    tid, record = state_records(rm)[-1]
    assert (tid, record.producer_id, record.producer_epoch, record.state, record.timeout_ms) == \
        ("tx", 100, 1, EMPTY, 10000)
    assert (await c.init_producer_id("tx", 60001)).error_code == 50  # INVALID_TRANSACTION_TIMEOUT
    assert (await c.init_producer_id("", 1000)).error_code == 42     # INVALID_REQUEST


@run_in_loop
async def test_not_coordinator_and_load_in_progress(make):
    c, _ = await make(load=False)
    assert (await c.init_producer_id("tx", 1000)).error_code == 16  # NOT_COORDINATOR
    c.state.loading[0] = 0
    assert (await c.init_producer_id("tx", 1000)).error_code == 14  # COORDINATOR_LOAD_IN_PROGRESS
    assert await c.end_transaction("tx", 1, 0, True) == 14


@run_in_loop
async def test_commit_writes_prepare_commit_and_hands_the_markers_over(make):
    c, rm = await make()
    ids = await begin(c)
    pid, epoch = ids.producer_id, ids.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("t", 0)}) == 0  # already in: nothing written
    assert [r.state for _, r in state_records(rm)] == [EMPTY, ONGOING]
    assert await c.end_transaction("tx", pid, epoch, True) == 0
    _, record = state_records(rm)[-1]
    assert (record.state, record.partitions) == (PREPARE_COMMIT, {("t", 0), ("t", 1)})
    (coordinator_epoch, commit, metadata, complete), = c.markers.sent
    assert (coordinator_epoch, commit, complete.state) == (0, True, COMPLETE_COMMIT)
    # While the markers are out, a retried commit is CONCURRENT_TRANSACTIONS, as in Kafka.
    assert await c.end_transaction("tx", pid, epoch, True) == 51
    assert await c.state.append_transaction("tx", coordinator_epoch, complete) == 0
    assert await c.end_transaction("tx", pid, epoch, True) == 0    # a retried commit of a finished commit
    assert await c.end_transaction("tx", pid, epoch, False) == 48  # INVALID_TXN_STATE
    assert state_records(rm)[-1][1].state == COMPLETE_COMMIT


@run_in_loop
async def test_fenced_and_unknown_producers(make):
    c, _ = await make()
    ids = await begin(c)
    assert await c.add_partitions("tx", ids.producer_id, ids.producer_epoch - 1, {("t", 3)}) == 90  # PRODUCER_FENCED
    assert await c.add_partitions("tx", ids.producer_id + 1, ids.producer_epoch, {("t", 3)}) == 49
    assert await c.end_transaction("nobody", 1, 0, True) == 49  # INVALID_PRODUCER_ID_MAPPING
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, False) == 0
    # A commit while the abort's markers are out is CONCURRENT_TRANSACTIONS, after them INVALID_TXN_STATE.
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 51
    await c.state.append_transaction("tx", 0, c.markers.sent[-1][3])
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 48


@run_in_loop
async def test_init_producer_id_aborts_an_ongoing_transaction_under_a_bumped_epoch(make):
    c, rm = await make()
    ids = await begin(c)
    init = asyncio.ensure_future(c.init_producer_id("tx", 10000))
    await until(lambda: c.completions.held == 1)  # Kafka answers CONCURRENT_TRANSACTIONS here; we wait
    _, record = state_records(rm)[-1]
    assert (record.state, record.producer_epoch) == (PREPARE_ABORT, ids.producer_epoch + 1)
    (coordinator_epoch, commit, metadata, complete), = c.markers.sent
    assert commit is False and metadata.producer_epoch == ids.producer_epoch + 1
    # The old producer is fenced right away.
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 90
    assert not init.done()
    await c.state.append_transaction("tx", coordinator_epoch, complete)
    result = await init
    assert (result.error_code, result.producer_epoch) == (0, ids.producer_epoch + 2)
    assert [r.state for _, r in state_records(rm)[-3:]] == [PREPARE_ABORT, COMPLETE_ABORT, EMPTY]


async def committing(c, tid="tx"):
    """A transaction of ``tid`` in PrepareCommit, its markers 'out': (ids, the completion to write)."""
    ids = await begin(c, tid)
    assert await c.end_transaction(tid, ids.producer_id, ids.producer_epoch, True) == 0
    return ids, c.markers.sent[-1][3]


@run_in_loop
async def test_add_partitions_during_the_previous_markers_waits_for_the_completion(make):
    c, rm = await make()
    ids, complete = await committing(c)
    add = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 2)}))
    offsets = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch,
                                                     {("__consumer_offsets", 7)}))
    await until(lambda: c.completions.held == 2)
    assert not add.done() and state_records(rm)[-1][1].state == PREPARE_COMMIT
    assert await c.state.append_transaction("tx", 0, complete) == 0
    assert await add == 0 and await offsets == 0  # the second found the first's write pending and waited too
    assert [(r.state, r.partitions) for _, r in state_records(rm)[-4:]] == [
        (PREPARE_COMMIT, {("t", 0), ("t", 1)}), (COMPLETE_COMMIT, set()), (ONGOING, {("t", 2)}),
        (ONGOING, {("t", 2), ("__consumer_offsets", 7)})]


@run_in_loop
async def test_the_completion_write_carries_the_partitions_held_requests_add(make):
    c, rm = await make()
    ids, complete = await committing(c)
    metadata = c.state.get_state("tx")[1].metadata
    add = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 2)}))
    offsets = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch,
                                                     {("__consumer_offsets", 7)}))
    await until(lambda: c.completions.held == 2)
    # A fenced producer's request is not held, so it never rides along.
    assert await c.add_partitions("tx", ids.producer_id, ids.producer_epoch - 1, {("t", 9)}) == 90
    follow_up = c.markers.next_transaction(metadata, complete)  # as the sender does once the markers are written
    appends = rm.appends
    assert await c.state.append_transaction("tx", 0, complete, follow_up=follow_up) == 0
    assert await add == 0 and await offsets == 0
    assert rm.appends == appends + 1  # one write: the completion and the next transaction's Ongoing state
    assert [(r.state, r.partitions) for _, r in state_records(rm)[-2:]] == [
        (COMPLETE_COMMIT, set()), (ONGOING, {("t", 2), ("__consumer_offsets", 7)})]
    assert (metadata.state, metadata.partitions, metadata.pending_state) == \
        (ONGOING, {("t", 2), ("__consumer_offsets", 7)}, None)
    # Nothing held: nothing to carry.
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, False) == 0
    assert c.markers.next_transaction(metadata, c.markers.sent[-1][3]) is None


async def add_while_completion_replicates(make):
    """A transaction's CompleteCommit appended but not yet replicated, and an AddPartitionsToTxn of the next
    transaction arriving meanwhile: (coordinator, replica manager, ids, metadata, completion, add)."""
    c, rm = await make()
    ids, complete = await committing(c)
    metadata = c.state.get_state("tx")[1].metadata
    rm.replicate_later = True
    completion = asyncio.ensure_future(c.state.append_transaction("tx", 0, complete))
    await until(lambda: len(rm.unreplicated) == 1)
    add = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 2)}))
    return c, rm, ids, metadata, completion, add


@run_in_loop
async def test_the_next_ongoing_state_is_appended_behind_a_completion_being_replicated(make):
    c, rm, ids, metadata, completion, add = await add_while_completion_replicates(make)
    await until(lambda: len(rm.unreplicated) == 2)  # appended at once, while the completion replicates
    assert [(r.state, r.partitions) for _, r in state_records(rm)[-2:]] == [
        (COMPLETE_COMMIT, set()), (ONGOING, {("t", 2)})]
    # A second request finds a write already behind the completion: it waits, as before.
    offsets = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch,
                                                     {("__consumer_offsets", 7)}))
    await until(lambda: c.completions.held == 2)
    assert len(rm.unreplicated) == 2
    rm.replicate()
    # The completion is durable, but nothing is applied until the state behind it is durable too.
    for _ in range(20):
        await asyncio.sleep(0)
    assert (metadata.state, metadata.pending_state) == (PREPARE_COMMIT, COMPLETE_COMMIT) and not add.done()
    rm.replicate()
    assert await completion == 0 and await add == 0
    assert (metadata.state, metadata.partitions) == (ONGOING, {("t", 2)})
    await until(lambda: len(rm.unreplicated) == 1)  # the second request writes its partition itself
    rm.replicate()
    assert await offsets == 0
    assert metadata.partitions == {("t", 2), ("__consumer_offsets", 7)} and metadata.pending_state is None


@run_in_loop
async def test_a_failed_write_behind_the_completion_leaves_the_request_to_write_again(make):
    c, rm, ids, metadata, completion, add = await add_while_completion_replicates(make)
    await until(lambda: len(rm.unreplicated) == 2)
    rm.replicate()
    rm.replicate(error_code=7)  # REQUEST_TIMED_OUT: the completion alone is applied
    assert await completion == 0
    assert metadata.state == COMPLETE_COMMIT
    await until(lambda: len(rm.unreplicated) == 1)  # released, the request runs again and writes Ongoing
    assert metadata.pending_state == ONGOING and not add.done()
    rm.replicate()
    assert await add == 0 and (metadata.state, metadata.partitions) == (ONGOING, {("t", 2)})
    # A completion that fails is not applied, whatever went behind it; the request stays held for the retry.
    end = asyncio.ensure_future(c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True))
    await until(lambda: len(rm.unreplicated) == 1)
    rm.replicate()
    assert await end == 0
    complete = c.markers.sent[-1][3]
    completion = asyncio.ensure_future(c.state.append_transaction("tx", 0, complete,
                                                                  retry_on_error=lambda code: code == 15))
    await until(lambda: len(rm.unreplicated) == 1)
    add = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 3)}))
    await until(lambda: len(rm.unreplicated) == 2)
    rm.replicate(error_code=19)  # NOT_ENOUGH_REPLICAS
    assert await completion == 15
    assert (metadata.state, metadata.pending_state) == (PREPARE_COMMIT, COMPLETE_COMMIT) and not add.done()
    rm.replicate()  # the write behind it got through, but it is not applied without its completion
    for _ in range(20):
        await asyncio.sleep(0)
    assert metadata.state == PREPARE_COMMIT and not add.done()
    rm.replicate_later = False
    assert await c.state.append_transaction("tx", 0, complete) == 0  # the sender's retry
    assert await add == 0 and (metadata.state, metadata.partitions) == (ONGOING, {("t", 3)})


@run_in_loop
async def test_a_held_request_answers_concurrent_transactions_when_its_time_runs_out(make, monkeypatch):
    monkeypatch.setattr(coordinator_module, "MAX_HOLD_MS", 30)
    c, rm = await make()
    ids, complete = await committing(c)
    written = len(state_records(rm))
    assert await c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 2)}) == 51
    assert (await c.init_producer_id("tx", 10000)).error_code == 51
    assert len(state_records(rm)) == written and c.completions.held == 2
    assert c.completions.purgatory.num_delayed == 0


@run_in_loop
async def test_held_requests_redo_their_checks_when_released(make):
    c, rm = await make()
    ids, complete = await committing(c)
    # A new instance of the producer (InitProducerId) and the old one's next transaction both wait.
    init = asyncio.ensure_future(c.init_producer_id("tx", 10000))
    await until(lambda: c.completions.held == 1)
    add = asyncio.ensure_future(c.add_partitions("tx", ids.producer_id, ids.producer_epoch, {("t", 2)}))
    await until(lambda: c.completions.held == 2)
    await c.state.append_transaction("tx", 0, complete)
    assert (await init).producer_epoch == ids.producer_epoch + 1
    assert await add == 90  # PRODUCER_FENCED: the epoch check ran again after the release
    assert all(r.partitions != {("t", 2)} for _, r in state_records(rm))
    # A request held when the coordinator loses the partition answers NOT_COORDINATOR at once.
    new_ids, complete = await committing(c)
    add = asyncio.ensure_future(c.add_partitions("tx", new_ids.producer_id, new_ids.producer_epoch, {("t", 2)}))
    await until(lambda: c.completions.held == 3)
    c.on_leadership_change([], [STATE_TP])
    assert await add == 16


@run_in_loop
async def test_a_failed_write_leaves_the_transaction_usable(make):
    c, rm = await make()
    ids = await begin(c)
    rm.fail_with = 19  # NOT_ENOUGH_REPLICAS
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 15  # COORDINATOR_NOT_AVAILABLE
    rm.fail_with = 6   # NOT_LEADER_OR_FOLLOWER
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 16  # NOT_COORDINATOR
    rm.fail_with = 0
    assert await c.end_transaction("tx", ids.producer_id, ids.producer_epoch, True) == 0


@run_in_loop
async def test_timed_out_transactions_are_aborted_and_idle_ids_expire(make):
    c, rm = await make()
    ids = await begin(c)
    await c.init_producer_id("idle", 10000)
    assert await c.abort_timed_out_transactions(now_ms=0) == 0
    assert await c.abort_timed_out_transactions(now_ms=10 ** 13) == 1
    _, record = state_records(rm)[-1]
    assert (record.state, record.producer_epoch) == (PREPARE_ABORT, ids.producer_epoch + 1)
    _, _, _, complete = c.markers.sent[-1]
    await c.state.append_transaction("tx", 0, complete)
    assert c.state.get_state("tx")[1].metadata.state == COMPLETE_ABORT
    assert await c.remove_expired_transactional_ids(now_ms=10 ** 13) == 2
    assert sorted(t for t, r in state_records(rm)[-2:] if r is None) == ["idle", "tx"]
    assert c.state.get_state("tx") == (0, None)


@run_in_loop
async def test_a_new_coordinator_loads_the_log_and_resumes_prepared_markers(make):
    c, rm = await make()
    committing = await begin(c, "committing")
    await begin(c, "ongoing", {("u", 0)})
    await c.init_producer_id("idle", 10000)
    assert await c.end_transaction("committing", committing.producer_id, committing.producer_epoch, True) == 0
    rm.leader_epoch = 3
    successor, _ = await make(rm)
    entry = successor.state.get_state("ongoing")[1]
    assert (entry.coordinator_epoch, entry.metadata.state, entry.metadata.partitions) == (3, ONGOING, {("u", 0)})
    assert successor.state.get_state("idle")[1].metadata.state == EMPTY
    (coordinator_epoch, commit, metadata, complete), = successor.markers.sent
    assert (coordinator_epoch, commit, metadata.transactional_id, metadata.partitions) == \
        (3, True, "committing", {("t", 0), ("t", 1)})
    # The old coordinator's writes are refused once the partition has moved.
    c.on_leadership_change([], [STATE_TP])
    assert (await c.init_producer_id("idle", 10000)).error_code == 16


@run_in_loop
async def test_a_leader_epoch_bump_without_a_new_leader_keeps_the_loaded_state(make):
    c, rm = await make()
    await begin(c)
    rm.leader_epoch = 5  # an ISR change: LeaderAndIsr names this broker leader again
    c.on_leadership_change([STATE_TP], [])
    assert 0 not in c.state.loading and c.state.get_state("tx")[1].coordinator_epoch == 0


@run_in_loop
async def test_an_exhausted_epoch_gets_a_new_producer_id(make):
    c, rm = await make()
    first = await c.init_producer_id("tx", 10000)
    c.state.get_state("tx")[1].metadata.producer_epoch = 32766  # Short.MaxValue - 1: exhausted
    rotated = await c.init_producer_id("tx", 10000)
    assert (rotated.error_code, rotated.producer_epoch) == (0, 0) and rotated.producer_id != first.producer_id
    assert state_records(rm)[-1][1].producer_id == rotated.producer_id

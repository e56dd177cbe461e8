"""TransactionMarkerSender over the TxnMarkerChannel with a fake broker connection: the markers of concurrent
transactions bound for one broker travel in one WriteTxnMarkers (what is queued while a request is out leaves
when it returns), and each transaction still completes, retries or stops on its own answer. The state manager
and metadata cache are small fakes; the integration tests send real markers to real brokers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from odradek.broker.coordinator.transaction.marker_channel import TxnMarkerChannel
from odradek.broker.coordinator.transaction.marker_sender import TransactionMarkerSender
from odradek.broker.coordinator.transaction.state_manager import TxnEntry
from odradek.broker.coordinator.transaction.transaction_metadata import (COMPLETE_COMMIT, NONE, PREPARE_COMMIT,
                                                                         TransactionMetadata, TxnTransit)
from odradek.protocol.messages import WriteTxnMarkersResponse

from .helpers import DictConfig, run_in_loop

_Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
_TopicResult = _Result.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult

LEADERS = {("t", 0): 1, ("t", 1): 2, ("t", 2): 1}  # partition -> leader broker
COORDINATOR_EPOCH = 4


class FakeBroker:
    """The brokers' side: records each request per destination, answers per partition with ``errors``
    (popped: (producer id, partition) -> code, once), or holds requests while ``gate`` is clear."""

    def __init__(self):
        self.requests: list[tuple[int, object]] = []   # (broker, request)
        self.errors: dict[tuple[int, tuple[str, int]], int] = {}
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail_next = 0  # the next N requests lose their connection
        self.busy_transport = False  # send_now cannot write (a full transport buffer): send must be used

    async def connect(self, host, port, client_id, timeout):
        return FakeConnection(self, port)

    def markers_per_request(self, broker):
        return [len(r.markers) for b, r in self.requests if b == broker]


class FakeConnection:
    def __init__(self, broker: FakeBroker, broker_id: int):
        self.broker, self.broker_id, self.closed = broker, broker_id, False

    async def send(self, request, timeout):
        self.broker.busy_transport = False  # it drained
        return await self.answer(self.send_now(request), None, None, timeout)

    def send_now(self, request):
        """Written in this call (recorded at once); the answer comes once the gate is open."""
        if self.broker.busy_transport:
            return None
        self.broker.requests.append((self.broker_id, request))
        return asyncio.ensure_future(self._respond(request))

    def version_for(self, api_key):
        return 1

    async def answer(self, waiter, api_key, version, timeout):
        return await waiter

    async def _respond(self, request):
        await self.broker.gate.wait()
        if self.broker.fail_next:
            self.broker.fail_next -= 1
            raise ConnectionError("connection lost")
        return WriteTxnMarkersResponse(markers=[_Result(producer_id=m.producer_id, topics=[
            _TopicResult(name=t.name, partitions=[
                _PartitionResult(partition_index=p,
                                 error_code=self.broker.errors.pop((m.producer_id, (t.name, p)), 0))
                for p in t.partition_indexes]) for t in m.topics]) for m in request.markers])

    async def close(self):
        self.closed = True


class FakeState:
    """The transactions this coordinator owns, and the Complete* states written."""

    def __init__(self):
        self.entries: dict[str, TxnEntry] = {}
        self.completed: list[str] = []
        self.follow_ups: list[object] = []

    def partition_for(self, tid):
        return 0

    def get_state(self, tid):
        return NONE, self.entries.get(tid)

    async def append_transaction(self, tid, coordinator_epoch, transit, retry_on_error=None, follow_up=None):
        self.completed.append(tid)
        self.follow_ups.append(follow_up)
        return NONE


class FakeMetadataCache:
    def partition(self, topic, index):
        leader = LEADERS.get((topic, index))
        return None if leader is None else SimpleNamespace(leader=leader)

    def contains_topic(self, topic):
        return topic == "t"

    def endpoint(self, broker, listener):
        return SimpleNamespace(host="localhost", port=broker)  # the fake connection takes the port as broker id


def sender():
    broker = FakeBroker()
    state = FakeState()
    markers = TransactionMarkerSender(0, DictConfig({"request.timeout.ms": 5000}), FakeMetadataCache(), state,
                                      "PLAINTEXT")
    markers.channel = TxnMarkerChannel(0, 5.0, connect=broker.connect)
    return markers, state, broker


def commit(markers, state, producer_id, partitions=tuple(LEADERS)):
    tid = f"tx-{producer_id}"
    metadata = TransactionMetadata(tid, producer_id, producer_epoch=0, state=PREPARE_COMMIT,
                                   partitions=set(partitions))
    state.entries[tid] = TxnEntry(COORDINATOR_EPOCH, metadata)
    complete = TxnTransit(producer_id, -1, 0, -1, 60000, COMPLETE_COMMIT, set(), 0, 0)
    markers.add_markers(COORDINATOR_EPOCH, True, metadata, complete)
    return tid


async def let_tasks_run():
    """A few loop turns: the transaction tasks and the channel's drainer take their next step."""
    for _ in range(5):
        await asyncio.sleep(0)


async def settled(markers):
    for _ in range(2000):
        if not markers.pending():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"transactions still sending markers: {markers.pending()}")


@run_in_loop
async def test_concurrent_transactions_share_one_request_per_broker():
    markers, state, broker = sender()
    tids = [commit(markers, state, pid) for pid in range(100, 110)]
    await settled(markers)
    assert sorted(state.completed) == sorted(tids)
    # one request per leader carrying all ten transactions, instead of ten per leader
    assert broker.markers_per_request(1) == [10] and broker.markers_per_request(2) == [10]
    first = [r for b, r in broker.requests if b == 1][0]
    assert sorted(m.producer_id for m in first.markers) == list(range(100, 110))
    assert all([(t.name, sorted(t.partition_indexes)) for t in m.topics] == [("t", [0, 2])] for m in first.markers)
    assert {m.coordinator_epoch for m in first.markers} == {COORDINATOR_EPOCH}
    assert all(m.transaction_result for m in first.markers)
    assert (markers.channel.requests_sent, markers.channel.markers_sent) == (2, 20)
    await markers.shutdown()


@run_in_loop
async def test_markers_queued_while_a_request_is_out_leave_together_when_it_returns():
    markers, state, broker = sender()
    broker.gate.clear()
    commit(markers, state, 1, partitions=[("t", 0)])
    await let_tasks_run()
    assert broker.markers_per_request(1) == [1]  # out, held by the broker
    for pid in range(2, 7):
        commit(markers, state, pid, partitions=[("t", 0)])
    await let_tasks_run()
    assert broker.markers_per_request(1) == [1] and markers.channel.queued(1) == 5  # one in flight per broker
    broker.gate.set()
    await settled(markers)
    assert broker.markers_per_request(1) == [1, 5]
    assert sorted(state.completed) == [f"tx-{pid}" for pid in range(1, 7)]
    await markers.shutdown()


@run_in_loop
async def test_each_transaction_acts_on_its_own_answer_in_a_shared_request():
    markers, state, broker = sender()
    broker.errors[(200, ("t", 0))] = 6    # NOT_LEADER_OR_FOLLOWER: retried, then done
    broker.errors[(201, ("t", 2))] = 52   # TRANSACTION_COORDINATOR_FENCED: this one stops
    for pid in (200, 201, 202):
        commit(markers, state, pid)
    await settled(markers)
    assert sorted(state.completed) == ["tx-200", "tx-202"]  # the fenced one writes no Complete state
    # the first round carried all three; only tx-200's retry went again, alone
    assert broker.markers_per_request(1) == [3, 1] and broker.markers_per_request(2) == [3]
    retry = [r for b, r in broker.requests if b == 1][1]
    assert [(m.producer_id, [(t.name, t.partition_indexes) for t in m.topics]) for m in retry.markers] == \
        [(200, [("t", [0])])]
    await markers.shutdown()


@run_in_loop
async def test_a_lost_connection_retries_every_transaction_of_the_request():
    markers, state, broker = sender()
    broker.fail_next = 1
    for pid in (300, 301):
        commit(markers, state, pid, partitions=[("t", 1)])
    await settled(markers)
    assert sorted(state.completed) == ["tx-300", "tx-301"]
    assert broker.markers_per_request(2) == [2, 2]
    await markers.shutdown()


@run_in_loop
async def test_one_producer_never_has_two_markers_in_one_request():
    broker = FakeBroker()
    broker.gate.clear()
    channel = TxnMarkerChannel(0, 5.0, connect=broker.connect)
    sends = [channel.submit(1, ("h", 1), pid, 0, True, 1, [("t", 0)]) for pid in (7, 7, 8)]
    await let_tasks_run()
    broker.gate.set()
    results = await asyncio.gather(*sends)
    assert [r.producer_id for r in results] == [7, 7, 8]
    assert broker.markers_per_request(1) == [2, 1]
    await channel.shutdown()


@run_in_loop
async def test_a_cancelled_transaction_leaves_the_queue():
    markers, state, broker = sender()
    broker.gate.clear()
    commit(markers, state, 1, partitions=[("t", 0)])
    await let_tasks_run()
    commit(markers, state, 2, partitions=[("t", 0)])
    commit(markers, state, 3, partitions=[("t", 0)])
    await let_tasks_run()
    markers.remove_for_partition(0)   # the __transaction_state partition moved away: all three stop
    commit(markers, state, 4, partitions=[("t", 0)])
    broker.gate.set()
    await settled(markers)
    assert state.completed == ["tx-4"]
    assert broker.markers_per_request(1) == [1, 1]  # tx-2 and tx-3 were dropped from the queue
    assert broker.requests[1][1].markers[0].producer_id == 4
    await markers.shutdown()


@run_in_loop
async def test_the_completion_carries_the_next_transaction_the_coordinator_hands_over():
    markers, state, broker = sender()
    asked = []

    def next_transaction(metadata, complete):
        asked.append((metadata.transactional_id, set(metadata.partitions), complete.state))
        return "the next Ongoing state"
    markers.next_transaction = next_transaction
    tid = commit(markers, state, 100)
    await settled(markers)
    assert asked == [(tid, set(), COMPLETE_COMMIT)]  # asked once every marker is written, not before
    assert state.follow_ups == ["the next Ongoing state"]


@run_in_loop
async def test_with_the_connection_open_a_lone_transactions_markers_leave_in_the_call_that_hands_them_over():
    markers, state, broker = sender()
    commit(markers, state, 1, partitions=[("t", 0)])  # the first connects (in the channel's drainer)
    await settled(markers)
    commit(markers, state, 2, partitions=[("t", 0)])
    assert broker.markers_per_request(1) == [1, 1]  # written before any loop turn: no company waited for
    await settled(markers)
    broker.busy_transport = True  # the connection cannot take it now: the drainer sends it in a later turn
    commit(markers, state, 3, partitions=[("t", 0)])
    assert broker.markers_per_request(1) == [1, 1]
    await settled(markers)
    assert broker.markers_per_request(1) == [1, 1, 1]
    assert state.completed == ["tx-1", "tx-2", "tx-3"]
    await markers.shutdown()

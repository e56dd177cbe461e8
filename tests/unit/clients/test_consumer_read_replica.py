"""The consumer honours a leader's preferred_read_replica (KIP-392) as Java's Fetcher: it fetches the partition
from that broker until the broker errors, leaves the metadata or metadata_max_age_ms passes, then from the
leader again."""

import asyncio
from types import SimpleNamespace

import pytest

from odradek.clients.consumer.consumer import AIOConsumer, _PartitionState
from odradek.clients.types import TopicPartition

LEADER, FOLLOWER = 0, 2


@pytest.fixture
def fetcher():
    consumer = AIOConsumer(bootstrap_servers="127.0.0.1:1", client_rack="rack-2", metadata_max_age_ms=60000)
    tp = TopicPartition("t", 0)
    state = _PartitionState(tp)
    state.advance(5)
    consumer._states[tp] = state
    consumer._client.cluster = SimpleNamespace(leader_for=lambda topic, partition: LEADER,
                                               brokers={LEADER: object(), FOLLOWER: object()})
    return consumer, tp, state


def answer(error_code=0, preferred=-1):
    return SimpleNamespace(error_code=error_code, high_watermark=9, log_start_offset=0, last_stable_offset=9,
                           aborted_transactions=None, records=b"", preferred_read_replica=preferred)


def test_fetches_from_the_preferred_read_replica_once_the_leader_names_it(fetcher):
    consumer, tp, state = fetcher
    assert list(consumer._fetchable()) == [LEADER]
    consumer._take(tp, state, 5, answer(preferred=FOLLOWER))
    assert consumer._fetchable() == {FOLLOWER: [(tp, 5, state.epoch)]}
    assert state.high_watermark == 9


def test_back_to_the_leader_after_metadata_max_age(fetcher):
    consumer, tp, state = fetcher
    consumer._take(tp, state, 5, answer(preferred=FOLLOWER))
    state.read_replica_until = 0.0  # metadata_max_age_ms has passed
    assert list(consumer._fetchable()) == [LEADER] and state.read_replica is None


def test_back_to_the_leader_when_the_replica_leaves_the_metadata(fetcher):
    consumer, tp, state = fetcher
    consumer._take(tp, state, 5, answer(preferred=FOLLOWER))
    del consumer._client.cluster.brokers[FOLLOWER]
    assert list(consumer._fetchable()) == [LEADER]


def test_an_offset_out_of_range_from_the_replica_goes_back_to_the_leader_without_a_reset(fetcher):
    consumer, tp, state = fetcher
    consumer._take(tp, state, 5, answer(preferred=FOLLOWER))
    consumer._take(tp, state, 5, answer(error_code=1))  # the follower has not reached offset 5 yet
    assert state.position == 5 and state.fetch_position == 5 and state.error is None
    assert list(consumer._fetchable()) == [LEADER]
    consumer._take(tp, state, 5, answer(error_code=1))  # from the leader: the position is reset
    assert state.fetch_position is None


def test_client_rack_is_sent_in_the_fetch_request(fetcher):
    consumer, tp, state = fetcher
    sent = []

    class Connection:
        async def send(self, request, timeout):
            sent.append(request)
            return SimpleNamespace(error_code=0, responses=[])

    async def connection(node):
        return Connection()

    consumer._client.connection = connection
    consumer._client._timeout_for = lambda wait_ms: 1.0
    asyncio.run(consumer._fetch_once(FOLLOWER, [(tp, 5, state.epoch)]))
    assert sent[0].rack_id == "rack-2"

"""The Fetch response's size, computed without encoding, against the encoder at every version."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from odradek.broker.apis.fetch_response import fetch_response, response_size
from odradek.broker.fetch_session import FetchAnswer
from odradek.broker.replica_manager import FetchPartitionResult
from odradek.protocol.header import encode_response_parts

VERSIONS = range(0, 13)


def encoded_size(body, answer, version: int) -> int:
    return sum(len(part) for part in encode_response_parts(fetch_response(body, answer), version, 7))


def request(isolation_level: int = 0, replica_id: int = -1) -> SimpleNamespace:
    return SimpleNamespace(isolation_level=isolation_level, replica_id=replica_id)


def answer(*partitions, error_code: int = 0, session_id: int = 0) -> FetchAnswer:
    return FetchAnswer(error_code, session_id, list(partitions))


def aborted(n: int) -> list:
    return [SimpleNamespace(producer_id=i, first_offset=10 * i) for i in range(n)]


@pytest.mark.parametrize("version", VERSIONS)
def test_an_empty_answer_and_a_session_error(version):
    for isolation in (0, 1):
        assert response_size(request(isolation), answer(), version) == encoded_size(request(isolation), answer(),
                                                                                     version)
    refused = answer(error_code=70)
    assert response_size(request(), refused, version) == encoded_size(request(), refused, version)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("isolation", (0, 1))
def test_topics_partitions_records_and_aborted_transactions(version, isolation):
    parts = [
        (("orders", 0), FetchPartitionResult(0, 10, 8, 0, b"x" * 300, aborted_transactions=aborted(2))),
        (("orders", 3), FetchPartitionResult(0, 5, 5, 1, memoryview(b"y" * 20))),
        (("t\u00e9", 1), FetchPartitionResult(6)),  # an error, no records; a name that is not ASCII
        (("orders", 1), FetchPartitionResult(0, 7, 7, 0, b"", aborted_transactions=[])),  # orders again: own entry
    ]
    body, session_id = request(isolation), 12 if version >= 7 else 0
    assert response_size(body, answer(*parts, session_id=session_id), version) == \
        encoded_size(body, answer(*parts, session_id=session_id), version)


@pytest.mark.parametrize("version", VERSIONS)
def test_lengths_past_one_varint_byte(version):
    rng = random.Random(version)
    parts = [((f"topic-{i // 40}", i % 40), FetchPartitionResult(0, i, i, 0, bytes(rng.randrange(0, 20_000)),
                                                                  aborted_transactions=aborted(rng.randrange(0, 130))))
             for i in range(200)]
    for isolation in (0, 1):
        body = request(isolation)
        assert response_size(body, answer(*parts), version) == encoded_size(body, answer(*parts), version)


def test_a_diverging_epoch_is_a_tagged_field_at_v12():
    diverged = answer((("t", 0), FetchPartitionResult(0, 10, 10, 0, diverging_epoch=(3, 42))))
    assert response_size(request(), diverged, 12) == encoded_size(request(), diverged, 12)
    assert response_size(request(), diverged, 12) > response_size(request(), answer(
        (("t", 0), FetchPartitionResult(0, 10, 10, 0))), 12)


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_refused_before_the_read_come_last_as_kafka_answers_them(version):
    """Kafka 2.8's handleFetchRequest: partitions read, then unknown or unauthorized ones (a topic of both
    kinds in two entries); abortedTransactions only for a read_committed consumer's partitions read."""
    parts = [(("t", 99), FetchPartitionResult(3)),
             (("t", 0), FetchPartitionResult(0, 5, 5, 0, b"", aborted_transactions=[])),
             (("u", 0), FetchPartitionResult(6)), (("u", 1), FetchPartitionResult(29))]
    for body in (request(1), request(1, replica_id=2), request(0)):
        response = fetch_response(body, answer(*parts))
        assert [(t.topic, [p.partition_index for p in t.partitions]) for t in response.responses] == \
            [("t", [0]), ("u", [0]), ("t", [99]), ("u", [1])]
        consumer_read_committed = body.isolation_level == 1 and body.replica_id < 0
        assert [p.aborted_transactions for t in response.responses for p in t.partitions] == \
            [[] if consumer_read_committed else None, None, None, None]
        assert response_size(body, answer(*parts), version) == encoded_size(body, answer(*parts), version)

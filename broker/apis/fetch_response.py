"""The Fetch response body built from a fetch session's answer, and its encoded size computed without encoding.

A consumer's fetch under a client quota records the size of the response it would get before deciding
whether it is throttled (Kafka 2.8's ``FetchContext.getResponseSize``). The size is computed here from
the answer, field by field as the FetchResponse schema lays them out at the request's version (fixed
widths, the records' lengths, compact lengths and tagged fields from v12), instead of encoding a
response that is then thrown away. ``response_size(body, answer, version)`` equals the length of
``encode_response_parts(fetch_response(body, answer), version, correlation_id)``, size prefix and header
included (tests/unit/broker/test_fetch_response.py holds it to that for every version).
"""

from __future__ import annotations

from typing import Any

from ...protocol.api_keys import ApiKey, response_header_version
from ...protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError  # type: ignore[attr-defined]
from ...protocol.messages import FetchResponse
from ..fetch_session import FetchAnswer

_TopicResponse = FetchResponse.FetchableTopicResponse
_PartitionData = _TopicResponse.PartitionData
_DivergingEpoch = _PartitionData.EpochEndOffset
_AbortedTransaction = _PartitionData.AbortedTransaction
_FLEXIBLE_FROM = 12
_NO_DIVERGENCE = (-1, -1)  # EpochEndOffset's defaults: a tagged field at its default is not written


# Refused before any read (Kafka's "erroneous": unknown to the metadata, not authorized).
_REFUSED_BEFORE_READ = frozenset({UnknownTopicOrPartitionError.code, TopicAuthorizationFailedError.code})


def in_kafka_order(partitions: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Kafka 2.8's handleFetchRequest answers the partitions it read first, then those it refused before
    reading: a topic with both kinds comes in two entries (batchByTopic groups consecutive partitions)."""
    if not any(r.error_code in _REFUSED_BEFORE_READ for _, r in partitions):
        return partitions
    return ([item for item in partitions if item[1].error_code not in _REFUSED_BEFORE_READ]
            + [item for item in partitions if item[1].error_code in _REFUSED_BEFORE_READ])


def sends_aborted(body: Any) -> bool:
    """Whether a successful partition carries abortedTransactions: a read_committed consumer's (Kafka reads
    a follower's fetch to the log end, without them). Otherwise, and for every error, null."""
    return body.isolation_level == 1 and body.replica_id < 0


def fetch_response(body: Any, answer: FetchAnswer) -> Any:
    """The FetchResponse of a request ``body`` carrying ``answer``'s partitions (throttle time 0: KafkaApis
    sets it)."""
    read_committed = sends_aborted(body)
    topics: list[Any] = []
    for (topic, partition), r in in_kafka_order(answer.partitions):
        # Consecutive partitions of one topic share an entry, as Kafka's batchByTopic.
        if not topics or topics[-1].topic != topic:
            topics.append(_TopicResponse(topic=topic, partitions=[]))
        aborted = None  # read_uncommitted or an error: null, as Kafka
        if read_committed and not r.error_code:
            aborted = [_AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
                       for t in r.aborted_transactions or ()]
        data = _PartitionData(
            partition_index=partition, error_code=r.error_code, high_watermark=r.high_watermark,
            last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
            aborted_transactions=aborted, records=r.records, preferred_read_replica=r.preferred_read_replica)
        if r.diverging_epoch is not None:  # a v12 follower whose log diverged from ours (KIP-595 truncation)
            data.diverging_epoch = _DivergingEpoch(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
        topics[-1].partitions.append(data)
    return FetchResponse(throttle_time_ms=0, error_code=answer.error_code, session_id=answer.session_id,
                         responses=topics)


def _uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def response_size(body: Any, answer: FetchAnswer, version: int) -> int:
    """The encoded size of ``fetch_response(body, answer)`` at ``version``: size prefix, header and body."""
    flexible = version >= _FLEXIBLE_FROM

    def length_size(n: int) -> int:  # an array's or the records' length: compact (n + 1, varint) from v12
        return _uvarint_size(n + 1) if flexible else 4

    null_size = 1 if flexible else 4  # a null array or records
    tags = 1 if flexible else 0       # an empty tagged-field section, at the end of every struct
    # Per partition: partition_index, error_code, high_watermark; v4+ last_stable_offset; v5+ log_start_offset;
    # v11+ preferred_read_replica; the records' length, aborted transactions and tags come on top.
    fixed = 14 + (8 if version >= 4 else 0) + (8 if version >= 5 else 0) + (4 if version >= 11 else 0) + tags
    read_committed = version >= 4 and sends_aborted(body)
    aborted_size = 16 + tags  # producer_id, first_offset
    size = 4 + 4 + response_header_version(ApiKey.FETCH, version)  # size prefix, correlation id, header tags
    size += (4 if version >= 1 else 0) + (6 if version >= 7 else 0) + tags  # throttle; error code, session id
    topics = 0
    previous = None
    topic_partitions = 0
    for (topic, _), r in in_kafka_order(answer.partitions):
        if topic != previous:
            if previous is not None:
                size += length_size(topic_partitions)
            topics += 1
            topic_partitions = 0
            previous = topic
            name = len(topic) if topic.isascii() else len(topic.encode("utf-8"))
            size += (_uvarint_size(name + 1) if flexible else 2) + name + tags  # a string's length: int16
        topic_partitions += 1
        size += fixed
        records = r.records
        size += null_size if records is None else length_size(len(records)) + len(records)
        if version >= 4:
            if read_committed and not r.error_code:
                count = len(r.aborted_transactions or ())
                size += length_size(count) + count * aborted_size
            else:
                size += null_size  # read_uncommitted: null
        if flexible and r.diverging_epoch is not None and tuple(r.diverging_epoch) != _NO_DIVERGENCE:
            # the partition's tagged section grows from its one count byte (in ``fixed``) to count, tag,
            # length and the field: epoch, end_offset and its own empty tagged section
            size += 1 + 1 + (4 + 8 + 1)
    if previous is not None:
        size += length_size(topic_partitions)
    return size + length_size(topics)

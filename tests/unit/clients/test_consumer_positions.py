"""The consumer's position over a compacted log: once every record of a fetch is taken, the position is the
end of the last batch fetched (Java's nextFetchOffset), not the last record + 1, so the gaps compaction
leaves at the end of a batch (or emptied batches after it) are stepped over without another fetch."""

from types import SimpleNamespace

from odradek.broker.log.cleaner.record_filter import batch_records, empty_batch, retained_batch
from odradek.clients.consumer.consumer import AIOConsumer, _PartitionState
from odradek.clients.types import TopicPartition
from odradek.protocol.records import RecordBatchBuilder, RecordBatchView


def compacted_batch(base: int, count: int, keep: int) -> bytes:
    """A batch of ``count`` offsets from ``base`` of which the cleaner kept the first ``keep`` records."""
    builder = RecordBatchBuilder(base_offset=base)
    for i in range(count):
        builder.append(1, b"k%d" % i, b"v")
    batch = RecordBatchView(builder.build())
    if not keep:
        return empty_batch(batch)
    blob, records = batch_records(batch)
    return retained_batch(batch, blob, records[:keep])


def consumer_at(offset: int):
    consumer = AIOConsumer(bootstrap_servers="127.0.0.1:1")
    tp = TopicPartition("t", 0)
    state = _PartitionState(tp)
    state.advance(offset)
    consumer._states[tp] = state
    return consumer, tp, state


def answer(records: bytes, end: int):
    return SimpleNamespace(error_code=0, high_watermark=end, log_start_offset=0, last_stable_offset=end,
                           aborted_transactions=None, records=records)


def test_the_position_passes_the_end_of_the_last_fetched_batch_once_its_records_are_taken():
    consumer, tp, state = consumer_at(10)
    assert consumer._take(tp, state, 10, answer(compacted_batch(10, 5, keep=2), 15))
    taken = consumer._drain((), 1, consumer._take_records)  # one record: more remain, the position follows them
    assert [r.offset for r in taken[tp]] == [10] and state.position == 11
    taken = consumer._drain((), 10, consumer._take_records)
    assert [r.offset for r in taken[tp]] == [11] and state.position == 15


def test_a_fetch_of_emptied_batches_only_moves_the_position_past_them():
    consumer, tp, state = consumer_at(20)
    assert not consumer._take(tp, state, 20, answer(compacted_batch(20, 4, keep=0) + compacted_batch(24, 3, keep=0),
                                                    27))
    assert state.position == 27 and not state.buffer

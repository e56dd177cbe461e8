"""FutureRecordMetadata (clients/producer/record_futures.py): the light future the blocking Producer's send returns."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading

import pytest

from odradek.clients.producer.producer import RecordMetadata
from odradek.clients.producer.sync_producer import FutureRecordMetadata
from odradek.clients.types import TopicPartition
from odradek.protocol.records.codec import pure_python_forced
from odradek.protocol.errors import MessageTooLargeError, RequestTimedOutError

pytestmark = pytest.mark.timeout(60)

METADATA = RecordMetadata("t", 1, TopicPartition("t", 1), 42, 1000, 0, None, 1, 5, 0)


def test_callbacks_added_before_and_after_success_run_once_with_the_metadata():
    future = FutureRecordMetadata()
    calls = []
    future.add_callback(lambda *args, **kwargs: calls.append(("before", args, kwargs)), "a", tag=1)
    future.add_errback(lambda error: calls.append(("errback", error)))
    assert not future.done() and not future.is_done() and future.running()
    future.set_result(METADATA)
    future.set_exception(MessageTooLargeError("too late: the first outcome stays"))
    future.add_callback(lambda metadata: calls.append(("after", metadata)))
    assert calls == [("before", ("a", METADATA), {"tag": 1}), ("after", METADATA)]
    assert future.get(timeout=0) is METADATA and future.result() is METADATA and future.exception() is None
    assert future.succeeded() and not future.failed() and future.done()


def test_failure_reaches_errbacks_get_and_result():
    future = FutureRecordMetadata()
    errors = []
    future.add_errback(errors.append).add_callback(lambda metadata: errors.append("callback ran"))
    error = MessageTooLargeError("about 2000 bytes")
    future.set_exception(error)
    assert errors == [error] and future.failed() and not future.succeeded()
    with pytest.raises(MessageTooLargeError):
        future.get()
    with pytest.raises(MessageTooLargeError):
        future.result(timeout=1)
    assert future.exception() is error
    future.add_errback(errors.append)  # already failed: runs at once
    assert errors == [error, error]


def test_get_times_out_with_kafkas_error_and_result_with_concurrent_futures_one():
    future = FutureRecordMetadata()
    with pytest.raises(RequestTimedOutError):
        future.get(timeout=0.01)
    with pytest.raises(concurrent.futures.TimeoutError):
        future.result(timeout=0.01)
    with pytest.raises(concurrent.futures.TimeoutError):
        future.exception(timeout=0.01)
    assert not future.cancel() and not future.cancelled()


def test_waiters_in_other_threads_wake_when_completed():
    futures = [FutureRecordMetadata() for _ in range(50)]
    results: list = []
    lock = threading.Lock()

    def wait(future: FutureRecordMetadata) -> None:
        value = future.get(timeout=30)
        with lock:
            results.append(value)

    threads = [threading.Thread(target=wait, args=(f,)) for f in futures for _ in range(2)]
    for thread in threads:
        thread.start()
    for future in futures:
        future.set_result(METADATA)
    for thread in threads:
        thread.join(30)
    assert results == [METADATA] * 100


def test_a_failing_callback_is_logged_and_does_not_stop_the_others(caplog):
    future = FutureRecordMetadata()
    calls = []

    def broken(metadata):
        raise RuntimeError("callback bug")

    future.add_callback(broken).add_callback(calls.append)
    with caplog.at_level(logging.ERROR, logger="odradek.clients.producer.sync_producer"):
        future.set_result(METADATA)
    assert calls == [METADATA]
    assert any("callback" in record.getMessage() for record in caplog.records)


def test_callbacks_registered_while_another_thread_completes_run_exactly_once():
    for _ in range(200):
        future = FutureRecordMetadata()
        calls = []
        started = threading.Event()

        def add_many():
            started.set()
            for _ in range(20):
                future.add_done_callback(lambda f: calls.append(1))

        thread = threading.Thread(target=add_many)
        thread.start()
        started.wait(10)
        future.set_result(METADATA)
        thread.join(10)
        assert len(calls) == 20


# -- futures bound to a producer batch (record_futures.bind): settled together when the batch is answered --

def _bound_futures(count: int):
    """A batch with ``count`` records and the futures bound to them (as the Producer's loop binds them)."""
    from odradek.clients.producer.batch import Columns, _Batch
    from odradek.clients.producer.record_futures import bind, rows_of
    from odradek.protocol.records import Compression

    async def make():
        batch = _Batch(TopicPartition("t", 1), 0, Compression.NONE, 0.0)
        futures = [FutureRecordMetadata(("t", b"v" * i, b"k" if i % 2 else None, None, 1000 + i, None))
                   for i in range(count)]
        rows = rows_of(futures)
        early = []
        futures[0].add_callback(early.append)  # before it is bound
        assert batch.append(Columns((rows, 4), (rows, 2), (rows, 1), (rows, 5)), 0, count, 16384) == count
        bind(futures, 0, count, batch, 0)
        assert all(f._row is None for f in futures)  # let go once in a batch
        return batch, futures, early

    return asyncio.run(make())


def test_bound_futures_settle_with_their_batch_and_make_metadata_when_asked():
    import gc

    batch, futures, early = _bound_futures(5)
    late = []
    futures[1].add_callback(late.append)  # bound, not answered yet
    assert not any(f.done() for f in futures)
    assert gc.is_tracked(futures[0]) == pure_python_forced()  # the C storage is outside the collector's lists
    batch.complete(base_offset=40, log_append_time=-1, log_start_offset=3)
    assert [f.get(timeout=0) for f in futures] == [
        RecordMetadata("t", 1, TopicPartition("t", 1), 40 + i, 1000 + i, 3, None, 1 if i % 2 else -1, i, 0)
        for i in range(5)]
    assert early == [futures[0].get()] and late == [futures[1].get()]
    after = []
    futures[2].add_callback(after.append)  # answered: runs at once
    assert after == [futures[2].get()] and all(f.exception() is None for f in futures)


def test_bound_futures_fail_with_their_batch_and_wake_waiters():
    batch, futures, early = _bound_futures(3)
    errors, results = [], []
    futures[2].add_errback(errors.append)
    waiter = threading.Thread(target=lambda: results.append(futures[1].exception(timeout=30)))
    waiter.start()
    error = MessageTooLargeError("refused")
    batch.fail(error)
    waiter.join(30)
    assert results == [error] and errors == [error] and early == []
    assert all(f.failed() and f.exception() is error for f in futures)
    with pytest.raises(MessageTooLargeError):
        futures[0].get()


def test_the_hand_off_helpers_in_c_and_python_agree():
    """clients/producer/producer_c's run_end and bind against their Python twins (used when it is not built)."""
    import random

    from odradek.clients.producer import _producer
    from odradek.clients.producer.producer import run_end_py
    from odradek.clients.producer.record_futures import bind_rows_py, rows_of_py

    rng = random.Random(7)
    for _ in range(300):
        rows = [(rng.choice(["a", "b", "a" + ""]), b"v", rng.choice([None, None, b"k"]),
                 rng.choice([None, None, None, 1]), None, None, FutureRecordMetadata()) for _ in range(12)]
        start = rng.randrange(12)
        assert _producer.run_end(rows, start, 12) == run_end_py(rows, start, 12)
    futures = [FutureRecordMetadata(("t", b"%d" % i)) for i in range(6)]
    assert _producer.rows_of(futures) == rows_of_py(futures) == [("t", b"%d" % i) for i in range(6)]
    rows = [("t", b"v", None, None, None, None, FutureRecordMetadata()) for _ in range(6)]
    other = [("t", b"v", None, None, None, None, FutureRecordMetadata()) for _ in range(6)]
    assert _producer.bind(rows, 1, 4, "batch", 10, 6) == [row[6] for row in rows[1:5]]
    bind_rows_py(other, 1, 4, "batch", 10, 6)
    assert _producer.bind(futures, 2, 2, "other", 0, -1) == futures[2:4]
    assert [(row[6]._batch, row[6]._index) for row in rows] == [(row[6]._batch, row[6]._index) for row in other] == \
        [(None, None)] + [("batch", 10 + i) for i in range(4)] + [(None, None)]
    assert [(f._batch, f._row is None) for f in futures[1:5]] == [(None, False), ("other", True), ("other", True),
                                                                 (None, False)]

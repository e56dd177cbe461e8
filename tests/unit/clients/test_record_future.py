"""FutureRecordMetadata (clients/sync_producer.py): the light future the blocking Producer's send returns."""

from __future__ import annotations

import concurrent.futures
import logging
import threading

import pytest

from odradek.clients.producer import RecordMetadata
from odradek.clients.sync_producer import FutureRecordMetadata
from odradek.clients.types import TopicPartition
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
    with caplog.at_level(logging.ERROR, logger="odradek.clients.sync_producer"):
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

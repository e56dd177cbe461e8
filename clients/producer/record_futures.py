"""The futures of the blocking Producer: one per ``send`` (``FutureRecordMetadata``) and one per ``send_batch``
(``FutureBatchMetadata``), with kafka-python's methods and concurrent.futures.Future's.

A record's future costs one small object and nothing when its batch is answered: the producer's loop
binds it to its batch and index (``bind``) and the batch keeps its records' timestamps and sizes in one
buffer (``RECORD_META``), so the RecordMetadata is made only when asked for. A batch's answer is one
attribute; threads waiting on any future wait on one Condition, notified when a batch settles only if
someone waits, and callbacks are kept per batch only for the futures that have some.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from typing import Any, Callable

from ...protocol.errors import RequestTimedOutError
from ...protocol.records.codec import pure_python_forced

log = logging.getLogger(__name__)

PENDING, SUCCEEDED, FAILED = 0, 1, 2

# Guards callbacks' hand-over and waiting between the loop's and the application's threads; held for a
# few attribute reads and writes only, uncontended nearly always.
_lock = threading.Lock()
_settled = threading.Condition(_lock)
_waiters = 0  # threads in _SyncFuture._wait (under _lock)
_unbound: set["FutureRecordMetadata"] = set()  # futures given callbacks before the loop bound them (under _lock)


class Settled:
    """An outcome known directly (not through a batch): what ``set_result``/``set_exception`` store."""

    __slots__ = ("state", "value")

    def __init__(self, state: int, value: Any) -> None:
        self.state, self.value = state, value

    def outcome(self, index: int) -> tuple[int, Any]:
        return self.state, self.value


class _SyncFuture:
    """Waiting, callbacks and the kafka-python / concurrent.futures methods; subclasses say where the
    outcome is (``_status``, ``_outcome``) and keep their callbacks (``_take_callbacks``, ``_watch``)."""

    __slots__ = ()

    def _status(self) -> int:
        """PENDING, SUCCEEDED or FAILED (cheaper than ``_outcome``, which may make the value)."""
        raise NotImplementedError

    def _outcome(self) -> tuple[int, Any]:
        raise NotImplementedError

    def _watch(self, callback: Callable[[Any], Any]) -> None:
        """Keep ``callback`` until the outcome is known (called under _lock, the future still pending)."""
        raise NotImplementedError

    def _take_callbacks(self) -> list | None:
        """The callbacks to run now (under _lock), None if none."""
        raise NotImplementedError

    def _settle(self, state: int, value: Any) -> None:
        raise NotImplementedError

    # -- completion -----------------------------------------------------------------------------------
    def set_result(self, value: Any) -> None:
        self._settle(SUCCEEDED, value)

    def set_exception(self, exception: BaseException) -> None:
        self._settle(FAILED, exception)

    def _run_callbacks(self) -> None:
        with _lock:
            callbacks = self._take_callbacks()
        for callback in callbacks or ():
            self._run(callback)

    def _run(self, callback: Callable[[Any], Any]) -> None:
        try:
            callback(self)
        except Exception:  # noqa: BLE001 - as concurrent.futures: a failing callback does not stop the others
            log.exception("exception calling callback for %r", self)

    # -- waiting --------------------------------------------------------------------------------------
    def _wait(self, timeout: float | None) -> bool:
        global _waiters
        if self._status() != PENDING:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        with _lock:
            _waiters += 1
            try:
                while self._status() == PENDING:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    _settled.wait(remaining)
                return True
            finally:
                _waiters -= 1

    def get(self, timeout: float | None = None) -> Any:
        """The result; raises the error, or RequestTimedOutError after ``timeout`` s."""
        if not self._wait(timeout):
            raise RequestTimedOutError(f"no answer within {timeout} s")
        state, value = self._outcome()
        if state == FAILED:
            raise value
        return value

    def result(self, timeout: float | None = None) -> Any:
        """concurrent.futures' ``result``: raises the error, or TimeoutError after ``timeout`` s."""
        if not self._wait(timeout):
            raise concurrent.futures.TimeoutError()
        state, value = self._outcome()
        if state == FAILED:
            raise value
        return value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._wait(timeout):
            raise concurrent.futures.TimeoutError()
        return self._outcome()[1] if self._status() == FAILED else None  # no RecordMetadata made for nothing

    # -- callbacks ------------------------------------------------------------------------------------
    def add_done_callback(self, function: Callable[[Any], Any]) -> None:
        """``function(future)`` once done: in the producer's thread, or here at once if already done."""
        with _lock:
            if self._status() == PENDING:
                self._watch(function)
                return
        self._run(function)

    def add_callback(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> "_SyncFuture":
        """``function(*args, result, **kwargs)`` on success."""
        def call(future: _SyncFuture) -> None:
            state, value = future._outcome()
            if state == SUCCEEDED:
                function(*args, value, **kwargs)
        self.add_done_callback(call)
        return self

    def add_errback(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> "_SyncFuture":
        """``function(*args, exception, **kwargs)`` on failure."""
        def call(future: _SyncFuture) -> None:
            state, value = future._outcome()
            if state == FAILED:
                function(*args, value, **kwargs)
        self.add_done_callback(call)
        return self

    # -- state ----------------------------------------------------------------------------------------
    def done(self) -> bool:
        return self._status() != PENDING

    def is_done(self) -> bool:
        return self._status() != PENDING

    def succeeded(self) -> bool:
        return self._status() == SUCCEEDED

    def failed(self) -> bool:
        return self._status() == FAILED

    def running(self) -> bool:
        return self._status() == PENDING

    def cancel(self) -> bool:
        return False  # kafka-python's record futures cannot be cancelled either

    def cancelled(self) -> bool:
        return False

    def __repr__(self) -> str:
        state, value = self._outcome()
        name = type(self).__name__
        if state == PENDING:
            return f"<{name} pending>"
        return f"<{name} {'succeeded' if state == SUCCEEDED else 'failed'}: {value!r}>"


class _SlottedStorage:
    """FutureRecordMetadata's attributes as a plain slotted class (tracked by the garbage collector)."""

    __slots__ = ("_batch", "_index", "_callbacks", "_row")

    def __init__(self, row: tuple | None = None) -> None:
        self._batch = self._index = self._callbacks = None
        self._row = row


def bind_rows_py(rows: list, start: int, count: int, batch: Any, first_index: int, position: int) -> list:
    """The futures at ``position`` of ``rows[start:start+count]`` (the items themselves for -1) become the
    batch's records ``first_index`` on, and let their row go; returns them."""
    chosen = rows[start:start + count]
    bound = chosen if position < 0 else [row[position] for row in chosen]
    for index, future in enumerate(bound, first_index):
        future._batch = batch
        future._index = index
        future._row = None
    return bound


def rows_of_py(futures: list) -> list:
    return [future._row for future in futures]


try:  # storage the garbage collector does not track, and the loop's passes in C (clients/producer/producer_c)
    if pure_python_forced():
        raise ImportError("ODRADEK_PURE_PYTHON")
    from ._producer import FutureBase as _FutureStorage
    from ._producer import bind as _bind_rows
    from ._producer import rows_of
except ImportError:  # not built: tracked futures (each full collection then walks the futures kept)
    _FutureStorage, _bind_rows, rows_of = _SlottedStorage, bind_rows_py, rows_of_py  # type: ignore[misc]


class FutureRecordMetadata(_SyncFuture, _FutureStorage):
    """What ``Producer.send`` returns; its result is the record's RecordMetadata.

    Made with its record's row (topic, value, key, partition, timestamp, headers), which it carries to the
    producer's loop. ``_batch`` is None until the loop binds it (``bind``: a batch and ``_index``), or
    ``set_result``/``set_exception`` settle it (a ``Settled``).
    """

    __slots__ = ()

    def _status(self) -> int:
        batch = self._batch
        return PENDING if batch is None else batch.state

    def _outcome(self) -> tuple[int, Any]:
        batch = self._batch
        return (PENDING, None) if batch is None else batch.outcome(self._index)

    def _watch(self, callback: Callable[[Any], Any]) -> None:
        callbacks = self._callbacks
        if callbacks is None:
            self._callbacks = callbacks = []
            if self._batch is None:
                _unbound.add(self)
            else:
                self._batch.watch(self)
        callbacks.append(callback)

    def _take_callbacks(self) -> list | None:
        callbacks, self._callbacks = self._callbacks, None
        return callbacks

    def _settle(self, state: int, value: Any) -> None:
        with _lock:
            if self._status() != PENDING:
                return  # the first outcome stays
            self._batch, self._index = Settled(state, value), 0
            _unbound.discard(self)
            if _waiters:
                _settled.notify_all()
        self._run_callbacks()


class FutureBatchMetadata(_SyncFuture):
    """What ``Producer.send_batch`` returns: resolves to a ``SendBatchResult`` once every record of the call
    is acknowledged, or fails with the first error one of them met."""

    __slots__ = ("_state", "_value", "_callbacks")

    def __init__(self) -> None:
        self._state, self._value, self._callbacks = PENDING, None, None

    def _status(self) -> int:
        return self._state

    def _outcome(self) -> tuple[int, Any]:
        return self._state, self._value

    def _watch(self, callback: Callable[[Any], Any]) -> None:
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

    def _take_callbacks(self) -> list | None:
        callbacks, self._callbacks = self._callbacks, None
        return callbacks

    def _settle(self, state: int, value: Any) -> None:
        with _lock:
            if self._state != PENDING:
                return
            self._state, self._value = state, value
            if _waiters:
                _settled.notify_all()
        self._run_callbacks()


def bind(futures: list, start: int, count: int, batch: Any, first_index: int) -> None:
    """Record futures ``futures[start:start+count]`` are the batch's records ``first_index`` on."""
    _hand_over_unbound(_bind_rows(futures, start, count, batch, first_index, -1))


def _hand_over_unbound(bound: list) -> None:
    """Of the futures just bound, those given callbacks before: their callbacks now wait on their batch.
    Under the lock, so a callback added while its future is being bound is seen by one side or the other."""
    ready = []
    with _lock:
        if not _unbound:
            return
        for future in bound:
            if future not in _unbound:
                continue
            _unbound.discard(future)
            if future._status() == PENDING:
                future._batch.watch(future)
            else:
                ready.append(future)
    for future in ready:
        future._run_callbacks()


def batch_settled(batch: Any) -> None:
    """A batch's outcome was just set: wake the waiters, run the callbacks of its records' futures."""
    with _lock:
        watched, batch.watched = batch.watched, None
        if _waiters:
            _settled.notify_all()
    for future in watched or ():
        future._run_callbacks()


__all__ = ["FAILED", "PENDING", "SUCCEEDED", "FutureBatchMetadata", "FutureRecordMetadata", "Settled", "batch_settled",
           "bind", "rows_of"]

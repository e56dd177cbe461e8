"""Completion: the outcome of a parked request, handed on the moment the purgatory sets it.

An ``asyncio.Future`` runs its done-callbacks, and wakes the task awaiting it, in a later turn of the event
loop. A follower fetch woken by an append, or an acks=-1 produce completed by a follower's fetch, should
be answered inside the call that completed it: the follower gets the records while the leader finishes the
produce, and no task is made, scheduled and stepped per parked request. A ``Completion`` runs its
callbacks synchronously inside ``set_result`` / ``set_exception`` / ``cancel``, so ``then`` chains (the
API's response, the switchboard's encoding, the handler pool's send) all run in that call.

Coroutines may still ``await`` one (the coordinators' own appends): an asyncio future is made only then.
Cancelling a derived completion cancels the one it came from, as cancelling a task cancels the future it
awaits: a fetch whose request was dropped at shutdown then reads nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Generator

log = logging.getLogger(__name__)

_PENDING, _RESULT, _ERROR, _CANCELLED = range(4)


class Completion:
    __slots__ = ("_state", "_value", "_callbacks", "_upstream")

    def __init__(self) -> None:
        self._state = _PENDING
        self._value: Any = None
        self._callbacks: list[Callable[["Completion"], None]] | None = None
        self._upstream: tuple[Completion, ...] = ()  # what this one was derived from (``then``, ``gather``)

    # -- asyncio.Future's reading side ------------------------------------------------------------------
    def done(self) -> bool:
        return self._state != _PENDING

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def result(self) -> Any:
        if self._state == _RESULT:
            return self._value
        if self._state == _ERROR:
            raise self._value
        if self._state == _CANCELLED:
            raise asyncio.CancelledError()
        raise asyncio.InvalidStateError("result is not set")

    def exception(self) -> BaseException | None:
        if self._state == _CANCELLED:
            raise asyncio.CancelledError()
        if self._state == _PENDING:
            raise asyncio.InvalidStateError("exception is not set")
        return self._value if self._state == _ERROR else None

    def add_done_callback(self, callback: Callable[["Completion"], None]) -> None:
        """Run ``callback(self)`` when done: now if it already is."""
        if self._state != _PENDING:
            _run(callback, self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    # -- setting ----------------------------------------------------------------------------------------
    def set_result(self, value: Any) -> None:
        self._settle(_RESULT, value)

    def set_exception(self, exc: BaseException) -> None:
        self._settle(_ERROR, exc)

    def cancel(self) -> bool:
        if self._state != _PENDING:
            return False
        self._settle(_CANCELLED, None)
        for upstream in self._upstream:
            upstream.cancel()
        return True

    def _settle(self, state: int, value: Any) -> None:
        if self._state != _PENDING:
            raise asyncio.InvalidStateError("completion is already done")
        self._state, self._value = state, value
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            _run(callback, self)

    # -- chaining and awaiting --------------------------------------------------------------------------
    def then(self, on_result: Callable[[Any], Any],
             on_error: Callable[[BaseException], Any] | None = None) -> "Completion":
        """A completion of ``on_result(value)``, or of ``on_error(exc)`` when this one fails (else it fails
        alike); set in the same call as this one. If the function raises, the derived completion fails."""
        derived = Completion()
        derived._upstream = (self,)

        def step(done: Completion) -> None:
            if derived._state != _PENDING:  # cancelled meanwhile
                return
            state = done._state
            try:
                if state == _RESULT:
                    value = on_result(done._value)
                elif state == _ERROR and on_error is not None:
                    value = on_error(done._value)
                else:
                    derived._settle(state, done._value)
                    return
            except Exception as exc:
                derived._settle(_ERROR, exc)
                return
            derived._settle(_RESULT, value)

        self.add_done_callback(step)
        return derived

    def __await__(self) -> Generator[Any, None, Any]:
        if self._state == _PENDING:
            future = asyncio.get_running_loop().create_future()
            self.add_done_callback(lambda done: _copy_to(done, future))
            try:
                yield from future.__await__()
            except asyncio.CancelledError:
                self.cancel()  # the awaiting task was cancelled: so is what it waited for
                raise
        return self.result()

    def __repr__(self) -> str:
        return f"Completion({('pending', 'result', 'error', 'cancelled')[self._state]})"


def gather(values: list[Any]) -> Completion:
    """A completion of ``values`` with each Completion among them replaced by its result, set in the call
    that sets the last of them; it fails (or is cancelled) as soon as one of them does."""
    gathered = Completion()
    values = list(values)
    waiting = [i for i, value in enumerate(values) if type(value) is Completion]
    gathered._upstream = tuple(values[i] for i in waiting)
    remaining = len(waiting)

    def on_done(index: int) -> Callable[[Completion], None]:
        def step(done: Completion) -> None:
            nonlocal remaining
            if gathered._state != _PENDING:
                return
            if done._state != _RESULT:
                gathered._settle(done._state, done._value)
                return
            values[index] = done._value
            remaining -= 1
            if not remaining:
                gathered._settle(_RESULT, values)
        return step

    if not remaining:
        gathered.set_result(values)
    for index in waiting:
        values[index].add_done_callback(on_done(index))
    return gathered


def _run(callback: Callable[[Completion], None], done: Completion) -> None:
    # A failing callback must not stop the others, nor reach the purgatory that set the completion.
    try:
        callback(done)
    except Exception:
        log.exception("A completion callback failed: %r", callback)


def _copy_to(done: Completion, future: asyncio.Future) -> None:
    if future.done():
        return
    if done._state == _RESULT:
        future.set_result(done._value)
    elif done._state == _ERROR:
        future.set_exception(done._value)
    else:
        future.cancel()

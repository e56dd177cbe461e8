"""Completion: callbacks run inside the call that sets it; chains, cancellation and awaiting."""

import asyncio
import logging

import pytest

from odradek.broker.purgatory.completion import Completion, gather


def test_callbacks_run_inside_set_result_in_order():
    seen = []
    c = Completion()
    c.add_done_callback(lambda done: seen.append(("first", done.result())))
    c.add_done_callback(lambda done: seen.append(("second", done.result())))
    assert seen == []
    c.set_result(7)
    assert seen == [("first", 7), ("second", 7)]
    c.add_done_callback(lambda done: seen.append(("late", done.result())))  # already done: runs at once
    assert seen[-1] == ("late", 7)


def test_reading_before_and_after():
    c = Completion()
    assert not c.done()
    with pytest.raises(asyncio.InvalidStateError):
        c.result()
    c.set_exception(ValueError("boom"))
    assert c.done() and not c.cancelled()
    assert isinstance(c.exception(), ValueError)
    with pytest.raises(ValueError):
        c.result()
    with pytest.raises(asyncio.InvalidStateError):
        c.set_result(1)


def test_then_maps_results_and_errors_in_the_same_call():
    source = Completion()
    mapped = source.then(lambda v: v * 2, lambda exc: f"error {exc}")
    source.set_result(21)
    assert mapped.result() == 42

    failing = Completion()
    recovered = failing.then(lambda v: v, lambda exc: f"error {exc}")
    failing.set_exception(KeyError("k"))
    assert recovered.result() == "error 'k'"

    unhandled = Completion()
    passed_on = unhandled.then(lambda v: v)
    unhandled.set_exception(KeyError("k"))
    assert isinstance(passed_on.exception(), KeyError)


def test_a_raising_function_fails_the_derived_completion_not_the_caller():
    source = Completion()
    derived = source.then(lambda v: 1 / v)
    source.set_result(0)  # does not raise here
    assert isinstance(derived.exception(), ZeroDivisionError)


def test_a_raising_callback_is_logged_and_the_others_still_run(caplog):
    seen = []
    c = Completion()

    def bad(done):
        raise RuntimeError("callback bug")
    c.add_done_callback(bad)
    c.add_done_callback(lambda done: seen.append(done.result()))
    with caplog.at_level(logging.ERROR):
        c.set_result("x")
    assert seen == ["x"]
    assert "callback bug" in caplog.text


def test_cancelling_a_derived_completion_cancels_its_source():
    source = Completion()
    derived = source.then(lambda v: v).then(lambda v: v)
    assert derived.cancel()
    assert derived.cancelled() and source.cancelled()
    assert not derived.cancel()
    with pytest.raises(asyncio.CancelledError):
        derived.result()


def test_awaiting_pending_and_done_completions():
    async def main():
        done = Completion()
        done.set_result("ready")
        assert await done == "ready"

        pending = Completion()
        asyncio.get_running_loop().call_soon(pending.set_result, "later")
        assert await pending == "later"

        failing = Completion()
        asyncio.get_running_loop().call_soon(failing.set_exception, OSError("disk"))
        with pytest.raises(OSError):
            await failing
    asyncio.run(main())


def test_cancelling_the_awaiting_task_cancels_the_completion():
    async def main():
        pending = Completion()

        async def waiter():
            return await pending
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pending.cancelled()
    asyncio.run(main())


def test_gather_is_set_in_the_call_that_sets_the_last_one():
    first, second = Completion(), Completion()
    gathered = gather([first, {"ready": 1}, second])
    first.set_result("a")
    assert not gathered.done()
    second.set_result("b")
    assert gathered.result() == ["a", {"ready": 1}, "b"]
    assert gather([1, 2]).result() == [1, 2]  # nothing to wait for


def test_gather_fails_with_the_first_failure_and_cancels_what_it_waits_for():
    first, second = Completion(), Completion()
    gathered = gather([first, second])
    first.set_exception(TimeoutError("slow"))
    assert isinstance(gathered.exception(), TimeoutError)
    second.set_result("late")  # ignored

    third, fourth = Completion(), Completion()
    assert gather([third, fourth]).cancel()
    assert third.cancelled() and fourth.cancelled()

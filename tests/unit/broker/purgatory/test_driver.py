"""The asyncio driver on a real loop: small delays, generous assertions, wake-ups counted."""
import asyncio
import time

import pytest
import uvloop

from odradek.broker.purgatory import AsyncTimerDriver, CallbackTask, DelayedOperation, DelayedOperationPurgatory, Timer

LOOPS = [asyncio.new_event_loop, uvloop.new_event_loop]


def run(factory, coro):
    loop = factory()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


@pytest.mark.parametrize("factory", LOOPS, ids=["asyncio", "uvloop"])
def test_tasks_fire_after_their_delay_without_polling(factory):
    async def main():
        timer = Timer(tick_ms=1, wheel_size=20)
        driver = AsyncTimerDriver(timer)
        driver.start()
        t0 = time.monotonic()
        fired = {}
        done = asyncio.Event()

        def cb(d):
            fired[d] = (time.monotonic() - t0) * 1000
            if len(fired) == 3:
                done.set()

        # 50 ms is beyond the 20 ms wheel: it goes through an overflow bucket and is reinserted.
        for d in (50, 20, 30):
            timer.add(CallbackTask(d, lambda d=d: cb(d)))
        await asyncio.wait_for(done.wait(), 5)
        for d, at in fired.items():
            assert at >= d - 1  # ms clock rounding; never a tick early in any real sense
        # A tick poller would wake ~50 times; we wake once per scheduled bucket, plus slack for a
        # loop clock that fires a hair early (then we simply re-arm).
        assert driver.wakeups <= 10, driver.wakeups
        assert timer.size == 0
        # Idle: nothing armed, so the loop is not woken any more.
        wakeups = driver.wakeups
        await asyncio.sleep(0.05)
        assert driver.wakeups == wakeups and driver._handle is None
        driver.shutdown()

    run(factory, main())


def test_earlier_task_rearms_the_single_handle():
    async def main():
        timer = Timer()
        driver = AsyncTimerDriver(timer)
        driver.start()
        assert driver.arms == 0  # nothing pending: nothing armed
        fired = []
        timer.add(CallbackTask(1500, lambda: fired.append("late")))
        assert driver.arms == 1
        late_handle = driver._handle
        timer.add(CallbackTask(2000, lambda: fired.append("later")))  # not earlier: no re-arm
        assert driver.arms == 1
        timer.add(CallbackTask(20, lambda: fired.append("soon")))
        assert driver.arms == 2 and late_handle.cancelled()
        await asyncio.sleep(0.1)
        assert fired == ["soon"]
        assert driver._armed_for is not None  # re-armed for the remaining buckets
        driver.shutdown()
        assert driver._handle is None

    run(asyncio.new_event_loop, main())


def test_shutdown_stops_expiring():
    async def main():
        timer = Timer()
        driver = AsyncTimerDriver(timer)
        driver.start()
        fired = []
        timer.add(CallbackTask(20, lambda: fired.append(1)))
        driver.shutdown()
        await asyncio.sleep(0.06)
        assert fired == [] and timer.size == 1
        driver.start()  # picks up what is pending
        await asyncio.sleep(0.01)
        assert fired == [1]
        driver.shutdown()

    run(asyncio.new_event_loop, main())


class WaitForFlag(DelayedOperation):
    def __init__(self, delay_ms, flag):
        super().__init__(delay_ms)
        self.flag = flag
        self.result = None

    def try_complete(self):
        return self.force_complete() if self.flag["set"] else False

    def on_complete(self):
        self.result = "complete" if self.flag["set"] else "timeout"

    def on_expiration(self):
        self.result += "/expired"


@pytest.mark.parametrize("factory", LOOPS, ids=["asyncio", "uvloop"])
def test_purgatory_on_a_real_loop(factory):
    async def main():
        purgatory = DelayedOperationPurgatory("fetch", Timer())
        driver = AsyncTimerDriver(purgatory.timer)
        driver.start()
        flag = {"set": False}
        quick = WaitForFlag(30, {"set": False})
        waiting = WaitForFlag(5000, flag)
        assert not purgatory.try_complete_else_watch(quick, [("t", 0)])
        assert not purgatory.try_complete_else_watch(waiting, [("t", 1)])
        await asyncio.sleep(0.1)
        assert quick.result == "timeout/expired"
        assert waiting.result is None
        flag["set"] = True
        assert purgatory.check_and_complete(("t", 1)) == 1
        assert waiting.result == "complete"
        assert purgatory.num_delayed == 0
        # The handle still points at the emptied 5 s bucket (it would cost one idle wake-up);
        # rearm() after cancellations drops it.
        assert driver._handle is not None
        driver.rearm()
        assert driver._handle is None
        purgatory.shutdown()
        driver.shutdown()

    run(factory, main())

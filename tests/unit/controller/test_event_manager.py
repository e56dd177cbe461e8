"""ControllerEventManager: one task, events in order, from the loop and from other threads."""

import asyncio
import threading

from odradek.controller.event_manager import (BrokerChange, ControllerChange, ControllerEventManager, Startup,
                                              TopicChange)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_events_are_processed_one_at_a_time_in_order():
    async def main():
        seen, active = [], []

        async def process(event):
            active.append(event)
            assert len(active) == 1  # never two at once, even while one awaits
            await asyncio.sleep(0.001)
            seen.append(event.controller_id)
            active.pop()

        manager = ControllerEventManager(process)
        manager.start()
        for i in range(50):
            manager.put(ControllerChange(i))
        await manager.wait_idle()
        assert seen == list(range(50)) and manager.processed == 50
        await manager.close()
        assert not manager.running

    run(main())


def test_events_from_other_threads_arrive_in_each_threads_order():
    async def main():
        seen = []
        manager = ControllerEventManager(lambda event: seen.append(event))
        manager.start()

        def producer(kind):
            for i in range(200):
                manager.put_threadsafe(kind(i))

        threads = [threading.Thread(target=producer, args=(k,)) for k in (ControllerChange, lambda i: BrokerChange())]
        for t in threads:
            t.start()
        for t in threads:
            await asyncio.to_thread(t.join)
        await asyncio.sleep(0)  # let the threadsafe callbacks run before waiting for the queue
        while len(seen) < 400:
            await asyncio.sleep(0.001)
        await manager.wait_idle()
        ids = [e.controller_id for e in seen if isinstance(e, ControllerChange)]
        assert ids == list(range(200)) and sum(isinstance(e, BrokerChange) for e in seen) == 200
        await manager.close()

    run(main())


def test_a_failing_event_does_not_stop_the_queue():
    async def main():
        seen = []

        def process(event):
            if isinstance(event, TopicChange):
                raise RuntimeError("boom")
            seen.append(event)

        manager = ControllerEventManager(process)
        manager.start()
        manager.put(TopicChange())
        manager.put(Startup())
        await manager.wait_idle()
        assert seen == [Startup()] and manager.failed == 1
        await manager.close()

    run(main())


def test_clear_and_put_drops_pending_events_and_close_stops_after_the_current_one():
    async def main():
        seen, release = [], asyncio.Event()

        async def process(event):
            if isinstance(event, Startup):
                await release.wait()
            seen.append(event)

        manager = ControllerEventManager(process)
        manager.start()
        manager.put(Startup())
        await asyncio.sleep(0)
        for i in range(5):
            manager.put(ControllerChange(i))
        manager.clear_and_put(ControllerChange(99))
        assert manager.queue_size == 1
        release.set()
        await manager.wait_idle()
        assert seen == [Startup(), ControllerChange(99)]
        manager.put(Startup())  # blocks again until released
        await asyncio.sleep(0)
        closing = asyncio.ensure_future(manager.close())
        manager.put_threadsafe(ControllerChange(5))
        release.set()
        await closing
        assert not manager.running

    run(main())


def test_put_threadsafe_after_the_loop_closed_is_dropped():
    manager = ControllerEventManager(lambda e: None)

    async def main():
        manager.start()
        await manager.close()

    run(main())
    manager.put_threadsafe(Startup())  # no exception: the loop is closed

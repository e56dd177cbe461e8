"""EventLoopThread: a private asyncio loop in a daemon thread, for the synchronous client facades.

The facades (Consumer, and any blocking twin of an asyncio client) keep their asyncio core running
between the application's calls, so background work such as prefetching goes on while the
application is busy. ``blocking(coroutine_function)`` wraps a coroutine function as a blocking one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")
_UNWIND_TIMEOUT_S = 5.0


class EventLoopThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here).

        If the wait is interrupted (Ctrl-C, or a signal handler raising in this thread), the coroutine is
        cancelled and allowed to unwind on the loop before the interruption goes on, so that closing the
        client afterwards finds no half-run call (which would otherwise be destroyed while pending)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        try:
            return future.result(timeout)
        except BaseException:
            if not future.done():
                future.cancel()
                concurrent.futures.wait([future], timeout=_UNWIND_TIMEOUT_S)
            raise

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """Call a plain function on the loop's thread (for state the loop's tasks read)."""
        async def call() -> T:
            return function(*args)
        return self.run(call())

    def blocking(self, attr: Any) -> Any:
        """``attr`` itself unless it is a coroutine function; then a blocking wrapper of it."""
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return self.run(attr(*args, **kwargs))

        return wrapper

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

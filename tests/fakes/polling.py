"""Waiting in an asyncio test for what other tasks make true: ``until`` polls a condition and fails naming
what it waited for. ``interval=0`` yields one event-loop turn at a time, for a test that must catch a state
before the tasks move past it."""

from __future__ import annotations

import asyncio
from typing import Any, Callable


async def until(condition: Callable[[], Any], what: str = "the condition", timeout: float = 5.0,
                interval: float = 0.005) -> Any:
    """The condition's first true value; AssertionError once ``timeout`` seconds went by without one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(f"not reached within {timeout} s: {what}")
        await asyncio.sleep(interval)

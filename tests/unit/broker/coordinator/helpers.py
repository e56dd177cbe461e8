"""Shared by the coordinator unit tests: a fresh event loop per test and a config read from a dict."""

from __future__ import annotations

import asyncio
import functools


def run_in_loop(test):
    """Each test runs on a fresh event loop (the coordinator's futures and timers need one)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return wrapper


class DictConfig:
    """The broker config a coordinator reads with get(), from ``values`` with ``overrides`` on top."""

    def __init__(self, values: dict, **overrides) -> None:
        self.values = {**values, **overrides}

    def get(self, key):
        return self.values[key]

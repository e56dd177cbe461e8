"""Delayed operations (DelayedProduce, DelayedFetch, ...) watched by key and expired by a hierarchical timing wheel."""
from .delayed_operation import DelayedOperation, DelayedOperationPurgatory
from .driver import AsyncTimerDriver
from .timer import CallbackTask, Timer, TimerTask, TimerTaskEntry, TimerTaskList, TimingWheel, monotonic_ms

__all__ = [
    "AsyncTimerDriver",
    "CallbackTask",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "Timer",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
    "monotonic_ms",
]

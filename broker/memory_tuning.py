"""How the broker's process manages memory: glibc malloc tuned for large short-lived buffers, and the cyclic
garbage collector kept off what start-up built.

**malloc.** A consumer's fetch reads up to a megabyte per partition into a fresh ``bytes`` (``os.pread``) and
frees it once the answer is written; large produce requests arrive in buffers as large. With glibc's defaults each such
block above the mmap threshold is mapped and unmapped again, and the top of the heap is trimmed whenever more
than the trim threshold is free there: every read then page-faults on fresh zeroed pages. ``perf`` on brokers
answering Kafka's ConsumerPerformance (1 KiB records) put a quarter of their CPU in page faults, page
clearing and unmapping. Raising both thresholds keeps freed blocks in the heap for the next read (RSS holds
the peak of those buffers, at most ``TRIM_THRESHOLD`` of it unused). ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` in the environment, or malloc tunables in ``GLIBC_TUNABLES``, leave the choice to
the operator.

**The collector.** A full (generation 2) collection walks every tracked object; right after start-up most of
them are the broker's own machinery (modules, classes, configs, the logs recovered from disk). At 1,000
end-to-end records/s on RF 3 those collections stopped a broker's event loop for 40-60 ms a few times a
minute, which was most of the records above the 99th percentile. Start-up ends with one collection and then
``gc.freeze()``: what is alive then is never walked again (CPython's advice for long-running servers).

Partitions created later (10,000 of them: ~350,000 more objects) made full collections of 0.1-0.5 s, 11-23
of them in 45 s on a broker at 1,000 end-to-end records/s (p99 52-102 ms). ``Refreezer`` therefore freezes
what is new once the partition count grew by ``REFREEZE_PARTITIONS``: a collection of the young generations
(milliseconds) and ``gc.freeze()``, which only moves lists. It thaws, collects everything and freezes again
(a full collection: 0.3-0.6 s at 10,000 partitions) when as many partitions went away and every
``REFREEZE_INTERVAL_S`` whatever happened, so that cycles that died among frozen objects (a deleted
partition's, a closed connection's) are reclaimed and freezing never leaks for longer than that interval.

Between those, what survives into the oldest generation is walked by every full collection, and after a
freeze CPython runs one every ten collections of the middle generation (its "a quarter of the old generation
is new" rule always holds when nearly everything is frozen). Holding 10,000 partitions, 60,000 such objects
made full collections of 22-40 ms every few seconds. Once the oldest generation holds
``REFREEZE_OLD_OBJECTS``, they are collected once and frozen too.
"""

from __future__ import annotations

import ctypes
import gc
import os
from typing import Callable

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 16 << 20  # blocks below this come from the heap (glibc's ceiling is 32 MiB on 64-bit)
TRIM_THRESHOLD = 64 << 20  # free memory kept at the top of the heap before it is given back
OPERATOR_KEYS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
REFREEZE_PARTITIONS = 1000  # partitions added or removed since the last freeze that call for another
REFREEZE_INTERVAL_S = 600.0  # and at least this often: frozen cycles that died are reclaimed then
REFREEZE_CHECK_MS = 10_000  # how often the broker asks
REFREEZE_OLD_OBJECTS = 20_000  # objects of the oldest generation (not frozen) that call for freezing them


def keep_freed_buffers(environ: dict[str, str] | os._Environ = os.environ) -> bool:
    """Raise the thresholds; False when the operator set them or the C library has no ``mallopt`` (musl)."""
    if any(key in environ for key in OPERATOR_KEYS) or "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def collect_and_freeze() -> int:
    """Collect what is garbage now (start-up's, at the end of start-up), then put every object alive out of the
    collector's reach; the number of objects frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class Refreezer:
    """When to freeze again: what is new once the partition count grew by ``REFREEZE_PARTITIONS``; everything,
    after a full collection, once as many went away or ``REFREEZE_INTERVAL_S`` went by; the oldest generation,
    after collecting it, once it holds ``REFREEZE_OLD_OBJECTS``. ``check`` is the periodic job; it returns
    "new", "all", "old" or None (nothing done)."""

    def __init__(self, partitions_now: int, now: float, freeze_new: Callable[[], int] | None = None,
                 refreeze_all: Callable[[], int] | None = None, freeze_old: Callable[[], int] | None = None,
                 count_old: Callable[[], int] | None = None) -> None:
        self.partitions, self.refrozen_at = partitions_now, now
        self.freeze_new = freeze_new or freeze_young
        self.refreeze_all = refreeze_all or refreeze
        self.freeze_old = freeze_old or collect_and_freeze
        self.count_old = count_old or old_objects

    def check(self, partitions_now: int, now: float) -> str | None:
        grown = partitions_now - self.partitions
        if grown <= -REFREEZE_PARTITIONS or now - self.refrozen_at >= REFREEZE_INTERVAL_S:
            self.refreeze_all()
            self.partitions, self.refrozen_at = partitions_now, now
            return "all"
        if grown >= REFREEZE_PARTITIONS:
            self.freeze_new()
            self.partitions = partitions_now
            return "new"
        if self.count_old() >= REFREEZE_OLD_OBJECTS:
            self.freeze_old()
            return "old"
        return None


def old_objects() -> int:
    """Objects in the oldest generation, the frozen ones not counted (a list of them: ~1 ms per 100,000)."""
    return len(gc.get_objects(2))


def freeze_young() -> int:
    """Collect the young generations only, then freeze every object alive: what partitions created since the last
    freeze built leaves full collections without one being run now (garbage already old waits for ``refreeze``)."""
    gc.collect(1)
    gc.freeze()
    return gc.get_freeze_count()


def refreeze() -> int:
    """Thaw, collect everything (the frozen included: their dead cycles too) and freeze what is left."""
    gc.unfreeze()
    return collect_and_freeze()

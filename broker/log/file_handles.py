"""The open descriptors of segment log files, kept within the process's descriptor limit.

Kafka keeps every segment's ``.log`` open (its indexes are memory-mapped, their files closed): one
descriptor per segment, so a broker with 30,000 segments needs a limit above 30,000 and fails partition by
partition when it meets it. Here a segment's ``.log`` is opened when first used and stays open while the
budget allows; past it (the soft RLIMIT_NOFILE less a reserve for sockets, ZooKeeper, index and checkpoint
writes) the least recently used idle one is closed and reopened on its next use, at the price of an
``open`` per such use. The first time that happens the broker says so once, naming ``ulimit -n`` and the
count it would need to keep every segment open.

A user pins a descriptor for one sequence of system calls (``with HANDLES.use(segment) as fd``), so no
thread ever sees its descriptor closed (and its number reused) under it.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from typing import Any, Protocol

log = logging.getLogger(__name__)

# Descriptors left for everything but segment files: client and inter-broker sockets, ZooKeeper, index,
# checkpoint and snapshot writes (opened only while written), the cleaner, the log directories' locks.
MIN_RESERVE = 512


class Owner(Protocol):
    log_path: str

    def open_file(self) -> int: ...


def descriptor_limit() -> int:
    """The soft RLIMIT_NOFILE (a large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as many servers do at start-up; (old, new) soft limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20  # Linux's default nr_open
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as e:
            log.warning("Could not raise the open-file limit from %d to %d: %s", soft, target, e)
    return soft, descriptor_limit()


def budget_for(limit: int) -> int:
    return max(16, limit - max(MIN_RESERVE, limit // 10))


class _Entry:
    __slots__ = ("fd", "pins")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pins = 0


class FileHandles:
    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget if budget is not None else budget_for(descriptor_limit())
        self._open: OrderedDict[Any, _Entry] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self.opens = 0
        self.evictions = 0
        self.owners = 0  # segments that have a file (open or not): what a descriptor each would take
        self._warned = False
        self._limit_warned = False

    def configure(self, budget: int) -> None:
        with self._lock:
            self.budget = budget
            self._evict_down_to(budget)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def use(self, owner: Owner) -> "_Use":
        """``with handles.use(owner) as fd``: the owner's descriptor, opened if needed, pinned meanwhile."""
        return _Use(self, owner)

    def _acquire(self, owner: Owner) -> int:
        with self._lock:
            entry = self._open.get(owner)
            if entry is None:
                entry = _Entry(self._open_within_budget(owner))
                self._open[owner] = entry
            else:
                self._open.move_to_end(owner)
            entry.pins += 1
            return entry.fd

    def _release(self, owner: Owner) -> None:
        with self._lock:
            entry = self._open.get(owner)
            if entry is not None:
                entry.pins -= 1

    def _open_within_budget(self, owner: Owner) -> int:
        if len(self._open) >= self.budget:
            self._warn_over_budget()
            self._evict_down_to(self.budget - 1)
        while True:
            try:
                fd = owner.open_file()
                self.opens += 1
                return fd
            except OSError as e:
                # Sockets or other files took the reserve: give segment descriptors back and try again.
                if e.errno not in (errno.EMFILE, errno.ENFILE) or not self._evict_one():
                    if e.errno in (errno.EMFILE, errno.ENFILE):
                        self._warn_limit(e)
                    raise
                self.budget = max(1, min(self.budget, len(self._open) + 1))
                self._warn_limit(e)

    def _evict_down_to(self, size: int) -> None:
        while len(self._open) > size and self._evict_one():
            pass

    def _evict_one(self) -> bool:
        """Close the least recently used idle descriptor; False when every one is in use."""
        for owner, entry in self._open.items():
            if entry.pins == 0:
                del self._open[owner]
                _close(entry.fd)
                self.evictions += 1
                return True
        return False

    def add_owner(self) -> None:
        """One more segment file: past the budget, the broker says once what limit it would need."""
        with self._lock:
            self.owners += 1
            if self.owners > self.budget:
                self._warn_over_budget()

    def close(self, owner: Owner, for_good: bool = False) -> None:
        """Close the owner's descriptor (reopened, under its current path, on its next use); ``for_good``:
        the segment is closed or deleted and no longer counts. The caller must not be using it."""
        with self._lock:
            entry = self._open.pop(owner, None)
            if for_good:
                self.owners -= 1
        if entry is not None:
            _close(entry.fd)

    def _warn_over_budget(self) -> None:
        if not self._warned:
            self._warned = True
            limit = descriptor_limit()
            log.warning("This broker's %d segment files exceed its descriptor budget of %d (open-file limit %d, "
                        "ulimit -n): idle ones are closed and reopened on use, which costs throughput; to keep "
                        "them all open, as Kafka does, raise ulimit -n to at least %d", max(self.owners, self.budget + 1),
                        self.budget, limit, max(self.owners, self.budget + 1) + max(MIN_RESERVE, limit // 10))

    def _warn_limit(self, error: OSError) -> None:
        if self._limit_warned:
            return
        self._limit_warned = True
        log.error("Out of file descriptors (%s) at the open-file limit of %d (ulimit -n) with %d segment files "
                  "open: raise ulimit -n to at least %d", error.strerror, descriptor_limit(), len(self._open),
                  max(self.owners, len(self._open)) + max(MIN_RESERVE, descriptor_limit() // 10))


class _Use:
    __slots__ = ("handles", "owner")

    def __init__(self, handles: FileHandles, owner: Owner) -> None:
        self.handles = handles
        self.owner = owner

    def __enter__(self) -> int:
        return self.handles._acquire(self.owner)

    def __exit__(self, *exc: Any) -> None:
        self.handles._release(self.owner)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


# One per process: the broker sizes it from its limit at start-up (server.py); the cleaner's worker process
# has its own.
HANDLES = FileHandles()


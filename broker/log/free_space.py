"""Disk-full protection for the operator: a WARNING when a log dir's filesystem runs low, before writes fail.

A write that fails for want of space takes its log dir offline (log_dir_failure.py). This check, run every
few seconds, warns first: one WARNING naming the directory and its free space when the free space falls below
``odradek.log.dir.free.space.warning.bytes``, and one INFO when it is back above by a tenth of it (so a dir
hovering at the threshold does not warn at every check); nothing in between, however often it looks.
Offline dirs are not looked at.
"""

from __future__ import annotations

import logging
import os
from typing import Callable, Iterable

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 5000


def free_bytes(path: str) -> int:
    """Bytes an unprivileged writer may still use on ``path``'s filesystem."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value, unit = float(size), "B"
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024:
            break
    return f"{value:.1f} {unit}"


class FreeSpaceMonitor:
    def __init__(self, log_dirs: Callable[[], Iterable[str]], threshold_bytes: int,
                 free: Callable[[str], int] = free_bytes) -> None:
        self.log_dirs = log_dirs  # the live ones, asked at each check
        self.threshold_bytes = threshold_bytes
        self._free = free
        self.low: set[str] = set()  # dirs warned about and not back above the threshold since

    def check(self) -> None:
        if self.threshold_bytes <= 0:
            return
        for directory in self.log_dirs():
            try:
                free = self._free(directory)
            except OSError as e:  # the dir's next write will tell (and take it offline) if it is broken
                log.debug("Cannot read the free space of %s: %s", directory, e)
                continue
            if free < self.threshold_bytes and directory not in self.low:
                self.low.add(directory)
                log.warning("Log directory %s has %s free (%d bytes), below odradek.log.dir.free.space.warning.bytes "
                            "%d: when it is full, writes there fail and the directory goes offline", directory,
                            _human(free), free, self.threshold_bytes)
            elif free >= self.threshold_bytes + self.threshold_bytes // 10 and directory in self.low:
                self.low.discard(directory)
                log.info("Log directory %s has %s free again (%d bytes)", directory, _human(free), free)

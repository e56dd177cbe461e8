"""LogDirFailureChannel: an I/O error on a log directory takes that directory offline, once (Kafka's KIP-112).

Whatever fails — an append, a roll, an index, a flush, a checkpoint, a producer snapshot, the cleaner,
the recovery at start-up — reports its directory here (``mark_offline``) from whichever thread it runs
on. The first report of a directory is remembered and handed to the listener (the replica manager's
``handle_log_dir_failure``, on the broker's event loop); later reports of the same directory are only
logged. As Kafka's LogDirFailureChannel.maybeAddOfflineLogDir, the error is logged at ERROR once.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import threading
from typing import Any, Callable, TypeVar

from ...protocol.errors import KafkaStorageError  # type: ignore[attr-defined]

log = logging.getLogger(__name__)
T = TypeVar("T")


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: list[str] = []
        # Called once per directory, on the reporting thread: the broker hands it to its event loop.
        self.listener: Callable[[str], None] | None = None

    def mark_offline(self, log_dir: str, message: str, error: BaseException | None = None) -> bool:
        """Report an I/O error on ``log_dir``; True when this report took it offline."""
        log_dir = os.path.abspath(log_dir)
        with self._lock:
            if log_dir in self._offline:
                log.debug("%s (log directory %s is already offline): %s", message, log_dir, error)
                return False
            self._offline.append(log_dir)
        log.error("%s; log directory %s is now offline", message, log_dir, exc_info=error)
        listener = self.listener
        if listener is not None:
            listener(log_dir)
        return True

    @property
    def any_offline(self) -> bool:
        """The hot path's first question (every append and read asks): a list's truth, no path work."""
        return bool(self._offline)

    def is_offline(self, log_dir: str) -> bool:
        return os.path.abspath(log_dir) in self._offline

    @property
    def offline_dirs(self) -> list[str]:
        with self._lock:
            return list(self._offline)


def parent_log_dir(partition_dir: str) -> str:
    """The log directory holding a partition's directory (``<log dir>/<topic>-<partition>``)."""
    return os.path.dirname(os.path.abspath(partition_dir))


def guarded_io(method: Callable[..., T]) -> Callable[..., T]:
    """A Log method whose OSError takes the log's directory offline and answers KAFKA_STORAGE_ERROR (Kafka's
    Log.maybeHandleIOException); once the directory is offline the log refuses every such call, so nothing
    written after a failed write is ever read back."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        channel = self.failure_channel
        if channel is not None and channel.any_offline and channel.is_offline(parent_log_dir(self.dir)):
            raise KafkaStorageError(f"the log directory of {self.name} is offline")
        try:
            return method(self, *args, **kwargs)
        except OSError as error:
            message = f"Error while {method.__name__.strip('_').replace('_', ' ')} for {self.name} in {self.dir}"
            if channel is None:
                raise
            channel.mark_offline(parent_log_dir(self.dir), message, error)
            raise KafkaStorageError(f"{message}: {error}") from error
    return wrapper


def append_whole(fd: int, data: bytes | bytearray | memoryview, path: str, start: int | None = None) -> None:
    """Append ``data`` to an O_APPEND file, all of it or nothing: a full disk writes what fits and returns its
    count, and bytes left behind would shift every later write (and the positions pointing at them).
    ``start``: the file's size when the caller knows it (saves a seek)."""
    if start is None:
        start = os.lseek(fd, 0, os.SEEK_END)
    written = os.write(fd, data)
    if written != len(data):
        os.ftruncate(fd, start)
        raise OSError(errno.ENOSPC, f"short write to {path}: {written} of {len(data)} bytes")

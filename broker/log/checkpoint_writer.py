"""Writes a batch of small files atomically and fsynced, several at once: ``write_files``.

The compiled writer (``checkpoint_writer_c/``) runs the batch on pthreads and releases the GIL once for all
of it; the pure-Python twin below runs it on a pool of Python threads, each of which takes the GIL back
after every system call (open, write, fsync, close, rename) and so competes with the event loop's thread.
Both return the failures as ``(index, errno)`` pairs. ``ODRADEK_PURE_PYTHON=1`` forces the twin.
"""

from __future__ import annotations

import errno
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from ...protocol.records.codec import pure_python_forced
from .checkpoints import write_atomically

WRITER_THREADS = 64  # a file system commits the fsyncs of this many files together (one journal commit)

_ABI = 1
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _writer_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="checkpoint-writer")
        return _pool


def _write_slice(items: list[tuple[str, bytes]], indexes: range) -> list[tuple[int, int]]:
    failures = []
    for i in indexes:
        path, data = items[i]
        try:
            write_atomically(path, data, sync_dir=False)  # no directory fsync: as Kafka 2.8's CheckpointFile
        except OSError as e:
            failures.append((i, e.errno or errno.EIO))
    return failures


def write_files_py(items: list[tuple[str, bytes]], threads: int) -> list[tuple[int, int]]:
    """For each ``(path, data)``: ``path.tmp`` written, fsynced and renamed over ``path``, on up to ``threads``
    threads of the writer pool; returns the failures as ``(index, errno)`` in index order."""
    if not items:
        return []
    threads = max(1, min(threads, WRITER_THREADS, len(items)))
    slices = [range(t, len(items), threads) for t in range(threads)]
    failures = [f for found in _writer_pool().map(_write_slice, [items] * threads, slices) for f in found]
    return sorted(failures)


def _load():
    if pure_python_forced():
        return write_files_py, None
    try:
        from . import _checkpoint_writer  # type: ignore[attr-defined]
    except ImportError:
        return write_files_py, "the compiled checkpoint writer (broker/log/checkpoint_writer_c) is not built"
    if getattr(_checkpoint_writer, "ABI", None) != _ABI:
        return write_files_py, "the compiled checkpoint writer is stale"
    return _checkpoint_writer.write_files, None


write_files, _why_python = _load()
COMPILED = write_files is not write_files_py
if _why_python is not None:
    warnings.warn(f"odradek: {_why_python}; leader epoch checkpoints are written on Python threads, which "
                  f"slow the event loop meanwhile (install gcc and python3-dev, then pip install -e .)",
                  RuntimeWarning, stacklevel=2)
